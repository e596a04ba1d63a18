//! A perf.data file read as a recording: perf does not store what a report needs of the
//! system that recorded it (kallsyms, the vDSO image, JIT maps), so they are taken from this
//! one when it is that system.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use hood_procfs::{host, process};

/// Import a perf.data file. perf does not store kallsyms or the `[vdso]` image: when the file
/// was recorded on the running kernel (same build-id, or same release if it stored none),
/// they are taken from this system; otherwise kernel frames stay unresolved, with a warning.
/// Stack copies of `perf record --call-graph dwarf` are unwound against the binaries on this
/// machine, as perf report does.
pub(crate) fn import_perf_data(
    path: &Path,
) -> Result<hood_model::profile::RawRecording, hood_model::ModelError> {
    let mut unwinder = hood_unwind::Unwinder::new(hood_unwind::Options::default());
    if let Some(v) = process::own_vdso() {
        unwinder.set_vdso(&v);
    }
    let imp = hood_model::perfdata::load(path, Some(&mut unwinder))?;
    let mut raw = imp.raw;
    let st = unwinder.stats();
    if st.stacks > 0 && st.complete < st.stacks {
        raw.warnings.push(format!(
            "{} of {} user stack copies in {} were unwound only in part (see the [truncated: …] frames)",
            st.stacks - st.complete,
            st.stacks,
            path.display()
        ));
    }
    // JIT maps, read at report time as `perf report` reads them: /tmp/perf-PID.map of each
    // sampled process, through the same checks as a recording's (not a link, not blocking,
    // owned by root or the process's user). The processes of a perf.data file have usually
    // exited; then the map may also belong to the owner of the perf.data file, who recorded
    // them (perf report trusts maps of the user running it).
    let pids: BTreeSet<u32> = raw
        .decoded
        .events
        .iter()
        .filter_map(|t| match t.event {
            hood_raw::records::Event::Sample { pid, .. } if pid != 0 && pid != u32::MAX => {
                Some(pid)
            }
            _ => None,
        })
        .collect();
    let owner = {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(path).map_or(0, |m| m.uid())
    };
    let (maps, warnings) = host::perf_maps_in(Path::new("/tmp"), &pids, host::MAX_PERF_MAP, owner);
    raw.perf_maps.extend(maps);
    raw.warnings.extend(warnings);
    let running = hood_symbols::kernel_build_id();
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let same_kernel = match (&imp.kernel_build_id, &running) {
        (Some(a), Some(b)) => a == b,
        _ if raw.meta.kernel_release.is_empty() => {
            raw.warnings.push(format!(
                "{} does not say which kernel recorded it; kernel frames are named from this system's",
                path.display()
            ));
            true
        }
        _ => raw.meta.kernel_release == release.trim(),
    };
    if same_kernel {
        raw.kallsyms = host::kallsyms().unwrap_or_default();
        raw.vdso = process::own_vdso().unwrap_or_default();
    } else {
        raw.warnings.push(format!(
            "{} was recorded on another kernel ({}); kernel frames are unresolved",
            path.display(),
            raw.meta.kernel_release
        ));
    }
    Ok(raw)
}
