/* main calls rec(N) M times; rec recurses N deep. By construction: rec N*M calls, the longest
 * path main + N x rec. Usage: calls_deep N M */
#include <stdlib.h>

static volatile int sink;
void __attribute__((noinline)) rec(int d) {
    if (d > 1) rec(d - 1);
    sink++; /* not a tail call */
}
int main(int argc, char **argv) {
    int n = argc > 2 ? atoi(argv[1]) : 300, m = argc > 2 ? atoi(argv[2]) : 4;
    for (int i = 0; i < m; i++) rec(n);
    return 0;
}
