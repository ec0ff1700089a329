//! Reaching the resolved engine: the API version from a local socket's ping, a bollard client for
//! every other kind of engine (TLS only where the engine asks for it), and errors that name it.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use bollard::errors::Error as BollardError;

use super::Engine;
use crate::base::exit::Exit;
use crate::engines::endpoint::Endpoint;

/// How long to wait for the engine to answer the first call before calling it unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Every later call.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The API version a local engine speaks, from the `Api-Version` header of `GET /_ping`, as the
/// docker CLI negotiates. bollard negotiates with `GET /version` instead, which has the engine run
/// `runc --version` and the like on every call (9 ms here, more than some of our tools' whole
/// work), and its ping does not return headers. `None` when the engine answers without the header
/// (then bollard negotiates); an error when the socket does not answer.
fn ping_api_version(socket: &Path) -> std::io::Result<Option<bollard::ClientVersion>> {
    use std::io::{Read, Write};
    let mut stream = std::os::unix::net::UnixStream::connect(socket)?;
    stream.set_read_timeout(Some(CONNECT_TIMEOUT))?;
    stream.set_write_timeout(Some(CONNECT_TIMEOUT))?;
    // HTTP/1.0: the engine closes the connection after the answer, so reading to the end is safe.
    stream.write_all(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")?;
    let mut answer = Vec::new();
    stream.take(64 * 1024).read_to_end(&mut answer)?;
    let answer = String::from_utf8_lossy(&answer);
    let head = answer.split("\r\n\r\n").next().unwrap_or_default();
    let version = head.lines().skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim().eq_ignore_ascii_case("api-version").then(|| value.trim().to_owned())
    });
    Ok(version.and_then(|v| {
        let (major, minor) = v.split_once('.')?;
        Some(bollard::ClientVersion { major_version: major.parse().ok()?, minor_version: minor.parse().ok()? })
    }))
}

/// A client for an engine whose API version must be negotiated. Only a tcp engine with TLS files
/// runs the docker CLI for TLS (tls.rs): the local socket never pays for it.
fn client_for(endpoint: &Endpoint) -> Result<bollard::Docker, BollardError> {
    let host = endpoint.host.as_str();
    let timeout = CALL_TIMEOUT.as_secs();
    let version = bollard::API_DEFAULT_VERSION;
    match (&endpoint.tls, host) {
        (Some(dir), _) => super::tls::client(host, dir, timeout),
        (None, h) if h.starts_with("tcp://") || h.starts_with("http://") => {
            bollard::Docker::connect_with_http(h, timeout, version)
        }
        (None, h) if h.starts_with("unix://") => bollard::Docker::connect_with_unix(h, timeout, version),
        (None, h) if h.starts_with("ssh://") => super::ssh::client(h, timeout),
        (None, h) => bollard::Docker::connect_with_host(h),
    }
}

/// An error with its causes, `outer: inner: …`: a TLS failure's reason is several causes deep.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

impl Engine {
    /// Connects to the resolved engine and agrees on an API version; an engine that does not
    /// answer is "unavailable" (exit 4) with one line that names it.
    pub fn connect(endpoint: &Endpoint) -> Result<Engine> {
        let unavailable = |e: &dyn std::fmt::Display| {
            Exit::Unavailable.err(format_args!("the Docker engine at {endpoint} cannot be reached: {e}"))
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the Docker client runtime")?;
        let pinged = match endpoint.local_socket() {
            Some(path) => ping_api_version(path).map_err(|e| unavailable(&e))?,
            None => None,
        };
        let api = match (endpoint.local_socket().and_then(Path::to_str), pinged) {
            (Some(path), Some(version)) => {
                let version =
                    if version < *bollard::API_DEFAULT_VERSION { version } else { *bollard::API_DEFAULT_VERSION };
                bollard::Docker::connect_with_unix(path, CALL_TIMEOUT.as_secs(), &version)
                    .map_err(|e| unavailable(&error_chain(&e)))?
            }
            _ => {
                let api = client_for(endpoint).map_err(|e| unavailable(&error_chain(&e)))?;
                runtime
                    .block_on(async { tokio::time::timeout(CONNECT_TIMEOUT, api.negotiate_version()).await })
                    .map_err(|_| unavailable(&"no answer within 10 seconds"))?
                    .map_err(|e| unavailable(&error_chain(&e)))?
                    .with_timeout(CALL_TIMEOUT)
            }
        };
        // The version negotiation above was a request too.
        super::count_call();
        Ok(Engine { runtime, api, endpoint: endpoint.clone(), defaults: Default::default() })
    }

    /// When the engine started, if it runs on this host: dockerd creates its socket anew at every
    /// start, so the socket's modification time is the engine's start. `None` for a remote engine.
    pub(crate) fn local_started_at(&self) -> Option<std::time::SystemTime> {
        std::fs::metadata(self.endpoint.local_socket()?).ok()?.modified().ok()
    }
}
