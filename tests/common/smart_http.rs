//! A git smart-HTTP server on loopback for tests: `git http-backend` (git's own CGI program)
//! behind a few lines of HTTP/1.1, one request per connection. Real git on the server side, so
//! a fetch through it checks the product's HTTP transport against the real protocol. `serve_tls`
//! puts TLS in front, with a certificate made for the test (trusted through `SSL_CERT_FILE`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use openssl::ssl::{SslAcceptor, SslMethod};

pub struct SmartHttp {
    pub port: u16,
    scheme: &'static str,
    /// The server's self-signed certificate (PEM), for `SSL_CERT_FILE`; only with TLS.
    pub certificate: Option<PathBuf>,
    /// Requests answered so far, so a test can tell the fetch really went over HTTP.
    pub requests: Arc<AtomicUsize>,
    /// Requests refused with 401 (no or wrong Basic credentials).
    pub refused: Arc<AtomicUsize>,
}

impl SmartHttp {
    /// Serves the repositories under `root` at `http://127.0.0.1:<port>/<name>` until the test
    /// process ends.
    pub fn serve(root: &Path) -> SmartHttp {
        Self::start(root, None, None)
    }

    /// The same over https, with a certificate for 127.0.0.1 written to `<root>/server-cert.pem`.
    pub fn serve_tls(root: &Path) -> SmartHttp {
        Self::serve_tls_with_password(root, None)
    }

    /// https that answers 401 to any request without HTTP Basic credentials `(user, password)`.
    pub fn serve_tls_with_password(root: &Path, credentials: Option<(&str, &str)>) -> SmartHttp {
        let (acceptor, pem) = self_signed_acceptor();
        let certificate = root.join("server-cert.pem");
        std::fs::write(&certificate, pem).unwrap();
        let expected =
            credentials.map(|(user, password)| format!("Basic {}", base64(format!("{user}:{password}").as_bytes())));
        let mut server = Self::start(root, Some(acceptor), expected);
        server.certificate = Some(certificate);
        server
    }

    fn start(root: &Path, tls: Option<SslAcceptor>, authorization: Option<String>) -> SmartHttp {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(AtomicUsize::new(0));
        let refused = Arc::new(AtomicUsize::new(0));
        let (root, counter, refusals) = (root.to_path_buf(), requests.clone(), refused.clone());
        let scheme = if tls.is_some() { "https" } else { "http" };
        let tls = tls.map(Arc::new);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (root, tls, authorization, refusals) =
                    (root.clone(), tls.clone(), authorization.clone(), refusals.clone());
                counter.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let gate = Gate { authorization: authorization.as_deref(), refused: &refusals };
                    let _ = match tls {
                        Some(acceptor) => match acceptor.accept(stream) {
                            Ok(stream) => answer(stream, &root, gate),
                            Err(_) => Ok(()),
                        },
                        None => answer(stream, &root, gate),
                    };
                });
            }
        });
        SmartHttp { port, scheme, certificate: None, requests, refused }
    }

    pub fn url(&self, name: &str) -> String {
        format!("{}://127.0.0.1:{}/{name}", self.scheme, self.port)
    }

    /// The same by host name: git's credential helpers match credentials by host name.
    pub fn url_by_name(&self, name: &str) -> String {
        format!("{}://localhost:{}/{name}", self.scheme, self.port)
    }
}

/// The Basic credentials a server requires, if any, and the count of requests it refused.
struct Gate<'a> {
    authorization: Option<&'a str>,
    refused: &'a AtomicUsize,
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A TLS acceptor with a fresh self-signed certificate for IP 127.0.0.1, and that certificate.
fn self_signed_acceptor() -> (SslAcceptor, Vec<u8>) {
    use openssl::asn1::Asn1Time;
    use openssl::hash::MessageDigest;
    use openssl::pkey::PKey;
    use openssl::rsa::Rsa;
    use openssl::x509::extension::{BasicConstraints, SubjectAlternativeName};
    use openssl::x509::{X509NameBuilder, X509};

    let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", "127.0.0.1").unwrap();
    let name = name.build();
    let mut cert = X509::builder().unwrap();
    cert.set_version(2).unwrap();
    cert.set_subject_name(&name).unwrap();
    cert.set_issuer_name(&name).unwrap();
    cert.set_pubkey(&key).unwrap();
    cert.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
    cert.set_not_after(&Asn1Time::days_from_now(2).unwrap()).unwrap();
    let serial = openssl::bn::BigNum::from_u32(1).unwrap().to_asn1_integer().unwrap();
    cert.set_serial_number(&serial).unwrap();
    cert.append_extension(BasicConstraints::new().critical().ca().build().unwrap()).unwrap();
    let san =
        SubjectAlternativeName::new().ip("127.0.0.1").dns("localhost").build(&cert.x509v3_context(None, None)).unwrap();
    cert.append_extension(san).unwrap();
    cert.sign(&key, MessageDigest::sha256()).unwrap();
    let cert = cert.build();
    let mut acceptor = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls()).unwrap();
    acceptor.set_private_key(&key).unwrap();
    acceptor.set_certificate(&cert).unwrap();
    (acceptor.build(), cert.to_pem().unwrap())
}

fn answer<S: Read + Write>(stream: S, root: &Path, gate: Gate) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or("GET").to_owned(), parts.next().unwrap_or("/").to_owned());
    let (mut content_length, mut content_type, mut authorization) = (0usize, String::new(), None);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((&line, ""));
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => content_length = value.trim().parse().unwrap_or(0),
            "content-type" => content_type = value.trim().to_owned(),
            "authorization" => authorization = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    let mut body = vec![0; content_length];
    reader.read_exact(&mut body)?;
    if gate.authorization.is_some_and(|wanted| authorization.as_deref() != Some(wanted)) {
        gate.refused.fetch_add(1, Ordering::SeqCst);
        let stream = reader.get_mut();
        write!(
            stream,
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        return stream.flush();
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));

    let mut cgi = Command::new("git")
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", &content_type)
        .env("CONTENT_LENGTH", content_length.to_string())
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    cgi.stdin.take().unwrap().write_all(&body)?;
    let output = cgi.wait_with_output()?;

    // CGI output: headers (one may be `Status: 404 Not Found`), a blank line, the body.
    let out = output.stdout;
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, i + 4));
    let split = split.or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, i + 2)));
    let (head_end, body_start) = split.unwrap_or((0, 0));
    let head = String::from_utf8_lossy(&out[..head_end]).to_string();
    let mut status = "200 OK".to_owned();
    let mut headers = String::new();
    for line in head.lines().filter(|l| !l.trim().is_empty()) {
        match line.strip_prefix("Status:") {
            Some(s) => status = s.trim().to_owned(),
            None => headers.push_str(&format!("{}\r\n", line.trim_end())),
        }
    }
    let body = &out[body_start..];
    let stream = reader.get_mut();
    write!(stream, "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n", body.len())?;
    stream.write_all(body)?;
    stream.flush()
}
