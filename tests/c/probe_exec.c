/* exec under --probe (issue 26): main calls before_exec() 3 times and getpid() once, then execs
 * PATH (in the test, this program copied under another name: another file, so its functions are
 * found again) with the argument "after"; that image reads a line from stdin (the test writes
 * it when hood says the new program's probes are in place: calls made before are not seen,
 * docs/trace.md), then calls after_exec() 5 times and getpid() twice, and returns.
 * Usage: probe_exec PATH | probe_exec after */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) int before_exec(int i) { __asm__ volatile("" ::: "memory"); return i; }
__attribute__((noinline)) int after_exec(int i) { __asm__ volatile("" ::: "memory"); return i; }

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "after") == 0) {
        char line[16];
        if (!fgets(line, sizeof line, stdin))
            return 3;
        for (int i = 0; i < 5; i++)
            after_exec(i);
        getpid();
        getpid();
        return 0;
    }
    for (int i = 0; i < 3; i++)
        before_exec(i);
    getpid();
    if (argc > 1)
        execl(argv[1], argv[1], "after", (char *)0);
    return 127;
}
