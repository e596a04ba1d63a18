/* Recursive Fibonacci: a dense stream of tiny instrumented calls (2 trace events each). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 30;
    printf("%ld\n", fib(n));
    return 0;
}
