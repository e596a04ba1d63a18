//! Thin safe wrappers over the system calls this crate needs. Every `unsafe`
//! block of the crate except the ring-buffer accessors lives here.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

use perf_event_open_sys as sys;
use sys::bindings::perf_event_attr;

/// Opens one perf event with `PERF_FLAG_FD_CLOEXEC` and no group.
pub(crate) fn perf_event_open(
    attr: &mut perf_event_attr,
    pid: i32,
    cpu: i32,
) -> io::Result<OwnedFd> {
    // SAFETY: `attr` is a valid, initialized perf_event_attr whose `size` field
    // does not exceed the struct's real size; the kernel only reads it (and may
    // write `size` back on E2BIG, which is within the struct).
    let fd = unsafe {
        sys::perf_event_open(
            attr,
            pid,
            cpu,
            -1,
            sys::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us; nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `PERF_EVENT_IOC_ENABLE` on one event.
pub(crate) fn ioc_enable(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: `fd` is an open perf event descriptor; the ioctl takes an integer argument.
    check(unsafe { sys::ioctls::ENABLE(fd.as_raw_fd(), 0) })
}

/// `PERF_EVENT_IOC_DISABLE` on one event.
pub(crate) fn ioc_disable(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: `fd` is an open perf event descriptor; the ioctl takes an integer argument.
    check(unsafe { sys::ioctls::DISABLE(fd.as_raw_fd(), 0) })
}

/// `PERF_EVENT_IOC_SET_OUTPUT`: send `fd`'s records into `target`'s ring.
pub(crate) fn ioc_set_output(fd: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
    // SAFETY: both are open perf event descriptors; the argument is a descriptor number.
    check(unsafe { sys::ioctls::SET_OUTPUT(fd.as_raw_fd(), target.as_raw_fd()) })
}

/// `PERF_EVENT_IOC_ID`: the event's id, as samples carry it.
pub(crate) fn ioc_id(fd: &OwnedFd) -> io::Result<u64> {
    let mut id = 0u64;
    // SAFETY: `fd` is an open perf event descriptor; the kernel writes one u64 through the
    // pointer, which points at a live, exclusively borrowed u64.
    check(unsafe { sys::ioctls::ID(fd.as_raw_fd(), &mut id) })?;
    Ok(id)
}

/// Raise the soft limit on open descriptors towards `want`, at most to the hard limit (best
/// effort: a refusal leaves the limit as it was, and the opens that exceed it say so).
pub(crate) fn raise_fd_limit(want: u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through a pointer to a live local.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 || r.rlim_cur >= want {
        return;
    }
    r.rlim_cur = want.min(r.rlim_max);
    // SAFETY: setrlimit reads one rlimit from a pointer to a live local.
    unsafe {
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
    }
}

/// The system page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// `poll(2)` over `fds`; returns the number of ready descriptors.
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout_ms: libc::c_int) -> io::Result<usize> {
    // SAFETY: `fds` is a valid, exclusively borrowed slice of pollfd of the given length.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// A shared read-write mapping of a perf event's ring buffer, unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory owned by this value; access to it
// goes through `&self`/`&mut self` of the owner (the ring), so moving it between
// threads is sound.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` at offset 0, readable and writable (so the
    /// kernel honours our `data_tail` and never overwrites unread data).
    pub(crate) fn new(fd: RawFd, len: usize) -> io::Result<Mapping> {
        // SAFETY: we ask for a fresh mapping (addr NULL) of `len` bytes of a perf
        // event fd; the result is checked against MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave NULL"))?;
        Ok(Mapping { ptr, len })
    }

    /// Start of the mapping.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length of the mapping in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned and nothing borrows the
        // memory any more (slices handed to sinks never outlive a drain call).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// `bpf(2)` with `attr` as the command's `union bpf_attr` (hood's commands take no more).
///
/// # Safety
/// Every pointer stored in `attr` must point at memory that stays valid for the call and is
/// as large as the command's matching length field (or the kernel's fixed size) says.
pub(crate) unsafe fn bpf(
    command: libc::c_long,
    attr: &mut [u8; crate::bpf::ATTR_SIZE],
) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, initialised buffer of ATTR_SIZE bytes laid out as the
    // command's part of `union bpf_attr`; the caller guarantees the pointers stored in it
    // (this function's contract). The kernel reads at most ATTR_SIZE bytes of `attr` and
    // writes only where those pointers allow.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            command,
            attr.as_mut_ptr(),
            crate::bpf::ATTR_SIZE as libc::c_uint,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Take ownership of a descriptor the kernel just returned.
pub(crate) fn adopt_fd(fd: RawFd) -> OwnedFd {
    // SAFETY: callers pass only a descriptor a system call has just returned to this
    // process; nothing else owns or closes it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}
