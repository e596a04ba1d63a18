/* Run a command after this process has grown to MIB mebibytes resident, and report the
   command's ru_maxrss.
   Usage: peaked_launcher MIB OUT PROGRAM ARGS...
   Touches MIB MiB, keeps them, forks and execs PROGRAM, waits, writes the child's wait4
   ru_maxrss (KiB) to the file OUT and exits as PROGRAM did (2 on its own errors).

   Linux starts the child's ru_maxrss at this process's resident size (fork copies it, exec
   keeps the replaced address space's high-water mark), so a program that measures its peak
   with getrusage would measure this launcher's MIB; its own VmHWM starts fresh at exec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: peaked_launcher MIB OUT PROGRAM ARGS...\n");
        return 2;
    }
    size_t bytes = strtoul(argv[1], NULL, 10) << 20;
    char *mem = malloc(bytes);
    if (!mem) {
        perror("peaked_launcher: malloc");
        return 2;
    }
    memset(mem, 1, bytes);
    pid_t pid = fork();
    if (pid < 0) {
        perror("peaked_launcher: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[3], argv + 3);
        perror("peaked_launcher: exec");
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0) {
        perror("peaked_launcher: wait4");
        return 2;
    }
    FILE *f = fopen(argv[2], "w");
    if (!f || fprintf(f, "%ld\n", ru.ru_maxrss) < 0 || fclose(f) != 0) {
        perror("peaked_launcher: writing the result");
        return 2;
    }
    /* Keep the pages resident until the child has ended. */
    volatile char sink = mem[bytes - 1];
    (void)sink;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}
