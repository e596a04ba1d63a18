/* Call-heavy benchmark: fib(N) makes fib(N+1)*2-1 ≈ 2.7 million calls at N=30. */
#include <stdio.h>
#include <stdlib.h>

int __attribute__((noinline)) fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 30;
    printf("fib(%d) = %d\n", n, fib(n));
    return 0;
}
