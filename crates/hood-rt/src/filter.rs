//! `--filter/--exclude` for trace mode. `hood trace record` resolves the globs against the
//! symbol tables of the executable and its libraries before the program starts and writes a
//! table of (object, address range, verdict) to a file named by `HOOD_TRACE_FILTER`. The
//! runtime maps it at start. The first time a function address is seen, the cold path asks
//! the dynamic loader which object holds it (`dladdr1`, giving the object's name and load
//! bias), looks the unrelocated address up in the table; the function index cache
//! ([`crate::index`]) keeps the verdict with the function's index, so later hooks of that
//! function cost the one hash probe every traced function costs.
//!
//! File layout (little endian): `HOODFLT1`, u32 verdict for objects not in the table, u32
//! object count; per object: u32 name length, name (empty = the main executable), u32 default
//! verdict, u32 range count, then `(u64 lo, u64 hi)` ranges of unrelocated addresses whose
//! verdict is the opposite of the default, sorted by `lo`.

use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

static TABLE: AtomicPtr<u8> = AtomicPtr::new(ptr::null_mut());
static TABLE_LEN: AtomicUsize = AtomicUsize::new(0);

/// The prefix of glibc's `struct link_map` that `dladdr1(RTLD_DL_LINKMAP)` returns.
#[repr(C)]
struct LinkMapHead {
    l_addr: usize,
    l_name: *const libc::c_char,
}
const RTLD_DL_LINKMAP: libc::c_int = 2;

/// Map the filter table named by `path` (NUL terminated). Without it every function is traced.
pub fn load(path: &[u8]) {
    // SAFETY: path is NUL terminated (Config::filter_path); the mappings are checked.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return;
        }
        let mut st: libc::stat = core::mem::zeroed();
        let ok = libc::fstat(fd, &mut st) == 0 && st.st_size >= 16;
        let len = st.st_size as usize;
        let p = if ok {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                fd,
                0,
            )
        } else {
            libc::MAP_FAILED
        };
        libc::close(fd);
        if p == libc::MAP_FAILED || core::slice::from_raw_parts(p as *const u8, 8) != b"HOODFLT1" {
            return;
        }
        TABLE_LEN.store(len, Ordering::Relaxed);
        TABLE.store(p as *mut u8, Ordering::Release);
    }
}

/// Whether events of the function at `addr` are recorded (cold: once per function, by the
/// function index cache): true without a filter table.
pub fn verdict(addr: u64) -> bool {
    if TABLE.load(Ordering::Acquire).is_null() {
        return true;
    }
    // SAFETY: errno is thread-local; dladdr1 may set it.
    let saved = unsafe { *libc::__errno_location() };
    let v = lookup(addr);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
    v
}

struct Cursor {
    p: *const u8,
    len: usize,
    off: usize,
}

impl Cursor {
    fn bytes(&mut self, n: usize) -> Option<&'static [u8]> {
        if self.off.checked_add(n)? > self.len {
            return None;
        }
        // SAFETY: within the mapped table (checked above); the mapping lives forever.
        let s = unsafe { core::slice::from_raw_parts(self.p.add(self.off), n) };
        self.off += n;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        let b = self.bytes(4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Option<u64> {
        let lo = self.u32()? as u64;
        Some(lo | (self.u32()? as u64) << 32)
    }
}

fn basename(p: &[u8]) -> &[u8] {
    match p.iter().rposition(|&b| b == b'/') {
        Some(i) => &p[i + 1..],
        None => p,
    }
}

/// The verdict for `addr` from the table (cold: once per function).
fn lookup(addr: u64) -> bool {
    let lm = link_map(addr);
    let mut cur = Cursor {
        p: TABLE.load(Ordering::Relaxed),
        len: TABLE_LEN.load(Ordering::Relaxed),
        off: 8,
    };
    let Some(unknown) = cur.u32() else {
        return true;
    };
    if lm.is_null() {
        return unknown != 0;
    }
    // SAFETY: dladdr1 returned the object's link_map; l_name is a NUL-terminated string.
    let (bias, name) = unsafe {
        let l = &*lm;
        let name = if l.l_name.is_null() {
            &[][..]
        } else {
            core::ffi::CStr::from_ptr(l.l_name).to_bytes()
        };
        (l.l_addr as u64, name)
    };
    let rel = addr.wrapping_sub(bias);
    let Some(n) = cur.u32() else { return true };
    for _ in 0..n {
        let Some(len) = cur.u32() else { return true };
        let Some(obj) = cur.bytes(len as usize) else {
            return true;
        };
        let (Some(default), Some(nr)) = (cur.u32(), cur.u32()) else {
            return true;
        };
        let here = if obj.is_empty() || name.is_empty() {
            obj.is_empty() && name.is_empty()
        } else {
            obj == name || basename(obj) == basename(name)
        };
        if !here {
            if cur.bytes(nr as usize * 16).is_none() {
                return true;
            }
            continue;
        }
        let start = cur.off;
        let (mut lo_i, mut hi_i) = (0usize, nr as usize);
        while lo_i < hi_i {
            let mid = (lo_i + hi_i) / 2;
            cur.off = start + mid * 16;
            let (Some(lo), Some(hi)) = (cur.u64(), cur.u64()) else {
                return true;
            };
            if rel < lo {
                hi_i = mid;
            } else if rel >= hi {
                lo_i = mid + 1;
            } else {
                return default == 0;
            }
        }
        return default != 0;
    }
    unknown != 0
}

/// The loader's link map of the object that holds `addr` (its load bias and path), or null
/// when no object does.
fn link_map(addr: u64) -> *const LinkMapHead {
    let mut info: libc::Dl_info = unsafe_zeroed_info();
    let mut lm: *mut libc::c_void = ptr::null_mut();
    // SAFETY: valid out-pointers; dladdr1 only reads the loader's structures.
    let ok = unsafe {
        libc::dladdr1(
            addr as *const libc::c_void,
            &mut info,
            &mut lm,
            RTLD_DL_LINKMAP,
        )
    };
    if ok == 0 {
        ptr::null()
    } else {
        lm as *const LinkMapHead
    }
}

fn unsafe_zeroed_info() -> libc::Dl_info {
    libc::Dl_info {
        dli_fname: ptr::null(),
        dli_fbase: ptr::null_mut(),
        dli_sname: ptr::null(),
        dli_saddr: ptr::null_mut(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    extern "C" fn filtered_out() {}

    #[inline(never)]
    extern "C" fn kept() {}

    /// The load bias of the object holding `addr`, as the runtime finds it.
    fn bias(addr: u64) -> u64 {
        let lm = link_map(addr);
        assert!(!lm.is_null());
        // SAFETY: dladdr1 returned the object's link_map.
        unsafe { (*lm).l_addr as u64 }
    }

    /// A table file in the temporary directory, loaded; removed again.
    fn load_table(name: &str, bytes: &[u8]) {
        let path = std::env::temp_dir().join(format!("hood-rt-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        let mut c = path.as_os_str().as_encoded_bytes().to_vec();
        c.push(0);
        load(&c);
        std::fs::remove_file(&path).unwrap();
    }

    fn table(main_ranges: &[(u64, u64)], cut: usize) -> Vec<u8> {
        let mut t = b"HOODFLT1".to_vec();
        // Objects not in the table (libc here) are not traced; the main executable is,
        // except the ranges.
        for v in [0u32, 1, 0, 1, main_ranges.len() as u32] {
            t.extend_from_slice(&v.to_le_bytes());
        }
        for &(lo, hi) in main_ranges {
            t.extend_from_slice(&lo.to_le_bytes());
            t.extend_from_slice(&hi.to_le_bytes());
        }
        t.truncate(t.len() - cut);
        t
    }

    /// One test: the table is process-global.
    #[test]
    fn the_table_gives_each_function_its_verdict_and_a_damaged_one_traces_everything() {
        let out = filtered_out as *const () as u64;
        let keep = kept as *const () as u64;
        let libc_fn = libc::getpid as *const () as u64;
        // Not a table: nothing is filtered.
        load_table("bad", b"NOTATABLE_______________");
        assert!(verdict(out) && verdict(keep) && verdict(libc_fn));
        let rel = out - bias(out);
        let ranges = [(0, 1), (rel, rel + 1)];
        load_table("good", &table(&ranges, 0));
        assert!(!verdict(out), "the excluded range");
        assert!(verdict(keep), "the executable's default");
        assert!(!verdict(libc_fn), "an object the table does not name");
        // Cut inside the ranges: everything is traced rather than guessed.
        load_table("cut", &table(&ranges, 20));
        assert!(verdict(out) && verdict(keep));
    }

    #[test]
    fn basename_is_after_the_last_slash() {
        assert_eq!(basename(b"/usr/lib/libc.so.6"), b"libc.so.6");
        assert_eq!(basename(b"libc.so.6"), b"libc.so.6");
        assert_eq!(basename(b"/"), b"");
        assert_eq!(basename(b""), b"");
    }
}
