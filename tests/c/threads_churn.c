/* Threads for hood calls and hood trace: R "requests", each starting T threads at once and
 * joining them; every thread calls work() 100 times and work() calls leaf() once. Exactly
 * R * T * 100 calls of work and of leaf, R * T of worker.
 * Usage: threads_churn T R   (200 1: 200 threads at once; 4 1500: 6,000 threads, 4 at a time) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) void leaf(long i) { sink += i; }

__attribute__((noinline)) void work(long i) { leaf(i); }

__attribute__((noinline)) void *worker(void *arg) {
    for (long i = 0; i < 100; i++)
        work(i + (long)arg);
    return NULL;
}

int main(int argc, char **argv) {
    int t = argc > 1 ? atoi(argv[1]) : 4;
    int r = argc > 2 ? atoi(argv[2]) : 1;
    pthread_t *ids = calloc(t, sizeof *ids);
    if (!ids)
        return 2;
    for (int k = 0; k < r; k++) {
        for (int i = 0; i < t; i++)
            if (pthread_create(&ids[i], NULL, worker, (void *)(long)i) != 0)
                return 3;
        for (int i = 0; i < t; i++)
            pthread_join(ids[i], NULL);
    }
    free(ids);
    return 0;
}
