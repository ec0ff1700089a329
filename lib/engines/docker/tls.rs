//! A tcp engine behind TLS, reached through the docker CLI itself: every connection is the local
//! `docker system dial-stdio` with `DOCKER_HOST`, `DOCKER_TLS_VERIFY=1` and `DOCKER_CERT_PATH`
//! set to the engine and the CLI's three files (`ca.pem`, `cert.pem`, `key.pem`), the engine's API
//! over its stdin and stdout (dial_stdio.rs), as for an ssh engine. So the engine's certificate is
//! verified exactly as `docker --tlsverify` verifies it (against `ca.pem` and the engine's name or
//! IP address), and the tools link no TLS library: loading OpenSSL cost each tool 0.9 ms at every
//! start (issue 69), and rustls with ring a megabyte in each of the four Docker tools.

use std::path::Path;
use std::sync::Arc;

/// The CLI's three files, in `DOCKER_CERT_PATH` or a context's TLS directory.
const TLS_FILES: [&str; 3] = ["ca.pem", "cert.pem", "key.pem"];

/// `tcp://host:port` (or `https://…`) as a host and a port; the docker CLI's TLS port by default.
fn host_and_port(address: &str) -> Result<(String, u16), String> {
    let rest = address.split_once("://").map_or(address, |(_, rest)| rest).trim_end_matches('/');
    let (host, port) = super::transport::host_and_port(address, rest)?;
    if host.is_empty() {
        return Err(format!("{address}: no host to reach"));
    }
    Ok((host.to_owned(), port.unwrap_or(2376)))
}

/// `docker system dial-stdio` to the engine at `address`, verified with the files in `dir`. The
/// environment names the engine, so no context or `DOCKER_TLS` of the caller's can change it.
fn dial_command(address: &str, dir: &Path) -> std::process::Command {
    let mut docker = std::process::Command::new("docker");
    docker
        .args(["system", "dial-stdio"])
        .env("DOCKER_HOST", address)
        .env("DOCKER_TLS_VERIFY", "1")
        .env("DOCKER_CERT_PATH", dir)
        .env_remove("DOCKER_CONTEXT")
        .env_remove("DOCKER_TLS");
    docker
}

/// A regular file this process can open for reading. Opened without waiting: a FIFO in its place
/// would hang the CLI that reads it, and this tool with it. A link is followed, as the CLI
/// follows it (certificates are often links into a store of their own).
fn readable_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(crate::base::os::NONBLOCK | crate::base::os::CLOEXEC)
        .open(path)?;
    match file.metadata()?.is_file() {
        true => Ok(()),
        false => Err(std::io::Error::other("not a regular file")),
    }
}

/// A bollard client for the TLS engine at `address`, with the CLI's three files in `dir`. A file
/// that cannot be read is said here, before any connection.
pub(super) fn client(address: &str, dir: &Path, timeout_secs: u64) -> Result<bollard::Docker, bollard::errors::Error> {
    let invalid = super::transport::invalid;
    let (host, port) = host_and_port(address).map_err(invalid)?;
    for name in TLS_FILES {
        if let Err(e) = readable_file(&dir.join(name)) {
            return Err(invalid(format!("the TLS files in {}: {name}: {e}", dir.display())));
        }
    }
    let (address, dir) = (address.to_owned(), dir.to_owned());
    let dial = Arc::new(move || dial_command(&address, &dir));
    super::dial_stdio::client(dial, "docker system dial-stdio", format!("https://{host}:{port}"), timeout_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engines_host_and_port() {
        assert_eq!(host_and_port("tcp://127.0.0.1:2376"), Ok(("127.0.0.1".into(), 2376)));
        assert_eq!(host_and_port("tcp://engine.example"), Ok(("engine.example".into(), 2376)));
        assert_eq!(host_and_port("tcp://[::1]:9999/"), Ok(("::1".into(), 9999)));
        assert!(host_and_port("tcp://:2376").is_err());
        assert!(host_and_port("tcp://host:tls").is_err());
    }

    #[test]
    fn a_tls_file_is_a_regular_file_and_a_fifo_in_its_place_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ca.pem");
        std::fs::write(&file, "pem").unwrap();
        assert!(readable_file(&file).is_ok());
        std::os::unix::fs::symlink(&file, dir.path().join("linked.pem")).unwrap();
        assert!(readable_file(&dir.path().join("linked.pem")).is_ok(), "a link is followed, as the CLI does");
        assert!(readable_file(dir.path()).is_err(), "a directory");
        assert!(readable_file(&dir.path().join("missing.pem")).is_err());
        let fifo = dir.path().join("key.pem");
        crate::base::testing::fifo(&fifo);
        let refused = crate::base::testing::returns_promptly(move || readable_file(&fifo).is_err());
        assert_eq!(refused, Some(true), "a FIFO, without waiting for a writer");
    }

    #[test]
    fn the_cli_is_given_the_engine_and_its_files_and_nothing_of_the_callers_context() {
        let docker = dial_command("tcp://127.0.0.1:2376", Path::new("/certs"));
        let args: Vec<_> = docker.get_args().collect();
        assert_eq!(args, ["system", "dial-stdio"]);
        let env: Vec<_> = docker.get_envs().map(|(name, value)| (name.to_str().unwrap(), value)).collect();
        assert!(env.contains(&("DOCKER_HOST", Some("tcp://127.0.0.1:2376".as_ref()))), "{env:?}");
        assert!(env.contains(&("DOCKER_TLS_VERIFY", Some("1".as_ref()))), "{env:?}");
        assert!(env.contains(&("DOCKER_CERT_PATH", Some("/certs".as_ref()))), "{env:?}");
        assert!(env.contains(&("DOCKER_CONTEXT", None)), "{env:?}");
    }
}
