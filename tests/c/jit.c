/* A "JIT": copies a position-independent busy loop into anonymous executable memory, announces
   it in /tmp/perf-PID.map as "jitted_hot_loop" the way JIT runtimes do, and runs it.
   Usage: jit MILLISECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* x86-64: mov rax, rdi; loop: imul rax, rax, 0x41; add rax, 1; dec rdi; jnz loop; ret */
static const unsigned char code[] = {
    0x48, 0x89, 0xf8,             /* mov rax, rdi */
    0x48, 0x6b, 0xc0, 0x41,       /* imul rax, rax, 0x41 */
    0x48, 0x83, 0xc0, 0x01,       /* add rax, 1 */
    0x48, 0xff, 0xcf,             /* dec rdi */
    0x75, 0xf3,                   /* jnz -13 (back to imul) */
    0xc3,                         /* ret */
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 1000;
    unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return 1;
    memcpy(mem + 64, code, sizeof code);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fprintf(f, "%lx %zx jitted_hot_loop\n", (unsigned long)(mem + 64), sizeof code);
    fclose(f);
    unsigned long (*fn)(unsigned long) = (unsigned long (*)(unsigned long))(mem + 64);
    volatile unsigned long sink = 0;
    double end = now() + ms / 1000.0;
    while (now() < end) sink += fn(1000000);
    return 0;
}
