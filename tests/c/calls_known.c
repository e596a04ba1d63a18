/* Known call structure for exact call counts: main calls leaf() 3 times, twice() 2 times
 * (each calls leaf() twice), and fact(5) (recursive: 5 levels). Usage: calls_known */
#include <stdio.h>

int __attribute__((noinline)) leaf(int x) { __asm__ volatile("" ::: "memory"); return x + 1; }
int __attribute__((noinline)) twice(int x) { return leaf(leaf(x)); }
int __attribute__((noinline)) fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }

int main(void) {
    int s = 0;
    for (int i = 0; i < 3; i++) s += leaf(i);
    for (int i = 0; i < 2; i++) s += twice(i);
    s += fact(5);
    printf("%d\n", s);
    return 0;
}
