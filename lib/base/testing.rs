//! What the library's unit tests share when a test makes a hostile shape: a FIFO where a file
//! should be, and a call that must return rather than wait on it.

use std::path::Path;

/// A FIFO at `path`, its directories made.
pub(crate) fn fifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str())).unwrap();
    // SAFETY: a NUL-terminated path; mkfifo only makes the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

/// Runs `work` on a thread of its own and says whether it ended within 10 s: an open of a FIFO
/// waits for a writer for ever, and the suite must fail rather than hang.
pub(crate) fn returns_promptly<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(work());
    });
    receive.recv_timeout(std::time::Duration::from_secs(10)).ok()
}
