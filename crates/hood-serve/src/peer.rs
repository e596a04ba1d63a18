//! Who is at the other end of a loopback connection: the kernel's socket table
//! (`/proc/net/tcp`, `/proc/net/tcp6`) gives the owner of the client's socket, as `ss -e` shows
//! it. A local user cannot make a socket of theirs look like root's, so a root client on this
//! machine is authenticated without a token (issue 29, R11); any other client is not.

use std::io::BufRead;
use std::net::{IpAddr, SocketAddr};

/// The two ends of a connection, as the server accepted it (a request extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// The server's end.
    pub local: SocketAddr,
    /// The client's end.
    pub remote: SocketAddr,
}

/// Lines read from a socket table at most (a machine with more sockets than this answers
/// "unknown", which is "not authenticated").
const MAX_LINES: usize = 1 << 20;

/// The uid owning the client's socket of `peer`, when the client is on this machine (a
/// loopback address) and its socket is an established connection to the server's end; else
/// `None`.
pub fn uid(peer: &Peer) -> Option<u32> {
    if !peer.remote.ip().is_loopback() {
        return None;
    }
    let table = match peer.remote.ip() {
        IpAddr::V4(_) => "/proc/net/tcp",
        IpAddr::V6(_) => "/proc/net/tcp6",
    };
    // The client's socket: local address = the peer's, remote = the server's end.
    let (client, server) = (hex(&peer.remote), hex(&peer.local));
    let f = std::fs::File::open(table).ok()?;
    for line in std::io::BufReader::new(f).lines().take(MAX_LINES) {
        let line = line.ok()?;
        if let Some(uid) = owner(&line, &client, &server) {
            return Some(uid);
        }
    }
    None
}

/// The uid of a socket-table line whose ends are `local` and `remote`, in state ESTABLISHED
/// (a closed connection's TIME_WAIT entry belongs to no one and reads uid 0).
fn owner(line: &str, local: &str, remote: &str) -> Option<u32> {
    let f: Vec<&str> = line.split_whitespace().collect();
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
    if f.len() < 10 || f[1] != local || f[2] != remote || f[3] != "01" || f[9] == "0" {
        return None;
    }
    f[7].parse().ok()
}

/// An address as the socket tables print it: the IP's 32-bit words in the machine's byte
/// order, upper-case hex, a colon, the port in hex.
fn hex(a: &SocketAddr) -> String {
    let ip: String = match a.ip() {
        IpAddr::V4(v4) => format!("{:08X}", u32::from_ne_bytes(v4.octets())),
        IpAddr::V6(v6) => v6
            .octets()
            .chunks(4)
            .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
            .collect(),
    };
    format!("{ip}:{:04X}", a.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_client_is_its_sockets_owner() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, remote) = l.accept().unwrap();
        let peer = Peer {
            local: s.local_addr().unwrap(),
            remote,
        };
        assert_eq!(uid(&peer), Some(rustix::process::geteuid().as_raw()));
        drop(c);
        // Closed: no established socket is left to own the connection.
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(uid(&peer), None);
    }

    #[test]
    fn time_wait_and_other_connections_own_nothing() {
        let local = "0100007F:1F40";
        let remote = "0100007F:D431";
        let est = "   0: 0100007F:1F40 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 12345 1";
        assert_eq!(owner(est, local, remote), Some(1000));
        let tw = "   0: 0100007F:1F40 0100007F:D431 06 00000000:00000000 03:00000F9A 00000000     0        0 0 3";
        assert_eq!(owner(tw, local, remote), None);
        assert_eq!(owner(est, remote, local), None);
        if cfg!(target_endian = "little") {
            assert_eq!(hex(&"127.0.0.1:8000".parse().unwrap()), "0100007F:1F40");
        }
    }
}
