/* O_DIRECT read known-answer workload for `hood record --labels`.
 * usage: labels_dio FILE SECONDS
 * Creates FILE (16 MiB, on the machine's block device), then reads 4 KiB blocks at
 * pseudo-random offsets with O_DIRECT for SECONDS, so every read is a block request whose
 * completion (irq/softirq work on whatever CPU) should be charged to this reader.
 * Prints "reading" when the reads start, then "reads N". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define SIZE (16L << 20)
#define BLOCK 4096

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: labels_dio FILE SECONDS\n"); return 2; }
    double secs = atof(argv[2]);
    int w = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (w < 0) { perror(argv[1]); return 1; }
    static char chunk[1 << 20];
    memset(chunk, 'd', sizeof chunk);
    for (long off = 0; off < SIZE; off += sizeof chunk)
        if (write(w, chunk, sizeof chunk) != sizeof chunk) { perror("write"); return 1; }
    fsync(w);
    close(w);
    prctl(PR_SET_NAME, "dio_reader");
    int fd = open(argv[1], O_RDONLY | O_DIRECT);
    if (fd < 0) { perror("open O_DIRECT"); return 1; }
    void *buf;
    if (posix_memalign(&buf, BLOCK, BLOCK)) return 1;
    unsigned long x = 88172645463325252UL;
    long reads = 0;
    printf("reading\n");
    fflush(stdout);
    double end = now() + secs;
    while (now() < end) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        off_t off = (off_t)(x % (SIZE / BLOCK)) * BLOCK;
        if (pread(fd, buf, BLOCK, off) != BLOCK) { perror("pread"); return 1; }
        reads++;
    }
    printf("reads %ld\n", reads);
    return 0;
}
