/* Loopback UDP known-answer workload for `hood record --labels`.
 * usage: labels_udp SECONDS
 * A receiver ("udp_recv", pinned to CPU 1) reads 64-byte datagrams that a sender
 * ("udp_send", pinned to CPU 0) sends to 127.0.0.1 for SECONDS. On loopback the receive
 * softirq runs inside the sender's sendto(), so perf charges the receive path to the sender;
 * process-labeled profiling must charge it to the receiver. Prints "sent N received M". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
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
    int rs = socket(AF_INET, SOCK_DGRAM, 0);
    int big = 8 << 20;
    setsockopt(rs, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (bind(rs, (struct sockaddr *)&a, sizeof a) < 0) { perror("bind"); return 1; }
    socklen_t al = sizeof a;
    getsockname(rs, (struct sockaddr *)&a, &al);
    pid_t child = fork();
    if (child == 0) {
        prctl(PR_SET_NAME, "udp_recv");
        pin(1);
        char buf[2048];
        long got = 0;
        /* The sender's "END" can be dropped when the buffer is full (a loaded machine): wake
         * up each second and give up a minute after the sending should have ended. */
        struct timeval tv = {1, 0};
        setsockopt(rs, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        double give_up = now() + secs + 60;
        for (;;) {
            ssize_t n = recv(rs, buf, sizeof buf, 0);
            if (n <= 0) {
                if (now() > give_up) break;
                continue;
            }
            if (n == 3 && memcmp(buf, "END", 3) == 0) break;
            got++;
        }
        printf("received %ld\n", got);
        return 0;
    }
    prctl(PR_SET_NAME, "udp_send");
    pin(0);
    int ss = socket(AF_INET, SOCK_DGRAM, 0);
    char msg[64];
    memset(msg, 'x', sizeof msg);
    long sent = 0;
    double end = now() + secs;
    while (now() < end) {
        for (int i = 0; i < 32; i++) {
            if (sendto(ss, msg, sizeof msg, 0, (struct sockaddr *)&a, sizeof a) == sizeof msg) sent++;
        }
    }
    usleep(100000);
    /* "END" until the receiver has read one (it may drain a full buffer first), at most 30 s;
     * then it is ended. */
    int st;
    double stop = now() + 30;
    while (waitpid(child, &st, WNOHANG) != child) {
        if (now() > stop) {
            kill(child, SIGKILL);
            waitpid(child, &st, 0);
            break;
        }
        sendto(ss, "END", 3, 0, (struct sockaddr *)&a, sizeof a);
        usleep(10000);
    }
    printf("sent %ld\n", sent);
    return 0;
}
