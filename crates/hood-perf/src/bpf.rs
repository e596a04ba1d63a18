//! The few `bpf(2)` commands hood uses, and an assembler for the small programs it loads.
//!
//! hood writes its BPF programs as instructions here rather than compiling C: they are a few
//! dozen instructions each, and the machine that runs hood needs neither clang nor libbpf.
//! The kernel's verifier checks every program before it runs; a program it refuses is
//! reported with the verifier's log.

use std::collections::HashMap;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// `bpf(2)` commands.
mod cmd {
    pub const MAP_CREATE: libc::c_long = 0;
    pub const MAP_LOOKUP_ELEM: libc::c_long = 1;
    pub const MAP_UPDATE_ELEM: libc::c_long = 2;
    pub const PROG_LOAD: libc::c_long = 5;
    pub const RAW_TRACEPOINT_OPEN: libc::c_long = 17;
    pub const BTF_LOAD: libc::c_long = 18;
}

/// Map types.
pub(crate) mod map_type {
    pub const HASH: u32 = 1;
    pub const ARRAY: u32 = 2;
    pub const PERF_EVENT_ARRAY: u32 = 4;
    pub const PERCPU_ARRAY: u32 = 6;
    pub const LRU_HASH: u32 = 9;
    /// Task-local storage: one value per task, kept in the task itself (kernel 5.11+).
    pub const TASK_STORAGE: u32 = 29;
}

/// `BPF_F_NO_PREALLOC`: a map whose values are allocated on demand (task storage needs it).
pub(crate) const NO_PREALLOC: u32 = 1;

/// `BPF_LOCAL_STORAGE_GET_F_CREATE`: `task_storage_get` creates a zeroed value if none.
pub(crate) const STORAGE_CREATE: i32 = 1;

/// `BPF_PROG_TYPE_RAW_TRACEPOINT`: a program run with the tracepoint's arguments.
const PROG_RAW_TRACEPOINT: u32 = 17;
/// `BPF_PROG_TYPE_TRACING`: with [`TRACE_RAW_TP`], a raw tracepoint program whose arguments
/// carry their kernel types (BTF), so helpers may take them as typed pointers.
const PROG_TRACING: u32 = 26;
/// `BPF_TRACE_RAW_TP`: the attach type of a BTF-typed tracepoint program (`tp_btf`).
const TRACE_RAW_TP: u32 = 23;

/// Helper function ids (`enum bpf_func_id`).
pub(crate) mod helper {
    pub const MAP_LOOKUP_ELEM: i32 = 1;
    pub const MAP_UPDATE_ELEM: i32 = 2;
    pub const MAP_DELETE_ELEM: i32 = 3;
    pub const KTIME_GET_NS: i32 = 5;
    pub const GET_SMP_PROCESSOR_ID: i32 = 8;
    pub const GET_CURRENT_PID_TGID: i32 = 14;
    pub const GET_CURRENT_COMM: i32 = 16;
    pub const PERF_EVENT_OUTPUT: i32 = 25;
    pub const GET_CURRENT_TASK: i32 = 35;
    pub const PROBE_READ_KERNEL: i32 = 113;
    pub const GET_TASK_STACK: i32 = 141;
    pub const TASK_STORAGE_GET: i32 = 156;
    pub const GET_CURRENT_TASK_BTF: i32 = 158;
}

/// The size of `union bpf_attr` hood passes: every field it sets lies within it, the rest is
/// zero (the kernel accepts a shorter or longer attribute whose tail is zero).
pub(crate) const ATTR_SIZE: usize = 128;

fn put_u32(a: &mut [u8; ATTR_SIZE], at: usize, v: u32) {
    a[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put_u64(a: &mut [u8; ATTR_SIZE], at: usize, v: u64) {
    a[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}

fn put_name(a: &mut [u8; ATTR_SIZE], at: usize, name: &str) {
    // BPF object names: up to 15 characters of [A-Za-z0-9_.].
    for (i, b) in name.bytes().take(15).enumerate() {
        a[at + i] = if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' {
            b
        } else {
            b'_'
        };
    }
}

fn owned(rc: libc::c_long) -> io::Result<OwnedFd> {
    let fd = i32::try_from(rc).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
    Ok(crate::sys::adopt_fd(fd))
}

/// A BPF map hood created, with the key and value sizes it was created with.
#[derive(Debug)]
pub(crate) struct Map {
    fd: OwnedFd,
    key_size: usize,
    value_size: usize,
}

impl Map {
    /// `BPF_MAP_CREATE`.
    pub fn create(
        ty: u32,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        name: &str,
    ) -> io::Result<Map> {
        Map::create_typed(ty, key_size, value_size, max_entries, 0, name, None)
    }

    /// `BPF_MAP_CREATE` with `map_flags`, and with the key's and value's types when `btf`
    /// (a loaded BTF object, the key's type id, the value's type id) is given.
    pub fn create_typed(
        ty: u32,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        flags: u32,
        name: &str,
        btf: Option<(&OwnedFd, u32, u32)>,
    ) -> io::Result<Map> {
        let mut a = [0u8; ATTR_SIZE];
        put_u32(&mut a, 0, ty);
        put_u32(&mut a, 4, key_size);
        put_u32(&mut a, 8, value_size);
        put_u32(&mut a, 12, max_entries);
        put_u32(&mut a, 16, flags);
        put_name(&mut a, 28, name);
        if let Some((fd, key, value)) = btf {
            put_u32(&mut a, 48, fd.as_raw_fd() as u32);
            put_u32(&mut a, 52, key);
            put_u32(&mut a, 56, value);
        }
        // SAFETY: BPF_MAP_CREATE's attribute holds no pointer.
        let fd = owned(unsafe { crate::sys::bpf(cmd::MAP_CREATE, &mut a) }?)?;
        Ok(Map {
            fd,
            key_size: key_size as usize,
            value_size: value_size as usize,
        })
    }

    /// `BPF_MAP_UPDATE_ELEM` (`BPF_ANY`); `key` and `value` must have the map's sizes.
    pub fn update(&self, key: &[u8], value: &[u8]) -> io::Result<()> {
        if key.len() != self.key_size || value.len() != self.value_size {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let mut a = [0u8; ATTR_SIZE];
        put_u32(&mut a, 0, self.fd.as_raw_fd() as u32);
        put_u64(&mut a, 8, key.as_ptr() as u64);
        put_u64(&mut a, 16, value.as_ptr() as u64);
        // SAFETY: `key` and `value` are live slices of exactly the map's key and value sizes
        // (checked above), which is what the kernel reads through the two pointers.
        unsafe { crate::sys::bpf(cmd::MAP_UPDATE_ELEM, &mut a) }.map(|_| ())
    }

    /// `BPF_MAP_LOOKUP_ELEM`: the value at `key` (which must have the map's key size), or
    /// `None` if there is none.
    pub fn lookup(&self, key: &[u8]) -> io::Result<Option<Vec<u8>>> {
        if key.len() != self.key_size {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let mut value = vec![0u8; self.value_size];
        let mut a = [0u8; ATTR_SIZE];
        put_u32(&mut a, 0, self.fd.as_raw_fd() as u32);
        put_u64(&mut a, 8, key.as_ptr() as u64);
        put_u64(&mut a, 16, value.as_mut_ptr() as u64);
        // SAFETY: `key` is a live slice of the map's key size (checked above) and `value` a
        // live, writable buffer of its value size (this map is not per-CPU, so the kernel
        // writes exactly that many bytes).
        match unsafe { crate::sys::bpf(cmd::MAP_LOOKUP_ELEM, &mut a) } {
            Ok(_) => Ok(Some(value)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The map's descriptor (for a program's 64-bit map load).
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }
}

/// `BPF_BTF_LOAD`: hand the kernel type information (a raw BTF blob) that maps can name
/// their key and value types in.
pub(crate) fn load_btf(blob: &[u8]) -> io::Result<OwnedFd> {
    let mut a = [0u8; ATTR_SIZE];
    put_u64(&mut a, 0, blob.as_ptr() as u64);
    put_u32(&mut a, 16, blob.len() as u32);
    // SAFETY: `blob` is a live slice of `blob.len()` bytes, which is all the kernel reads (no
    // log buffer is given).
    owned(unsafe { crate::sys::bpf(cmd::BTF_LOAD, &mut a) }?)
}

/// A program the kernel refused: its error and, when it said why, the verifier's log.
#[derive(Debug)]
pub(crate) struct LoadError {
    pub source: io::Error,
    pub log: String,
}

/// `BPF_PROG_LOAD` of a raw-tracepoint program. On a refusal the load is repeated with the
/// verifier's log on, so the error says why.
pub(crate) fn load_raw_tracepoint(insns: &[Insn], name: &str) -> Result<OwnedFd, LoadError> {
    load_program(insns, name, None)
}

/// `BPF_PROG_LOAD` of a BTF-typed tracepoint program (`tp_btf`) for the tracepoint whose
/// `btf_trace_<name>` typedef in the kernel's BTF has id `btf_id`.
pub(crate) fn load_btf_tracepoint(
    insns: &[Insn],
    name: &str,
    btf_id: u32,
) -> Result<OwnedFd, LoadError> {
    load_program(insns, name, Some(btf_id))
}

fn load_program(insns: &[Insn], name: &str, btf_id: Option<u32>) -> Result<OwnedFd, LoadError> {
    let code: Vec<u8> = insns.iter().flat_map(|i| i.bytes()).collect();
    let license = c"Dual MIT/GPL";
    let load = |log: Option<&mut Vec<u8>>| {
        let mut a = [0u8; ATTR_SIZE];
        match btf_id {
            None => put_u32(&mut a, 0, PROG_RAW_TRACEPOINT),
            Some(id) => {
                put_u32(&mut a, 0, PROG_TRACING);
                put_u32(&mut a, 68, TRACE_RAW_TP);
                // attach_btf_id; attach_btf_obj_fd (112) stays 0: the kernel's own BTF.
                put_u32(&mut a, 108, id);
            }
        }
        put_u32(&mut a, 4, insns.len() as u32);
        put_u64(&mut a, 8, code.as_ptr() as u64);
        put_u64(&mut a, 16, license.as_ptr() as u64);
        if let Some(log) = log {
            put_u32(&mut a, 24, 1);
            put_u32(&mut a, 28, log.len() as u32);
            put_u64(&mut a, 32, log.as_mut_ptr() as u64);
        }
        put_name(&mut a, 48, name);
        // SAFETY: `code` holds `insns.len()` instructions of 8 bytes, `license` is a
        // NUL-terminated string, and the log buffer, when given, is `log.len()` bytes; all
        // outlive the call.
        unsafe { crate::sys::bpf(cmd::PROG_LOAD, &mut a) }
    };
    match load(None) {
        Ok(fd) => owned(fd).map_err(|source| LoadError {
            source,
            log: String::new(),
        }),
        Err(source) => {
            let mut buf = vec![0u8; 1 << 16];
            let _ = load(Some(&mut buf));
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            let log = String::from_utf8_lossy(&buf[..end]).trim().to_string();
            Err(LoadError { source, log })
        }
    }
}

/// `BPF_RAW_TRACEPOINT_OPEN`: run `prog` at every hit of the tracepoint `name` until the
/// returned descriptor closes. A BTF-typed program passes no name: its tracepoint was named
/// at load.
pub(crate) fn attach_raw_tracepoint(name: Option<&CStr>, prog: &OwnedFd) -> io::Result<OwnedFd> {
    let mut a = [0u8; ATTR_SIZE];
    put_u64(&mut a, 0, name.map_or(0, |n| n.as_ptr() as u64));
    put_u32(&mut a, 8, prog.as_raw_fd() as u32);
    // SAFETY: `name`, when given, is a NUL-terminated string that outlives the call.
    owned(unsafe { crate::sys::bpf(cmd::RAW_TRACEPOINT_OPEN, &mut a) }?)
}

/// One BPF instruction (`struct bpf_insn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Insn {
    code: u8,
    dst: u8,
    src: u8,
    off: i16,
    imm: i32,
}

impl Insn {
    fn bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = (self.src << 4) | (self.dst & 0x0f);
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }
}

/// Registers: R0 return value, R1–R5 arguments, R6–R9 kept across calls, R10 frame pointer.
pub(crate) mod reg {
    pub const R0: u8 = 0;
    pub const R1: u8 = 1;
    pub const R2: u8 = 2;
    pub const R3: u8 = 3;
    pub const R4: u8 = 4;
    pub const R5: u8 = 5;
    pub const R6: u8 = 6;
    pub const R7: u8 = 7;
    pub const R8: u8 = 8;
    pub const R9: u8 = 9;
    pub const FP: u8 = 10;
}

// Opcodes (class | operation | source).
const ALU64_MOV_K: u8 = 0xb7;
const ALU64_MOV_X: u8 = 0xbf;
const ALU32_MOV_K: u8 = 0xb4;
const ALU64_ADD_K: u8 = 0x07;
const ALU64_SUB_X: u8 = 0x1f;
const ALU64_RSH_K: u8 = 0x77;
const ALU64_AND_K: u8 = 0x57;
const LDX_DW: u8 = 0x79;
const LDX_W: u8 = 0x61;
const STX_DW: u8 = 0x7b;
const ST_DW: u8 = 0x7a;
const STX_W: u8 = 0x63;
const STX_H: u8 = 0x6b;
const STX_B: u8 = 0x73;
const LD_IMM64: u8 = 0x18;
const JA: u8 = 0x05;
const JEQ_K: u8 = 0x15;
const JNE_K: u8 = 0x55;
const JLT_X: u8 = 0xad;
const JGT_K: u8 = 0x25;
const JSLE_K: u8 = 0xd5;
const CALL: u8 = 0x85;
const EXIT: u8 = 0x95;
/// `src_reg` of a 64-bit load whose immediate is a map's descriptor.
const PSEUDO_MAP_FD: u8 = 1;

/// Builds a program instruction by instruction, with named labels for forward jumps.
#[derive(Debug, Default)]
pub(crate) struct Asm {
    insns: Vec<Insn>,
    labels: HashMap<&'static str, usize>,
    jumps: Vec<(usize, &'static str)>,
}

impl Asm {
    fn push(&mut self, code: u8, dst: u8, src: u8, off: i16, imm: i32) -> &mut Self {
        self.insns.push(Insn {
            code,
            dst,
            src,
            off,
            imm,
        });
        self
    }

    /// `dst = src`.
    pub fn mov(&mut self, dst: u8, src: u8) -> &mut Self {
        self.push(ALU64_MOV_X, dst, src, 0, 0)
    }

    /// `dst = imm` (sign-extended).
    pub fn mov_imm(&mut self, dst: u8, imm: i32) -> &mut Self {
        self.push(ALU64_MOV_K, dst, 0, 0, imm)
    }

    /// `dst = (u32)imm` (zero-extended).
    pub fn mov32_imm(&mut self, dst: u8, imm: u32) -> &mut Self {
        self.push(ALU32_MOV_K, dst, 0, 0, imm as i32)
    }

    /// `dst += imm`.
    pub fn add_imm(&mut self, dst: u8, imm: i32) -> &mut Self {
        self.push(ALU64_ADD_K, dst, 0, 0, imm)
    }

    /// `dst -= src`.
    pub fn sub(&mut self, dst: u8, src: u8) -> &mut Self {
        self.push(ALU64_SUB_X, dst, src, 0, 0)
    }

    /// `dst >>= imm` (logical).
    pub fn rsh_imm(&mut self, dst: u8, imm: i32) -> &mut Self {
        self.push(ALU64_RSH_K, dst, 0, 0, imm)
    }

    /// `dst &= imm`.
    pub fn and_imm(&mut self, dst: u8, imm: i32) -> &mut Self {
        self.push(ALU64_AND_K, dst, 0, 0, imm)
    }

    /// `dst = *(u64 *)(src + off)`.
    pub fn load(&mut self, dst: u8, src: u8, off: i16) -> &mut Self {
        self.push(LDX_DW, dst, src, off, 0)
    }

    /// `dst = *(u32 *)(src + off)` (zero-extended).
    pub fn load32(&mut self, dst: u8, src: u8, off: i16) -> &mut Self {
        self.push(LDX_W, dst, src, off, 0)
    }

    /// `*(u64 *)(dst + off) = src`.
    pub fn store(&mut self, dst: u8, off: i16, src: u8) -> &mut Self {
        self.push(STX_DW, dst, src, off, 0)
    }

    /// `*(uN *)(dst + off) = src` for a store of `bytes` (1, 2, 4 or 8) bytes.
    pub fn store_sized(&mut self, bytes: u8, dst: u8, off: i16, src: u8) -> &mut Self {
        let code = match bytes {
            1 => STX_B,
            2 => STX_H,
            4 => STX_W,
            _ => STX_DW,
        };
        self.push(code, dst, src, off, 0)
    }

    /// `*(u64 *)(dst + off) = imm`.
    pub fn store_imm(&mut self, dst: u8, off: i16, imm: i32) -> &mut Self {
        self.push(ST_DW, dst, 0, off, imm)
    }

    /// `dst = imm` for a full 64-bit value.
    pub fn load_imm64(&mut self, dst: u8, imm: u64) -> &mut Self {
        self.push(LD_IMM64, dst, 0, 0, imm as u32 as i32);
        self.push(0, 0, 0, 0, (imm >> 32) as u32 as i32)
    }

    /// `dst = &map` (the kernel replaces the descriptor by the map).
    pub fn load_map(&mut self, dst: u8, map: &OwnedFd) -> &mut Self {
        self.push(LD_IMM64, dst, PSEUDO_MAP_FD, 0, map.as_raw_fd());
        self.push(0, 0, 0, 0, 0)
    }

    /// `R0 = bpf_map_lookup_elem(map, FP + key)`: the value's address, or 0; the key is the
    /// bytes stored on the stack at `key`. R1–R5 are clobbered.
    pub fn map_lookup(&mut self, map: &OwnedFd, key: i32) -> &mut Self {
        self.map_key_call(helper::MAP_LOOKUP_ELEM, map, key)
    }

    /// `R0 = bpf_map_delete_elem(map, FP + key)`, the key as [`Asm::map_lookup`] takes it.
    pub fn map_delete(&mut self, map: &OwnedFd, key: i32) -> &mut Self {
        self.map_key_call(helper::MAP_DELETE_ELEM, map, key)
    }

    /// `R0 = bpf_map_update_elem(map, FP + key, FP + value, BPF_ANY)`: key and value are
    /// the bytes stored on the stack at those offsets. R1–R5 are clobbered.
    pub fn map_update(&mut self, map: &OwnedFd, key: i32, value: i32) -> &mut Self {
        self.load_map(reg::R1, map)
            .mov(reg::R2, reg::FP)
            .add_imm(reg::R2, key)
            .mov(reg::R3, reg::FP)
            .add_imm(reg::R3, value)
            .mov_imm(reg::R4, 0)
            .call(helper::MAP_UPDATE_ELEM)
    }

    fn map_key_call(&mut self, id: i32, map: &OwnedFd, key: i32) -> &mut Self {
        self.load_map(reg::R1, map)
            .mov(reg::R2, reg::FP)
            .add_imm(reg::R2, key)
            .call(id)
    }

    /// Call helper `id`; the result is in R0, R1–R5 are clobbered.
    pub fn call(&mut self, id: i32) -> &mut Self {
        self.push(CALL, 0, 0, 0, id)
    }

    /// `return R0`.
    pub fn exit(&mut self) -> &mut Self {
        self.push(EXIT, 0, 0, 0, 0)
    }

    fn jump(&mut self, code: u8, dst: u8, src: u8, imm: i32, to: &'static str) -> &mut Self {
        self.jumps.push((self.insns.len(), to));
        self.push(code, dst, src, 0, imm)
    }

    /// `goto to`.
    pub fn ja(&mut self, to: &'static str) -> &mut Self {
        self.jump(JA, 0, 0, 0, to)
    }

    /// `if dst == imm goto to`.
    pub fn jeq_imm(&mut self, dst: u8, imm: i32, to: &'static str) -> &mut Self {
        self.jump(JEQ_K, dst, 0, imm, to)
    }

    /// `if dst != imm goto to`.
    pub fn jne_imm(&mut self, dst: u8, imm: i32, to: &'static str) -> &mut Self {
        self.jump(JNE_K, dst, 0, imm, to)
    }

    /// `if dst > imm goto to` (unsigned).
    pub fn jgt_imm(&mut self, dst: u8, imm: i32, to: &'static str) -> &mut Self {
        self.jump(JGT_K, dst, 0, imm, to)
    }

    /// `if dst <= imm goto to` (signed).
    pub fn jsle_imm(&mut self, dst: u8, imm: i32, to: &'static str) -> &mut Self {
        self.jump(JSLE_K, dst, 0, imm, to)
    }

    /// `if dst < src goto to` (unsigned).
    pub fn jlt(&mut self, dst: u8, src: u8, to: &'static str) -> &mut Self {
        self.jump(JLT_X, dst, src, 0, to)
    }

    /// Places label `name` at the next instruction.
    pub fn label(&mut self, name: &'static str) -> &mut Self {
        self.labels.insert(name, self.insns.len());
        self
    }

    /// The finished program, with every jump resolved. Panics on a label used but never
    /// placed, or placed behind its jump: both are mistakes in hood's own programs, which
    /// the unit tests build.
    pub fn finish(mut self) -> Vec<Insn> {
        for &(at, name) in &self.jumps {
            let to = *self
                .labels
                .get(name)
                .unwrap_or_else(|| panic!("BPF label {name} never placed"));
            let off = to as i64 - at as i64 - 1;
            assert!(off >= 0, "BPF label {name} placed behind its jump");
            self.insns[at].off = i16::try_from(off).expect("short BPF program");
        }
        self.insns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_are_encoded_as_the_kernel_reads_them() {
        let mut a = Asm::default();
        a.mov(reg::R6, reg::R1)
            .jeq_imm(reg::R0, 0, "out")
            .load_imm64(reg::R2, 0x1_0000_0002)
            .label("out")
            .mov_imm(reg::R0, 0)
            .exit();
        let p = a.finish();
        assert_eq!(p[0].bytes(), [0xbf, 0x16, 0, 0, 0, 0, 0, 0]);
        // The jump skips the two halves of the 64-bit load.
        assert_eq!(p[1].bytes(), [0x15, 0x00, 2, 0, 0, 0, 0, 0]);
        assert_eq!(p[2].bytes(), [0x18, 0x02, 0, 0, 2, 0, 0, 0]);
        assert_eq!(p[3].bytes(), [0x00, 0x00, 0, 0, 1, 0, 0, 0]);
        assert_eq!(p[5].bytes(), [0x95, 0, 0, 0, 0, 0, 0, 0]);
    }
}
