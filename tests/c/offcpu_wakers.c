/* One waiter thread and one waker thread per wake-up mechanism, for off-CPU waker tests.
 * For each mechanism in turn, 20 rounds: the waiter blocks in wait_MECH, the waker sleeps
 * 5 ms and then wakes it in wake_MECH. Mechanisms: condvar (a condition variable), eventfd,
 * socket (a TCP connection over loopback), timer (a timerfd: the waker is the timer
 * interrupt; wake_timer only arms it). Usage: offcpu_wakers
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 20

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int flag;
static int efd, tfd, sock_a, sock_b;
static sem_t go, done;
static int mech;

static void sleep_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

__attribute__((noinline)) void wait_condvar(void) {
    pthread_mutex_lock(&m);
    while (!flag)
        pthread_cond_wait(&cv, &m);
    flag = 0;
    pthread_mutex_unlock(&m);
}

__attribute__((noinline)) void wake_condvar(void) {
    pthread_mutex_lock(&m);
    flag = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&m);
}

__attribute__((noinline)) void wait_eventfd(void) {
    uint64_t v;
    if (read(efd, &v, sizeof v) != sizeof v)
        abort();
}

__attribute__((noinline)) void wake_eventfd(void) {
    uint64_t v = 1;
    if (write(efd, &v, sizeof v) != sizeof v)
        abort();
}

__attribute__((noinline)) void wait_socket(void) {
    char c;
    if (recv(sock_b, &c, 1, 0) != 1)
        abort();
}

__attribute__((noinline)) void wake_socket(void) {
    char c = 's';
    if (send(sock_a, &c, 1, 0) != 1)
        abort();
}

__attribute__((noinline)) void wait_timer(void) {
    uint64_t n;
    if (read(tfd, &n, sizeof n) != sizeof n)
        abort();
}

__attribute__((noinline)) void wake_timer(void) {
    struct itimerspec its = {{0, 0}, {0, 5000000}};
    timerfd_settime(tfd, 0, &its, NULL);
}

static void (*waits[4])(void) = {wait_condvar, wait_eventfd, wait_socket, wait_timer};
static void (*wakes[4])(void) = {wake_condvar, wake_eventfd, wake_socket, wake_timer};

static void *waker_main(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "waker");
    for (;;) {
        sem_wait(&go);
        if (mech < 0)
            return NULL;
        if (mech != 3)
            sleep_ms(5);
        wakes[mech]();
        sem_wait(&done);
    }
}

static void loopback_pair(void) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &len))
        abort();
    sock_a = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(sock_a, (struct sockaddr *)&a, sizeof a))
        abort();
    sock_b = accept(l, NULL, NULL);
    close(l);
}

int main(void) {
    efd = eventfd(0, 0);
    tfd = timerfd_create(CLOCK_MONOTONIC, 0);
    loopback_pair();
    sem_init(&go, 0, 0);
    sem_init(&done, 0, 0);
    pthread_t w;
    pthread_create(&w, NULL, waker_main, NULL);
    pthread_setname_np(pthread_self(), "waiter");
    for (mech = 0; mech < 4; mech++) {
        for (int r = 0; r < ROUNDS; r++) {
            sem_post(&go);
            waits[mech]();
            sem_post(&done);
        }
    }
    mech = -1;
    sem_post(&go);
    pthread_join(w, NULL);
    return 0;
}
