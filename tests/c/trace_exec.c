/* exec under hood trace (issue 25): main calls before_exec() 3 times, then execs PATH (in the
 * test, this program copied under another name) with the argument "after"; that image's main
 * calls after_exec() 5 times and returns. The two images have their functions at different
 * addresses (PIE): each must be named from its own symbols, and the new image's main must start
 * a new root, not nest inside the old main that never returned.
 * Usage: trace_exec PATH | trace_exec after */
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) int before_exec(int i) { __asm__ volatile("" ::: "memory"); return i; }
__attribute__((noinline)) int after_exec(int i) { __asm__ volatile("" ::: "memory"); return i; }

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "after") == 0) {
        for (int i = 0; i < 5; i++)
            after_exec(i);
        return 0;
    }
    for (int i = 0; i < 3; i++)
        before_exec(i);
    if (argc > 1)
        execl(argv[1], argv[1], "after", (char *)0);
    return 127;
}
