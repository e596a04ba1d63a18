/* Known-answer workload for the off-CPU stack rate bound (hood record --off-cpu-rate).
 *
 * Two threads play ping-pong over two pipes, ROUNDS times (default 20000). Each round,
 * "ping" works ~40 us on the CPU (ping_work), writes a byte (send_ping) and waits for the
 * answer (wait_pong, reading the second pipe); "pong" waits for the byte (wait_ping), works
 * ~40 us (pong_work) and answers (send_pong). So each thread blocks about 12,000 times a
 * second, each wait ~40 us or more: far more long waits than a rate bound of 100 stacks a
 * second per thread lets take stacks, all with the same stack and the same waker.
 * Usage: offcpu_rated [ROUNDS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int to_pong[2], to_ping[2];
static long rounds = 20000;

static uint64_t now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_us(uint64_t us) {
    uint64_t end = now() + us * 1000;
    while (now() < end) {
    }
}

__attribute__((noinline)) void ping_work(void) { spin_us(40); }
__attribute__((noinline)) void pong_work(void) { spin_us(40); }

__attribute__((noinline)) void send_ping(void) {
    char c = 'i';
    if (write(to_pong[1], &c, 1) != 1)
        abort();
}

__attribute__((noinline)) void send_pong(void) {
    char c = 'o';
    if (write(to_ping[1], &c, 1) != 1)
        abort();
}

__attribute__((noinline)) void wait_pong(void) {
    char c;
    if (read(to_ping[0], &c, 1) != 1)
        abort();
}

__attribute__((noinline)) void wait_ping(void) {
    char c;
    if (read(to_pong[0], &c, 1) != 1)
        abort();
}

static void *ping_main(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "ping");
    for (long i = 0; i < rounds; i++) {
        ping_work();
        send_ping();
        wait_pong();
    }
    return NULL;
}

static void *pong_main(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "pong");
    for (long i = 0; i < rounds; i++) {
        wait_ping();
        pong_work();
        send_pong();
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        rounds = atol(argv[1]);
    if (pipe(to_pong) != 0 || pipe(to_ping) != 0)
        return 1;
    pthread_t a, b;
    pthread_create(&b, NULL, pong_main, NULL);
    pthread_create(&a, NULL, ping_main, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
