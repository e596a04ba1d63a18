/* Known answer for hood trace (issue 5): outer() burns 8 ms of CPU, calls inner() which burns
 * 4 ms, then sleeps 15 ms, REPS times. Burning CPU *time* (not wall time) keeps the answer
 * exact on a loaded machine: preemption shows up as off-CPU time, not as net time.
 * Usage: trace_known [REPS] */
#include <stdlib.h>
#include <time.h>

#define NOI __attribute__((no_instrument_function))

void hood_mark(const char *label) __attribute__((weak));

static NOI long cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static NOI void burn(long ns) {
    long end = cpu_ns() + ns;
    while (cpu_ns() < end) {
    }
}

__attribute__((noinline)) void inner(void) { burn(4000000); }

__attribute__((noinline)) void outer(void) {
    burn(8000000);
    inner();
    if (hood_mark)
        hood_mark("before sleep");
    struct timespec d = {0, 15000000};
    nanosleep(&d, NULL);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 10;
    for (int i = 0; i < reps; i++)
        outer();
    return 0;
}
