/* hood.h - C API of the hood-rt runtime (libhood_rt.so / libhood_rt.a).
 *
 * Build a program with -finstrument-functions and either run it under
 * `hood calls run -- ./prog` (which preloads libhood_rt.so) or link libhood_rt.a
 * (add -lpthread -ldl -lm). The hooks below are then called at every function entry
 * and exit; `hood calls get` reads the per-process tables from /dev/shm.
 *
 * Environment (read once at process start): HOOD_SHM_DIR (default /dev/shm),
 * HOOD_MAX_PATHS (16384 per thread), HOOD_MAX_DEPTH (65536), HOOD_MAX_PATH_LEN (256),
 * HOOD_MAX_THREADS (64), HOOD_COMPENSATE=0 (turn overhead compensation off),
 * HOOD_CLOCK=monotonic (use CLOCK_MONOTONIC instead of the TSC), HOOD_DISABLE=1.
 * Trace mode (set by `hood trace record`): HOOD_MODE=trace, HOOD_TRACE_BUFFER (events per
 * thread), HOOD_TRACE_FULL=stream|stop|wrap, HOOD_TRACE_START=off, HOOD_TRACE_FILTER=FILE.
 */
#ifndef HOOD_H
#define HOOD_H

#ifdef __cplusplus
extern "C" {
#endif

#define HOOD_NOINSTR __attribute__((no_instrument_function))

/* Compiler hooks (-finstrument-functions). */
void __cyg_profile_func_enter(void *this_fn, void *call_site) HOOD_NOINSTR;
void __cyg_profile_func_exit(void *this_fn, void *call_site) HOOD_NOINSTR;

/* Explicit instrumentation for code without a compiler hook (e.g. Rust on stable):
 * call hood_enter(f) at the start of f and hood_exit(f) at every return, with the
 * same address f (normally the function's own address). */
void hood_enter(const void *fn) HOOD_NOINSTR;
void hood_exit(const void *fn) HOOD_NOINSTR;

/* Stop / resume recording in this process; a stopped runtime costs one load per hook. */
void hood_disable(void) HOOD_NOINSTR;
void hood_enable(void) HOOD_NOINSTR;

/* 1 when this process is recording, else 0. */
int hood_active(void) HOOD_NOINSTR;

/* Trace mode (`hood trace record`): an inline mark with a label (a string literal; its
 * first 52 bytes are kept), shown as `== label` in the code-path trace. */
void hood_mark(const char *label) HOOD_NOINSTR;

/* Trace mode: bracket the interval of interest (the hardware profiler's start switch).
 * `hood trace record --start-off` starts with tracing off until hood_trace_on(). */
void hood_trace_on(void) HOOD_NOINSTR;
void hood_trace_off(void) HOOD_NOINSTR;

/* Refresh the copy of this process's memory mappings in its segment (after dlopen). */
void hood_sync(void) HOOD_NOINSTR;

#ifdef __cplusplus
}
#endif

#endif /* HOOD_H */
