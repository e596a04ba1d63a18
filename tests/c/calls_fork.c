/* main calls before() once, forks; the child calls child_work() 7 times and exits; the parent
 * calls parent_work() 5 times after waiting. With an argument, the child execs that program
 * instead (exec starts a fresh table). */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int __attribute__((noinline)) before(void) { __asm__ volatile("" ::: "memory"); return 1; }
int __attribute__((noinline)) child_work(int i) { __asm__ volatile("" ::: "memory"); return i; }
int __attribute__((noinline)) parent_work(int i) { __asm__ volatile("" ::: "memory"); return i; }

int main(int argc, char **argv) {
    before();
    pid_t p = fork();
    if (p == 0) {
        if (argc > 1) { execv(argv[1], argv + 1); _exit(127); }
        for (int i = 0; i < 7; i++) child_work(i);
        exit(0);
    }
    int st;
    waitpid(p, &st, 0);
    for (int i = 0; i < 5; i++) parent_work(i);
    return WEXITSTATUS(st);
}
