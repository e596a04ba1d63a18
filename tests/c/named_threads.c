/* A process whose threads have names of their own: main (named after the program) and two
   threads it names "worker", all three busy. Usage: named_threads MILLISECONDS */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static double end;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(void) { while (now() < end) for (int i = 0; i < 100000; i++) sink += i; }

static void *worker(void *arg) { (void)arg; spin(); return NULL; }

int main(int argc, char **argv) {
    end = now() + (argc > 1 ? atof(argv[1]) : 1000) / 1000.0;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        pthread_create(&t[i], NULL, worker, NULL);
        pthread_setname_np(t[i], "worker");
    }
    spin();
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return 0;
}
