//! Reading ahead: a second thread reads, checks and decompresses the next chunks while the
//! caller decodes the current one. Payload buffers travel back to the reading thread to be
//! reused, so a large file costs a handful of buffers, not one per chunk.

use std::path::PathBuf;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};
use std::thread::JoinHandle;

use crate::error::FormatError;
use crate::reader::{ChunkInfo, Deferred, Reader};

/// Chunks decompressed ahead of the one being decoded.
const AHEAD: usize = 2;

type Item = (Result<Option<ChunkInfo>, FormatError>, Vec<u8>);

/// A [`Reader`] whose reading and decompression run on another thread; see
/// [`Reader::prefetch`]. Falls back to reading inline if no thread can be started.
pub struct Prefetch {
    path: PathBuf,
    state: State,
    warnings: Vec<String>,
}

enum State {
    Thread {
        rx: Receiver<Item>,
        back: Sender<Vec<u8>>,
        worker: Option<JoinHandle<Option<Reader>>>,
    },
    Inline(Box<Reader>),
    /// The file was read to its end; the reader came back (unless its thread failed).
    Done(Option<Box<Reader>>),
}

impl Reader {
    /// Hands this reader to a thread of its own that reads up to two chunks ahead.
    pub fn prefetch(self) -> Prefetch {
        let path = self.path().to_owned();
        let (tx, rx) = sync_channel::<Item>(AHEAD);
        let (back, spare) = channel::<Vec<u8>>();
        // The reader comes back through the thread's result, or through this slot if the
        // thread could not be started.
        let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(self)));
        let theirs = std::sync::Arc::clone(&slot);
        let spawned = std::thread::Builder::new()
            .name("hood-read".into())
            .spawn(move || {
                let mut reader = theirs.lock().ok().and_then(|mut r| r.take())?;
                loop {
                    let mut buf = spare.try_recv().unwrap_or_default();
                    let got = reader.next_chunk_into(&mut buf);
                    let last = !matches!(got, Ok(Some(_)));
                    if tx.send((got, buf)).is_err() || last {
                        return Some(reader);
                    }
                }
            });
        let state = match spawned {
            Ok(worker) => State::Thread {
                rx,
                back,
                worker: Some(worker),
            },
            Err(_) => match slot.lock().ok().and_then(|mut r| r.take()) {
                Some(reader) => State::Inline(Box::new(reader)),
                // Unreachable in practice: the reader is in the slot unless the thread took it.
                None => State::Done(None),
            },
        };
        Prefetch {
            path,
            state,
            warnings: Vec::new(),
        }
    }
}

impl Prefetch {
    /// The next chunk, its payload swapped into `data` (whose old buffer is recycled);
    /// `Ok(None)` at the end. Same results, warnings and errors as [`Reader::next_chunk_into`].
    pub fn next_chunk_into(
        &mut self,
        data: &mut Vec<u8>,
    ) -> Result<Option<ChunkInfo>, FormatError> {
        match &mut self.state {
            State::Done(_) => Ok(None),
            State::Inline(reader) => {
                let got = reader.next_chunk_into(data);
                self.warnings = reader.warnings().to_vec();
                got
            }
            State::Thread { rx, back, .. } => match rx.recv() {
                Ok((got, buf)) => {
                    let old = std::mem::replace(data, buf);
                    let _ = back.send(old);
                    if !matches!(got, Ok(Some(_))) {
                        self.finish();
                    }
                    got
                }
                Err(_) => {
                    self.finish();
                    Err(FormatError::Io {
                        path: self.path.clone(),
                        source: std::io::Error::other("the reading thread stopped unexpectedly"),
                    })
                }
            },
        }
    }

    /// Collect the reader and its warnings once the reading thread is done.
    fn finish(&mut self) {
        if let State::Thread { worker, .. } = &mut self.state {
            let reader = worker.take().and_then(|w| w.join().ok().flatten());
            if let Some(r) = &reader {
                self.warnings = r.warnings().to_vec();
            }
            self.state = State::Done(reader.map(Box::new));
        }
    }

    /// The payload of a chunk left in the file ([`Reader::defer`]), read once the chunks
    /// have been read to the end (`Ok(None)` before).
    pub fn read_deferred(&mut self, d: &Deferred) -> Result<Option<Vec<u8>>, FormatError> {
        match &mut self.state {
            State::Inline(reader) | State::Done(Some(reader)) => reader.read_deferred(d).map(Some),
            State::Done(None) => Err(FormatError::Io {
                path: self.path.clone(),
                source: std::io::Error::other("the reading thread stopped unexpectedly"),
            }),
            State::Thread { .. } => Ok(None),
        }
    }

    /// The reader back, once the chunks have been read to the end (`None` before, or if its
    /// thread failed): for reading deferred payloads later, after this reading ahead is over.
    pub fn into_reader(self) -> Option<Reader> {
        match self.state {
            State::Inline(reader) | State::Done(Some(reader)) => Some(*reader),
            State::Done(None) | State::Thread { .. } => None,
        }
    }

    /// Warnings (a cut-off end of file), complete once the end was reached.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}
