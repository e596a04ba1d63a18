/* Known answer for `hood diff --reconcile`: built with -finstrument-functions, each round
   runs
     spin_a   a multiply-add chain, 2 units of work
     spin_b   the same, 3 units
     fill_c   memset of a 1 MiB buffer, libc's assembly (the statistical profile sees libc,
              the call profile charges fill_c), about 1 unit
     nap_d    (only with the argument `block`) nanosleep of 3 ms: blocked, off the CPU
   so both profilers must find the same shares of spin_a, spin_b and fill_c (CPU-bound), and
   with `block`, nap_d's share of the call profile is blocked time the statistical profile
   shows only with off-CPU data.
   Usage: reconcile_known ROUNDS [block] */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;
static char buf[1 << 20];

__attribute__((noinline)) void consume(unsigned long x) { sink += x; }

#define SPIN(name, k)                                                          \
    __attribute__((noinline)) void name(unsigned long n) {                     \
        unsigned long x = n;                                                   \
        for (unsigned long i = 0; i < (k) * n; i++)                            \
            x = x * 6364136223846793005UL + 1442695040888963407UL;             \
        consume(x);                                                            \
    }

SPIN(spin_a, 2)
SPIN(spin_b, 3)

__attribute__((noinline)) void fill_c(int times) {
    for (int i = 0; i < times; i++) {
        memset(buf, i, sizeof buf);
        __asm__ volatile("" ::"r"(buf) : "memory");
    }
}

__attribute__((noinline)) void nap_d(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 100;
    int block = argc > 2 && strcmp(argv[2], "block") == 0;
    for (long r = 0; r < rounds; r++) {
        spin_a(400000);
        spin_b(400000);
        fill_c(8);
        if (block)
            nap_d(3);
    }
    return 0;
}
