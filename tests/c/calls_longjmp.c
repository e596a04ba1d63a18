/* inner() longjmps out of three nested calls back to outer(); afterwards outer() calls
 * after() and returns normally. Repeated 10 times.
 * With an argument ("again"), outer() calls inner(2) once more after the longjmp, from the
 * same stack pointer: the new inner frames are at the very stack addresses of those just
 * left without exits, siblings of them, not calls nested in them. */
#include <setjmp.h>

static jmp_buf env;
static int armed, again;
void __attribute__((noinline)) inner(int d) {
    if (d == 0) {
        if (!armed) return;
        armed = 0;
        longjmp(env, 1);
    }
    inner(d - 1);
}
int __attribute__((noinline)) after(void) { __asm__ volatile("" ::: "memory"); return 2; }
int __attribute__((noinline)) outer(void) {
    armed = 1;
    if (setjmp(env) == 0) inner(2);
    else if (again) inner(2);
    return after();
}
int main(int argc, char **argv) {
    (void)argv;
    again = argc > 1;
    int s = 0;
    for (int i = 0; i < 10; i++) s += outer();
    return s == 20 ? 0 : 1;
}
