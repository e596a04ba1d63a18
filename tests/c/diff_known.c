/* Known answer for `hood diff`: three functions of fixed work, iterations 2:2:3 per round;
   built with -DSLOW_B, work_b does twice as many (4), so its time doubles and the others'
   stay; built with -DTWICE_B, work_b is called twice per round (its calls and time double).
   Usage: diff_known ROUNDS */
#include <stdlib.h>

static volatile unsigned long sink;

/* Calling out keeps the work functions non-leaf, so gcc gives them a frame pointer and main
   appears in every call chain. */
__attribute__((noinline)) void consume(unsigned long x) { sink += x; }

/* A latency-bound multiply-add chain: the same cost per iteration wherever the loop lands. */
#define WORK(name, k)                                                          \
    __attribute__((noinline, aligned(64))) void name(unsigned long n) {        \
        unsigned long x = n;                                                   \
        for (unsigned long i = 0; i < (k) * n; i++)                            \
            x = x * 6364136223846793005UL + 1442695040888963407UL;             \
        consume(x);                                                            \
    }

#ifdef SLOW_B
#define B_ITERATIONS 4
#else
#define B_ITERATIONS 2
#endif

WORK(work_a, 2)
WORK(work_b, B_ITERATIONS)
WORK(work_c, 3)

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 1000;
    for (long r = 0; r < rounds; r++) {
        work_a(20000);
        work_b(20000);
#ifdef TWICE_B
        work_b(20000);
#endif
        work_c(20000);
    }
    return 0;
}
