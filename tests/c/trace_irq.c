/* Irq/softirq workload for `hood trace record` (issue 5, kernel context).
 * usage: trace_irq [ROUNDS]
 * A receiver thread reads 64-byte datagrams from a loopback UDP socket; main runs ROUNDS
 * (default 20) of outer(): send_burst() sends 2000 datagrams to it with sendto(), then spin()
 * burns 5 ms of CPU without system calls. On loopback the receive path runs as a NET_RX softirq
 * inside the sender's sendto() (when the bottom halves are re-enabled), so NET_RX softirqs
 * interrupt send_burst() in the traced main thread; spin() sees only the tick's softirqs.
 * Prints "sent N received M". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int rs, ss;
static struct sockaddr_in dst;
static long received;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *receiver(void *arg) {
    (void)arg;
    char buf[2048];
    for (;;) {
        ssize_t n = recv(rs, buf, sizeof buf, 0);
        if (n <= 0) continue;
        if (n == 3 && memcmp(buf, "END", 3) == 0) break;
        received++;
    }
    return NULL;
}

__attribute__((noinline)) long send_burst(int n) {
    char msg[64];
    memset(msg, 'x', sizeof msg);
    long sent = 0;
    for (int i = 0; i < n; i++)
        if (sendto(ss, msg, sizeof msg, 0, (struct sockaddr *)&dst, sizeof dst) == sizeof msg)
            sent++;
    return sent;
}

__attribute__((noinline)) void spin(double secs) {
    double end = now() + secs;
    volatile unsigned long x = 0;
    while (now() < end)
        for (int i = 0; i < 1000; i++) x += i;
}

__attribute__((noinline)) long outer(void) {
    long s = send_burst(2000);
    spin(0.005);
    return s;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    rs = socket(AF_INET, SOCK_DGRAM, 0);
    int big = 16 << 20;
    setsockopt(rs, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    memset(&dst, 0, sizeof dst);
    dst.sin_family = AF_INET;
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(rs, (struct sockaddr *)&dst, sizeof dst) < 0) { perror("bind"); return 1; }
    socklen_t al = sizeof dst;
    getsockname(rs, (struct sockaddr *)&dst, &al);
    ss = socket(AF_INET, SOCK_DGRAM, 0);
    pthread_t th;
    pthread_create(&th, NULL, receiver, NULL);
    long sent = 0;
    for (int r = 0; r < rounds; r++) sent += outer();
    for (int i = 0; i < 100 && received < sent; i++) usleep(1000);
    sendto(ss, "END", 3, 0, (struct sockaddr *)&dst, sizeof dst);
    pthread_join(th, NULL);
    printf("sent %ld received %ld\n", sent, received);
    return 0;
}
