/* threads N SECONDS: N threads busy for SECONDS in a 3-deep call chain (built without frame
   pointers by bench/unwind/threads.sh). Used to count the samples a recorder loses when the
   machine is busier than it has CPUs. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double secs;
static volatile unsigned long sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long leaf(unsigned long x) {
    for (int i = 0; i < 100000; i++) x = x * 6364136223846793005UL + 1;
    return x;
}
__attribute__((noinline)) static unsigned long mid(unsigned long x) { return leaf(x) ^ 1; }
__attribute__((noinline)) static void *spin(void *arg) {
    unsigned long x = (unsigned long)arg;
    double end = now() + secs;
    while (now() < end) x = mid(x);
    sink += x;
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 64;
    secs = argc > 2 ? atof(argv[2]) : 5;
    if (n < 1 || n > 4096) return 2;
    pthread_t *t = calloc(n, sizeof *t);
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, spin, (void *)(long)i);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    return 0;
}
