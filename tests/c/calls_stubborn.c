/* calls_phases.c's program that ignores SIGHUP and SIGTERM: phase 1 calls one() 10 times, then
 * it prints "ready" and waits for a line on stdin (a stop signal does not end the wait); phase
 * 2 calls two() 20 times. */
#include <signal.h>
#include <stdio.h>

int __attribute__((noinline)) one(int i) { __asm__ volatile("" ::: "memory"); return i; }
int __attribute__((noinline)) two(int i) { __asm__ volatile("" ::: "memory"); return i; }
int __attribute__((noinline)) phase(int which) {
    int s = 0;
    for (int i = 0; i < (which == 1 ? 10 : 20); i++) s += which == 1 ? one(i) : two(i);
    return s;
}
int main(void) {
    char line[16];
    signal(SIGHUP, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    phase(1);
    printf("ready\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin)) return 1;
    phase(2);
    return 0;
}
