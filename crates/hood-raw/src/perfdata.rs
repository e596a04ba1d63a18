//! The perf.data container: file header, event attributes, data section and header features,
//! in both the seekable layout (`perf record -o FILE`) and the streamed one (`-o -`).
//!
//! Every size, offset and count comes from untrusted bytes and is checked against the bytes
//! really present before it is used; nothing is allocated beyond what the file holds.

use rustc_hash::FxHashMap;

use crate::attr::{sample, Attr};
use crate::bytes::{u16_at, u32_at, u64_at};
use crate::records::{kind, parse_sample, sample_id};

/// The magic bytes at the start of a perf.data file.
pub const MAGIC: &[u8; 8] = b"PERFILE2";

/// Whether a file's first bytes are perf.data's magic.
pub fn has_perf_data_magic(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// Size of the seekable layout's file header.
const HEADER_SIZE: u64 = 104;
/// Size of the streamed layout's file header (magic and size only).
const PIPE_HEADER_SIZE: u64 = 16;
/// Size of a `perf_file_section` (offset and size).
const SECTION: u64 = 16;

/// perf's own record types (`PERF_RECORD_USER_TYPE_START` and up) that the reader interprets.
mod user {
    pub const HEADER_ATTR: u32 = 64;
    pub const HEADER_TRACING_DATA: u32 = 66;
    pub const HEADER_BUILD_ID: u32 = 67;
    pub const AUXTRACE: u32 = 71;
    pub const HEADER_FEATURE: u32 = 80;
    pub const COMPRESSED: u32 = 81;
    pub const FIRST: u32 = 64;
}

/// Header feature numbers (`HEADER_*` in perf's header.h) that hood reads.
mod feat {
    pub const BUILD_ID: u64 = 2;
    pub const HOSTNAME: u64 = 3;
    pub const OSRELEASE: u64 = 4;
    pub const VERSION: u64 = 5;
    pub const ARCH: u64 = 6;
    pub const NRCPUS: u64 = 7;
    pub const CMDLINE: u64 = 11;
    pub const EVENT_DESC: u64 = 12;
}

/// `bytes[offset..offset + size]`, if the section lies inside `bytes`.
fn section(bytes: &[u8], offset: u64, size: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(size).ok()?)?;
    bytes.get(start..end)
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// One event of the file: its attribute, the ids its records carry, and its name.
#[derive(Debug, Clone)]
pub struct FileEvent {
    /// The decoded attribute.
    pub attr: Attr,
    /// The ids records of this event carry (PERF_SAMPLE_ID / IDENTIFIER).
    pub ids: Vec<u64>,
    /// The name perf gave it (from the event description feature), if any.
    pub name: Option<String>,
}

impl FileEvent {
    /// A display name: perf's own, else one derived from the type and config.
    pub fn display_name(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        let a = &self.attr;
        let hw = [
            "cycles",
            "instructions",
            "cache-references",
            "cache-misses",
            "branches",
            "branch-misses",
            "bus-cycles",
            "stalled-cycles-frontend",
            "stalled-cycles-backend",
            "ref-cycles",
        ];
        let sw = [
            "cpu-clock",
            "task-clock",
            "page-faults",
            "context-switches",
            "cpu-migrations",
            "minor-faults",
            "major-faults",
            "alignment-faults",
            "emulation-faults",
            "dummy",
            "bpf-output",
            "cgroup-switches",
        ];
        let known = match a.type_ {
            0 => hw.get(a.config as usize),
            1 => sw.get(a.config as usize),
            _ => None,
        };
        match known {
            Some(n) => (*n).to_string(),
            None if a.type_ == 2 => format!("tracepoint {}", a.config),
            None => format!("event type {} config {:#x}", a.type_, a.config),
        }
    }

    /// Whether the event takes samples (a period or frequency) and is not perf's `dummy`
    /// side-band event.
    pub fn samples(&self) -> bool {
        self.attr.sample_period_or_freq != 0 && !(self.attr.type_ == 1 && self.attr.config == 9)
    }
}

/// What perf wrote about the recording in its header features.
#[derive(Debug, Default, Clone)]
pub struct Features {
    /// Host name.
    pub hostname: Option<String>,
    /// Kernel release (`uname -r`).
    pub os_release: Option<String>,
    /// perf's version.
    pub perf_version: Option<String>,
    /// Machine architecture.
    pub arch: Option<String>,
    /// CPUs online when recording.
    pub nr_cpus_online: Option<u32>,
    /// perf's command line.
    pub cmdline: Vec<String>,
    /// Build-ids of the files samples hit: (file name, build-id, cpumode); entries whose
    /// build-id is empty are left out.
    pub build_ids: Vec<(String, crate::BuildId, u8)>,
    /// Event names from the event description, with the ids of each event.
    pub event_names: Vec<(String, Vec<u64>)>,
}

/// A perf.data file taken apart, borrowing the file's bytes.
#[derive(Debug)]
pub struct PerfFile<'a> {
    /// The events (attributes) of the file; in the streamed layout, those announced before
    /// the first record (more arrive while [`PerfFile::for_each_record`] walks the records).
    pub events: Vec<FileEvent>,
    /// Header features (in the streamed layout, filled while the records are read).
    pub features: Features,
    /// The records.
    data: &'a [u8],
    /// Whether this is the streamed layout.
    pub pipe: bool,
    /// What was repaired to read the file (cut short, unfinished).
    pub repaired: Option<String>,
}

/// A record of the data section, with the event whose attribute describes it.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// PERF_RECORD_* type.
    pub typ: u32,
    /// misc bits.
    pub misc: u16,
    /// Body after the 8-byte header.
    pub body: &'a [u8],
    /// Index into [`PerfFile::events`] of the record's event; `None` if its id is unknown.
    pub event: Option<usize>,
}

/// Why reading the records stopped or what was passed over, for the caller's warnings.
#[derive(Debug, Default, Clone)]
pub struct RecordStats {
    /// perf's own bookkeeping records (rounds, headers, auxtrace, ...).
    pub bookkeeping: u64,
    /// zstd-compressed record batches (`perf record -z`), which hood cannot read.
    pub compressed: u64,
    /// Set when a damaged record ended the walk: byte offset in the data and bytes left.
    pub damaged_at: Option<(u64, u64)>,
}

impl<'a> PerfFile<'a> {
    /// Take apart the file `bytes`; an error says what is wrong with it.
    pub fn parse(bytes: &'a [u8]) -> Result<PerfFile<'a>, String> {
        if bytes.len() < 16 {
            return Err("the file is shorter than perf's file header".into());
        }
        if &bytes[..8] == b"2ELIFREP" {
            return Err("it was written on a big-endian machine, which hood does not read".into());
        }
        if &bytes[..8] != MAGIC {
            return Err("it does not start with perf's magic bytes PERFILE2".into());
        }
        let size = u64_at(bytes, 8).unwrap_or(0);
        if size == PIPE_HEADER_SIZE {
            return Ok(PerfFile {
                events: Vec::new(),
                features: Features::default(),
                data: &bytes[16..],
                pipe: true,
                repaired: None,
            });
        }
        if size != HEADER_SIZE {
            return Err(format!(
                "its header size is {size} (expected {HEADER_SIZE}; very old perf files are not read)"
            ));
        }
        if bytes.len() < HEADER_SIZE as usize {
            return Err("the file header is cut short".into());
        }
        let field = |at| u64_at(bytes, at).unwrap_or(0);
        let entry_size = field(16);
        if !(64 + SECTION..=4096 + SECTION).contains(&entry_size) {
            return Err(format!("its attribute size {entry_size} is implausible"));
        }
        let attrs = section(bytes, field(24), field(32))
            .ok_or("its attribute section lies outside the file")?;
        let mut events = Vec::new();
        for entry in attrs.chunks_exact(entry_size as usize) {
            let attr_len = (entry_size - SECTION) as usize;
            let (attr_bytes, ids_at) = entry.split_at(attr_len);
            let own = u32_at(attr_bytes, 4).unwrap_or(0) as usize;
            let attr_bytes = if (64..attr_len).contains(&own) {
                &attr_bytes[..own]
            } else {
                attr_bytes
            };
            let attr = Attr::parse(attr_bytes).map_err(|e| e.to_string())?;
            let ids = section(
                bytes,
                u64_at(ids_at, 0).unwrap_or(0),
                u64_at(ids_at, 8).unwrap_or(0),
            )
            .ok_or("an event's id list lies outside the file")?
            .chunks_exact(8)
            .filter_map(|w| u64_at(w, 0))
            .collect();
            events.push(FileEvent {
                attr,
                ids,
                name: None,
            });
        }
        if events.is_empty() {
            return Err("it describes no events".into());
        }
        let (data_off, data_size) = (field(40), field(48));
        if data_off < HEADER_SIZE || data_off > bytes.len() as u64 {
            return Err(format!(
                "its data section starts at byte {data_off}, outside the file"
            ));
        }
        let mut repaired = None;
        let mut features = Features::default();
        let data = match section(bytes, data_off, data_size).filter(|_| data_size > 0) {
            Some(d) => {
                let bits = [field(72), field(80), field(88), field(96)];
                if let Err(e) = read_feature_table(bytes, data_off + data_size, bits, &mut features)
                {
                    repaired = Some(format!(
                        "its header features are damaged ({e}); they were not read"
                    ));
                    features = Features::default();
                }
                d
            }
            None => {
                repaired = Some(format!(
                    "the data section was not finalized or is cut short (the header says {data_size} bytes, the file holds {}); reading to the end of the file, without perf's header features (was `perf record` killed?)",
                    bytes.len() as u64 - data_off
                ));
                &bytes[data_off as usize..]
            }
        };
        let mut file = PerfFile {
            events,
            features,
            data,
            pipe: false,
            repaired,
        };
        file.name_events();
        Ok(file)
    }

    /// Give events the names of the event description (by id, else by position).
    fn name_events(&mut self) {
        let names = std::mem::take(&mut self.features.event_names);
        let by_position = names.len() == self.events.len();
        for (i, (name, ids)) in names.iter().enumerate() {
            let found = self
                .events
                .iter()
                .position(|e| ids.iter().any(|id| e.ids.contains(id)));
            let at = found.or(by_position.then_some(i));
            if let Some(e) = at.and_then(|at| self.events.get_mut(at)) {
                if e.name.is_none() {
                    e.name = Some(name.clone());
                }
            }
        }
        self.features.event_names = names;
    }

    /// Walk the records in file order, calling `f` for each one hood may decode; perf's own
    /// records are interpreted (streamed attributes and features) or passed over.
    pub fn for_each_record(&mut self, mut f: impl FnMut(&PerfFile<'a>, Record<'a>)) -> RecordStats {
        let mut stats = RecordStats::default();
        let data = self.data;
        let mut ids: FxHashMap<u64, usize> = FxHashMap::default();
        self.index_ids(&mut ids);
        let mut at = 0usize;
        while at < data.len() {
            let (Some(typ), Some(misc), Some(size)) =
                (u32_at(data, at), u16_at(data, at + 4), u16_at(data, at + 6))
            else {
                stats.damaged_at = Some((at as u64, (data.len() - at) as u64));
                break;
            };
            let size = size as usize;
            let Some(rec) = data.get(at..at + size).filter(|_| size >= 8) else {
                stats.damaged_at = Some((at as u64, (data.len() - at) as u64));
                break;
            };
            let body = &rec[8..];
            let mut next = at + size;
            if typ >= user::FIRST {
                stats.bookkeeping += 1;
                // Payload that follows the record itself.
                let payload = match typ {
                    user::AUXTRACE => u64_at(body, 0).and_then(|n| usize::try_from(n).ok()),
                    user::HEADER_TRACING_DATA if self.pipe => {
                        u32_at(body, 0).map(|n| (n as usize).next_multiple_of(8))
                    }
                    _ => Some(0),
                };
                match payload
                    .and_then(|n| next.checked_add(n))
                    .filter(|&e| e <= data.len())
                {
                    Some(end) => next = end,
                    None => {
                        stats.damaged_at = Some((at as u64, (data.len() - at) as u64));
                        break;
                    }
                }
                match typ {
                    user::HEADER_ATTR => self.stream_attr(body, &mut ids),
                    user::HEADER_FEATURE => {
                        if let Some(id) = u64_at(body, 0) {
                            // A damaged streamed feature is left out, like a missing one.
                            let _ = read_feature(id, &body[8..], &mut self.features);
                            if id == feat::EVENT_DESC {
                                self.name_events();
                            }
                        }
                    }
                    user::HEADER_BUILD_ID => {
                        let _ = build_id_entry(rec, &mut self.features.build_ids);
                    }
                    user::COMPRESSED => stats.compressed += 1,
                    _ => {}
                }
                at = next;
                continue;
            }
            let event = self.event_of(typ, body, &ids);
            f(
                self,
                Record {
                    typ,
                    misc,
                    body,
                    event,
                },
            );
            at = next;
        }
        stats
    }

    fn index_ids(&self, ids: &mut FxHashMap<u64, usize>) {
        for (i, e) in self.events.iter().enumerate() {
            for &id in &e.ids {
                ids.entry(id).or_insert(i);
            }
        }
    }

    /// PERF_RECORD_HEADER_ATTR of the streamed layout: an attribute, then its ids.
    fn stream_attr(&mut self, body: &[u8], ids: &mut FxHashMap<u64, usize>) {
        let Some(size) = u32_at(body, 4).map(|s| s as usize) else {
            return;
        };
        let Some(attr) = body.get(..size).and_then(|b| Attr::parse(b).ok()) else {
            return;
        };
        let own: Vec<u64> = body[size..]
            .chunks_exact(8)
            .filter_map(|w| u64_at(w, 0))
            .collect();
        self.events.push(FileEvent {
            attr,
            ids: own,
            name: None,
        });
        ids.clear();
        self.index_ids(ids);
        self.name_events();
    }

    /// The event a record belongs to: by its id where the file has several events.
    fn event_of(&self, typ: u32, body: &[u8], ids: &FxHashMap<u64, usize>) -> Option<usize> {
        let first = self.events.first()?;
        if self.events.len() == 1 {
            return Some(0);
        }
        let st = first.attr.sample_type;
        let id = if typ == kind::SAMPLE {
            if st & sample::IDENTIFIER != 0 {
                u64_at(body, 0)
            } else {
                parse_sample(&first.attr, body).and_then(|s| s.id)
            }
        } else {
            if !first.attr.sample_id_all() {
                return Some(0);
            }
            sample_id(&first.attr, body).id
        };
        match id {
            // perf writes the records it synthesizes from /proc with id 0.
            Some(0) | None => Some(0),
            Some(id) => match ids.get(&id) {
                Some(&i) => Some(i),
                // Side-band records share the first event's trailer layout, as perf reads them.
                None if typ != kind::SAMPLE => Some(0),
                None => None,
            },
        }
    }
}

/// Read the features named by `bits`, whose table of sections starts at byte `table`.
fn read_feature_table(
    bytes: &[u8],
    table: u64,
    bits: [u64; 4],
    out: &mut Features,
) -> Result<(), String> {
    let mut at = table;
    for id in 0..256u64 {
        if bits[(id / 64) as usize] & (1 << (id % 64)) == 0 {
            continue;
        }
        let entry = section(bytes, at, SECTION).ok_or("the feature table is cut short")?;
        at += SECTION;
        let (off, size) = (u64_at(entry, 0).unwrap_or(0), u64_at(entry, 8).unwrap_or(0));
        let body = section(bytes, off, size)
            .ok_or_else(|| format!("feature section {id} lies outside the file"))?;
        read_feature(id, body, out).map_err(|e| format!("feature section {id}: {e}"))?;
    }
    Ok(())
}

/// A `perf_header_string`: a u32 length, then that many bytes, NUL-padded.
fn header_string(b: &[u8], at: &mut usize) -> Result<String, String> {
    let len = u32_at(b, *at).ok_or("a string is cut short")? as usize;
    let start = *at + 4;
    let s = b
        .get(start..start.checked_add(len).ok_or("a string is too long")?)
        .ok_or("a string runs past its section")?;
    *at = start + len;
    Ok(cstr(s))
}

fn read_feature(id: u64, b: &[u8], out: &mut Features) -> Result<(), String> {
    match id {
        feat::HOSTNAME => out.hostname = Some(header_string(b, &mut 0)?),
        feat::OSRELEASE => out.os_release = Some(header_string(b, &mut 0)?),
        feat::VERSION => out.perf_version = Some(header_string(b, &mut 0)?),
        feat::ARCH => out.arch = Some(header_string(b, &mut 0)?),
        feat::NRCPUS => out.nr_cpus_online = u32_at(b, 4),
        feat::CMDLINE => {
            let nr = u32_at(b, 0).ok_or("the command line is cut short")?;
            let mut at = 4;
            out.cmdline.clear();
            for _ in 0..nr {
                out.cmdline.push(header_string(b, &mut at)?);
            }
        }
        feat::BUILD_ID => {
            let mut at = 0;
            while at < b.len() {
                let size = u16_at(b, at + 6).ok_or("a build-id entry is cut short")? as usize;
                let rec = b
                    .get(at..at + size)
                    .filter(|_| size >= 8)
                    .ok_or("a build-id entry has an impossible size")?;
                build_id_entry(rec, &mut out.build_ids)?;
                at += size;
            }
        }
        feat::EVENT_DESC => {
            let bad = || "the event description is damaged".to_string();
            let nr = u32_at(b, 0).ok_or_else(bad)? as usize;
            let attr_size = u32_at(b, 4).ok_or_else(bad)? as usize;
            if attr_size < 64 {
                return Err(bad());
            }
            let mut at = 8usize;
            out.event_names.clear();
            for _ in 0..nr {
                at = at.checked_add(attr_size).ok_or_else(bad)?;
                let nr_ids = u32_at(b, at).ok_or_else(bad)? as usize;
                at += 4;
                let name = header_string(b, &mut at)?;
                let ids = b
                    .get(
                        at..at
                            .checked_add(nr_ids.checked_mul(8).ok_or_else(bad)?)
                            .ok_or_else(bad)?,
                    )
                    .ok_or_else(bad)?;
                at += ids.len();
                out.event_names.push((
                    name,
                    ids.chunks_exact(8).filter_map(|w| u64_at(w, 0)).collect(),
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// PERF_RECORD_MISC_BUILD_ID_SIZE: the entry says how long its build-id is.
const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

/// One `perf_record_header_build_id`: header, pid, a 24-byte build-id field, the file name.
fn build_id_entry(rec: &[u8], out: &mut Vec<(String, crate::BuildId, u8)>) -> Result<(), String> {
    let misc = u16_at(rec, 4).ok_or("a build-id entry is cut short")?;
    let id = rec.get(12..36).ok_or("a build-id entry is cut short")?;
    let len = if misc & MISC_BUILD_ID_SIZE != 0 {
        (id[20] as usize).min(20)
    } else {
        20
    };
    let name = cstr(rec.get(36..).unwrap_or(&[]));
    if let Some(id) = crate::BuildId::from_bytes(&id[..len]) {
        out.push((name, id, (misc & 7) as u8));
    }
    Ok(())
}
