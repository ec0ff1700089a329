//! An engine reached through a program that carries its API over its stdin and stdout: `ssh …
//! docker system dial-stdio` for an ssh engine (ssh.rs), the local `docker system dial-stdio` for
//! a tcp engine behind TLS (tls.rs). Each connection bollard's hyper client asks for is one run of
//! the program, killed when the connection is dropped; what the program printed last on stderr
//! is kept, for the error message when a request fails.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How much of the program's own messages is kept for an error message.
const STDERR_KEPT: usize = 4096;

/// The command a connection runs, made anew for each connection.
pub(super) type Dial = Arc<dyn Fn() -> std::process::Command + Send + Sync>;

/// One connection: the program, its stdout read and its stdin written.
struct ChildStream {
    // Killed when the connection is dropped.
    _child: Child,
    stdout: ChildStdout,
    stdin: Option<ChildStdin>,
}

impl AsyncRead for ChildStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stdout).poll_read(cx, buf)
    }
}

impl AsyncWrite for ChildStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.stdin.as_mut() {
            Some(stdin) => Pin::new(stdin).poll_write(cx, buf),
            None => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.stdin.as_mut() {
            Some(stdin) => Pin::new(stdin).poll_flush(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Closing stdin is the end of the request stream, as for a socket's write half.
        self.stdin = None;
        Poll::Ready(Ok(()))
    }
}

impl Connection for ChildStream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

/// Makes a connection by starting the program; what it printed last is kept in `stderr`.
#[derive(Clone)]
struct ChildConnector {
    dial: Dial,
    program: &'static str,
    stderr: Arc<Mutex<String>>,
}

impl tower_service::Service<http::Uri> for ChildConnector {
    type Response = TokioIo<ChildStream>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Uri) -> Self::Future {
        let (command, program, kept) = ((self.dial)(), self.program, Arc::clone(&self.stderr));
        Box::pin(async move {
            let mut child = tokio::process::Command::from(command)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| io::Error::new(e.kind(), format!("cannot run {program}: {e}")))?;
            let (stdout, stdin) = (child.stdout.take(), child.stdin.take());
            if let Some(mut stderr) = child.stderr.take() {
                tokio::spawn(async move {
                    let mut text = Vec::new();
                    let _ = (&mut stderr).take(STDERR_KEPT as u64).read_to_end(&mut text).await;
                    let text = String::from_utf8_lossy(&text).trim().to_owned();
                    if !text.is_empty() {
                        *kept.lock().unwrap_or_else(|e| e.into_inner()) = text;
                    }
                });
            }
            let stdout = stdout.ok_or_else(|| io::Error::other(format!("{program} has no stdout")))?;
            Ok(TokioIo::new(ChildStream { _child: child, stdout, stdin }))
        })
    }
}

/// A bollard client whose every connection is a run of `dial`; `program` names it in errors.
/// `base` is what bollard writes into each request's URI (its Host header): the program
/// ignores it.
pub(super) fn client(
    dial: Dial,
    program: &'static str,
    base: String,
    timeout_secs: u64,
) -> Result<bollard::Docker, bollard::errors::Error> {
    let stderr = Arc::new(Mutex::new(String::new()));
    let connector = ChildConnector { dial, program, stderr: Arc::clone(&stderr) };
    // The program's reason ("Permission denied (publickey)", "x509: certificate signed by unknown
    // authority") says more than hyper's "connection closed before message completed". Shown
    // inert: a remote's messages are not ours.
    let explain = move |e: hyper_util::client::legacy::Error| {
        let said = stderr.lock().map(|s| s.clone()).unwrap_or_default();
        match said.is_empty() {
            true => bollard::errors::Error::from(e),
            false => bollard::errors::Error::IOError {
                err: io::Error::other(format!("{program}: {}", crate::protocol::inert::inert_text(&said))),
            },
        }
    };
    super::transport::client_over(connector, base, timeout_secs, explain)
}
