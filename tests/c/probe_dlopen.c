/* dlopen under --probe (issue 26): main calls before_load() twice, loads the library named by
 * argv[1] (tests/c/probe_plugin.c, built as libprobe_plugin.so) with dlopen, then calls
 * plugin_work(i) for i = 0..6: 7 calls of plugin_work, 1+2+3+1+2+3+1 = 13 of plugin_leaf.
 * Without an argument: no dlopen. With a second argument ("sync"), it reads a line from stdin
 * before the dlopen and another after it, before the calls: the test writes the first when
 * hood is attached, the second when hood says the library's probes are in place (calls made
 * before that are not seen, docs/trace.md).
 * Build: gcc -O1 probe_dlopen.c -ldl */
#include <dlfcn.h>
#include <stdio.h>

__attribute__((noinline)) int before_load(int i) { __asm__ volatile("" ::: "memory"); return i; }

static int wait_go(int on) {
    char line[16];
    return !on || fgets(line, sizeof line, stdin) != 0;
}

int main(int argc, char **argv) {
    for (int i = 0; i < 2; i++)
        before_load(i);
    if (argc < 2)
        return 0;
    if (!wait_go(argc > 2))
        return 3;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    int (*work)(int) = (int (*)(int))dlsym(h, "plugin_work");
    if (!work) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 2;
    }
    if (!wait_go(argc > 2))
        return 3;
    int s = 0;
    for (int i = 0; i < 7; i++)
        s += work(i);
    printf("%d\n", s);
    return 0;
}
