//! The calling thread's slot pointer, read on every hook.
//!
//! Rust's `thread_local!` in a shared library uses the general-dynamic TLS model: every access
//! calls `__tls_get_addr`, which cost several ns per hook. On x86-64 the slot pointer instead
//! lives in an 8-byte `.tbss` variable defined below and read with the initial-exec model (one
//! GOT load and one `%fs`-relative load; the linker relaxes it to local-exec when the runtime
//! is linked into an executable). Initial-exec TLS in a shared object needs static TLS space:
//! a preloaded library gets it at start, a `dlopen`ed one from glibc's surplus (8 bytes here).
//! Other architectures keep `thread_local!`.

use hood_abi::ThreadHeader;

#[cfg(target_arch = "x86_64")]
mod imp {
    use hood_abi::ThreadHeader;

    // One pointer of thread-local storage, zero (null) in every new thread. Hidden: resolved
    // inside this library, never exported or interposed.
    core::arch::global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 3",
        ".globl hood_rt_thread_slot",
        ".hidden hood_rt_thread_slot",
        ".type hood_rt_thread_slot,@object",
        ".size hood_rt_thread_slot,8",
        "hood_rt_thread_slot:",
        ".zero 8",
        ".popsection",
        options(att_syntax)
    );

    /// This thread's value.
    #[inline(always)]
    pub fn get() -> *mut ThreadHeader {
        let v: usize;
        // SAFETY: initial-exec access to the 8-byte TLS variable defined above: the GOT entry
        // holds its offset from the thread pointer (%fs base); the load reads only this
        // thread's storage and has no other effects.
        unsafe {
            core::arch::asm!(
                "movq hood_rt_thread_slot@GOTTPOFF(%rip), {v}",
                "movq %fs:({v}), {v}",
                v = out(reg) v,
                options(att_syntax, nostack, pure, readonly, preserves_flags)
            );
        }
        v as *mut ThreadHeader
    }

    /// Set this thread's value.
    #[inline(always)]
    pub fn set(p: *mut ThreadHeader) {
        // SAFETY: as in `get`; the store writes only this thread's 8 bytes of TLS.
        unsafe {
            core::arch::asm!(
                "movq hood_rt_thread_slot@GOTTPOFF(%rip), {off}",
                "movq {p}, %fs:({off})",
                off = out(reg) _,
                p = in(reg) p as usize,
                options(att_syntax, nostack, preserves_flags)
            );
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    use core::cell::Cell;
    use hood_abi::ThreadHeader;

    /// Marker for threads whose TLS is being destroyed (same as runtime::NO_SLOT).
    const NO_SLOT: usize = 1;

    thread_local! {
        static TLS: Cell<*mut ThreadHeader> = const { Cell::new(core::ptr::null_mut()) };
    }

    /// This thread's value.
    #[inline(always)]
    pub fn get() -> *mut ThreadHeader {
        TLS.try_with(|c| c.get())
            .unwrap_or(NO_SLOT as *mut ThreadHeader)
    }

    /// Set this thread's value.
    pub fn set(p: *mut ThreadHeader) {
        let _ = TLS.try_with(|c| c.set(p));
    }
}

/// This thread's slot pointer (null = not yet set up, `runtime::NO_SLOT` = none).
#[inline(always)]
pub fn get() -> *mut ThreadHeader {
    imp::get()
}

/// Set this thread's slot pointer.
#[inline(always)]
pub fn set(p: *mut ThreadHeader) {
    imp::set(p)
}
