/* Frame-pointer code without call frame information inside a stack of code with it, for the
 * unwinding tests. Usage: unwind_fpmix MILLISECONDS. Built -O2 -fomit-frame-pointer with call
 * frame information and linked with unwind_nocfi.c (frame pointers, no call frame information):
 *   main -> outer -> nocfi_mid -> nocfi_leaf                    (a leaf without CFI)
 *   main -> outer -> nocfi_mid -> fpmix_callback -> cb_leaf     (back into code with CFI)
 * Every function calls on and then does a little work, so no call becomes a tail call. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long fpmix_sink;
void nocfi_mid(long n);

__attribute__((noinline)) void cb_leaf(long n) {
    for (long i = 0; i < n; i++) fpmix_sink += i * 3;
}
__attribute__((noinline)) void fpmix_callback(long n) {
    cb_leaf(n);
    fpmix_sink++;
}
__attribute__((noinline)) void outer(long n) {
    nocfi_mid(n);
    fpmix_sink++;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MILLISECONDS\n", argv[0]);
        return 2;
    }
    double budget = atof(argv[1]);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        outer(200000);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 < budget);
    return 0;
}
