/* Many short processes under hood trace: main forks N children one after another; each child
 * calls work() 1000 times and exits at once (_exit: no exit handlers), so most are gone before
 * the recorder first looks at them. Usage: trace_forks N */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void work(int i) { sink += i; }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 50;
    for (int c = 0; c < n; c++) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            for (int i = 0; i < 1000; i++)
                work(i);
            _exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 1;
    }
    return 0;
}
