/* The MINIX 3 call-path profiler's test (Meurs 2006): a calls b and c, b calls d; identical
 * loops in every body, so with overhead compensation the four own-body times must agree.
 * Usage: calls_abcd [ITER] [REPS] */
#include <stdlib.h>

static long iters = 1000;

void __attribute__((noinline)) d(void) { for (long i = 0; i < iters; i++) __asm__ volatile("" ::: "memory"); }
void __attribute__((noinline)) c(void) { for (long i = 0; i < iters; i++) __asm__ volatile("" ::: "memory"); }
void __attribute__((noinline)) b(void) { for (long i = 0; i < iters; i++) __asm__ volatile("" ::: "memory"); d(); }
void __attribute__((noinline)) a(void) { for (long i = 0; i < iters; i++) __asm__ volatile("" ::: "memory"); b(); c(); }

int main(int argc, char **argv) {
    long reps = 20000;
    if (argc > 1) iters = atol(argv[1]);
    if (argc > 2) reps = atol(argv[2]);
    for (long r = 0; r < reps; r++)
        a();
    return 0;
}
