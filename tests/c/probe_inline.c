/* Known answer for inlined copies under `--probe` (built -O2 -g, no instrumentation).
 * step() is a static function the compiler inlines into site_a() and site_b() (two inlined
 * copies, which no symbol names: DWARF says where they are) and also keeps out of line for
 * the call through a function pointer.
 * Usage: probe_inline    main calls site_a() 5 times and site_b() 3 times (8 calls of the
 *                        inlined copies of step()), and step() 2 times through the pointer
 *                        (2 calls of its out-of-line copy). */
#include <stdio.h>

static int step(int x) {
    __asm__ volatile("" ::: "memory");
    return x * 3 + 1;
}

int (*volatile through)(int) = step;
volatile int visits;

int __attribute__((noinline)) site_a(int x) {
    visits++;
    return step(x) + 7;
}

int __attribute__((noinline)) site_b(int x) {
    visits += 2;
    return step(x * 5) ^ 11;
}

int main(void) {
    int s = 0;
    for (int i = 0; i < 5; i++) s += site_a(i);
    for (int i = 0; i < 3; i++) s += site_b(i);
    for (int i = 0; i < 2; i++) s += through(i);
    printf("%d\n", s);
    return 0;
}
