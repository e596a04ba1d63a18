/* inner() longjmps out of three nested calls back to outer(); afterwards outer() calls
 * after() and returns normally. Repeated 10 times. */
#include <setjmp.h>

static jmp_buf env;
void __attribute__((noinline)) inner(int d) { if (d == 0) longjmp(env, 1); inner(d - 1); }
int __attribute__((noinline)) after(void) { __asm__ volatile("" ::: "memory"); return 2; }
int __attribute__((noinline)) outer(void) {
    if (setjmp(env) == 0) inner(2);
    return after();
}
int main(void) {
    int s = 0;
    for (int i = 0; i < 10; i++) s += outer();
    return s == 20 ? 0 : 1;
}
