/* Known call chain main -> a -> b -> c (c the hot leaf), built by bench/unwind/run.sh with
   -O2 -fomit-frame-pointer: a complete stack of a sample in c is c;b;a;main;__libc_start_call_main...
   Usage: chain MILLIONS   (units of work; about 0.1 s each on a 2020s x86 core) */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long c(unsigned long x) {
    for (int i = 0; i < 2000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

__attribute__((noinline)) unsigned long b(unsigned long x) {
    unsigned long acc = 0;
    for (int i = 0; i < 8; i++) { acc ^= c(x + i); acc = (acc << 7) | (acc >> 57); }
    return acc;
}

__attribute__((noinline)) unsigned long a(unsigned long x) {
    unsigned long acc = 0;
    for (int i = 0; i < 16; i++) acc += b(x ^ (unsigned long)i * 0x9e3779b97f4a7c15UL);
    return acc;
}

int main(int argc, char **argv) {
    long units = argc > 1 ? atol(argv[1]) : 10;
    for (long u = 0; u < units * 400; u++) sink += a((unsigned long)u);
    printf("%lu\n", sink);
    return 0;
}
