//! The HTTP transport of `hood serve`: hyper's HTTP/1 server on a small tokio runtime, with
//! the limits a server that any local user (or the network) can reach needs.
//!
//! * At most [`Limits::connections`] connections are kept. When a new one arrives at the
//!   limit, or `accept` fails for want of file descriptors (EMFILE, ENFILE), the oldest
//!   connection with no request being answered is closed to make room; if every connection
//!   is busy, the new one is closed at once. Accept errors are logged (at most one line per
//!   10 s) and never end the server.
//! * A request's head (start line and headers) is at most [`MAX_HEAD_BYTES`] and
//!   [`MAX_HEADERS`] headers: more is answered `431` and the connection closed, so nothing
//!   large is ever read, and the bearer token is checked on the head alone (request bodies
//!   are never read).
//! * The head must arrive within [`HEAD_TIMEOUT`]; this also bounds how long a kept-alive
//!   connection may sit idle between requests.
//! * An answer must be taken by the client within [`WRITE_TIMEOUT`] of the server starting to
//!   write it (all of it handed to the kernel's socket buffer): a client that stops reading
//!   (a zero receive window) has its connection closed then, rather than holding a
//!   connection slot and its task forever. Such closings are counted and logged (at most one
//!   line per 10 s).
//! * Slow work (a scrape, a profile) runs on at most [`BLOCKING_THREADS`] threads.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};

/// Largest request head (start line and headers), in bytes.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Most headers in a request.
pub const MAX_HEADERS: usize = 64;
/// Time to send a whole request head, and longest idle time of a kept-alive connection.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for the client to take a whole answer, from the server's first byte of it.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Threads for scrapes and profiles (a profile holds one for its duration).
pub const BLOCKING_THREADS: usize = 4;
/// Connections kept at most, when file descriptors allow.
pub const MAX_CONNECTIONS: usize = 128;
/// Descriptors kept free for everything but connections and the /proc reader (the runtime,
/// the recorder child's pipes, files read while answering).
const RESERVED_FDS: u64 = 64;
/// Longest wait for answers under way once SIGINT/SIGTERM arrived.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(20);

/// The answer type of every route.
pub type Reply = Response<Full<Bytes>>;

/// How the file-descriptor limit is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections kept at most.
    pub connections: usize,
    /// Processes whose /proc descriptors the metrics reader may hold (two each).
    pub held_processes: usize,
}

impl Limits {
    /// Share a file-descriptor limit of `nofile`: connections first (at most
    /// [`MAX_CONNECTIONS`], a quarter of the limit), then a reserve, the rest for /proc.
    pub fn for_nofile(nofile: u64) -> Limits {
        let connections = (nofile / 4).clamp(4, MAX_CONNECTIONS as u64);
        let rest = nofile.saturating_sub(connections + RESERVED_FDS);
        Limits {
            connections: connections as usize,
            held_processes: (rest / 2) as usize,
        }
    }
}

/// Raise the soft limit on open files to the hard one (as most servers do) and share it.
pub fn fd_limits() -> Limits {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current < lim.maximum {
        let raised = rustix::process::Rlimit {
            current: lim.maximum,
            maximum: lim.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            lim.current = lim.maximum;
        }
    }
    // `None` is unlimited; any count beyond a few thousand gives the same shares.
    Limits::for_nofile(lim.current.unwrap_or(1 << 20))
}

/// One connection's flags.
#[derive(Default)]
struct Slot {
    /// A request is being answered.
    busy: AtomicBool,
    /// Told to close (and no longer counted).
    evicted: AtomicBool,
    evict: Notify,
    /// Closed because the client did not take an answer within the write timeout.
    write_timed_out: AtomicBool,
}

/// The open connections, oldest first.
struct Tracker {
    limit: usize,
    next: AtomicU64,
    conns: Mutex<BTreeMap<u64, Arc<Slot>>>,
    /// Connections closed because their client did not take an answer in time, and the log
    /// of them.
    write_timeouts: AtomicU64,
    write_timeout_log: Mutex<Quiet>,
    log: crate::Log,
}

impl Tracker {
    fn new(limit: usize, log: crate::Log) -> Tracker {
        Tracker {
            limit,
            next: AtomicU64::new(0),
            conns: Mutex::new(BTreeMap::new()),
            write_timeouts: AtomicU64::new(0),
            write_timeout_log: Mutex::new(Quiet::default()),
            log,
        }
    }

    /// Count (and log, at most once per 10 s) a connection closed by the write timeout.
    fn note_write_timeout(&self) {
        let total = self.write_timeouts.fetch_add(1, Ordering::Relaxed) + 1;
        let mut log = self
            .write_timeout_log
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if log.allow().is_some() {
            self.log.say(&format!(
                "hood serve: closed a connection whose client did not take its answer within {} s ({total} so far)",
                WRITE_TIMEOUT.as_secs()
            ));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Slot>>> {
        self.conns.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tell the oldest connection with no request under way to close; false if none.
    fn evict_oldest_idle(conns: &BTreeMap<u64, Arc<Slot>>) -> bool {
        for slot in conns.values() {
            if !slot.busy.load(Ordering::Acquire) && !slot.evicted.swap(true, Ordering::AcqRel) {
                slot.evict.notify_one();
                return true;
            }
        }
        false
    }

    /// A slot for a new connection, making room at the limit; `None` if every kept
    /// connection is busy.
    fn admit(&self) -> Option<(u64, Arc<Slot>)> {
        let mut conns = self.lock();
        let live = conns
            .values()
            .filter(|s| !s.evicted.load(Ordering::Acquire))
            .count();
        if live >= self.limit && !Self::evict_oldest_idle(&conns) {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot::default());
        conns.insert(id, Arc::clone(&slot));
        Some((id, slot))
    }

    fn make_room(&self) -> bool {
        Self::evict_oldest_idle(&self.lock())
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// Removes its connection from the tracker when the connection's task ends.
struct Registered<'a>(&'a Tracker, u64);

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.0.remove(self.1);
    }
}

/// Marks its connection busy while a request is answered.
struct Busy(Arc<Slot>);

impl Busy {
    fn new(slot: &Arc<Slot>) -> Busy {
        slot.busy.store(true, Ordering::Release);
        Busy(Arc::clone(slot))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
    }
}

/// A log line allowed at most once per 10 s, with a count of the ones left out.
#[derive(Default)]
struct Quiet {
    last: Option<Instant>,
    quiet: u64,
}

impl Quiet {
    /// `Some(lines left out since the last one)` if a line may be written now.
    fn allow(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(10))
        {
            self.quiet += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.quiet))
    }
}

/// Accept errors, logged at most once per 10 s with a count of the others.
#[derive(Default)]
struct ErrorLog(Quiet);

impl ErrorLog {
    fn note(&mut self, e: &io::Error, log: &crate::Log) {
        let Some(quiet) = self.0.allow() else {
            return;
        };
        let more = match quiet {
            0 => String::new(),
            n => format!(" ({n} more since the last message)"),
        };
        let fix = if is_out_of_fds(e) {
            "; closing idle connections to make room (raise `ulimit -n` if this persists)"
        } else {
            ""
        };
        log.say(&format!(
            "hood serve: accepting a connection: {e}{more}{fix}"
        ));
    }
}

fn is_out_of_fds(e: &io::Error) -> bool {
    use rustix::io::Errno;
    Errno::from_io_error(e)
        .is_some_and(|n| [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM].contains(&n))
}

/// A connection's socket whose answers must be taken in time: from the first write of an
/// answer until hyper flushes it (all of it handed to the socket buffer), at most `limit`
/// may pass; after that writes fail with `TimedOut`, which ends the connection. Reads are
/// passed through (hyper bounds them with its head timeout).
struct Deadlined {
    io: TcpStream,
    limit: Duration,
    /// Running while an answer is being written.
    deadline: Pin<Box<tokio::time::Sleep>>,
    armed: bool,
    slot: Arc<Slot>,
}

impl Deadlined {
    fn new(io: TcpStream, limit: Duration, slot: Arc<Slot>) -> Deadlined {
        Deadlined {
            io,
            limit,
            deadline: Box::pin(tokio::time::sleep(limit)),
            armed: false,
            slot,
        }
    }

    /// After a write attempt: a pending write past the deadline becomes an error.
    fn after_write<T>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if !self.armed {
            self.armed = true;
            let at = tokio::time::Instant::now() + self.limit;
            self.deadline.as_mut().reset(at);
        }
        match r {
            Poll::Pending if self.deadline.as_mut().poll(cx).is_ready() => {
                self.slot.write_timed_out.store(true, Ordering::Release);
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client did not take its answer in time",
                )))
            }
            r => r,
        }
    }
}

impl AsyncRead for Deadlined {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Deadlined {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.after_write(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.after_write(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        if matches!(r, Poll::Ready(Ok(()))) {
            // The answer is written: the next one gets a whole `limit` again.
            self.armed = false;
        }
        r
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A bound listener, before the runtime serves it.
pub struct Listener {
    rt: tokio::runtime::Runtime,
    listener: TcpListener,
}

impl Listener {
    /// Bind `addr` on a new runtime.
    pub fn bind(addr: SocketAddr) -> io::Result<Listener> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .max_blocking_threads(BLOCKING_THREADS)
            .thread_name("hood-serve")
            .build()?;
        let listener = rt.block_on(TcpListener::bind(addr))?;
        Ok(Listener { rt, listener })
    }

    /// The address bound (with the port the kernel chose for port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Answer requests with `handle` until `stop` is set, then let the answers under way
    /// finish (at most [`DRAIN_TIMEOUT`]); what it has to say goes to `log`.
    pub fn serve<H, F>(self, limits: Limits, stop: &AtomicBool, log: crate::Log, handle: H)
    where
        H: Fn(Request<Incoming>) -> F + Send + Sync + 'static,
        F: Future<Output = Reply> + Send + 'static,
    {
        let Listener { rt, listener } = self;
        let handle = Arc::new(handle);
        let tracker = Arc::new(Tracker::new(limits.connections, log.clone()));
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(HEAD_TIMEOUT)
            .max_header_size(MAX_HEAD_BYTES)
            .max_buf_size(2 * MAX_HEAD_BYTES)
            .max_headers(MAX_HEADERS);
        let http = Arc::new(http);
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        rt.block_on(async {
            let mut errors = ErrorLog::default();
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = tick.tick() => {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        continue;
                    }
                };
                let sock = match accepted {
                    Ok((sock, _)) => sock,
                    Err(e) => {
                        errors.note(&e, &log);
                        if is_out_of_fds(&e) && tracker.make_room() {
                            // Let the evicted connection's task run and close its socket.
                            tokio::task::yield_now().await;
                        } else {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                        continue;
                    }
                };
                let Some((id, slot)) = tracker.admit() else {
                    drop(sock);
                    continue;
                };
                tokio::spawn(connection(
                    sock,
                    id,
                    slot,
                    Arc::clone(&tracker),
                    Arc::clone(&http),
                    Arc::clone(&handle),
                    shutdown_rx.clone(),
                ));
            }
            drop(listener);
            let _ = shutdown_tx.send(true);
            let start = Instant::now();
            while !tracker.is_empty() && start.elapsed() < DRAIN_TIMEOUT {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        rt.shutdown_timeout(Duration::from_secs(5));
    }
}

/// Serve one connection until it ends, is evicted, or (at shutdown) its answer is sent.
async fn connection<H, F>(
    sock: TcpStream,
    id: u64,
    slot: Arc<Slot>,
    tracker: Arc<Tracker>,
    http: Arc<hyper::server::conn::http1::Builder>,
    handle: Arc<H>,
    mut shutdown: watch::Receiver<bool>,
) where
    H: Fn(Request<Incoming>) -> F + Send + Sync + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    let _registered = Registered(&tracker, id);
    let peer = match (sock.local_addr(), sock.peer_addr()) {
        (Ok(local), Ok(remote)) => Some(crate::peer::Peer { local, remote }),
        _ => None,
    };
    let service = {
        let slot = Arc::clone(&slot);
        hyper::service::service_fn(move |mut req: Request<Incoming>| {
            if let Some(p) = peer {
                req.extensions_mut().insert(p);
            }
            let busy = Busy::new(&slot);
            let answer = handle(req);
            async move {
                let reply = answer.await;
                drop(busy);
                Ok::<_, Infallible>(reply)
            }
        })
    };
    let io = Deadlined::new(sock, WRITE_TIMEOUT, Arc::clone(&slot));
    let conn = http.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let mut closing = false;
    loop {
        tokio::select! {
            _ = conn.as_mut() => {
                if slot.write_timed_out.load(Ordering::Acquire) {
                    tracker.note_write_timeout();
                }
                return;
            }
            _ = slot.evict.notified() => return,
            _ = shutdown.changed(), if !closing => {
                closing = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fd_shares() {
        let l = Limits::for_nofile(1024);
        assert_eq!(l.connections, MAX_CONNECTIONS);
        assert_eq!(l.held_processes, (1024 - 128 - 64) / 2);
        let small = Limits::for_nofile(64);
        assert_eq!(small.connections, 16);
        assert_eq!(small.held_processes, 0);
    }

    /// Write `chunk` over and over until an error, or until `max` bytes went through.
    async fn write_until_error(
        d: &mut Deadlined,
        chunk: &[u8],
        max: usize,
    ) -> (usize, Option<io::Error>) {
        let mut written = 0;
        while written < max {
            match std::future::poll_fn(|cx| Pin::new(&mut *d).poll_write(cx, chunk)).await {
                Ok(n) => written += n,
                Err(e) => return (written, Some(e)),
            }
        }
        (written, None)
    }

    /// A pair of loopback sockets: (the server's end wrapped, the client's end).
    async fn pair(limit: Duration) -> (Deadlined, Arc<Slot>, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (sock, _) = l.accept().await.unwrap();
        let slot = Arc::new(Slot::default());
        (Deadlined::new(sock, limit, Arc::clone(&slot)), slot, client)
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .unwrap()
    }

    #[test]
    fn an_answer_the_client_does_not_take_times_out() {
        runtime().block_on(async {
            let (mut d, slot, client) = pair(Duration::from_millis(300)).await;
            // The client never reads: once the socket buffers are full, writes wait, and
            // the deadline ends them (well before a gigabyte).
            let (written, err) = write_until_error(&mut d, &[b'x'; 64 * 1024], 1 << 30).await;
            let err = err
                .unwrap_or_else(|| panic!("{written} bytes went to a client that reads nothing"));
            assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
            assert!(slot.write_timed_out.load(Ordering::Acquire));
            drop(client);
        });
    }

    #[test]
    fn a_reading_client_takes_answer_after_answer() {
        runtime().block_on(async {
            let (mut d, slot, client) = pair(Duration::from_secs(20)).await;
            let client = client.into_std().unwrap();
            client.set_nonblocking(false).unwrap();
            let reader = std::thread::spawn(move || {
                let mut client = client;
                let mut sink = Vec::new();
                std::io::Read::read_to_end(&mut client, &mut sink).map(|_| sink.len())
            });
            let mut sent = 0;
            for _ in 0..8 {
                let (n, err) = write_until_error(&mut d, &[b'y'; 64 * 1024], 1 << 20).await;
                assert!(err.is_none(), "{err:?} after {n} bytes");
                sent += n;
                std::future::poll_fn(|cx| Pin::new(&mut d).poll_flush(cx))
                    .await
                    .unwrap();
                assert!(!d.armed, "a flushed answer disarms the deadline");
            }
            std::future::poll_fn(|cx| Pin::new(&mut d).poll_shutdown(cx))
                .await
                .unwrap();
            drop(d);
            assert!(sent >= 8 << 20);
            assert_eq!(reader.join().unwrap().unwrap(), sent);
            assert!(!slot.write_timed_out.load(Ordering::Acquire));
        });
    }

    #[test]
    fn admit_evicts_the_oldest_idle_and_refuses_when_all_are_busy() {
        let t = Tracker::new(2, crate::Log::none());
        let (_, a) = t.admit().unwrap();
        let (_, b) = t.admit().unwrap();
        a.busy.store(true, Ordering::Release);
        let (_, _c) = t.admit().unwrap();
        assert!(!a.evicted.load(Ordering::Acquire), "busy one kept");
        assert!(b.evicted.load(Ordering::Acquire), "oldest idle one evicted");
        _c.busy.store(true, Ordering::Release);
        assert!(t.admit().is_none(), "all busy: the new one is refused");
    }
}
