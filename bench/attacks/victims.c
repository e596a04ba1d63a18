/* Processes an attacker runs for bench/attacks/run.sh (built there with gcc).
 *   victims maps DIR N   map a file under a ~3,000-byte path below DIR N times, executable,
 *                        a page apart so no two merge; print "mapped" and sleep
 *   victims spin FILE    write an endless loop (jmp $) into FILE, map it executable and run
 *                        it: a busy process whose code lives in a file that is not an ELF
 *   victims jit          write an endless loop into anonymous executable memory, print its
 *                        address (hex) and run it: JIT code, named only by a perf map */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int maps(const char *dir, long n) {
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    mkdir(path, 0755);
    while (strlen(path) < 3000) {
        size_t at = strlen(path);
        path[at] = '/';
        memset(path + at + 1, 'a', 100);
        path[at + 101] = 0;
        mkdir(path, 0755);
    }
    strcat(path, "/lib.so");
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ftruncate(fd, 4 * 4096) < 0) { perror(path); return 1; }
    char *area = mmap(NULL, (size_t)n * 2 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (area == MAP_FAILED) { perror("mmap"); return 1; }
    for (long i = 0; i < n; i++) {
        if (mmap(area + i * 2 * 4096, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd,
                 (i % 4) * 4096) == MAP_FAILED) { perror("mmap"); return 1; }
        munmap(area + (i * 2 + 1) * 4096, 4096);
    }
    printf("mapped\n");
    fflush(stdout);
    for (;;) pause();
}

static int spin(const char *file) {
    int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
    unsigned char loop[4096] = {0xeb, 0xfe};
    if (fd < 0 || write(fd, loop, sizeof loop) != sizeof loop) { perror(file); return 1; }
    void (*f)(void) = (void (*)(void))mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    if (f == (void *)MAP_FAILED) { perror("mmap"); return 1; }
    f();
    return 0;
}

static int jit(void) {
    unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) { perror("mmap"); return 1; }
    code[0] = 0xeb;
    code[1] = 0xfe;
    printf("%lx\n", (unsigned long)code);
    fflush(stdout);
    ((void (*)(void))code)();
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "maps")) return maps(argv[2], atol(argv[3]));
    if (argc == 3 && !strcmp(argv[1], "spin")) return spin(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "jit")) return jit();
    fprintf(stderr, "usage: victims maps DIR N | victims spin FILE | victims jit\n");
    return 2;
}
