//! Wrappers of the longjmp family, so the runtime knows when a thread left frames without
//! their exit hooks. A longjmp runs no hook; the runtime notices the unwound frames only at the
//! program's next hook, and without the time of the jump it could not tell the time spent in
//! the unwound frames (before the jump) from the time spent in the frame that called setjmp
//! (after it). Each wrapper stores the time in the thread's header (`jump_ticks`) and jumps
//! with the C library's own function, found with `dlsym(RTLD_NEXT)`.
//!
//! They take effect where calls reach them: a preloaded runtime (`hood calls run`, `hood trace
//! record`) or one linked into an executable that uses the shared C library. A program linked
//! fully statically has no `RTLD_NEXT`; docs/calls.md says to link the runtime with the shared
//! C library. C++ exceptions need no wrapper: g++ runs the exit hooks of the frames an
//! exception leaves (they are cleanups), so those calls end with their own hooks.

use core::ffi::{c_int, c_void, CStr};
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::{clock, runtime};

/// The wrapped functions, in the order of [`REAL`].
const NAMES: [&CStr; 4] = [c"longjmp", c"_longjmp", c"siglongjmp", c"__longjmp_chk"];
const LONGJMP: usize = 0;
const UNDERSCORE_LONGJMP: usize = 1;
const SIGLONGJMP: usize = 2;
const LONGJMP_CHK: usize = 3;

/// The C library's functions (0: not looked up yet).
static REAL: [AtomicUsize; 4] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

/// Look every real function up now: `dlsym` takes a lock, and a longjmp out of a signal
/// handler (a shell's SIGINT handler does one) must not be the first to call it. Runs when the
/// runtime is loaded (below), in every process that preloads it, instrumented or not, and
/// again at the runtime's set-up in case a library loaded since then is the one that has them.
pub fn resolve_all() {
    for i in 0..NAMES.len() {
        real(i);
    }
}

extern "C" fn at_load() {
    resolve_all();
}

/// Run [`at_load`] when the dynamic loader (or the C start-up code of a program the runtime
/// is linked into) runs constructors.
#[used]
#[link_section = ".init_array"]
static AT_LOAD: extern "C" fn() = at_load;

fn real(i: usize) -> usize {
    let known = REAL[i].load(Ordering::Relaxed);
    if known != 0 {
        return known;
    }
    // SAFETY: dlsym with a valid NUL-terminated name; RTLD_NEXT searches the objects loaded
    // after this one. It returns null when there is none (a fully static program).
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, NAMES[i].as_ptr()) } as usize;
    REAL[i].store(p, Ordering::Relaxed);
    p
}

/// Note the time of this thread's jump in its slot, if it has one. Only a TLS load, a
/// timestamp and a store: safe in a signal handler.
#[inline(always)]
fn note_jump() {
    if runtime::state_of(runtime::MODE.load(Ordering::Relaxed)) != runtime::READY {
        return;
    }
    let t = runtime::tls_get();
    if (t as usize) <= runtime::NO_SLOT {
        return;
    }
    // SAFETY: a slot pointer above NO_SLOT is this thread's initialised slot in the live
    // segment (set by the runtime's thread set-up); `jump_ticks` is owned by this thread.
    unsafe { (*t).jump_ticks.store(clock::now(), Ordering::Relaxed) };
}

/// Jump with the C library's function `i`; abort when there is none (a fully static
/// program: there is no other way to jump, and returning from a longjmp is not allowed).
fn jump(i: usize, env: *mut c_void, val: c_int) -> ! {
    note_jump();
    let f = real(i);
    if f == 0 {
        // SAFETY: abort has no preconditions.
        unsafe { libc::abort() }
    }
    // SAFETY: `f` is the C library's function of that name, whose type is
    // `void (void *env, int val)` and which never returns; `env` and `val` are the caller's.
    let f: unsafe extern "C" fn(*mut c_void, c_int) -> ! = unsafe { core::mem::transmute(f) };
    // SAFETY: as above.
    unsafe { f(env, val) }
}

/// `longjmp(3)`, timed. See the module documentation.
///
/// # Safety
/// As `longjmp`: `env` was filled by `setjmp` in a frame that is still live.
#[no_mangle]
pub unsafe extern "C" fn longjmp(env: *mut c_void, val: c_int) -> ! {
    jump(LONGJMP, env, val)
}

/// `_longjmp(3)`, timed.
///
/// # Safety
/// As `_longjmp`.
#[no_mangle]
pub unsafe extern "C" fn _longjmp(env: *mut c_void, val: c_int) -> ! {
    jump(UNDERSCORE_LONGJMP, env, val)
}

/// `siglongjmp(3)`, timed.
///
/// # Safety
/// As `siglongjmp`.
#[no_mangle]
pub unsafe extern "C" fn siglongjmp(env: *mut c_void, val: c_int) -> ! {
    jump(SIGLONGJMP, env, val)
}

/// `__longjmp_chk`, which `longjmp` becomes with `_FORTIFY_SOURCE`, timed.
///
/// # Safety
/// As `longjmp`.
#[no_mangle]
pub unsafe extern "C" fn __longjmp_chk(env: *mut c_void, val: c_int) -> ! {
    jump(LONGJMP_CHK, env, val)
}
