// Go's own signal handler inside a CPU profile, for the unwinding tests. Usage: sigframe SECONDS.
// The main goroutine, locked to the main thread, sleeps in main.spin under main.deep x 40;
// another goroutine sends that thread SIGUSR1 without pause (signal.Notify, so Go's handler
// runs: runtime.sigtramp.abi0 -> runtime.sigtrampgo -> runtime.sighandler -> ...), on Go's
// alternate signal stack. A sample in the handler continues through Go's trampoline
// (runtime.sigreturn.abi0, the kernel's return address for the handler) into the interrupted
// system call's callers: main.spin -> main.deep x 40 -> main.main -> runtime.main ->
// runtime.goexit.abi0.
package main

import (
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

var sink uint64

// The main thread sleeps in a system call, so most of its time on a CPU is Go's handler.
//
//go:noinline
func spin(end time.Time) {
	ts := syscall.Timespec{Nsec: 1000000}
	for time.Now().Before(end) {
		syscall.Nanosleep(&ts, nil)
	}
}

//go:noinline
func deep(n int, end time.Time) {
	if n == 0 {
		spin(end)
	} else {
		deep(n-1, end)
	}
	sink++
}

func main() {
	runtime.LockOSThread()
	secs, _ := strconv.Atoi(os.Args[1])
	end := time.Now().Add(time.Duration(secs) * time.Second)
	ch := make(chan os.Signal, 1024)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		for range ch {
		}
	}()
	pid, tid := syscall.Getpid(), syscall.Gettid()
	go func() {
		for time.Now().Before(end) {
			syscall.Tgkill(pid, tid, syscall.SIGUSR1)
		}
	}()
	deep(40, end)
}
