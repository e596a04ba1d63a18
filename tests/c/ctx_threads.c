/* Context switches in threads other than the main one: three threads sleep 1 ms at a time
 * (each sleep is a voluntary switch) while the main thread waits in pthread_join (one switch).
 * Usage: ctx_threads SECONDS */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 5;

static void *sleeper(void *arg) {
    (void)arg;
    struct timespec t0, now, d = {0, 1000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        nanosleep(&d, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) seconds = atof(argv[1]);
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, sleeper, NULL);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    return 0;
}
