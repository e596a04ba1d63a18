/* A thread that sleeps 1 ms about 1,000 times a second, doing a little work between sleeps:
   an ordinary rate of context switches. Usage: ticker SECONDS */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

int main(int argc, char **argv) {
    int secs = argc > 1 ? atoi(argv[1]) : 5;
    struct timespec ms = {0, 1000000}, t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 20000; i++)
            sink += i;
        nanosleep(&ms, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec < secs);
    return 0;
}
