/* Known call chains for the unwinding tests, built -O2 -fomit-frame-pointer (no frame pointers
 * anywhere). Usage: unwind_known MODE MILLISECONDS [DLOPEN_LIB]. Every function calls on and
 * then does a little work, so no call becomes a tail call and every frame stays on the stack.
 *   depth   main -> d1 -> d2 -> d3 -> d4 -> d5 -> depth_leaf
 *   recurse main -> rec x 30 -> rec_leaf
 *   signal  main -> sig_loop (interrupted) -> [signal frame] -> on_alarm -> handler_leaf
 *   threads main -> pthread_create; each thread: start_thread -> thread_fn -> thread_leaf
 *   lib     main -> lib_outer -> lib_inner -> lib_leaf     (linked shared library)
 *   dlopen  main -> dl_outer -> dl_inner -> dl_leaf        (dlopen'ed shared library)
 *   deep    main -> big x 200 (4 KiB frames) -> deep_leaf   (deeper than an 8 KiB copy)
 *   deep60  main -> big x 60 -> deep_leaf   (deeper than the copy, within the kernel's
 *           127-frame limit for frame-pointer chains)
 *   deep10  main -> big x 10 -> deep_leaf   (about 41 KiB: deeper than an 8 KiB copy, within
 *           the largest a sample holds)
 *   clobbered main -> clob_mid -> clob_leaf, where clob_mid has zeroed its own return address
 *           (a smashed stack): nothing past clob_mid can be found, and a return address of
 *           zero must not pass for the end of the stack */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;
static double budget_ms;
static struct timespec t0;

static double elapsed_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6;
}
static int more(void) { return elapsed_ms() < budget_ms; }

__attribute__((noinline)) void spin(long n) { for (long i = 0; i < n; i++) sink += i ^ (i >> 3); }

__attribute__((noinline)) void depth_leaf(void) { spin(200000); sink++; }
__attribute__((noinline)) void d5(void) { depth_leaf(); sink++; }
__attribute__((noinline)) void d4(void) { d5(); sink++; }
__attribute__((noinline)) void d3(void) { d4(); sink++; }
__attribute__((noinline)) void d2(void) { d3(); sink++; }
__attribute__((noinline)) void d1(void) { d2(); sink++; }

__attribute__((noinline)) void rec_leaf(void) { spin(200000); sink++; }
__attribute__((noinline)) void rec(int n) {
    if (n > 1) rec(n - 1); else rec_leaf();
    sink++;
}

__attribute__((noinline)) void handler_leaf(void) { spin(2000000); sink++; }
__attribute__((noinline)) void on_alarm(int sig) {
    (void)sig;
    handler_leaf();
    sink++;
    /* A handler that outlasts the 5 ms period (a loaded machine, a slow sampler) is entered
     * again as soon as it returns, and sig_loop never runs to see the time is up: the
     * handler stops the timer itself. */
    if (!more()) {
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
    }
}
__attribute__((noinline)) void sig_loop(void) { while (more()) sink += 3; }

__attribute__((noinline)) void thread_leaf(void) { spin(200000); sink++; }
__attribute__((noinline)) void *thread_fn(void *arg) {
    (void)arg;
    while (more()) thread_leaf();
    sink++;
    return NULL;
}

__attribute__((noinline)) void deep_leaf(void) { spin(200000); sink++; }
__attribute__((noinline)) void big(int n) {
    volatile char pad[4096];
    pad[0] = (char)n;
    pad[4095] = (char)n;
    if (n > 1) big(n - 1); else deep_leaf();
    sink += pad[0] + pad[4095];
}

__attribute__((noinline)) void clob_leaf(void) { spin(200000); sink++; }
__attribute__((noinline, optimize("no-omit-frame-pointer"))) void clob_mid(void) {
    void *volatile *frame = __builtin_frame_address(0);
    frame[1] = 0; /* the saved return address, above the saved frame pointer */
    while (more()) clob_leaf();
    _exit(0); /* it cannot return */
}

void lib_outer(long n);

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODE MILLISECONDS [LIB]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    budget_ms = atof(argv[2]);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!strcmp(mode, "depth")) {
        while (more()) d1();
    } else if (!strcmp(mode, "recurse")) {
        while (more()) rec(30);
    } else if (!strcmp(mode, "signal")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = {{0, 5000}, {0, 5000}};
        setitimer(ITIMER_REAL, &it, NULL);
        sig_loop();
        /* Stopped before exit: on a loaded machine a handler outlasting the 5 ms period
         * would otherwise run again and again inside exit's own code. */
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
    } else if (!strcmp(mode, "threads")) {
        pthread_t t[2];
        for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, thread_fn, NULL);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    } else if (!strcmp(mode, "lib")) {
        while (more()) lib_outer(200000);
    } else if (!strcmp(mode, "dlopen")) {
        void *h = dlopen(argc > 3 ? argv[3] : "libunwdl.so", RTLD_NOW);
        if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
        void (*outer)(long) = (void (*)(long))dlsym(h, "dl_outer");
        if (!outer) { fprintf(stderr, "dlsym failed\n"); return 1; }
        while (more()) outer(200000);
        dlclose(h);
    } else if (!strcmp(mode, "deep")) {
        while (more()) big(200);
    } else if (!strcmp(mode, "deep60")) {
        while (more()) big(60);
    } else if (!strcmp(mode, "deep10")) {
        while (more()) big(10);
    } else if (!strcmp(mode, "clobbered")) {
        clob_mid();
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
