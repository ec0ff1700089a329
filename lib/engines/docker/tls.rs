//! A tcp engine behind TLS, as the docker CLI reaches it with `--tlsverify`: the engine's
//! certificate verified against `ca.pem` and the engine's host name (or IP address), and the
//! client's own `cert.pem` and `key.pem` offered. TLS is rustls over ring, linked statically in
//! every build: a tool that never reaches a TLS engine loads no TLS library when it starts. The
//! connection is bollard's own hyper client over a stream of ours, as for ssh (ssh.rs).

use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream as RustlsStream;

/// One TLS connection to the engine.
struct TlsStream(RustlsStream<TcpStream>);

impl AsyncRead for TlsStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl Connection for TlsStream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

/// Makes a connection: tcp to `host:port`, then the TLS handshake that verifies the engine.
#[derive(Clone)]
struct TlsConnector {
    tls: tokio_rustls::TlsConnector,
    /// The name the engine's certificate must carry: a DNS name, or an IP address in its SAN.
    name: ServerName<'static>,
    host: String,
    port: u16,
}

impl tower_service::Service<http::Uri> for TlsConnector {
    type Response = TokioIo<TlsStream>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let tcp = TcpStream::connect((this.host.as_str(), this.port)).await?;
            let stream = this.tls.connect(this.name, tcp).await.map_err(handshake_error)?;
            Ok(TokioIo::new(TlsStream(stream)))
        })
    }
}

/// A failed handshake, saying so plainly when it is the engine's certificate that failed.
fn handshake_error(error: io::Error) -> io::Error {
    match error.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::InvalidCertificate(why)) => {
            io::Error::other(format!("the engine's certificate does not verify: {why:?}"))
        }
        _ => io::Error::other(format!("TLS handshake: {error}")),
    }
}

/// `tcp://host:port` (or `https://…`) as a host and a port; the docker CLI's TLS port by default.
fn host_and_port(address: &str) -> Result<(String, u16), String> {
    let rest = address.split_once("://").map_or(address, |(_, rest)| rest).trim_end_matches('/');
    let (host, port) = super::transport::host_and_port(address, rest)?;
    if host.is_empty() {
        return Err(format!("{address}: no host to reach"));
    }
    Ok((host.to_owned(), port.unwrap_or(2376)))
}

/// The client's side of the CLI's three files in `dir`: the engine verified against `ca.pem`,
/// `cert.pem` (with any chain after it) and `key.pem` offered.
fn client_config(dir: &Path) -> Result<ClientConfig, String> {
    let read = |name: &str, error: rustls::pki_types::pem::Error| format!("{}: {error}", dir.join(name).display());
    let mut roots = RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(dir.join("ca.pem")).map_err(|e| read("ca.pem", e))? {
        let ca = ca.map_err(|e| read("ca.pem", e))?;
        roots.add(ca).map_err(|e| format!("{}: {e}", dir.join("ca.pem").display()))?;
    }
    let chain = CertificateDer::pem_file_iter(dir.join("cert.pem"))
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| read("cert.pem", e))?;
    let key = PrivateKeyDer::from_pem_file(dir.join("key.pem")).map_err(|e| read("key.pem", e))?;
    // rustls 0.23.48 deprecates ring's provider for having no post-quantum key exchange. Its
    // replacement, aws-lc-rs, is a C library several times ring's size in every Docker tool; the
    // engine's own Go TLS agrees on X25519 with ring, and what is protected is a connection the
    // operator set up on their own network with their own CA (docs/maintainers/decisions.md).
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|e| format!("{} and key.pem: {e}", dir.join("cert.pem").display()))
}

/// A bollard client for the TLS engine at `address`, with the CLI's three files in `dir`.
pub(super) fn client(address: &str, dir: &Path, timeout_secs: u64) -> Result<bollard::Docker, bollard::errors::Error> {
    let invalid = super::transport::invalid;
    let (host, port) = host_and_port(address).map_err(invalid)?;
    let config = client_config(dir).map_err(|e| invalid(format!("the TLS files in {} ({e})", dir.display())))?;
    let name = ServerName::try_from(host.clone()).map_err(|e| invalid(format!("{address}: {e}")))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config));
    let connector = TlsConnector { tls, name, host: host.clone(), port };
    super::transport::client_over(
        connector,
        format!("https://{host}:{port}"),
        timeout_secs,
        bollard::errors::Error::from,
    )
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
}
