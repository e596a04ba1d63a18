/* PCRE2 workload for bench/calls/real.sh: compiles a few patterns (no JIT: the interpreter's
 * and the compiler's functions are what is instrumented) and matches each against every line
 * of FILE, ROUNDS times. Prints the number of matches, so a wrong build shows.
 * Usage: pcre2_drive FILE [ROUNDS] */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *patterns[] = {
    "\\b(\\w+)\\s+\\1\\b",          /* a repeated word */
    "[A-Z][a-z]+ (?:and|or) [a-z]+", /* alternation */
    "(\\d{2,4})-(\\d{2})",           /* digits */
    "^.{10,40}$",                    /* line length */
    "(?i)qu[a-z]*k",                 /* caseless */
};

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: pcre2_drive FILE [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    static char text[8 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    long matches = 0;
    for (int r = 0; r < rounds; r++) {
        for (size_t p = 0; p < sizeof patterns / sizeof *patterns; p++) {
            int err;
            PCRE2_SIZE off;
            pcre2_code *re = pcre2_compile((PCRE2_SPTR)patterns[p], PCRE2_ZERO_TERMINATED,
                                           PCRE2_MULTILINE, &err, &off, NULL);
            if (!re) {
                fprintf(stderr, "pattern %zu does not compile: %d\n", p, err);
                return 1;
            }
            pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
            for (char *line = text; *line;) {
                char *end = strchr(line, '\n');
                size_t n = end ? (size_t)(end - line) : strlen(line);
                if (pcre2_match(re, (PCRE2_SPTR)line, n, 0, 0, md, NULL) >= 0)
                    matches++;
                line += n + (end != NULL);
            }
            pcre2_match_data_free(md);
            pcre2_code_free(re);
        }
    }
    printf("%ld matches\n", matches);
    return 0;
}
