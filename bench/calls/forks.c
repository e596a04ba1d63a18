/* forks N PROG ARGS...: run PROG ARGS N times, one after another, each in a new process
 * (fork + exec), waiting for each. Built with -finstrument-functions by bench/calls/procs.sh so
 * that both recorders trace the driver as well as every program it starts: what a build, a
 * test suite or a shell script is to hood calls and hood trace. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: forks N PROG ARGS...\n");
        return 2;
    }
    int n = atoi(argv[1]);
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            execv(argv[2], argv + 2);
            perror(argv[2]);
            _exit(127);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "forks: run %d of %s failed\n", i, argv[2]);
            return 1;
        }
    }
    return 0;
}
