/* Run a command as a child of this small process and write the child's own peak RSS.
   Usage: peak_rss OUT PROGRAM ARGS...
   Writes "MAXRSS_KIB WAIT_STATUS\n" to the file OUT once PROGRAM ends, then ends as it did
   (its exit status, or the signal that killed it). If this process is killed, so is PROGRAM.

   Why a process between: Linux starts a child's ru_maxrss at the peak RSS of the process
   that spawned it (exec takes the old address space's high-water mark, after fork and after
   vfork alike), so a command spawned straight from a test binary that has grown to 100 MB
   measures at least 100 MB. Spawned from here, it starts at this program's few pages. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: peak_rss OUT PROGRAM ARGS...\n");
        return 2;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("peak_rss: fork");
        return 2;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        execvp(argv[2], argv + 2);
        perror("peak_rss: exec");
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    while (wait4(pid, &st, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("peak_rss: wait4");
            return 2;
        }
    }
    FILE *f = fopen(argv[1], "w");
    if (!f || fprintf(f, "%ld %d\n", ru.ru_maxrss, st) < 0 || fclose(f) != 0) {
        perror("peak_rss: writing the result");
        return 2;
    }
    if (WIFSIGNALED(st)) {
        signal(WTERMSIG(st), SIG_DFL);
        raise(WTERMSIG(st));
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}
