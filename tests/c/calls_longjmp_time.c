/* Where the time of frames left by longjmp goes. catcher() calls setjmp, then dive(64) recurses
 * 64 deep and burn() spins BURN ms at the bottom before longjmp back to catcher(), which
 * returns at once; main then calls shallow(), which spins BURN ms too. Repeated ROUNDS times.
 * By construction: burn and shallow own ~ROUNDS*BURN ms each; catcher and every dive own
 * almost nothing. spin() is not instrumented, so its time is its caller's.
 * usage: calls_longjmp_time [BURN_MS [ROUNDS]] */
#include <setjmp.h>
#include <stdlib.h>
#include <time.h>

static jmp_buf env;

__attribute__((no_instrument_function)) static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((no_instrument_function)) static void spin(double ms) {
    double end = now_ms() + ms;
    while (now_ms() < end)
        __asm__ volatile("" ::: "memory");
}

static double burn_ms = 40;

void __attribute__((noinline)) burn(void) {
    spin(burn_ms);
    longjmp(env, 1);
}

void __attribute__((noinline)) dive(int d) {
    if (d == 0)
        burn();
    else
        dive(d - 1);
    __asm__ volatile("" ::: "memory");
}

int __attribute__((noinline)) catcher(void) {
    if (setjmp(env) == 0)
        dive(64);
    return 1;
}

void __attribute__((noinline)) shallow(void) { spin(burn_ms); }

int main(int argc, char **argv) {
    int rounds = 5, s = 0;
    if (argc > 1)
        burn_ms = atof(argv[1]);
    if (argc > 2)
        rounds = atoi(argv[2]);
    for (int i = 0; i < rounds; i++) {
        s += catcher();
        shallow();
    }
    return s == rounds ? 0 : 1;
}
