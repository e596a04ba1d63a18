//! What a uprobe costs depends on the probed function's first instruction. The kernel replaces
//! it with a breakpoint; when the breakpoint is hit, the kernel either **emulates** the
//! instruction it replaced (on x86-64: a push of a register, a nop, a jump, a call, a
//! conditional jump) or **single-steps** a copy of it out of line, which takes a second trap
//! (everything else: `sub`, `mov`, `lea`, `endbr64`, `ret`, …). On this project's machines the
//! second kind costs 5–8 times the first (0.8 µs against 6 µs for an entry and a return), and
//! more on virtual machines where the single-step trap leaves the guest.
//!
//! So the recorder measures both kinds, on two functions of its own whose first instructions
//! are known ([`call_emulated_target`], [`call_stepped_target`]), and takes out of each probed
//! function's times the figure of its kind ([`kernel_emulates`]).

// A function that starts with `push %rbp` (emulated by the kernel) and returns 3 × its
// argument, and one that starts with `sub $8,%rsp` (single-stepped) and does the same.
#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".text",
    ".p2align 4",
    ".globl hood_uprobe_cost_emulated",
    ".hidden hood_uprobe_cost_emulated",
    ".type hood_uprobe_cost_emulated,@function",
    "hood_uprobe_cost_emulated:",
    "push %rbp",
    "lea (%rdi,%rdi,2),%rax",
    "pop %rbp",
    "ret",
    ".size hood_uprobe_cost_emulated, .-hood_uprobe_cost_emulated",
    ".p2align 4",
    ".globl hood_uprobe_cost_stepped",
    ".hidden hood_uprobe_cost_stepped",
    ".type hood_uprobe_cost_stepped,@function",
    "hood_uprobe_cost_stepped:",
    "sub $8,%rsp",
    "lea (%rdi,%rdi,2),%rax",
    "add $8,%rsp",
    "ret",
    ".size hood_uprobe_cost_stepped, .-hood_uprobe_cost_stepped",
    options(att_syntax)
);

#[cfg(target_arch = "x86_64")]
extern "C" {
    fn hood_uprobe_cost_emulated(x: u64) -> u64;
    fn hood_uprobe_cost_stepped(x: u64) -> u64;
}

/// Call the function whose first instruction the kernel emulates (`push %rbp`); returns
/// `3 * x`. Its address is [`emulated_target_addr`].
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn call_emulated_target(x: u64) -> u64 {
    // SAFETY: the function is defined above in assembly: it follows the System V calling
    // convention (argument in rdi, result in rax, rbp saved and restored, the stack balanced)
    // and touches no memory but its own stack slot.
    unsafe { hood_uprobe_cost_emulated(x) }
}

/// Call the function whose first instruction the kernel single-steps (`sub $8,%rsp`);
/// returns `3 * x`. Its address is [`stepped_target_addr`].
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn call_stepped_target(x: u64) -> u64 {
    // SAFETY: as for `call_emulated_target`: a System V function defined above that only
    // moves its own stack pointer down and back up.
    unsafe { hood_uprobe_cost_stepped(x) }
}

/// The address of the function [`call_emulated_target`] calls.
#[cfg(target_arch = "x86_64")]
pub fn emulated_target_addr() -> u64 {
    hood_uprobe_cost_emulated as *const () as usize as u64
}

/// The address of the function [`call_stepped_target`] calls.
#[cfg(target_arch = "x86_64")]
pub fn stepped_target_addr() -> u64 {
    hood_uprobe_cost_stepped as *const () as usize as u64
}

/// Whether the kernel emulates an x86-64 instruction starting with `bytes` when a uprobe on it
/// is hit, as Linux 6.18 does for a push of a register (`50`–`57`, `41 50`–`41 57`), a nop
/// (`90`, `66 90`, `0f 1f …`), a jump (`eb`, `e9`), a call (`e8`) and a conditional jump
/// (`70`–`7f`, `0f 80`–`0f 8f`); anything else is single-stepped. (A kernel older than its
/// push emulation single-steps a push: the recorder's measurement on its `push %rbp` function
/// then shows the higher figure, so the times stay right. One older than its emulation of
/// multi-byte nops, 6.16, single-steps those at the higher cost.)
pub fn kernel_emulates(bytes: &[u8]) -> bool {
    // Operand-size prefixes of a nop (`66 90`, `66 0f 1f …`).
    let unprefixed = {
        let n = bytes.iter().take_while(|&&b| b == 0x66).count();
        &bytes[n..]
    };
    if bytes.first() == Some(&0x66) {
        return matches!(unprefixed, [0x90, ..] | [0x0f, 0x1f, ..]);
    }
    matches!(
        bytes,
        [0x50..=0x57 | 0x90 | 0xeb | 0xe9 | 0xe8 | 0x70..=0x7f, ..]
            | [0x41, 0x50..=0x57, ..]
            | [0x0f, 0x80..=0x8f | 0x1f, ..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_instructions_are_sorted_into_the_kernels_two_kinds() {
        for emulated in [
            &[0x55][..],                     // push %rbp
            &[0x41, 0x57],                   // push %r15
            &[0x53, 0x48],                   // push %rbx, then more
            &[0x90],                         // nop
            &[0xe9, 0, 0, 0, 0],             // jmp rel32
            &[0xeb, 0x10],                   // jmp rel8
            &[0xe8, 0, 0, 0, 0],             // call rel32
            &[0x74, 0x05],                   // je rel8
            &[0x0f, 0x84, 0, 0, 0, 0],       // je rel32
            &[0x0f, 0x1f, 0x44, 0, 0],       // nopl 0(%rax,%rax,1)
            &[0x66, 0x90],                   // xchg %ax,%ax
            &[0x66, 0x0f, 0x1f, 0x44, 0, 0], // nopw 0(%rax,%rax,1)
        ] {
            assert!(kernel_emulates(emulated), "{emulated:x?}");
        }
        for stepped in [
            &[][..],
            &[0x48, 0x83, 0xec, 0x08], // sub $8,%rsp
            &[0xf3, 0x0f, 0x1e, 0xfa], // endbr64
            &[0xc3],                   // ret
            &[0x48, 0x89, 0xf8],       // mov %rdi,%rax
            &[0x41],                   // a REX prefix alone
            &[0x0f],
            &[0x66, 0x48, 0x89, 0xf8], // a prefixed mov
        ] {
            assert!(!kernel_emulates(stepped), "{stepped:x?}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_targets_compute_and_start_with_their_kind() {
        assert_eq!(call_emulated_target(7), 21);
        assert_eq!(call_stepped_target(7), 21);
        assert_ne!(emulated_target_addr(), stepped_target_addr());
    }
}
