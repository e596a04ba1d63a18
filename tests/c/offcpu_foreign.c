/* A thread woken by another process, for off-CPU tests of a task session (`-p`): the child
 * blocks reading a pipe in wait_pipe; the parent, renamed "feeder", writes one byte every
 * 3 ms in feed_pipe for SECONDS (default 2). The parent prints the child's pid first, so a
 * test can record the child alone; the child's waits are then ended by a process the
 * recording does not trace. Usage: offcpu_foreign [SECONDS]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) static void wait_pipe(int fd) {
    char c;
    while (read(fd, &c, 1) == 1)
        sink += c;
}

__attribute__((noinline)) static void feed_pipe(int fd, double secs) {
    struct timespec t0, t, pause = {0, 3000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        nanosleep(&pause, NULL);
        if (write(fd, "x", 1) != 1)
            break;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    int p[2];
    if (pipe(p) != 0)
        return 1;
    pid_t child = fork();
    if (child < 0)
        return 1;
    if (child == 0) {
        close(p[1]);
        wait_pipe(p[0]);
        return 0;
    }
    close(p[0]);
    prctl(PR_SET_NAME, "feeder");
    printf("%d\n", (int)child);
    fflush(stdout);
    feed_pipe(p[1], secs);
    close(p[1]);
    int st;
    waitpid(child, &st, 0);
    return 0;
}
