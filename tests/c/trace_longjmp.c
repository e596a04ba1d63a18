/* catcher() calls dive(N), which recurses N deep; the deepest call calls thrower(), which
 * longjmps back to catcher(); catcher() then calls after() and returns. Repeated M times, then
 * shallow() is called M times. By construction: catcher M, dive N*M, thrower M, after M,
 * shallow M calls; N+1 exits per catcher() are never run (dive x N, thrower).
 * Usage: trace_longjmp N M */
#include <setjmp.h>
#include <stdlib.h>

static jmp_buf env;
static volatile int sink;
void __attribute__((noinline)) thrower(void) { longjmp(env, 1); }
void __attribute__((noinline)) dive(int d) {
    if (d <= 1) thrower(); else dive(d - 1);
    sink++; /* not a tail call */
}
int __attribute__((noinline)) after(void) { sink++; return 2; }
int __attribute__((noinline)) shallow(void) { sink++; return 1; }
int __attribute__((noinline)) catcher(int n) {
    if (setjmp(env) == 0) dive(n);
    return after();
}
int main(int argc, char **argv) {
    int n = argc > 2 ? atoi(argv[1]) : 100, m = argc > 2 ? atoi(argv[2]) : 10, s = 0;
    for (int i = 0; i < m; i++) s += catcher(n);
    for (int i = 0; i < m; i++) s += shallow();
    return s == 3 * m ? 0 : 1;
}
