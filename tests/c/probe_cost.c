/* Known times for the compensation of uprobes' cost (`--probe`): built plain (-O1).
 * main calls work() 200 times; each work() spins until its thread has run 100 µs more
 * (CLOCK_THREAD_CPUTIME_ID: on-CPU time, whatever preempts it), then calls tiny() 20 times.
 * Then main calls tiny() 2000 times more. tiny() does nothing. So work's net time (on the
 * CPU, callees out) is 100 µs per call, a little more where the last clock read overshoots,
 * and tiny's close to nothing. */
#include <stdio.h>
#include <time.h>

static long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

void __attribute__((noinline)) tiny(void) { __asm__ volatile("" ::: "memory"); }

int __attribute__((noinline)) work(void) {
    long t0 = cpu_ns();
    while (cpu_ns() - t0 < 100000) {
    }
    for (int i = 0; i < 20; i++) tiny();
    return 1;
}

int main(void) {
    int s = 0;
    for (int i = 0; i < 200; i++) s += work();
    for (int i = 0; i < 2000; i++) tiny();
    printf("%d\n", s);
    return 0;
}
