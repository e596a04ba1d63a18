/* A CPU-bound workload with a fixed amount of work (not a fixed duration), for measuring the
   overhead a profiler adds. Usage: fixedwork ITERATIONS_MILLIONS */
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) void consume(unsigned long x) { sink += x; }

__attribute__((noinline)) void step(unsigned long n) {
    unsigned long x = n;
    for (unsigned long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    consume(x);
}

int main(int argc, char **argv) {
    long m = argc > 1 ? atol(argv[1]) : 1000;
    for (long i = 0; i < m; i++) step(1000000);
    return 0;
}
