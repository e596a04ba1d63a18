//! hood-rt: the runtime that programs built with `-finstrument-functions` link (or get through
//! `LD_PRELOAD=libhood_rt.so`). Per thread it keeps a call stack and a table of unique call
//! paths with calls and own-body time, compensated for its own cost (seed 000 §3.5.3), in a
//! shared-memory segment under /dev/shm that `hood calls get` reads. See docs/calls.md and
//! `include/hood.h`.
//!
//! The hook path (`__cyg_profile_func_enter/exit` after the first call of a process and of a
//! thread) does not allocate, lock, block, make system calls or panic; a disabled runtime
//! costs one load. The first hook of a process and of each thread does the one-time set-up
//! (creating the segment, claiming a thread slot), saving and restoring `errno`.

mod clock;
mod config;
mod hook;
mod runtime;
mod segment;

use core::ffi::c_void;

/// gcc/clang `-finstrument-functions` entry hook.
///
/// # Safety
/// Called by instrumented code with the address of the function being entered.
#[no_mangle]
pub extern "C" fn __cyg_profile_func_enter(this_fn: *mut c_void, _call_site: *mut c_void) {
    if let Some(s) = runtime::slot() {
        // SAFETY: `s` is this thread's initialised slot in the live segment.
        unsafe { hook::enter(&s, this_fn as u64) }
    }
}

/// gcc/clang `-finstrument-functions` exit hook.
#[no_mangle]
pub extern "C" fn __cyg_profile_func_exit(this_fn: *mut c_void, _call_site: *mut c_void) {
    if let Some(s) = runtime::slot() {
        // SAFETY: `s` is this thread's initialised slot in the live segment.
        unsafe { hook::exit(&s, this_fn as u64) }
    }
}

/// Explicit instrumentation (e.g. Rust on stable): call at the start of `func`.
#[no_mangle]
pub extern "C" fn hood_enter(func: *const c_void) {
    __cyg_profile_func_enter(func as *mut c_void, core::ptr::null_mut());
}

/// Explicit instrumentation: call at every return of `func` (same address as `hood_enter`).
#[no_mangle]
pub extern "C" fn hood_exit(func: *const c_void) {
    __cyg_profile_func_exit(func as *mut c_void, core::ptr::null_mut());
}

/// Stop recording in this process (hooks then cost one load).
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
    (runtime::STATE.load(core::sync::atomic::Ordering::Relaxed) == runtime::READY) as i32
}

/// Refresh the copy of the process's mappings in the segment (call after `dlopen`).
#[no_mangle]
pub extern "C" fn hood_sync() {
    runtime::sync();
}
