/* Loopback TCP workload for `hood record --labels`.
 * usage: labels_tcp SECONDS
 * "tcp_send" (CPU 0) streams 1 KiB writes to "tcp_recv" (CPU 1) over 127.0.0.1. Data segments
 * are received for the reader; the ACKs coming back serve the sender. Prints "received N". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 1) < 0) { perror("listen"); return 1; }
    socklen_t al = sizeof a;
    getsockname(ls, (struct sockaddr *)&a, &al);
    pid_t child = fork();
    if (child == 0) {
        prctl(PR_SET_NAME, "tcp_recv");
        pin(1);
        int c = accept(ls, NULL, NULL);
        char buf[65536];
        long got = 0;
        ssize_t n;
        while ((n = read(c, buf, sizeof buf)) > 0) got += n;
        printf("received %ld\n", got);
        return 0;
    }
    prctl(PR_SET_NAME, "tcp_send");
    pin(0);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) { perror("connect"); return 1; }
    char msg[1024];
    memset(msg, 'x', sizeof msg);
    double end = now() + secs;
    while (now() < end)
        if (write(s, msg, sizeof msg) < 0) { perror("write"); return 1; }
    close(s);
    int st;
    waitpid(child, &st, 0);
    return 0;
}
