/* A process whose threads end long before it does (issue 27): three threads each burn
 * 200 ms of CPU (their own CPU clock) and are joined; the program prints its pid and
 * "joined", waits for a line on stdin, then its main thread burns 100 ms and it exits. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static void burn(clockid_t clock, long ms) {
    struct timespec t;
    volatile unsigned long x = 0;
    for (;;) {
        for (int i = 0; i < 10000; i++) x += i;
        clock_gettime(clock, &t);
        if (t.tv_sec * 1000 + t.tv_nsec / 1000000 >= ms) return;
    }
}

static void *worker(void *arg) {
    (void)arg;
    burn(CLOCK_THREAD_CPUTIME_ID, 200);
    return NULL;
}

int main(void) {
    pthread_t t[3];
    char line[16];
    printf("%d\n", (int)getpid());
    fflush(stdout);
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("joined\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
        return 1;
    burn(CLOCK_THREAD_CPUTIME_ID, 100);
    return 0;
}
