//! A tcp engine behind TLS, as the docker CLI reaches it with `--tlsverify`: the engine's
//! certificate verified against `ca.pem` and the engine's host name, and the client's own
//! `cert.pem` and `key.pem` offered. TLS is the system's OpenSSL, which the tools link already
//! (libssh2 and libcurl use it), so a tool does not carry a second TLS library of its own; the
//! connection is bollard's own hyper client over a stream of ours, as for ssh (ssh.rs).

use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use openssl::ssl::{SslConnector, SslFiletype, SslMethod};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_openssl::SslStream;

/// One TLS connection to the engine.
struct TlsStream(SslStream<TcpStream>);

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
    tls: Arc<SslConnector>,
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
            // `into_ssl` turns on host name verification (and SNI) for the engine's name.
            let ssl = this.tls.configure().and_then(|c| c.into_ssl(&this.host)).map_err(io::Error::other)?;
            let mut stream = SslStream::new(ssl, tcp).map_err(io::Error::other)?;
            Pin::new(&mut stream).connect().await.map_err(|e| {
                let verify = stream.ssl().verify_result();
                match verify.as_raw() {
                    0 => io::Error::other(format!("TLS handshake: {e}")),
                    _ => {
                        io::Error::other(format!("the engine's certificate does not verify: {}", verify.error_string()))
                    }
                }
            })?;
            Ok(TokioIo::new(TlsStream(stream)))
        })
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

/// A bollard client for the TLS engine at `address`, with the CLI's three files in `dir`.
pub(super) fn client(address: &str, dir: &Path, timeout_secs: u64) -> Result<bollard::Docker, bollard::errors::Error> {
    let invalid = super::transport::invalid;
    let (host, port) = host_and_port(address).map_err(invalid)?;
    let file = |name: &str| dir.join(name);
    let mut builder = SslConnector::builder(SslMethod::tls_client())
        .and_then(|mut b| {
            b.set_ca_file(file("ca.pem"))?;
            b.set_certificate_chain_file(file("cert.pem"))?;
            b.set_private_key_file(file("key.pem"), SslFiletype::PEM)?;
            b.check_private_key()?;
            Ok(b)
        })
        .map_err(|e| invalid(format!("the TLS files in {} ({e})", dir.display())))?;
    builder.set_verify(openssl::ssl::SslVerifyMode::PEER);
    let connector = TlsConnector { tls: Arc::new(builder.build()), host: host.clone(), port };
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
