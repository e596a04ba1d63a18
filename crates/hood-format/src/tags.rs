//! Chunk tags. Each recording kind owns a range; readers skip tags they do not know, so new
//! chunk types can be added without a format version bump.

/// Range 0x0001..0x00FF: tags any kind may carry.
pub mod common {
    /// JSON: free-form notes/warnings the writer wants a reader to show.
    pub const NOTES: u32 = 0x0001;
}

/// Range 0x0100..0x01FF: sampled profiles (`hood record`). See docs/format.md.
pub mod profile {
    /// JSON `RecordMeta`: how the recording was made (written first).
    pub const META: u32 = 0x0101;
    /// The raw `perf_event_attr` bytes passed to the kernel.
    pub const PERF_ATTR: u32 = 0x0102;
    /// u32 CPU number (LE) followed by raw perf ring records of that CPU, verbatim.
    pub const PERF_RECORDS: u32 = 0x0103;
    /// JSON: processes and threads that existed when recording started, with their raw
    /// /proc/PID/maps text and build-ids of mapped files.
    pub const PROC_SNAPSHOT: u32 = 0x0104;
    /// Raw text of /proc/kallsyms at record time.
    pub const KALLSYMS: u32 = 0x0105;
    /// JSON: build-ids of files named in mmap records that carried none.
    pub const BUILD_IDS: u32 = 0x0106;
    /// u32 pid (LE) followed by the raw text of /tmp/perf-PID.map.
    pub const PERF_MAP: u32 = 0x0107;
    /// The `[vdso]` ELF image of the recording machine.
    pub const VDSO: u32 = 0x0108;
    /// JSON `RecordStats`: counts at finalization (written last; absent = not finalized).
    pub const STATS: u32 = 0x0109;
    /// The lines of `KALLSYMS` that name the recording's kernel addresses (written at
    /// finalization): reports use it instead of indexing the whole text.
    pub const KALLSYMS_USED: u32 = 0x010A;
    /// Samples kept with their user registers and stack copy when the recorder's unwinding
    /// fell behind, unwound at report time: u32 CPU (LE), u32 length (LE) of the attribute
    /// that describes them (the one the kernel got), that attribute, then the records
    /// verbatim. Older readers skip the chunk (and so lack these samples).
    pub const RAW_SAMPLES: u32 = 0x010B;
    /// JSON `LabelsMeta` (`hood record --labels`): the tracefs instance, page size, and each
    /// traced event's id and `format` file text (field offsets are read from these).
    pub const LABELS_META: u32 = 0x0110;
    /// u32 CPU number (LE) followed by raw tracefs ring-buffer pages of that CPU, verbatim,
    /// each as long as the page size in `LABELS_META`.
    pub const LABELS_PAGES: u32 = 0x0111;
    /// JSON `LabelsStats`: the instance's per-CPU `stats` text read at stop (written last).
    pub const LABELS_STATS: u32 = 0x0112;
}

/// Range 0x0200..0x02FF: call-path tables (`hood calls`).
pub mod calls {
    /// JSON `CallsMeta`: how the file was made (hood_tracemodel::calls).
    pub const META: u32 = 0x0201;
    /// JSON `ProcessCalls`: one process's per-thread call-path tables, symbols resolved.
    pub const PROCESS: u32 = 0x0202;
}

/// Range 0x0300..0x03FF: event traces (`hood trace`).
pub mod trace {
    /// JSON `TraceMeta`: how the trace was recorded (hood_tracemodel::trace).
    pub const META: u32 = 0x0301;
    /// JSON `ProcessTrace`: one traced process (one hood-rt segment): clock, threads and their
    /// drop counts, function names, inline tag labels.
    pub const PROCESS: u32 = 0x0302;
    /// One thread's events: u32 pid, u32 tid, u64 start ns of its process's segment, u64 anchor
    /// ticks (LE), then the hood-rt event words (8 bytes each, LE) as they lay in the thread's
    /// buffer, oldest first. META version 2 files hold one LEB128 varint of
    /// `zigzag(ticks step) << 18 | index << 2 | kind` per word instead, version 1 files 16-byte
    /// (address, ticks << 2 | kind) events after the pid and tid.
    pub const EVENTS: u32 = 0x0303;
    /// u32 CPU (LE) followed by raw perf ring records of the context-switch event, verbatim.
    pub const SWITCHES: u32 = 0x0304;
    /// u32 CPU (LE) followed by raw perf ring records (SAMPLE: tid, time, cpu, raw tracepoint
    /// record; LOST) of the `irq:irq_handler_*` / `irq:softirq_*` tracepoints, verbatim; their
    /// `format` texts are in META.
    pub const IRQS: u32 = 0x0305;
    /// u32 CPU (LE) followed by raw perf ring records (SAMPLE: waker pid and tid, time, cpu,
    /// raw `sched:sched_waking` record; LOST) of the whole-CPU wake-up event, verbatim: the
    /// samples whose wakee is a thread of the traced command; the `format` texts are in META.
    pub const WAKEUPS: u32 = 0x0306;
    /// JSON `{"version", "tasks": [{pid, tid, comm}]}`: the names of the threads that woke a
    /// traced thread, read from /proc when the recorder first saw them.
    pub const TASKS: u32 = 0x0307;
}

/// Range 0x0400..0x04FF: segments of a monitor store (`hood top --record`). A `KEY` or `DELTA`
/// payload is the snapshot's wall-clock time (i64 milliseconds since the Unix epoch, LE)
/// followed by a zstd frame of the JSON `hood_monitor::Snapshot`.
pub mod monitor {
    /// A snapshot compressed on its own: the key later `DELTA` chunks are compressed against.
    pub const KEY: u32 = 0x0401;
    /// A snapshot compressed with the segment's last `KEY` snapshot (its JSON) as the zstd
    /// dictionary: reading it needs that key first.
    pub const DELTA: u32 = 0x0402;
    /// The per-process index of the intervals written since the segment's previous `SERIES`
    /// chunk (or its start): the first of them's wall-clock time (i64 ms, LE), a u32 (LE)
    /// length and a zstd frame of the JSON directory (each interval's time and snapshot
    /// without its lists; per frame its place; per process its frame and byte range), then
    /// zstd frames of processes' records (the first whole, the next ones only the fields that
    /// changed) and ended tasks. Readers that do not know it skip it: the intervals are whole
    /// in their own chunks.
    pub const SERIES: u32 = 0x0403;
}
