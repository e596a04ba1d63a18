//! Owns the runtime preloaded into `-finstrument-functions` programs (its C ABI hooks and
//! segments). May depend on hood-abi and libc only.
//!
//! hood-rt: the runtime that programs built with `-finstrument-functions` link (or get through
//! `LD_PRELOAD=libhood_rt.so`). Per thread it keeps a call stack and a table of unique call
//! paths with calls and own-body time, compensated for its own cost, in a
//! shared-memory segment under /dev/shm that `hood calls get` reads. See docs/calls.md and
//! `include/hood.h`.
//!
//! The hook path (`__cyg_profile_func_enter/exit` after the first call of a process and of a
//! thread) does not allocate, lock, block, make system calls or panic; a disabled runtime
//! costs one load of a process-global flag, before any thread-local access. The first hook of a process and of each thread does the one-time set-up
//! (creating the segment, claiming a thread slot), saving and restoring `errno`.
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod clock;
mod config;
mod filter;
mod hook;
mod index;
mod interpose;
mod runtime;
mod segment;
#[cfg(test)]
mod tests;
mod tls;
mod trace;

use core::ffi::c_void;
use core::sync::atomic::Ordering;

use hood_abi::{CONTROL_OFF, CONTROL_ON, KIND_CONTROL, KIND_ENTRY, KIND_EXIT, KIND_MARK};

/// gcc/clang `-finstrument-functions` entry hook: takes the caller's stack pointer, then runs the
/// entry hook's body.
///
/// # Safety
/// Called by instrumented code with the address of the function being entered.
#[cfg(target_arch = "x86_64")]
#[no_mangle]
#[unsafe(naked)]
pub extern "C" fn __cyg_profile_func_enter(this_fn: *mut c_void, call_site: *mut c_void) {
    // The second argument (the call site, unused) becomes the caller's stack pointer: the
    // stack pointer before the `call`, above its return address.
    core::arch::naked_asm!("lea rsi, [rsp + 8]", "jmp {entry}", entry = sym entry)
}

/// gcc/clang `-finstrument-functions` exit hook.
#[no_mangle]
pub extern "C" fn __cyg_profile_func_exit(this_fn: *mut c_void, _call_site: *mut c_void) {
    exit_hook(this_fn as u64)
}

/// The entry hook as the runtime itself calls it (the overhead calibration): the exported
/// `__cyg_profile_func_enter` is reached through the GOT, and when this library was
/// `dlopen`ed rather than preloaded that resolves to glibc's empty stub.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
extern "C" fn enter_hook(this_fn: *mut c_void, call_site: *mut c_void) {
    core::arch::naked_asm!("lea rsi, [rsp + 8]", "jmp {entry}", entry = sym entry)
}

/// Other architectures: every entry point goes through [`entry_marked`], one function, so
/// that every entry hook measures the stack pointer at the same depth below its caller.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub extern "C" fn __cyg_profile_func_enter(this_fn: *mut c_void, _call_site: *mut c_void) {
    entry_marked(this_fn as u64)
}

#[cfg(not(target_arch = "x86_64"))]
extern "C" fn enter_hook(this_fn: *mut c_void, _call_site: *mut c_void) {
    entry_marked(this_fn as u64)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(never)]
fn entry_marked(func: u64) {
    let marker = 0u8;
    let sp = core::hint::black_box(&marker) as *const u8 as u64;
    entry(func, sp)
}

/// The entry hook's body, with the stack pointer of the instrumented function that called the
/// hook (the longjmp repair compares them, so every entry point must measure it alike: on
/// x86-64 the trampolines above take it exactly, before any of this function's frame).
///
/// The first and only process-global load is [`runtime::MODE`] (state, hook flavour and
/// clock in one word): a disabled runtime (`HOOD_DISABLE=1`, `hood_disable()`, failed set-up)
/// costs that load and returns before any thread-local access. The common paths of both
/// modes (TSC clock, thread set up, ...) are functions of their own reached by a jump, so
/// this dispatch has no frame and the trace path saves no registers; everything else goes to
/// [`hook_other`] by a tail call.
#[inline(never)]
extern "C" fn entry(func: u64, sp: u64) {
    let mode = runtime::MODE.load(Ordering::Relaxed);
    if mode == runtime::FAST_TRACE {
        trace_enter(func, sp)
    } else if mode == runtime::FAST_CALLS {
        calls_enter(func, sp)
    } else if runtime::state_of(mode) != runtime::OFF {
        // Set-up (the first hook of the process, or another thread's while it runs), the
        // monotonic clock, trace mode switched off.
        hook_other(func, KIND_ENTRY, sp)
    }
}

/// The exit hook as the runtime itself calls it (see [`enter_hook`]).
extern "C" fn exit_hook_c(this_fn: *mut c_void, _call_site: *mut c_void) {
    exit_hook(this_fn as u64)
}

/// The body of the exit hook (see [`entry`]; an exit needs no stack pointer).
#[inline(always)]
fn exit_hook(func: u64) {
    let mode = runtime::MODE.load(Ordering::Relaxed);
    if mode == runtime::FAST_TRACE {
        trace_exit(func)
    } else if mode == runtime::FAST_CALLS {
        calls_exit(func)
    } else if runtime::state_of(mode) != runtime::OFF {
        hook_other(func, KIND_EXIT, 0)
    }
}

/// The calls-mode entry of a READY runtime on the TSC: the common path (slot set up, the
/// parent's last-child cache hit, no overrun, reset or unwound frame) in
/// [`hook::enter_fast`]; everything else in [`hook_other`].
#[inline(never)]
extern "C" fn calls_enter(func: u64, sp: u64) {
    let t = runtime::tls_get();
    if (t as usize) <= runtime::NO_SLOT {
        return hook_other(func, KIND_ENTRY, sp);
    }
    let h = runtime::SEG.load(Ordering::Relaxed);
    // SAFETY: READY in calls mode with a slot pointer: `h` is the live calls-mode segment and
    // `t` this thread's initialised slot in it; the clock is the TSC.
    if !unsafe { hook::enter_fast(h, t, func, sp) } {
        hook_other(func, KIND_ENTRY, sp)
    }
}

/// The calls-mode exit of a READY runtime on the TSC (see [`calls_enter`]).
#[inline(never)]
extern "C" fn calls_exit(func: u64) {
    let t = runtime::tls_get();
    if (t as usize) <= runtime::NO_SLOT {
        return hook_other(func, KIND_EXIT, 0);
    }
    let h = runtime::SEG.load(Ordering::Relaxed);
    // SAFETY: as in `calls_enter`.
    if !unsafe { hook::exit_fast(h, t, func) } {
        hook_other(func, KIND_EXIT, 0)
    }
}

/// The trace-mode entry of a recording runtime on the TSC (see [`trace_hook`]).
#[inline(never)]
extern "C" fn trace_enter(func: u64, sp: u64) {
    trace_hook(func, KIND_ENTRY, sp)
}

/// The trace-mode exit of a recording runtime on the TSC (see [`trace_hook`]).
#[inline(never)]
extern "C" fn trace_exit(func: u64) {
    trace_hook(func, KIND_EXIT, 0)
}

/// The trace-mode hook of a recording runtime on the TSC. Its common path (slot set up,
/// function index and filter verdict cached, room in the buffer) makes no call, so it saves
/// no registers; everything else goes to [`hook_other`] by a tail call.
#[inline(always)]
fn trace_hook(func: u64, kind: u64, sp: u64) {
    let t = runtime::tls_get();
    if (t as usize) <= runtime::NO_SLOT {
        return hook_other(func, kind, sp);
    }
    let v = match index::cached(func) {
        Some(v) if v & index::ALLOW != 0 => v,
        Some(_) => return,
        None => return hook_other(func, kind, sp),
    };
    // SAFETY: FAST_TRACE with a slot pointer: `t` is this thread's initialised slot in the
    // live trace-mode segment, and the clock is the TSC.
    if !unsafe { trace::event_fast(t, v, kind) } {
        hook_other(func, kind, sp)
    }
}

/// Every hook the common paths above do not take: the first hook of a process or thread
/// (the hooks become [`runtime::TRACE_ON`] only during set-up), the monotonic clock, a path
/// not in its parent's last-child cache, overruns, resets, unwound frames, a trace function
/// not yet indexed, a full trace buffer.
#[inline(never)]
extern "C" fn hook_other(func: u64, kind: u64, sp: u64) {
    if let Some(s) = runtime::slot() {
        match runtime::hooks() {
            // SAFETY: `s` is this thread's initialised slot in the live segment.
            runtime::CALLS if kind == KIND_ENTRY => unsafe { hook::enter(&s, func, sp) },
            // SAFETY: as above.
            runtime::CALLS => unsafe { hook::exit(&s, func) },
            runtime::TRACE_ON => {
                let v = index::get(s.h, func);
                if v & index::ALLOW != 0 {
                    // SAFETY: as above; trace mode, so the slot holds an event buffer.
                    unsafe { trace::event(&s, v, kind) }
                }
            }
            _ => {}
        }
    }
}

/// Trace mode: record an inline mark (an '=' tag in McRae's traces) with `label`, a NUL-terminated
/// string that stays valid (normally a literal). Does nothing in calls mode.
#[no_mangle]
pub extern "C" fn hood_mark(label: *const libc::c_char) {
    if let Some(s) = runtime::slot() {
        if runtime::hooks() == runtime::TRACE_ON {
            // SAFETY: trace-mode slot of this thread; `label` is the caller's C string.
            unsafe {
                let i = trace::tag_index(s.h, label as *const u8);
                trace::event(&s, i, KIND_MARK);
            }
        }
    }
}

/// Trace mode: start (or resume) recording — the hardware profiler's start switch.
#[no_mangle]
pub extern "C" fn hood_trace_on() {
    if let Some(s) = runtime::slot() {
        if runtime::set_hooks_if(runtime::TRACE_OFF, runtime::TRACE_ON) {
            // SAFETY: trace-mode slot of this thread.
            unsafe { trace::event(&s, CONTROL_ON, KIND_CONTROL) }
        }
    }
}

/// Trace mode: stop recording until `hood_trace_on()`.
#[no_mangle]
pub extern "C" fn hood_trace_off() {
    if let Some(s) = runtime::slot() {
        if runtime::hooks() == runtime::TRACE_ON {
            // SAFETY: trace-mode slot of this thread.
            unsafe { trace::event(&s, CONTROL_OFF, KIND_CONTROL) }
            let _ = runtime::set_hooks_if(runtime::TRACE_ON, runtime::TRACE_OFF);
        }
    }
}

/// Explicit instrumentation (e.g. Rust on stable): call at the start of `func`.
#[cfg(target_arch = "x86_64")]
#[no_mangle]
#[unsafe(naked)]
pub extern "C" fn hood_enter(func: *const c_void) {
    // As `__cyg_profile_func_enter`: the caller's stack pointer as the second argument.
    core::arch::naked_asm!("lea rsi, [rsp + 8]", "jmp {entry}", entry = sym entry)
}

/// Explicit instrumentation (e.g. Rust on stable): call at the start of `func`.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub extern "C" fn hood_enter(func: *const c_void) {
    entry_marked(func as u64)
}

/// Explicit instrumentation: call at every return of `func` (same address as `hood_enter`).
#[no_mangle]
pub extern "C" fn hood_exit(func: *const c_void) {
    exit_hook(func as u64);
}

/// Stop recording in this process (hooks then cost one load of a process-global flag).
#[no_mangle]
pub extern "C" fn hood_disable() {
    runtime::set_enabled(false);
}

/// Resume recording after `hood_disable`.
#[no_mangle]
pub extern "C" fn hood_enable() {
    runtime::set_enabled(true);
}

/// 1 when this process is recording, else 0.
#[no_mangle]
pub extern "C" fn hood_active() -> i32 {
    (runtime::state() == runtime::READY) as i32
}

/// Refresh the copy of the process's mappings in the segment (call after `dlopen`).
#[no_mangle]
pub extern "C" fn hood_sync() {
    runtime::sync();
}
