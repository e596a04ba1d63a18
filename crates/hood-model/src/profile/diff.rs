//! Two profiles compared (`hood diff BASE NEW`): rows keyed by what reports print (a
//! function's name as reports show it, a process name, a file, a source line), so that
//! the rows of a program rebuilt (other build-id, other addresses, another directory) meet
//! their counterparts by name; per row the weight, share and time in each, and whether the
//! change is larger than sampling alone would make it.
//!
//! **Time.** What a row weighs in time: with CPU samples of a clock event (`cpu-clock`,
//! `task-clock`) the nanoseconds each sample stands for (its period); with another event in
//! frequency mode, `1 s / frequency` per sample; in the time measures (`--wall`,
//! `--off-cpu`) the filter's weights, already nanoseconds. With neither (a fixed-period
//! event), times are sample counts, and [`Diff::timed`] is false.
//!
//! **Noise.** A sampled profile estimates each row's time from a count of samples; run to
//! run, the count of a row whose real time did not change still varies like a Poisson
//! count. A row's time is a sum of independent sample weights `w`, so its variance is
//! estimated by `Σ w²` (the count itself for unit weights, `count × period²` for samples of
//! one period; off-CPU stretches are taken alike). The change `new − base` is then compared
//! with its standard error `√(Σ w²_base + Σ w²_new)`: `z = change / error`, and a change
//! with `|z|` below [`NOISE_Z`] (2.576, the two-sided 99 % point of the normal
//! distribution) is marked noise. The test compares times, not shares: a function made
//! twice as slow raises its share and lowers every other function's, but the others'
//! times, what a user changed nothing in, stay put and are called noise.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use super::aggregate::{folded, leaf, sampled_line, Filter, Measure};
use super::model::{Profile, Sample};

/// Below this `|z|` a change is noise: the two-sided 99 % point of the standard normal
/// distribution.
pub const NOISE_Z: f64 = 2.576;

/// What the rows of a diff are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DiffBy {
    /// The sampled (leaf) function, by its name as reports print it (`name (inlined)` for
    /// an inlined frame); kernel and user functions of one name kept apart.
    #[default]
    Function,
    /// The process name (all processes of one name together).
    Comm,
    /// The file of the sampled function (executable, library, `[kernel.kallsyms]`).
    Dso,
    /// The sampled source line (`dir/file:line`, the last two components of the path) with
    /// its innermost function.
    Line,
}

/// The key of a row: what is matched between the two profiles.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Key {
    name: String,
    /// The function of a `line` row.
    function: Option<String>,
    kernel: bool,
}

/// One side's sums for a row.
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    weight: u64,
    time: f64,
    var: f64,
}

impl Acc {
    fn add(&mut self, weight: u64, time: f64) {
        self.weight = self.weight.saturating_add(weight);
        self.time += time;
        self.var += time * time;
    }
}

/// One row of a diff.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffRow {
    /// The function's name (`name (inlined)`), process name, file, or `dir/file:line`;
    /// `[unknown]` for samples without a frame.
    pub name: String,
    /// For `--by line`: the function the line belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// Kernel code.
    pub kernel: bool,
    /// The file of the function (NEW's, else BASE's; rows by function and line only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dso: Option<String>,
    /// Weight in BASE: samples, or ns in the time measures.
    pub base: u64,
    /// Weight in NEW.
    pub new: u64,
    /// Time in BASE, ns ([`Diff::timed`]; else samples).
    pub base_time: f64,
    /// Time in NEW.
    pub new_time: f64,
    /// Share of BASE's total, percent.
    pub base_percent: f64,
    /// Share of NEW's total, percent.
    pub new_percent: f64,
    /// `new_percent − base_percent`: the change in percentage points.
    pub delta_points: f64,
    /// `new_time − base_time`.
    pub delta_time: f64,
    /// The change relative to BASE's time, percent (`None`: not in BASE).
    pub change_percent: Option<f64>,
    /// The change in standard errors of sampling (see the module's documentation).
    pub z: f64,
    /// `|z| <` [`NOISE_Z`]: within sampling error.
    pub noise: bool,
}

/// One side of a diff, in sum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct DiffSide {
    /// Weight of the samples the filter keeps (samples, or ns in the time measures).
    pub total: u64,
    /// Their time, ns (samples when not [`Diff::timed`]).
    pub time: f64,
    /// Samples and off-CPU stretches kept.
    pub samples: u64,
}

/// Two profiles compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// What the rows are.
    pub by: DiffBy,
    /// BASE in sum.
    pub base: DiffSide,
    /// NEW in sum.
    pub new: DiffSide,
    /// Times are nanoseconds (else sample counts: neither side's event tells time).
    pub timed: bool,
    /// Rows, the largest change of time (either sign) first, ties by name
    /// ([`sort_by_points`](Self::sort_by_points) orders them by change of share).
    pub rows: Vec<DiffRow>,
    /// The noise threshold applied.
    pub noise_z: f64,
    /// What makes the comparison doubtful (different events, frequencies, measures).
    pub warnings: Vec<String>,
}

/// The time one kept sample stands for.
#[derive(Debug, Clone, Copy)]
enum TimeOf {
    /// Its period, ns (clock events; the time measures).
    Period,
    /// `1 s / frequency`, ns (other events sampled at a frequency).
    Fixed(f64),
    /// 1: the event does not tell time.
    Count,
}

impl TimeOf {
    fn of(prof: &Profile, f: &Filter) -> TimeOf {
        let event = prof.meta.event.split(':').next().unwrap_or("");
        if f.measure != Measure::CpuSamples || matches!(event, "cpu-clock" | "task-clock") {
            TimeOf::Period
        } else if prof.meta.freq_hz > 0 {
            TimeOf::Fixed(1e9 / prof.meta.freq_hz as f64)
        } else {
            TimeOf::Count
        }
    }

    fn time(self, s: &Sample) -> f64 {
        match self {
            TimeOf::Period => s.period as f64,
            TimeOf::Fixed(p) => p,
            TimeOf::Count => 1.0,
        }
    }
}

/// Sum one profile's kept samples per key, their time taken as `time` says.
fn side(
    prof: &Profile,
    f: &Filter,
    by: DiffBy,
    time: TimeOf,
    dsos: &mut HashMap<Key, String>,
) -> (HashMap<Key, Acc>, DiffSide) {
    let mut rows: HashMap<Key, Acc> = HashMap::default();
    let mut sum = Acc::default();
    let mut samples = 0u64;
    let mut comms: HashMap<u32, String> = HashMap::default();
    let unknown = || Key {
        name: "[unknown]".into(),
        function: None,
        kernel: false,
    };
    for s in f.samples(prof) {
        let w = f.weight(&s);
        let t = time.time(&s);
        samples += 1;
        sum.add(w, t);
        let func_key = |id: Option<u32>| {
            id.and_then(|id| prof.funcs.get(id as usize)).map(|func| {
                (
                    Key {
                        name: func.label().into_owned(),
                        function: None,
                        kernel: func.kernel,
                    },
                    func.dso.as_str(),
                )
            })
        };
        let key = match by {
            DiffBy::Function => match func_key(leaf(prof, &s)) {
                Some((k, dso)) => {
                    if !dsos.contains_key(&k) {
                        dsos.insert(k.clone(), dso.to_string());
                    }
                    k
                }
                None => unknown(),
            },
            DiffBy::Comm => Key {
                name: comms
                    .entry(s.pid)
                    .or_insert_with(|| prof.comm(s.pid))
                    .clone(),
                function: None,
                kernel: false,
            },
            DiffBy::Dso => match func_key(leaf(prof, &s)) {
                Some((k, dso)) => Key {
                    name: dso.to_string(),
                    function: None,
                    kernel: k.kernel,
                },
                None => unknown(),
            },
            DiffBy::Line => match sampled_line(prof, &s)
                .and_then(|l| func_key(Some(l.func)).map(|fk| (l, fk)))
            {
                Some((l, (fk, dso))) => {
                    let name = match prof.short_source_file(&l) {
                        Some(file) => format!("{file}:{}", l.line),
                        None => "[no line]".into(),
                    };
                    let k = Key {
                        name,
                        function: Some(fk.name),
                        kernel: fk.kernel,
                    };
                    if !dsos.contains_key(&k) {
                        dsos.insert(k.clone(), dso.to_string());
                    }
                    k
                }
                None => unknown(),
            },
        };
        rows.entry(key).or_default().add(w, t);
    }
    (
        rows,
        DiffSide {
            total: sum.weight,
            time: sum.time,
            samples,
        },
    )
}

fn pct(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        n as f64 * 100.0 / total as f64
    }
}

/// Compare the samples `f` keeps in `base` and in `new`, row by row.
pub fn diff(base: &Profile, new: &Profile, f: &Filter, by: DiffBy) -> Diff {
    let (tb, tn) = (TimeOf::of(base, f), TimeOf::of(new, f));
    let timed = !matches!(tb, TimeOf::Count) && !matches!(tn, TimeOf::Count);
    let (tb, tn) = if timed {
        (tb, tn)
    } else {
        (TimeOf::Count, TimeOf::Count)
    };
    // NEW's file names first: a row shows the file of the code as it is now.
    let mut dsos = HashMap::default();
    let (new_rows, new_side) = side(new, f, by, tn, &mut dsos);
    let (base_rows, base_side) = side(base, f, by, tb, &mut dsos);
    let mut keys: BTreeMap<Key, (Acc, Acc)> = BTreeMap::new();
    for (k, a) in base_rows {
        keys.entry(k).or_default().0 = a;
    }
    for (k, a) in new_rows {
        keys.entry(k).or_default().1 = a;
    }
    let mut rows: Vec<DiffRow> = keys
        .into_iter()
        .map(|(k, (b, n))| {
            let delta_time = n.time - b.time;
            let err = (b.var + n.var).sqrt();
            let z = if err > 0.0 { delta_time / err } else { 0.0 };
            let base_percent = pct(b.weight, base_side.total);
            let new_percent = pct(n.weight, new_side.total);
            DiffRow {
                dso: dsos.get(&k).cloned(),
                name: k.name,
                function: k.function,
                kernel: k.kernel,
                base: b.weight,
                new: n.weight,
                base_time: b.time,
                new_time: n.time,
                base_percent,
                new_percent,
                delta_points: new_percent - base_percent,
                delta_time,
                change_percent: (b.time > 0.0).then(|| delta_time * 100.0 / b.time),
                z,
                noise: z.abs() < NOISE_Z,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.delta_time
            .abs()
            .total_cmp(&a.delta_time.abs())
            .then_with(|| by_key(a, b))
    });
    Diff {
        by,
        base: base_side,
        new: new_side,
        timed,
        rows,
        noise_z: NOISE_Z,
        warnings: warnings(base, new, timed),
    }
}

/// Ties: by name, function, kernel.
fn by_key(a: &DiffRow, b: &DiffRow) -> std::cmp::Ordering {
    a.name
        .cmp(&b.name)
        .then_with(|| a.function.cmp(&b.function))
        .then_with(|| a.kernel.cmp(&b.kernel))
}

impl Diff {
    /// Order the rows by the size of their change of share (`|delta_points|`, either way),
    /// as `perf diff` orders its rows, instead of by change of time.
    pub fn sort_by_points(&mut self) {
        self.rows.sort_by(|a, b| {
            b.delta_points
                .abs()
                .total_cmp(&a.delta_points.abs())
                .then_with(|| by_key(a, b))
        });
    }
}

/// What makes the two recordings hard to compare.
fn warnings(base: &Profile, new: &Profile, timed: bool) -> Vec<String> {
    let mut w = Vec::new();
    let (mb, mn) = (&base.meta, &new.meta);
    if mb.event != mn.event {
        w.push(format!(
            "BASE sampled {} and NEW {}: their times are estimates of different things",
            or_unknown(&mb.event),
            or_unknown(&mn.event)
        ));
    }
    if mb.freq_hz != mn.freq_hz {
        w.push(format!(
            "BASE was sampled at {} Hz and NEW at {} Hz: rows are compared by time{}, but sample counts (the collapsed, SVG and pprof outputs) are not comparable; record both with the same -F",
            mb.freq_hz,
            mn.freq_hz,
            if timed { "" } else { " where known" }
        ));
    }
    if !timed {
        w.push(
            "the sampled event does not tell time (a fixed period): rows are compared by sample counts"
                .into(),
        );
    }
    w
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() {
        "an unknown event"
    } else {
        s
    }
}

/// Folded stacks of both profiles side by side: `(stack, base weight, new weight)`, one per
/// stack found in either, sorted by stack (the input of `difffolded.pl`'s output and
/// inferno's differential flame graph). Stacks start with the process name, as
/// [`folded`] makes them.
pub fn folded_pairs(base: &Profile, new: &Profile, f: &Filter) -> Vec<(String, u64, u64)> {
    let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (stack, n) in folded(base, f) {
        m.entry(stack).or_default().0 += n;
    }
    for (stack, n) in folded(new, f) {
        m.entry(stack).or_default().1 += n;
    }
    m.into_iter().map(|(s, (b, n))| (s, b, n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Func, Mode, Process, RecordMeta};

    /// A one-process profile of `./work` with `counts` samples of each named function
    /// (period 1 ms at 1000 Hz cpu-clock), under `main`.
    fn prof(dso: &str, counts: &[(&str, u64)]) -> Profile {
        let mut p = Profile {
            meta: RecordMeta {
                event: "cpu-clock".into(),
                freq_hz: 1000,
                ..RecordMeta::default()
            },
            stacks: vec![Vec::new()],
            processes: vec![Process {
                pid: 7,
                comm: "work".into(),
                threads: Vec::new(),
            }],
            ..Profile::default()
        };
        let func = |name: &str| Func {
            name: name.into(),
            dso: dso.into(),
            resolved: true,
            ..Func::default()
        };
        p.funcs.push(func("main"));
        for (i, (name, n)) in counts.iter().enumerate() {
            p.funcs.push(func(name));
            p.stacks.push(vec![i as u32 + 1, 0]);
            for k in 0..*n {
                p.samples.push(Sample {
                    pid: 7,
                    tid: 7,
                    cpu: 0,
                    time: k,
                    period: 1_000_000,
                    mode: Mode::User,
                    stack: i as u32 + 1,
                    locs: 0,
                });
            }
        }
        p
    }

    #[test]
    fn a_function_made_twice_as_slow_leads_and_the_others_are_noise() {
        let base = prof("work.old", &[("a", 1000), ("b", 1000), ("c", 2000)]);
        let new = prof("work", &[("c", 2010), ("a", 2000), ("b", 990)]);
        let d = diff(&base, &new, &Filter::default(), DiffBy::Function);
        assert!(d.timed);
        assert_eq!(d.rows[0].name, "a");
        assert_eq!(d.rows[0].change_percent, Some(100.0));
        assert!(!d.rows[0].noise);
        assert_eq!(d.rows[0].delta_time, 1000.0 * 1e6);
        // Shares: 25 % → 40 %.
        assert!((d.rows[0].delta_points - 15.0).abs() < 1e-9);
        // Matched by name, though the file differs; NEW's file shown.
        assert_eq!(d.rows[0].dso.as_deref(), Some("work"));
        for r in &d.rows[1..] {
            assert!(r.noise, "{r:?}");
        }
        assert_eq!(d.rows.len(), 3);
        // z of a: 1000 ms against √(1000 + 2000) ms.
        assert!((d.rows[0].z - 1000.0 / 3000f64.sqrt()).abs() < 1e-9);
        assert_eq!((d.base.samples, d.new.samples), (4000, 5000));
    }

    #[test]
    fn rows_in_one_profile_only_and_other_keys() {
        let base = prof("work", &[("gone", 500), ("kept", 500)]);
        let new = prof("work", &[("kept", 500), ("fresh", 100)]);
        let d = diff(&base, &new, &Filter::default(), DiffBy::Function);
        let names: Vec<&str> = d.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["gone", "fresh", "kept"]);
        assert_eq!(d.rows[0].change_percent, Some(-100.0));
        assert_eq!(d.rows[1].change_percent, None);
        // By change of share: gone 50 % → 0, fresh 0 → 16.7 %, kept 50 % → 83.3 %.
        let mut d = diff(&base, &new, &Filter::default(), DiffBy::Function);
        d.sort_by_points();
        let names: Vec<&str> = d.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["gone", "kept", "fresh"]);
        let d = diff(&base, &new, &Filter::default(), DiffBy::Comm);
        assert_eq!(d.rows.len(), 1);
        assert_eq!((d.rows[0].base, d.rows[0].new), (1000, 600));
        let d = diff(&base, &new, &Filter::default(), DiffBy::Dso);
        assert_eq!(d.rows[0].name, "work");
    }

    #[test]
    fn pairs_of_folded_stacks() {
        let base = prof("work", &[("a", 3), ("b", 1)]);
        let new = prof("work", &[("a", 2), ("c", 5)]);
        let pairs = folded_pairs(&base, &new, &Filter::default());
        assert_eq!(
            pairs,
            [
                ("work;main;a".to_string(), 3, 2),
                ("work;main;b".to_string(), 1, 0),
                ("work;main;c".to_string(), 0, 5),
            ]
        );
    }

    /// A Poisson count of mean `mean`: arrivals of a unit-rate Poisson process in `[0, mean)`,
    /// from a xorshift generator (deterministic).
    fn poisson(state: &mut u64, mean: f64) -> u64 {
        let mut t = 0.0;
        let mut n = 0;
        loop {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            let u = ((*state >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            t -= u.ln();
            if t >= mean {
                return n;
            }
            n += 1;
        }
    }

    #[test]
    fn unchanged_functions_are_noise_in_at_least_95_percent_of_simulated_pairs() {
        // Four functions of unchanged mean counts, one doubled, sampled as Poisson counts
        // (what timer sampling of a steady program gives, at most) in 200 pairs of runs.
        let means = [
            ("tiny", 20.0),
            ("small", 100.0),
            ("mid", 500.0),
            ("big", 2000.0),
        ];
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let (mut unchanged, mut noise, mut doubled_found) = (0, 0, 0);
        for _ in 0..200 {
            let mut draw = |k: f64| -> Vec<(&'static str, u64)> {
                let mut v: Vec<(&'static str, u64)> = means
                    .iter()
                    .map(|&(n, m)| (n, poisson(&mut rng, m)))
                    .collect();
                v.push(("slowed", poisson(&mut rng, 300.0 * k)));
                v
            };
            let (b, n) = (draw(1.0), draw(2.0));
            let d = diff(
                &prof("work", &b),
                &prof("work", &n),
                &Filter::default(),
                DiffBy::Function,
            );
            for r in &d.rows {
                if r.name == "slowed" {
                    doubled_found += usize::from(!r.noise);
                } else {
                    unchanged += 1;
                    noise += usize::from(r.noise);
                }
            }
        }
        assert_eq!(unchanged, 800);
        assert!(noise * 100 >= unchanged * 95, "{noise} of {unchanged}");
        assert_eq!(doubled_found, 200);
    }

    #[test]
    fn different_frequencies_are_compared_by_time_and_said() {
        let base = prof("work", &[("a", 100)]);
        let mut new = prof("work", &[("a", 200)]);
        new.meta.freq_hz = 2000;
        for s in &mut new.samples {
            s.period = 500_000;
        }
        let d = diff(&base, &new, &Filter::default(), DiffBy::Function);
        assert_eq!(d.rows[0].delta_time, 0.0);
        assert!(d.rows[0].noise);
        assert!(d.warnings.iter().any(|w| w.contains("2000 Hz")));
    }
}
