//! The kernel interface of hood's statistical profiler: `perf_event_open`
//! sampling sessions over per-CPU ring buffers, handing out the raw ring bytes
//! (collect raw → store raw; a pure decoder elsewhere parses them), plus small
//! tracefs helpers.
//!
//! All `unsafe` of the perf interface lives in this crate, each block behind a
//! safe wrapper and preceded by a `// SAFETY:` comment.
//!
//! ```no_run
//! use hood_perf::{Readiness, SamplingConfig, Session, Target};
//! # fn main() -> Result<(), hood_perf::PerfError> {
//! let mut session = Session::open(&SamplingConfig::default(), &Target::System)?;
//! session.enable()?;
//! loop {
//!     let r = session.wait(std::time::Duration::from_millis(100))?;
//!     session.drain(&mut |cpu, bytes| {
//!         println!("{} bytes from CPU {cpu}", bytes.len());
//!         Ok(())
//!     })?;
//!     if r == Readiness::Hangup { break; }
//! #   break;
//! }
//! # Ok(()) }
//! ```

mod attr;
mod config;
mod cpus;
mod error;
mod open;
mod ring;
mod session;
mod sys;
pub mod tracefs;

pub use attr::BASE_SAMPLE_TYPE;
pub use config::{EventKind, SamplingConfig, Target};
pub use cpus::{online_cpus, parse_cpu_list, threads_of};
pub use error::{paranoid_level, PerfError};
pub use session::{Readiness, Session};
