/* Known answer for inlined frames (issue 12): at -O2 the hot work of `mix` is inlined into
 * `outer_loop` (always_inline), which stays a real function (noinline). Every sample of the
 * hot loop must show `mix` as an inlined frame under `outer_loop`, and the loop body's lines
 * must match `addr2line -i`. The marked lines are asserted by the tests. */
#include <stdint.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) uint64_t mix(uint64_t x, uint64_t k)
{
	for (int r = 0; r < 64; r++) {
		x ^= x >> 29;            /* HOT-LINE-A */
		x *= 0xbf58476d1ce4e5b9ull + k;  /* HOT-LINE-B */
		x ^= x >> 32;
	}
	return x;
}

__attribute__((noinline)) uint64_t outer_loop(uint64_t n)
{
	uint64_t acc = 1;
	for (uint64_t i = 0; i < n; i++)
		acc += mix(acc + i, i & 7);   /* CALL-LINE */
	return acc;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], 0, 10) : 2000000;
	volatile uint64_t sink = outer_loop(n);
	(void)sink;
	return 0;
}
