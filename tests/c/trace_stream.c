/* hood trace streaming: main calls step() N times, step() calls leaf() twice, leaf() spins
 * SPIN iterations. Exactly 6 * N + 2 events: main 1 call, step N calls, leaf 2 * N calls.
 * With PAUSE_EVERY > 0 it sleeps 2 ms after every PAUSE_EVERY steps (a program that leaves
 * the recorder time to keep up even on a loaded machine).
 * Usage: trace_stream N SPIN [PAUSE_EVERY] */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

volatile uint64_t sink;

__attribute__((noinline)) void leaf(int spin) {
    for (int i = 0; i < spin; i++)
        sink++;
}

__attribute__((noinline)) void step(int spin) {
    leaf(spin);
    leaf(spin);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    int spin = argc > 2 ? atoi(argv[2]) : 0;
    long pause = argc > 3 ? atol(argv[3]) : 0;
    struct timespec ts = {0, 2000000};
    for (long i = 0; i < n; i++) {
        step(spin);
        if (pause > 0 && i % pause == pause - 1)
            nanosleep(&ts, NULL);
    }
    return 0;
}
