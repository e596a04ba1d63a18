/* A CPU-bound workload with a fixed amount of work (not a fixed duration), for measuring the
   overhead a profiler adds to the workload itself. Prints its own run time in seconds, so
   profiler start-up and post-processing are not counted. Usage: fixedwork ITERATIONS_MILLIONS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile unsigned long sink;

__attribute__((noinline)) void consume(unsigned long x) { sink += x; }

__attribute__((noinline)) void step(unsigned long n) {
    unsigned long x = n;
    for (unsigned long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    consume(x);
}

int main(int argc, char **argv) {
    long m = argc > 1 ? atol(argv[1]) : 1000;
    double t0 = now();
    for (long i = 0; i < m; i++) step(1000000);
    printf("%.4f\n", now() - t0);
    return 0;
}
