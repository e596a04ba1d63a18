/* A busy process with a recognisable function, for attach and system-wide tests.
   Usage: spinner MILLISECONDS */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin_here(double end) { while (now() < end) for (int i = 0; i < 100000; i++) sink += i; }

int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 2000;
    spin_here(now() + ms / 1000.0);
    return 0;
}
