//! This machine's name, as every record the tools write says where it was made (protocol.md's
//! envelope, `data.host`), and as an acting tool compares a record's `host` with its own.

use std::sync::OnceLock;

/// The host name the kernel reports (`uname -n`), read once per process. A name that cannot be
/// read, or is empty, is `localhost`: a record then says no more than "made here".
pub fn this_host() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        let uname = rustix::system::uname();
        let name = uname.nodename().to_string_lossy().trim().to_owned();
        if name.is_empty() {
            "localhost".to_owned()
        } else {
            name
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_name_is_the_kernels() {
        let kernel = std::process::Command::new("uname").arg("-n").output().unwrap();
        assert_eq!(super::this_host(), String::from_utf8_lossy(&kernel.stdout).trim());
    }
}
