/* A thread that sleeps 1 ms (or SLEEP_US microseconds) about 1,000 times a second, doing a
   little work between sleeps: an ordinary rate of context switches, or, with a short sleep,
   a busy machine's stream of timer wake-ups. Usage: ticker SECONDS [SLEEP_US] */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

int main(int argc, char **argv) {
    int secs = argc > 1 ? atoi(argv[1]) : 5;
    long us = argc > 2 ? atol(argv[2]) : 1000;
    struct timespec ms = {0, us * 1000}, t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 20000 * us / 1000; i++)
            sink += i;
        nanosleep(&ms, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec < secs);
    return 0;
}
