/* The bench's workload: compress one file ROUNDS times at one zstd LEVEL, in memory, with the
   zstd library built from source beside it (debug info and frame pointers, so every
   profiler names its internal functions). Usage: zcomp FILE LEVEL ROUNDS */
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: zcomp FILE LEVEL ROUNDS\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *src = malloc(n);
    if (!src || fread(src, 1, n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    fclose(f);
    int level = atoi(argv[2]);
    long rounds = atol(argv[3]);
    size_t cap = ZSTD_compressBound(n);
    char *dst = malloc(cap);
    size_t z = 0;
    for (long r = 0; r < rounds; r++) {
        z = ZSTD_compress(dst, cap, src, n, level);
        if (ZSTD_isError(z)) {
            fprintf(stderr, "%s\n", ZSTD_getErrorName(z));
            return 1;
        }
    }
    printf("%ld bytes -> %zu bytes at level %d\n", n, z, level);
    return 0;
}
