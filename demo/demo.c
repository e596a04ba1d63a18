/* hood's bundled demo workload: a little of everything a profile should show.
   - compute: three functions whose own time is 50/30/20 by construction
   - kernel:  read() from /dev/zero (time in the kernel's read path)
   - a forked child named "demo_child" doing its own work
   Usage: demo [SECONDS] (default 3) */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static char buf[1 << 16];

__attribute__((noinline)) void consume(unsigned long x) { sink += x; }

#define WORK(name, k)                                                          \
    __attribute__((noinline, aligned(64))) void name(unsigned long n) {        \
        unsigned long x = n;                                                   \
        for (unsigned long i = 0; i < (k) * n; i++)                            \
            x = x * 6364136223846793005UL + 1442695040888963407UL;             \
        consume(x);                                                            \
    }

WORK(crunch_numbers, 5)
WORK(parse_input, 3)
WORK(format_output, 2)
WORK(child_task, 4)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void read_zeroes(int fd) {
    for (int i = 0; i < 40; i++)
        if (read(fd, buf, sizeof buf) < 0) exit(1);
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 3;
    double end = now() + secs;
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_NAME, "demo_child");
        while (now() < end) child_task(20000);
        _exit(0);
    }
    int fd = open("/dev/zero", O_RDONLY);
    while (now() < end) {
        crunch_numbers(20000);
        parse_input(20000);
        format_output(20000);
        if (fd >= 0) read_zeroes(fd);
    }
    waitpid(pid, NULL, 0);
    return 0;
}
