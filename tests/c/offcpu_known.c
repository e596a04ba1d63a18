/* Known-answer workload for off-CPU profiling (hood record --off-cpu).
 *
 * One thread, "worker", repeats a 100 ms cycle of five phases, each its own function:
 *   spin_phase   ~20 ms on the CPU
 *   sleep_phase  ~30 ms in nanosleep (woken by a timer)
 *   pipe_phase   ~20 ms reading a pipe that the thread "feeder" writes to (in feed_pipe)
 *                after sleeping 20 ms
 *   mutex_phase  ~20 ms waiting for a mutex that the thread "holder" holds (in hold_mutex)
 *                for 20 ms
 *   fsync_phase  writing 256 KiB to a file and fsync()ing it (as long as the disk takes)
 * The program measures the time the worker spends in each phase itself (CLOCK_MONOTONIC
 * around each call) and prints, at the end:
 *   worker TID
 *   feeder TID
 *   holder TID
 *   phase NAME NS          (once per phase)
 *   lifetime NS            (the worker's, from its first to its last instruction)
 *   schedstat RUN WAIT     (the worker's /proc/thread-self/schedstat at its end: ns on a CPU
 *                           and ns runnable waiting for one)
 * Usage: offcpu_known [CYCLES (default 20)] [FILE (default ./offcpu_known.fsync)]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int pipefd[2];
static sem_t feed_go, hold_go, held;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static const char *fsync_path;
static char block[256 * 1024];
static pid_t tids[3];

static uint64_t now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

__attribute__((noinline)) void feed_pipe(void) {
    char c = 'x';
    if (write(pipefd[1], &c, 1) != 1)
        abort();
}

static void *feeder_main(void *arg) {
    (void)arg;
    tids[1] = (pid_t)syscall(SYS_gettid);
    pthread_setname_np(pthread_self(), "feeder");
    for (;;) {
        sem_wait(&feed_go);
        if (stop)
            return NULL;
        sleep_ms(20);
        feed_pipe();
    }
}

__attribute__((noinline)) void hold_mutex(void) {
    pthread_mutex_lock(&lock);
    sem_post(&held);
    sleep_ms(20);
    pthread_mutex_unlock(&lock);
}

static void *holder_main(void *arg) {
    (void)arg;
    tids[2] = (pid_t)syscall(SYS_gettid);
    pthread_setname_np(pthread_self(), "holder");
    for (;;) {
        sem_wait(&hold_go);
        if (stop)
            return NULL;
        hold_mutex();
    }
}

__attribute__((noinline)) void spin_phase(void) {
    uint64_t end = now() + 20000000u;
    volatile uint64_t x = 0;
    while (now() < end)
        x++;
}

__attribute__((noinline)) void sleep_phase(void) { sleep_ms(30); }

__attribute__((noinline)) void pipe_phase(void) {
    char c;
    sem_post(&feed_go);
    if (read(pipefd[0], &c, 1) != 1)
        abort();
}

__attribute__((noinline)) void mutex_phase(void) {
    sem_post(&hold_go);
    sem_wait(&held);
    pthread_mutex_lock(&lock);
    pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) void fsync_phase(void) {
    int fd = open(fsync_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror(fsync_path);
        exit(2);
    }
    if (write(fd, block, sizeof block) != (ssize_t)sizeof block)
        abort();
    fsync(fd);
    close(fd);
}

#define PHASES 5
static const char *names[PHASES] = {"spin_phase", "sleep_phase", "pipe_phase", "mutex_phase",
                                    "fsync_phase"};
static void (*phases[PHASES])(void) = {spin_phase, sleep_phase, pipe_phase, mutex_phase,
                                       fsync_phase};
static uint64_t spent[PHASES];
static uint64_t lifetime;
static unsigned long long sched_run, sched_wait;

static void *worker_main(void *arg) {
    int cycles = *(int *)arg;
    uint64_t t0 = now();
    tids[0] = (pid_t)syscall(SYS_gettid);
    pthread_setname_np(pthread_self(), "worker");
    for (int c = 0; c < cycles; c++) {
        for (int p = 0; p < PHASES; p++) {
            uint64_t a = now();
            phases[p]();
            spent[p] += now() - a;
        }
    }
    lifetime = now() - t0;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (f) {
        if (fscanf(f, "%llu %llu", &sched_run, &sched_wait) != 2)
            sched_run = sched_wait = 0;
        fclose(f);
    }
    return NULL;
}

int main(int argc, char **argv) {
    uint64_t start = now(); /* CLOCK_MONOTONIC: lets a bench clip a peer's view to this run */
    int cycles = argc > 1 ? atoi(argv[1]) : 20;
    fsync_path = argc > 2 ? argv[2] : "./offcpu_known.fsync";
    memset(block, 'h', sizeof block);
    if (pipe(pipefd) != 0)
        return 1;
    sem_init(&feed_go, 0, 0);
    sem_init(&hold_go, 0, 0);
    sem_init(&held, 0, 0);
    pthread_t f, h, w;
    pthread_create(&f, NULL, feeder_main, NULL);
    pthread_create(&h, NULL, holder_main, NULL);
    pthread_create(&w, NULL, worker_main, &cycles);
    pthread_join(w, NULL);
    stop = 1;
    sem_post(&feed_go);
    sem_post(&hold_go);
    pthread_join(f, NULL);
    pthread_join(h, NULL);
    unlink(fsync_path);
    printf("start %llu\n", (unsigned long long)start);
    printf("worker %d\nfeeder %d\nholder %d\n", tids[0], tids[1], tids[2]);
    for (int p = 0; p < PHASES; p++)
        printf("phase %s %llu\n", names[p], (unsigned long long)spent[p]);
    printf("lifetime %llu\n", (unsigned long long)lifetime);
    printf("schedstat %llu %llu\n", sched_run, sched_wait);
    return 0;
}
