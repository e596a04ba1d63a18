/* hood trace under a storm of signals: main calls work() N times, work() calls leaf() twice,
 * while SIGALRM arrives every 20 us (ITIMER_REAL) and its handler calls in_handler(); every 64th
 * handler sleeps 50 us, so some handler time is off-CPU. Exactly N calls of work and 2 N of leaf.
 * Prints "handled H" at the end (the handler calls made).
 * Usage: trace_alarm N */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

volatile unsigned long sink;
volatile unsigned long handled;

__attribute__((noinline)) void in_handler(void) {
    handled++;
    if (handled % 64 == 0) {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
}

static void on_alarm(int sig) {
    (void)sig;
    in_handler();
}

__attribute__((noinline)) void leaf(long i) { sink += i; }

__attribute__((noinline)) void work(long i) {
    leaf(i);
    leaf(i + 1);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 3000000;
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 20}, {0, 20}};
    setitimer(ITIMER_REAL, &it, NULL);
    for (long i = 0; i < n; i++)
        work(i);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("handled %lu\n", handled);
    return 0;
}
