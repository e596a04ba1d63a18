//! `calls run`, `get` and `reset`: the command started with the runtime preloaded and its
//! tables collected, the tables of running and ended processes collected, and resets.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hood_abi::{HeaderView, ThreadView, THREAD_EXITED, THREAD_HEADER_SIZE};
use hood_proc::child::{Child, Exit};
use hood_proc::shm::ShmFile;
use hood_proc::signal;
use hood_proc::steer::{Steer, Steering, STOP_GRACE};
use hood_tracemodel::calls::{ProcessCalls, ThreadCalls};

use hood_format::{OutputFile, Writer};

use super::{collect_with, file, Message};
use crate::run::{Command, SegmentDir};
use crate::{runtime, segments, HooksError};

/// What `calls run` does.
pub struct RunConfig {
    /// The file written.
    pub output: PathBuf,
    /// Leave the segments in their directory after collecting them.
    pub keep: bool,
    /// The command and its arguments.
    pub argv: Vec<String>,
}

/// What `calls get` does.
pub struct GetConfig {
    /// Only this process.
    pub pid: Option<u32>,
    /// The file written.
    pub output: PathBuf,
    /// Do not remove the segments of processes that have ended.
    pub keep: bool,
}

/// What `calls run` did.
pub struct Ran {
    /// How the command ended.
    pub exit: Exit,
    /// The processes written to the output file (none: no file; a note said why).
    pub procs: Vec<ProcessCalls>,
    /// The error that ended the run early (the command was killed; its tables up to then
    /// were written, and a warning said so).
    pub error: Option<String>,
}

/// What `calls get` collected.
pub enum Got {
    /// The processes written to the output file.
    Written(Vec<ProcessCalls>),
    /// No process was found: why, in words.
    Nothing(String),
}

/// What `calls reset` did.
pub enum Reset {
    /// This many processes will reset at their next function entry or exit.
    Done(usize),
    /// No process was reset: why, in words.
    Nothing(String),
}

/// The error and its causes on one line.
fn with_causes(e: &HooksError) -> String {
    let mut s = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        s.push_str(&format!(": {c}"));
        cause = c.source();
    }
    s
}

/// [`segments::clean_stale`]'s lines as messages.
fn cleaned(say: &mut dyn FnMut(Message)) -> impl FnMut(String) + '_ {
    |line| {
        say(match line.strip_prefix("warning: ") {
            Some(w) => Message::Warning(w.to_string()),
            None => Message::Note(line),
        })
    }
}

/// While the command runs, the tables collected so far replace the output file every second
/// (every four times what one snapshot costs, when that is longer), so a `calls run` killed at
/// any moment, SIGKILL included, leaves a complete file of its last snapshot.
struct Snapshots<'a> {
    dir: &'a Path,
    cfg: &'a RunConfig,
    out: &'a mut Writer<OutputFile>,
    next: Instant,
    /// No (more) snapshots: the output is a special file, or writing one failed.
    off: bool,
    /// When the file last received a snapshot with tables.
    last: Option<Instant>,
}

/// The slots of exited threads, given back to their processes while `calls run` runs: a
/// thread's tables are taken out of its slot once it has exited, kept here (and in every
/// snapshot and the final file), and the slot is marked free for a new thread (hood-abi
/// `FREE_SLOTS_OFFSET`). A server that starts threads per request then never runs out of
/// slots. Only processes that have used a quarter of their slots are looked at, every 20 ms.
struct Retirer {
    /// Segments seen, by file name, opened for writing.
    segs: HashMap<std::ffi::OsString, (ShmFile, HeaderView)>,
    /// Tables of the threads taken out, by pid.
    retired: HashMap<u32, Vec<ThreadCalls>>,
    next: Option<Instant>,
    /// Whether the directory gained segments since the last look.
    watch: segments::DirWatch,
}

impl Retirer {
    const EVERY: Duration = Duration::from_millis(20);

    fn new(dir: &Path) -> Retirer {
        Retirer {
            segs: HashMap::new(),
            retired: HashMap::new(),
            next: None,
            watch: segments::DirWatch::new(dir),
        }
    }

    fn tick(&mut self, dir: &Path) {
        if self.next.is_some_and(|n| Instant::now() < n) {
            return;
        }
        self.next = Some(Instant::now() + Self::EVERY);
        let new = match self.watch.changed() {
            true => segments::new_segments(dir, |n| self.segs.contains_key(n)),
            false => Vec::new(),
        };
        for (name, path) in new {
            match segments::open_segment(&path, hood_abi::MODE_CALLS, "hood trace", true) {
                Ok((f, h, _)) => {
                    self.segs.insert(name, (f, h));
                }
                // A header not written yet is looked at again next time (and so is a
                // segment of the other mode, as before).
                Err(_) => self.watch.again(),
            }
        }
        for (f, h) in self.segs.values_mut() {
            let used = f
                .read_fixed(
                    hood_abi::parse::THREADS_USED_OFFSET as u64,
                    4,
                    "threads_used",
                )
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .unwrap_or(0)
                .min(h.max_threads);
            if used < h.max_threads.div_ceil(4) {
                continue;
            }
            for i in 0..used.min(hood_abi::REUSABLE_SLOTS) {
                if let Some(t) = take_exited(f, h, i) {
                    self.retired.entry(h.pid).or_default().push(t);
                }
            }
        }
    }
}

/// The tables of slot `i` if its thread has exited, the slot then given back (tid and state
/// cleared, free byte set); `None` otherwise or when the slot cannot be read or written.
fn take_exited(f: &mut ShmFile, h: &HeaderView, i: u32) -> Option<ThreadCalls> {
    let off = h.slot_offset(i);
    let th = f
        .read(off, THREAD_HEADER_SIZE as u64, "a thread slot")
        .ok()?;
    let state = u32::from_le_bytes(th.get(4..8)?.try_into().ok()?);
    if state != THREAD_EXITED {
        return None;
    }
    let parts = hood_abi::parse::slot_parts(h, &th);
    let frames = f.read(off + parts[1].0, parts[1].1, "a thread slot").ok()?;
    let nodes = f.read(off + parts[2].0, parts[2].1, "a thread slot").ok()?;
    let view = ThreadView::parse_parts(h, &th, &frames, &nodes).ok()?;
    let t = segments::exited_thread_calls(h, &view)?;
    f.write_at(&[0u8; 8], off).ok()?;
    f.write_at(
        &[hood_abi::SLOT_FREE],
        hood_abi::FREE_SLOTS_OFFSET + i as u64,
    )
    .ok()?;
    Some(t)
}

impl Snapshots<'_> {
    /// Time between snapshots, at least.
    const EVERY: Duration = Duration::from_secs(1);

    fn tick(&mut self, retired: &HashMap<u32, Vec<ThreadCalls>>, say: &mut dyn FnMut(Message)) {
        if Instant::now() < self.next || self.off {
            return;
        }
        let t = Instant::now();
        let written = collect_with(
            std::slice::from_ref(&self.dir.to_path_buf()),
            None,
            retired,
            &mut |_| {},
        )
        .and_then(|(procs, _)| match procs.is_empty() {
            true => Ok(()),
            false => file::rewrite(self.out, "run", &self.cfg.argv, &procs).map(|_| {
                self.last = Some(Instant::now());
            }),
        });
        if let Err(e) = written {
            // The final write at the end will say what is wrong; no message every second.
            say(Message::Note(format!("warning: writing a snapshot of the tables: {}; the file is written when the command ends", with_causes(&e))));
            self.off = true;
        }
        self.next = Instant::now() + Self::EVERY.max(t.elapsed() * 4);
    }
}

/// Run the command of `cfg` with the runtime preloaded into a private segment directory,
/// collect every process of its tree when it ends (and snapshots while it runs) into
/// `cfg.output`. Steered by `steer` ([`hood_proc::signal::Signals::forwarding`]: stop
/// signals are passed on to the command); the command is killed when the recorder dies. A command that
/// still runs [`STOP_GRACE`] after a stop request is not recorded any further: the tables are
/// collected there, the file written, and the recorder waits for the command without
/// recording (stop signals still passed on) and returns its status.
///
/// One skeleton, as `hood record`'s and `hood trace record`'s: open (the segment directory,
/// the file, the command) → until the command ends or the grace after a stop passes → finish. An error while the command runs
/// ends the run: the command is killed, its tables are collected and written all the same,
/// and [`Ran::error`] says why. The command is killed and reaped, and the directory removed,
/// on every way out, a panic included.
///
/// [`STOP_GRACE`]: hood_proc::steer::STOP_GRACE
pub fn run(
    cfg: &RunConfig,
    steer: &mut dyn Steer,
    say: &mut dyn FnMut(Message),
) -> Result<Ran, HooksError> {
    let tsc = hood_proc::clock::TscRate::start();
    let lib = runtime::library()?;
    let dir = SegmentDir::new(
        segments::private_dir(&segments::shm_dir(), "calls-run", &mut cleaned(say))?,
        cfg.keep,
    );
    let ran = run_in(cfg, &lib, tsc, dir.path(), &mut Steering::new(steer), say);
    dir.close(&mut |m| say(Message::Note(m)));
    ran
}

fn run_in(
    cfg: &RunConfig,
    lib: &Path,
    tsc: Option<hood_proc::clock::TscRate>,
    dir: &Path,
    steering: &mut Steering<'_>,
    say: &mut dyn FnMut(Message),
) -> Result<Ran, HooksError> {
    let preload = runtime::preload(lib);
    let (prog, _) = cfg.argv.split_first().ok_or(HooksError::NoCommand)?;
    // A valid (empty) file from the start, beside the output: a run killed before the first
    // snapshot leaves a readable file, which the next writer of the output keeps. The output
    // itself is replaced only at the end, by a file with tables. A pipe is written once, at
    // the end.
    let mut out = file::create(&cfg.output, "run", &cfg.argv)?;
    for s in out.stale() {
        say(Message::Note(s.to_string()));
    }
    let special = out.in_place_output();
    crate::run::not_stopped_yet(steering)?;
    // The command is killed (SIGKILL) when the recorder dies, however it dies, rather than
    // run on unobserved with nobody to collect its tables; and on every way out of this
    // function that did not wait for it.
    let mut env = vec![
        ("LD_PRELOAD".into(), preload),
        ("HOOD_SHM_DIR".into(), dir.as_os_str().to_owned()),
    ];
    env.extend(runtime::tsc_setting(tsc));
    let mut command = Command(Child::spawn(&cfg.argv, &env)?);
    let mut snapshots = Snapshots {
        dir,
        cfg,
        out: &mut out,
        next: Instant::now() + Snapshots::EVERY,
        off: special,
        last: None,
    };
    let mut retirer = Retirer::new(dir);
    let pid = command.pid();
    // Until the command ends, the grace after a stop request passes, or an error ends the
    // run.
    let mut cut = None;
    let watched = steering.watch(&mut command, &mut |stop| {
        if let Some(s) = stop.filter(|s| s.at.elapsed() >= STOP_GRACE) {
            cut = Some(crate::run::still_runs(prog, pid, &s));
            return Ok(ControlFlow::Break(()));
        }
        retirer.tick(dir);
        // A test's fault: the n-th look once the command's segment exists fails.
        #[cfg(test)]
        if !retirer.segs.is_empty() {
            crate::run::seam::fails(crate::run::seam::Point::CallsWatch)?;
        }
        snapshots.tick(&retirer.retired, say);
        Ok::<_, HooksError>(ControlFlow::Continue(Duration::from_millis(20)))
    });
    let last = snapshots.last;
    let (ended, error) = match watched {
        Ok(Some(exit)) => (Some(exit), None),
        // The grace passed: the command runs on, and is waited for once the file is written.
        Ok(None) => (None, None),
        Err(e) => {
            // A run ended by an error: the command is not left running unobserved; what its
            // tables hold when it is killed is collected, as after any kill.
            say(Message::Note(format!(
                "killing the command (pid {}): the run stopped on an error",
                command.pid()
            )));
            command.kill();
            (Some(command.wait()?), Some(with_causes(&e)))
        }
    };
    match (steering.stop().and_then(|s| s.signal), ended, &cut) {
        (Some(sig), Some(status), _) => say(Message::Note(format!(
            "{} received; {prog} {}; collecting its tables",
            signal::name(sig),
            match status {
                Exit::Signal(s) => format!("was ended by {}", signal::name(s)),
                Exit::Code(c) => format!("exited with status {c}"),
            }
        ))),
        (_, None, Some(why)) => say(Message::Warning(format!(
            "{why}: recording stopped there; collecting its tables as they are now"
        ))),
        _ => {}
    }
    // What the output holds if the final file cannot be written.
    let fallback = |out: Writer<OutputFile>| match last {
        // The last snapshot is whole: it replaces the old file.
        Some(t) => match out.put_in_place().error {
            None => format!(
                "{} holds the tables as of {:.1} s before the recording ended (its last snapshot)",
                cfg.output.display(),
                t.elapsed().as_secs_f64()
            ),
            Some(p) => format!("{p}"),
        },
        None => format!(
            "the tables could not be written; {} is left as it was",
            cfg.output.display()
        ),
    };
    let procs = match collect_with(
        std::slice::from_ref(&dir.to_path_buf()),
        None,
        &retirer.retired,
        say,
    ) {
        Ok((procs, _)) => procs,
        Err(e) => {
            return Err(HooksError::Output {
                what: fallback(out),
                source: Box::new(e),
            })
        }
    };
    if procs.is_empty() {
        // Nothing to replace the previous file with: it stays (the new one is dropped).
        drop(out);
        say(Message::Note(format!(
            "{prog} produced no call-path tables: was it built with -finstrument-functions \
             (gcc/clang) and dynamically linked? See docs/calls.md{}",
            if special {
                String::new()
            } else {
                format!("; {} is left as it was", cfg.output.display())
            }
        )));
    } else {
        if let Err(e) = file::rewrite(&mut out, "run", &cfg.argv, &procs) {
            return Err(HooksError::Output {
                what: fallback(out),
                source: Box::new(e),
            });
        }
        out.commit()?;
    }
    if let Some(e) = &error {
        say(Message::Warning(crate::run::stopped_early(
            e,
            &cfg.output,
            "hood calls report",
        )));
    }
    // A command that runs on after the file is written is waited for without recording (it
    // dies with its recorder otherwise); stop signals still reach it.
    let status = match ended {
        Some(e) => e,
        None => {
            say(Message::Note(format!(
                "{prog} (pid {pid}) runs on unrecorded; waiting for it to end (Ctrl-C or `kill {pid}` ends it)"
            )));
            steering.wait(&mut command)?
        }
    };
    Ok(Ran {
        exit: status,
        procs,
        error,
    })
}

/// Collect the tables of the running and ended instrumented processes (or of `cfg.pid`) into
/// `cfg.output`; the segments of ended processes are removed unless `cfg.keep`.
pub fn get(cfg: &GetConfig, say: &mut dyn FnMut(Message)) -> Result<Got, HooksError> {
    let base = segments::shm_dir();
    segments::clean_stale(&base, &mut cleaned(say));
    let dirs = segments::search_dirs(&base, cfg.pid);
    let (procs, finished) = super::collect(&dirs, cfg.pid, say)?;
    if procs.is_empty() {
        return Ok(Got::Nothing(match cfg.pid {
            Some(pid) => segments::why_not_found(pid, &base),
            None => format!(
                "no instrumented processes in {} (programs must be built with -finstrument-functions and run with libhood_rt)",
                base.display()
            ),
        }));
    }
    let mut out = file::create(&cfg.output, "get", &[])?;
    for s in out.stale() {
        say(Message::Note(s.to_string()));
    }
    file::rewrite(&mut out, "get", &[], &procs)?;
    out.commit()?;
    if !cfg.keep {
        // Segments in a private directory belong to the `calls run` that made it: it
        // collects them when its command ends.
        for f in finished
            .iter()
            .filter(|f| f.parent() == Some(base.as_path()))
        {
            let _ = std::fs::remove_file(f);
        }
    }
    Ok(Got::Written(procs))
}

/// Ask the running instrumented processes (or `pid`) to reset their tables at their next
/// hook.
pub fn reset(pid: Option<u32>, say: &mut dyn FnMut(Message)) -> Result<Reset, HooksError> {
    let base = segments::shm_dir();
    segments::clean_stale(&base, &mut cleaned(say));
    let dirs = segments::search_dirs(&base, pid);
    let mut warnings = Vec::new();
    let segs = segments::scan_dirs(&dirs, pid, true, &mut warnings);
    for w in warnings {
        say(Message::Warning(w));
    }
    let mut n = 0;
    for (seg, (_, live)) in segs.iter().zip(segments::to_processes(&segs)) {
        if !live {
            continue;
        }
        // Through the descriptor that was checked: the path may name another file by now.
        let off = hood_abi::parse::RESET_GEN_OFFSET as u64;
        let b = seg
            .file
            .read_fixed(off, 4, "the reset counter")
            .map_err(|e| HooksError::Segment(format!("{}: {e}", seg.path.display())))?;
        let gen = u32::from_le_bytes([b[0], b[1], b[2], b[3]]).wrapping_add(1);
        seg.file
            .write_at(&gen.to_le_bytes(), off)
            .map_err(|source| HooksError::Io {
                what: format!("writing the reset counter of {}", seg.path.display()),
                source,
            })?;
        n += 1;
    }
    if n > 0 {
        return Ok(Reset::Done(n));
    }
    Ok(Reset::Nothing(match pid {
        Some(p) if segs.is_empty() => segments::why_not_found(p, &base),
        Some(p) => format!("pid {p} has ended: nothing to reset"),
        None => format!("no running instrumented processes in {}", base.display()),
    }))
}
