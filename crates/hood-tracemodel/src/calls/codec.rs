//! Chunk payloads of the Calls file kind (documented in docs/calls.md): JSON, one chunk per
//! process, zstd-compressed by the container.

use hood_raw::RawError;
use serde::{Deserialize, Serialize};

use super::ProcessCalls;
use crate::TraceModelError;

/// Version of the JSON payloads; readers refuse newer ones with a clear message.
pub const PAYLOAD_VERSION: u32 = 1;

/// The META chunk: how the file was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallsMeta {
    /// [`PAYLOAD_VERSION`].
    pub version: u32,
    /// "run", "get".
    pub command: String,
    /// The command line run (for `calls run`).
    pub argv: Vec<String>,
    /// CLOCK_REALTIME ns at collection.
    pub collected_realtime_ns: u64,
}

#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    version: u32,
    process: T,
}

/// Encode one process for a PROCESS chunk.
pub fn encode_process(p: &ProcessCalls) -> Vec<u8> {
    serde_json::to_vec(&Envelope {
        version: PAYLOAD_VERSION,
        process: p,
    })
    .unwrap_or_default()
}

/// Decode a PROCESS chunk; `offset` names the chunk in errors.
pub fn decode_process(data: &[u8], offset: u64) -> Result<ProcessCalls, TraceModelError> {
    #[derive(Deserialize)]
    struct V {
        version: u32,
    }
    let v: V = serde_json::from_slice(data)
        .map_err(|e| RawError::Malformed(format!("calls process chunk at offset {offset}: {e}")))?;
    if v.version > PAYLOAD_VERSION {
        return Err(RawError::Malformed(format!(
            "calls process chunk at offset {offset} has payload version {}, this hood reads up to {PAYLOAD_VERSION}: upgrade hood",
            v.version
        )).into());
    }
    let e: Envelope<ProcessCalls> = serde_json::from_slice(data)
        .map_err(|e| RawError::Malformed(format!("calls process chunk at offset {offset}: {e}")))?;
    let p = e.process;
    for t in &p.threads {
        for (i, path) in t.paths.iter().enumerate() {
            if path.parent.is_some_and(|q| q as usize >= i) {
                return Err(RawError::Malformed(format!(
                    "calls process chunk at offset {offset}: pid {} tid {} path {i} has a forward parent",
                    p.pid, t.tid
                )).into());
            }
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    /// A process chunk that does not decode says so in the words it always did.
    #[test]
    fn an_undecodable_process_chunk_is_a_malformed_recording() {
        let e = super::decode_process(b"{", 64).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("malformed recording: calls process chunk at offset 64: "),
            "{e}"
        );
    }
}
