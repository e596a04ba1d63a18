/* Two busy threads pinned to one CPU, so that each is preempted by the other again and again
 * (the known answer of `hood report --intervals`: a per-thread timer stops while its thread
 * is off the CPU, and those gaps are not late samples). The main thread pins itself to the
 * first CPU it may run on, starts both (they inherit the pinning) and waits.
 * Usage: pinned_pair SECONDS */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 2;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *spin(void *arg) {
    (void)arg;
    volatile unsigned long n = 0;
    double end = now() + seconds;
    while (now() < end)
        for (int i = 0; i < 10000; i++) n++;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) seconds = atof(argv[1]);
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return 2;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed)) {
            CPU_SET(c, &one);
            printf("pinned to CPU %d\n", c);
            break;
        }
    if (sched_setaffinity(0, sizeof one, &one) != 0) return 2;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, spin, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return 0;
}
