/* Known answer for `hood diff --reconcile` where the hooks cost more than the code they
   measure, as in bzip2's mainSimpleSort and mainGtU: built with -finstrument-functions,
     outer   a loop of ROUNDS steps of a few dozen instructions, each calling
     tiny    a comparison of two words, about as long as the hooks themselves
     plain   a multiply-add chain, about as long as outer's own work
   so most of the statistical profile's samples of outer and tiny fall inside the hooks
   (hood's runtime, libhood_rt.so), and the reconciliation must split them between the two
   functions as the call profile's timestamps and compensation do.
   With a second argument `bare`, outer's steps do no work but the call (no multiply chain
   in flight when tiny's entry hook reads the clock): bench/diff/tiny.sh's control.
   Usage: reconcile_tiny ROUNDS [bare] */
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;

__attribute__((noinline)) int tiny(unsigned long a, unsigned long b) {
    return (a ^ b) < (a + b);
}

__attribute__((noinline)) void outer(long n) {
    unsigned long x = 88172645463325252UL, s = 0;
    for (long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for (int k = 0; k < 8; k++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
        s += (unsigned long)tiny(x, s);
    }
    sink = s;
}

__attribute__((noinline)) void outer_bare(long n) {
    unsigned long s = 0;
    for (long i = 0; i < n; i++)
        s += (unsigned long)tiny((unsigned long)i, s);
    sink = s;
}

__attribute__((noinline)) void plain(long n) {
    unsigned long x = (unsigned long)n;
    for (long i = 0; i < 40 * n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 5000000;
    if (argc > 2 && strcmp(argv[2], "bare") == 0)
        outer_bare(n);
    else
        outer(n);
    plain(n);
    return 0;
}
