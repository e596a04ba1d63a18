/* Known answer for uprobes (`--probe`): built plain (-O1, no instrumentation).
 * Usage: probe_known        main calls leaf() 3 times, twice() 2 times (each calls leaf()
 *                           twice) and fact(5) (5 levels deep), and getpid() 7 times through
 *                           libc; then it forks a child that calls leaf() 4 times and exits.
 *        probe_known loop   prints "ready ADDR" (ADDR: where leaf() is in memory), then calls
 *                           tick() every millisecond, for ever; each tick() calls leaf() 3
 *                           times, and every 100 ticks it prints "ticks N". */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int __attribute__((noinline)) leaf(int x) { __asm__ volatile("" ::: "memory"); return x + 1; }
int __attribute__((noinline)) twice(int x) { return leaf(leaf(x)); }
int __attribute__((noinline)) fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }
int __attribute__((noinline)) tick(int x) { return leaf(x) + leaf(x + 1) + leaf(x + 2); }

int main(int argc, char **argv) {
    int s = 0;
    if (argc > 1 && strcmp(argv[1], "loop") == 0) {
        printf("ready %p\n", (void *)leaf);
        fflush(stdout);
        struct timespec ms = {0, 1000000};
        for (long n = 1;; n++) {
            s += tick((int)n);
            if (n % 100 == 0) {
                printf("ticks %ld\n", n);
                fflush(stdout);
            }
            nanosleep(&ms, NULL);
        }
    }
    for (int i = 0; i < 3; i++) s += leaf(i);
    for (int i = 0; i < 2; i++) s += twice(i);
    s += fact(5);
    for (int i = 0; i < 7; i++) s += (int)getpid() & 1;
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        for (int i = 0; i < 4; i++) s += leaf(i);
        _exit(s & 1);
    }
    waitpid(c, NULL, 0);
    printf("%d\n", s);
    return 0;
}
