//! The frame-by-frame walk: framehop's rules, plus the signal frames it does not step through.

use framehop::x86_64::UnwindRegsX86_64;
use framehop::{Error as FhError, FrameAddress, Unwinder as _};

use crate::space::{Space, Unwinder};
use crate::{Truncation, UserRegs, MAX_FRAMES};

/// Offsets from the stack pointer at a signal trampoline (just past the handler's return
/// address, i.e. at the kernel's `struct ucontext`) to the saved registers: `uc_mcontext`
/// starts 40 bytes in (flags, link, `stack_t`), and in x86-64's `struct sigcontext` rbp, rsp
/// and rip are the 11th, 16th and 17th words.
const UC_MCONTEXT: u64 = 40;
const SC_RBP: u64 = UC_MCONTEXT + 10 * 8;
const SC_RSP: u64 = UC_MCONTEXT + 15 * 8;
const SC_RIP: u64 = UC_MCONTEXT + 16 * 8;

/// Reads 8-byte words of the stack copy, remembering the first address it could not serve.
struct StackReader<'a> {
    base: u64,
    bytes: &'a [u8],
}

impl StackReader<'_> {
    fn read(&self, addr: u64) -> Result<u64, ()> {
        let off = usize::try_from(addr.checked_sub(self.base).ok_or(())?).map_err(|_| ())?;
        let b = self
            .bytes
            .get(off..off.checked_add(8).ok_or(())?)
            .ok_or(())?;
        Ok(u64::from_le_bytes(b.try_into().map_err(|_| ())?))
    }

    /// One past the last copied byte.
    fn end(&self) -> u64 {
        self.base.saturating_add(self.bytes.len() as u64)
    }
}

/// Unwind `pid`'s stack; see [`Unwinder::unwind`].
pub(crate) fn walk(
    u: &mut Unwinder,
    pid: u32,
    regs: UserRegs,
    stack: &[u8],
    out: &mut Vec<u64>,
) -> Option<Truncation> {
    out.push(regs.ip);
    let Unwinder {
        spaces,
        cache,
        stats,
        other_stack_at,
        ..
    } = u;
    *other_stack_at = None;
    let Some(space) = spaces.get(pid) else {
        return Some(Truncation::NotMapped);
    };
    let reader = StackReader {
        base: regs.sp,
        bytes: stack,
    };
    let read = |a: u64| reader.read(a);
    let mut read_mut = read;
    let mut r = UnwindRegsX86_64::new(regs.ip, regs.sp, regs.bp);
    let mut addr = FrameAddress::from_instruction_pointer(regs.ip);
    let first = out.len() - 1;
    loop {
        if out.len() - first >= MAX_FRAMES {
            return Some(Truncation::TooDeep);
        }
        if (addr.is_return_address() && is_sigreturn(space, addr.address()))
            || (!addr.is_return_address() && in_go_restorer(space, addr.address()))
        {
            stats.signal_frames += 1;
            // The handler "returns" to the trampoline's first instruction (the kernel pushed
            // `sa_restorer`), not after a call: stored plus one so a reader's `address - 1`
            // names `__restore_rt` rather than the bytes before it (where the trampoline's
            // call frame information starts, one byte early, for unwinders that subtract one).
            if out.len() - 1 > first {
                if let Some(last) = out.last_mut() {
                    *last = addr.address().wrapping_add(1);
                }
            }
            let sp = r.sp();
            let saved = (|| {
                Some((
                    read(sp.checked_add(SC_RIP)?).ok()?,
                    read(sp.checked_add(SC_RSP)?).ok()?,
                    read(sp.checked_add(SC_RBP)?).ok()?,
                ))
            })();
            let Some((ip, new_sp, bp)) = saved else {
                return Some(Truncation::StackCopyTooSmall);
            };
            r = UnwindRegsX86_64::new(ip, new_sp, bp);
            // The interrupted instruction itself, not a return address: stored plus one so a
            // reader's `address - 1` finds it.
            let trampoline = out.len() - 1;
            out.push(ip.wrapping_add(1));
            addr = FrameAddress::from_instruction_pointer(ip);
            if new_sp < reader.base || new_sp >= reader.end() {
                // The interrupted code ran on another stack than the handler (an alternate
                // signal stack, as Go's handlers always use) or beyond the copy: none of its
                // frames were copied. The caller may go on with the kernel's frame-pointer
                // chain from the frame above the trampoline.
                *other_stack_at = Some(trampoline);
                return Some(Truncation::StackCopyTooSmall);
            }
            continue;
        }
        if addr.is_return_address()
            && space
                .lookup(addr.address_for_lookup())
                .is_some_and(|m| m.image.is_none())
        {
            // JIT code (no unwind information anywhere): the perf-map trampolines of
            // `python3 -X perf`, V8, LuaJIT. Frame pointer first, then a short scan.
            match jit_step(space, &mut r, &read) {
                Some(ra) => {
                    stats.jit_steps += 1;
                    out.push(ra);
                    match FrameAddress::from_return_address(ra) {
                        Some(next) => addr = next,
                        None => return Some(Truncation::NoUnwindInfo),
                    }
                    continue;
                }
                None => return Some(Truncation::NoUnwindInfo),
            }
        }
        if !addr.is_return_address() && before_thread_start(space, addr) {
            // A thread's first instructions after clone3/clone returned in it, or the
            // parent's way back out of the same instructions: nothing is pushed there, so the
            // return address, if any, is the word at the stack pointer.
            let sp = r.sp();
            let Some(ra) = read(sp).ok().filter(|&ra| returns_into_code(space, ra)) else {
                // The new thread: its stack holds no caller, this is its root.
                return None;
            };
            let Some(next) = FrameAddress::from_return_address(ra) else {
                return Some(Truncation::Failed);
            };
            r = UnwindRegsX86_64::new(ra, sp.wrapping_add(8), r.bp());
            out.push(ra);
            addr = next;
            continue;
        }
        if let Some(i) = uncovered(space, addr) {
            // Code of an ELF image that its call frame information leaves out. framehop would
            // take the word at the stack pointer for the return address of a first frame
            // (right only at a function's first instruction); such code that keeps a frame
            // pointer is stepped out of by it, and the walk goes on with the rules of
            // whatever code it returns to.
            if i.is_entry {
                return None;
            }
            match fp_step(space, &mut r, &read, !addr.is_return_address()) {
                Ok(ra) => {
                    stats.fp_steps += 1;
                    out.push(ra);
                    match FrameAddress::from_return_address(ra) {
                        Some(next) => addr = next,
                        None => return Some(Truncation::NoUnwindInfo),
                    }
                    continue;
                }
                Err(t) => return Some(t),
            }
        }
        match space.fh.unwind_frame(addr, &mut r, cache, &mut read_mut) {
            Ok(Some(ra)) => match FrameAddress::from_return_address(ra) {
                Some(next) => {
                    if at_entry(space, addr) {
                        return None;
                    }
                    if space.lookup(ra.wrapping_sub(1)).is_none() {
                        // A "return address" outside every mapping is a wrong guess (a frame
                        // pointer walk through code that keeps none): stop before it.
                        return Some(classify_stop(space, addr));
                    }
                    out.push(ra);
                    addr = next;
                }
                None => return ended(space, addr),
            },
            Ok(None) => return ended(space, addr),
            Err(_) if at_entry(space, addr) => return None,
            Err(FhError::CouldNotReadStack(a)) if a >= reader.end() => {
                return Some(Truncation::StackCopyTooSmall)
            }
            Err(_) => return Some(classify_stop(space, addr)),
        }
    }
}

/// Step out of a frame of code that has no unwind information at all (JIT code in anonymous
/// memory). First as code that keeps a frame pointer (`push rbp; mov rbp, rsp`), accepted
/// when the return address it finds lies in mapped code; then by looking for a return
/// address in the first words above the stack pointer, accepted only when it lies in an ELF
/// image with call frame information, which unwinding then continues from and so checks.
/// The scan tries the word a `sub rsp, 8; call` trampoline leaves first (CPython 3.12's perf
/// trampoline without frame pointers).
fn jit_step(
    space: &Space,
    r: &mut UnwindRegsX86_64,
    read: &impl Fn(u64) -> Result<u64, ()>,
) -> Option<u64> {
    let (sp, bp) = (r.sp(), r.bp());
    let in_code = |ra: u64| ra > 1 && space.lookup(ra - 1).is_some();
    let in_cfi = |ra: u64| {
        ra > 1
            && space
                .lookup(ra - 1)
                .is_some_and(|m| m.image.as_ref().is_some_and(|i| i.has_cfi()))
    };
    if bp > sp && bp - sp < (1 << 20) {
        if let (Ok(ra), Ok(next_bp)) = (read(bp.wrapping_add(8)), read(bp)) {
            if in_code(ra) {
                *r = UnwindRegsX86_64::new(ra, bp + 16, next_bp);
                return Some(ra);
            }
        }
    }
    for off in [8u64, 0, 16, 24, 32, 40, 48, 56] {
        let Ok(ra) = read(sp.wrapping_add(off)) else {
            continue;
        };
        if in_cfi(ra) {
            *r = UnwindRegsX86_64::new(ra, sp + off + 8, bp);
            return Some(ra);
        }
    }
    None
}

/// What [`uncovered`] knows of a frame in code its image's call frame information leaves out.
struct Uncovered {
    /// The frame is the process's entry point (`_start` of a binary without CFI).
    is_entry: bool,
}

/// The frame at `addr` is in an ELF image's code that no call frame information describes:
/// an image without any, or code its `.eh_frame` leaves out (V8's builtins embedded in
/// node, hand-written assembly).
fn uncovered(space: &Space, addr: FrameAddress) -> Option<Uncovered> {
    let look = addr.address_for_lookup();
    let m = space.lookup(look)?;
    let image = m.image.as_ref()?;
    let svma = look.wrapping_sub(m.bias);
    (!image.covers(svma)).then(|| Uncovered {
        is_entry: image.is_entry(svma),
    })
}

/// Farthest a frame pointer may lie above the stack pointer in a frame-pointer step (beyond
/// it the register holds something else).
const MAX_FRAME_BYTES: u64 = 1 << 20;

/// Step out of a frame of code without call frame information by its frame pointer
/// (`push rbp; mov rbp, rsp`: the caller's frame pointer at `[rbp]`, the return address at
/// `[rbp + 8]`), where such a step is plausible: the frame pointer at or above the stack
/// pointer and within [`MAX_FRAME_BYTES`] of it, the words it points at inside the copy, and
/// the return address in mapped code and not a function's first instruction. A first frame
/// (the interrupted instruction) where that fails may be at a function's first
/// instruction, before it pushed anything: its return address is then the word at the
/// stack pointer, accepted only when it returns into code that call frame information
/// describes (so the walk on checks it). Otherwise the stack stops there, marked: the copy
/// ended where the frame pointer pointed, or the code has no unwind information.
fn fp_step(
    space: &Space,
    r: &mut UnwindRegsX86_64,
    read: &impl Fn(u64) -> Result<u64, ()>,
    first: bool,
) -> Result<u64, Truncation> {
    let (sp, bp) = (r.sp(), r.bp());
    let plausible_ra = |ra: u64| {
        ra > 1
            && space.lookup(ra - 1).is_some_and(|m| {
                m.image
                    .as_ref()
                    .is_none_or(|i| !i.fde_starts_at(ra.wrapping_sub(m.bias)))
            })
    };
    let mut beyond_copy = false;
    if bp >= sp && bp - sp < MAX_FRAME_BYTES {
        match (read(bp.wrapping_add(8)), read(bp)) {
            (Ok(ra), Ok(next_bp)) if plausible_ra(ra) => {
                *r = UnwindRegsX86_64::new(ra, bp + 16, next_bp);
                return Ok(ra);
            }
            (Err(()), _) | (_, Err(())) => beyond_copy = true,
            _ => {}
        }
    }
    if first {
        if let Ok(ra) = read(sp) {
            if returns_into_code(space, ra) {
                *r = UnwindRegsX86_64::new(ra, sp + 8, bp);
                return Ok(ra);
            }
        }
    }
    Err(if beyond_copy {
        Truncation::StackCopyTooSmall
    } else {
        Truncation::NoUnwindInfo
    })
}

/// Whether the interrupted instruction `addr` lies in the bytes without call frame
/// information just before a thread's outermost frame ([`crate::Image`]'s
/// `before_thread_start`: glibc's `clone3`/`clone` after the system call).
fn before_thread_start(space: &Space, addr: FrameAddress) -> bool {
    let look = addr.address_for_lookup();
    space.lookup(look).is_some_and(|m| {
        m.image
            .as_ref()
            .is_some_and(|i| i.before_thread_start(look.wrapping_sub(m.bias)))
    })
}

/// Whether `ra` can be a return address: the instruction before it is code that call frame
/// information covers, and `ra` is not a function's first instruction (the function pointer
/// `clone` leaves on a new thread's stack is one).
fn returns_into_code(space: &Space, ra: u64) -> bool {
    ra > 1
        && space.lookup(ra - 1).is_some_and(|m| {
            m.image.as_ref().is_some_and(|i| {
                i.covers((ra - 1).wrapping_sub(m.bias)) && !i.fde_starts_at(ra.wrapping_sub(m.bias))
            })
        })
}

/// Whether the frame at `addr` is a process's entry point (`_start` of the executable or of
/// the dynamic loader): nothing called it.
fn at_entry(space: &Space, addr: FrameAddress) -> bool {
    let look = addr.address_for_lookup();
    space.lookup(look).is_some_and(|m| {
        m.image
            .as_ref()
            .is_some_and(|i| i.is_entry(look.wrapping_sub(m.bias)))
    })
}

/// The walk ended (no return address) at `addr`: a real end when the frame's call frame
/// information says its return address is undefined, as in a thread's or process's outermost
/// frame. Anywhere else a return address of zero came from a wrong step below (a register
/// the rules do not track, a clobbered stack): the stack is marked as unwinding failed rather
/// than passed off as complete. A frame-pointer walk that met a zero frame pointer in code
/// without any information proves nothing either.
fn ended(space: &Space, addr: FrameAddress) -> Option<Truncation> {
    let look = addr.address_for_lookup();
    match space.lookup(look) {
        Some(m) => match &m.image {
            Some(i) if i.covers(look.wrapping_sub(m.bias)) => {
                match i.ra_undefined(look.wrapping_sub(m.bias)) {
                    Some(false) => Some(Truncation::Failed),
                    Some(true) | None => None,
                }
            }
            _ => Some(Truncation::NoUnwindInfo),
        },
        None => Some(Truncation::NotMapped),
    }
}

/// Why unwinding the frame at `addr` failed: its code has no call frame information (none in
/// its image, or none for this function), or what it has led nowhere.
fn classify_stop(space: &Space, addr: FrameAddress) -> Truncation {
    let look = addr.address_for_lookup();
    match space.lookup(look) {
        Some(m) => match &m.image {
            Some(i) if i.covers(look.wrapping_sub(m.bias)) => Truncation::Failed,
            _ => Truncation::NoUnwindInfo,
        },
        None => Truncation::NotMapped,
    }
}

/// Whether the interrupted instruction `ip` lies in Go's signal trampoline: the handler has
/// returned and the stack pointer is at the kernel's `struct ucontext`.
fn in_go_restorer(space: &Space, ip: u64) -> bool {
    space.lookup(ip).is_some_and(|m| {
        m.image
            .as_ref()
            .is_some_and(|img| img.in_go_restorer(ip.wrapping_sub(m.bias)))
    })
}

/// Whether the return address `ra` enters a signal trampoline (`__restore_rt`), i.e. the
/// frame below is the kernel's signal frame.
fn is_sigreturn(space: &Space, ra: u64) -> bool {
    let look = ra.wrapping_sub(1);
    space.lookup(look).is_some_and(|m| {
        m.image
            .as_ref()
            .is_some_and(|img| img.is_signal_trampoline(look.wrapping_sub(m.bias)))
    }) || space.lookup(ra).is_some_and(|m| {
        m.image
            .as_ref()
            .is_some_and(|img| img.is_go_restorer(ra.wrapping_sub(m.bias)))
    })
}
