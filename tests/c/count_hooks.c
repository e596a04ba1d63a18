/* An independent call counter for the tests: -finstrument-functions hooks that only count the
 * entries of each function, in a fixed open-addressing table, and at exit write one line
 * "OFFSET COUNT" per function (OFFSET: its address minus its object's load address, as nm
 * prints it for a PIE) to the file named by COUNT_HOOKS_OUT. Preloaded into the same binary
 * that `hood calls run` records, so both see the same functions. Single-threaded programs
 * only; no paths, no times, no repairs: nothing here shares code or ideas with hood-rt. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS (1u << 16)
static uintptr_t keys[SLOTS];
static unsigned long long counts[SLOTS];
static int full;

__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site) {
    (void)site;
    uintptr_t k = (uintptr_t)fn;
    uint32_t i = (uint32_t)((k >> 4) * 2654435761u) & (SLOTS - 1);
    for (uint32_t n = 0; n < SLOTS; n++, i = (i + 1) & (SLOTS - 1)) {
        if (keys[i] == k || keys[i] == 0) {
            keys[i] = k;
            counts[i]++;
            return;
        }
    }
    full = 1;
}

__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site) {
    (void)fn;
    (void)site;
}

__attribute__((destructor, no_instrument_function)) static void dump(void) {
    const char *path = getenv("COUNT_HOOKS_OUT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f)
        return;
    if (full)
        fprintf(f, "table full\n");
    for (uint32_t i = 0; i < SLOTS; i++) {
        if (!keys[i])
            continue;
        Dl_info d;
        uintptr_t base = dladdr((void *)keys[i], &d) ? (uintptr_t)d.dli_fbase : 0;
        fprintf(f, "%lx %llu\n", (unsigned long)(keys[i] - base), counts[i]);
    }
    fclose(f);
}
