/* Known answer: a loop that calls memcmp, strlen and abs through the PLT (built with
   -fno-builtin so gcc keeps the calls), on inputs so small that the jump through each PLT
   stub is a visible share of the time. Usage: plt_calls MILLISECONDS */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;
static char a[8] = "abcd", b[8] = "abdd";

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long calls(unsigned long n) {
    unsigned long s = 0;
    /* Arguments that change with i: glibc declares these pure, so gcc would otherwise call
       them once before the loop. Tiny inputs keep the callees about as cheap as the jump
       through their stubs, so the stubs get a visible share of the samples. */
    for (unsigned long i = 0; i < n; i++)
        s += (unsigned long)memcmp(a + (i & 1), b + (i & 1), i & 1) + strlen(a + 3 + (i & 1)) +
             (unsigned long)abs((int)(i & 7) - 4);
    return s;
}

int main(int argc, char **argv) {
    double end = now() + (argc > 1 ? atof(argv[1]) : 1000) / 1000.0;
    while (now() < end)
        sink += calls(100000);
    return 0;
}
