/* Four threads each call work() N times (work calls leaf() twice); main joins them.
 * Usage: calls_threads [N] */
#include <pthread.h>
#include <stdlib.h>

static long n = 1000;
int __attribute__((noinline)) leaf(int x) { __asm__ volatile("" ::: "memory"); return x + 1; }
int __attribute__((noinline)) work(int x) { return leaf(x) + leaf(x); }
static void *thread_main(void *arg) {
    long s = 0;
    for (long i = 0; i < n; i++) s += work((int)i);
    return (void *)s;
}
int main(int argc, char **argv) {
    pthread_t t[4];
    if (argc > 1) n = atol(argv[1]);
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, thread_main, 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    return 0;
}
