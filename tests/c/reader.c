/* Known answer: a read()-heavy loop; most time is in the kernel copying zeroes from
   /dev/zero. Usage: reader MILLISECONDS */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 16];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void read_loop(int fd, double end) {
    while (now() < end)
        for (int i = 0; i < 16; i++)
            if (read(fd, buf, sizeof buf) < 0) exit(1);
}

int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 1000;
    int fd = open("/dev/zero", O_RDONLY);
    if (fd < 0) return 1;
    read_loop(fd, now() + ms / 1000.0);
    return 0;
}
