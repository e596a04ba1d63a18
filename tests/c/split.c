/* Known answer: own time split 60/30/10 across work60, work30, work10 by construction
   (identical loop bodies, iteration counts 6:3:1). Usage: split MILLISECONDS */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

/* Calling out keeps the work functions non-leaf, so gcc gives them a frame pointer and the
   caller (main) appears in every call chain. */
__attribute__((noinline)) void consume(unsigned long x) { sink += x; }

/* A latency-bound multiply-add chain: the same cost per iteration wherever the loop lands,
   unlike a memory-bound loop whose speed depends on code alignment. */
#define WORK(name, k)                                                          \
    __attribute__((noinline, aligned(64))) void name(unsigned long n) {        \
        unsigned long x = n;                                                   \
        for (unsigned long i = 0; i < (k) * n; i++)                            \
            x = x * 6364136223846793005UL + 1442695040888963407UL;             \
        consume(x);                                                            \
    }

WORK(work60, 6)
WORK(work30, 3)
WORK(work10, 1)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 1000;
    double end = now() + ms / 1000.0;
    while (now() < end) {
        work60(20000);
        work30(20000);
        work10(20000);
    }
    return 0;
}
