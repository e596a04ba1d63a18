/* hood trace: 4 worker threads, thread k calls work() k+1 times, each work() calls leaf()
 * twice; main calls leaf() once. Per-thread counts and nesting are known by construction.
 * A fork at the end: the child calls child_only() 3 times. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

volatile uint64_t sink;

__attribute__((noinline)) void leaf(void) {
    for (int i = 0; i < 1000; i++)
        sink += i;
}

__attribute__((noinline)) void work(void) {
    leaf();
    leaf();
}

__attribute__((noinline)) void child_only(void) { sink++; }

static void *worker(void *arg) {
    intptr_t k = (intptr_t)arg;
    for (intptr_t i = 0; i <= k; i++)
        work();
    return NULL;
}

int main(void) {
    pthread_t t[4];
    leaf();
    for (intptr_t k = 0; k < 4; k++)
        pthread_create(&t[k], NULL, worker, (void *)k);
    for (int k = 0; k < 4; k++)
        pthread_join(t[k], NULL);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 3; i++)
            child_only();
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    return 0;
}
