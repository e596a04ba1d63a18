/* Known answer: the parent runs parent_work, a forked child renamed "hood_kid" runs
   child_work, both busy for MILLISECONDS. Usage: forker MILLISECONDS */
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void child_work(double end) { while (now() < end) for (int i = 0; i < 100000; i++) sink += i; }
__attribute__((noinline)) void parent_work(double end) { while (now() < end) for (int i = 0; i < 100000; i++) sink += i; }

int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 500;
    double end = now() + ms / 1000.0;
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_NAME, "hood_kid");
        child_work(end);
        _exit(0);
    }
    parent_work(end);
    waitpid(pid, NULL, 0);
    return 0;
}
