//! A build without the `tls` feature (`make install`'s jackin-assess, which asks no engine) has
//! no TLS transport: an engine reached over tcp with TLS is refused with what to do.

use std::path::Path;

/// Refuses the TLS engine at `address`: this build was made without OpenSSL.
pub(super) fn client(
    address: &str,
    _dir: &Path,
    _timeout_secs: u64,
) -> Result<bollard::Docker, bollard::errors::Error> {
    Err(super::transport::invalid(format!(
        "{address}: this build of the tools has no TLS (built without the cargo feature `tls`); \
         use the tools built with it (`make install` builds them so)"
    )))
}
