//! Standard output's state.

use std::os::fd::AsFd;

/// Whether standard output is a pipe or socket whose reader has gone (`hood report | head`
/// after `head` exited): polling it reports an error or a hang-up at once.
pub fn stdout_reader_gone() -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let out = std::io::stdout();
    let fd = out.as_fd();
    let mut fds = [PollFd::new(&fd, PollFlags::OUT)];
    matches!(poll(&mut fds, Some(&Timespec::default())), Ok(1))
        && fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP)
}
