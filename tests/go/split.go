// A known-answer Go program for the unwinder: the frameless leaf `leaf` is called from
// workA, workB and workC with a 50/30/20 split of its work, so every sample in `leaf` has one
// of them as its caller, then main.main, runtime.main and runtime.goexit. Go emits no
// .eh_frame and compresses .debug_frame; `leaf` pushes no frame pointer, so a frame-pointer
// walk skips its caller.
//
// Usage: split SECONDS
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var sink uint64

// leaf has no locals that need a frame and calls nothing: the compiler gives it no frame.
//
//go:noinline
func leaf(n uint64, s uint64) uint64 {
	for i := uint64(0); i < n; i++ {
		s = s*6364136223846793005 + i
		s ^= s >> 29
	}
	return s
}

//go:noinline
func workA(n uint64) { sink = leaf(5*n, sink) }

//go:noinline
func workB(n uint64) { sink = leaf(3*n, sink) }

//go:noinline
func workC(n uint64) { sink = leaf(2*n, sink) }

func main() {
	secs := 2.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for time.Now().Before(end) {
		workA(20000)
		workB(20000)
		workC(20000)
	}
	fmt.Println(sink)
}
