/* hood trace: main calls leaf() N times and noisy() N times (N from argv, default 10000),
 * then marks, turns tracing off around off_only() and back on, then optionally aborts.
 * Events: leaf and noisy give 2 per call; used for buffer-full, filter and crash tests.
 * Usage: trace_many [N] [abort] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void hood_mark(const char *label) __attribute__((weak));
void hood_trace_on(void) __attribute__((weak));
void hood_trace_off(void) __attribute__((weak));

volatile uint64_t sink;

__attribute__((noinline)) void leaf(void) { sink++; }
__attribute__((noinline)) void noisy(void) { sink += 2; }
__attribute__((noinline)) void off_only(void) { sink += 3; }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    for (int i = 0; i < n; i++)
        leaf();
    for (int i = 0; i < n; i++)
        noisy();
    if (hood_mark)
        hood_mark("phase two");
    if (hood_trace_off)
        hood_trace_off();
    off_only();
    if (hood_trace_on)
        hood_trace_on();
    leaf();
    if (argc > 2 && strcmp(argv[2], "abort") == 0)
        abort();
    return 0;
}
