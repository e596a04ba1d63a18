/* Who ends each wait (hood trace, issue 22 item 4): thread "reader-a" blocks in
 * wait_for_token() reading a pipe; thread "writer-b" naps 30 ms, then writes one byte in
 * send_token(), which wakes the reader. Then the reader sleeps 20 ms in doze(): a timer
 * wakes it. ROUNDS times. Prints "reader TID" and "writer TID" on stdout.
 * Build: gcc -O2 -g -finstrument-functions trace_wake.c -o trace_wake -lpthread */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 5

static int fds[2];

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

__attribute__((noinline)) static void nap(void) { sleep_ms(30); }

__attribute__((noinline)) static void send_token(void) {
    char c = 't';
    if (write(fds[1], &c, 1) != 1)
        exit(2);
}

__attribute__((noinline)) static void wait_for_token(void) {
    char c;
    if (read(fds[0], &c, 1) != 1)
        exit(3);
}

__attribute__((noinline)) static void doze(void) { sleep_ms(20); }

static void *writer(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "writer-b");
    printf("writer %ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    for (int i = 0; i < ROUNDS; i++) {
        nap();
        send_token();
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "reader-a");
    printf("reader %ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    for (int i = 0; i < ROUNDS; i++) {
        wait_for_token();
        doze();
    }
    return NULL;
}

int main(void) {
    pthread_t r, w;
    if (pipe(fds) != 0)
        return 1;
    pthread_create(&r, NULL, reader, NULL);
    pthread_create(&w, NULL, writer, NULL);
    pthread_join(r, NULL);
    pthread_join(w, NULL);
    return 0;
}
