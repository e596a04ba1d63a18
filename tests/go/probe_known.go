// Known answer for entry-only probes on a Go program (`--probe main.leaf --probe main.deep`):
// main calls leaf 1000 times, then starts 4 goroutines that each call deep(2000) (2001 calls
// of deep, one per level, with a frame large enough that the goroutine's stack grows and is
// copied several times on the way down: what a return probe's changed return address would
// not survive) and leaf 10 times. Counts: leaf 1040, deep 8004. It prints its sum, the same
// probed or not.
package main

import (
	"fmt"
	"sync"
)

//go:noinline
func leaf(x int) int { return x*3 + 1 }

//go:noinline
func deep(n int) int {
	var pad [256]byte
	pad[n%256] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return deep(n-1) + int(pad[n%256])
}

func main() {
	s := 0
	for i := 0; i < 1000; i++ {
		s += leaf(i)
	}
	var wg sync.WaitGroup
	sums := make([]int, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			t := deep(2000)
			for i := 0; i < 10; i++ {
				t += leaf(i + g)
			}
			sums[g] = t
		}(g)
	}
	wg.Wait()
	for _, t := range sums {
		s += t
	}
	fmt.Println(s)
}
