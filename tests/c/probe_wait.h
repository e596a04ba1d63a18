/* Shared by the probe tests' programs (issue 26): wait until a function's first instruction
 * is the kernel's uprobe breakpoint, i.e. until hood has placed its probe in this process
 * (x86: int3, 0xcc; arm64: brk #5). hood places the probes of a library loaded with dlopen or
 * of an exec'd program a few milliseconds after the mapping appears, and calls made before
 * that are not seen (docs/trace.md): the known answers hold once the probe is there. Gives up
 * after 60 s (then the counts are short, and this says so on stderr). */
#include <stdio.h>
#include <string.h>
#include <time.h>

static int probed(const void *f) {
#if defined(__x86_64__) || defined(__i386__)
    return *(const volatile unsigned char *)f == 0xcc;
#elif defined(__aarch64__)
    unsigned int w;
    memcpy(&w, f, 4);
    return w == 0xd42000a0u;
#else
    (void)f;
    return 1;
#endif
}

static void wait_probed(const void *f, const char *name) {
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 60000; i++) {
        if (probed(f))
            return;
        nanosleep(&ms, 0);
    }
    fprintf(stderr, "%s was not probed within 60 s\n", name);
}
