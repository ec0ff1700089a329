//! What the tools' own transports (dial_stdio.rs, for ssh.rs and tls.rs) share: the
//! `host[:port]` of an engine address, and a bollard client whose connections a connector of ours
//! makes, over the same hyper client bollard uses for its own transports.

use std::io;

use hyper_util::client::legacy::connect::Connect;
use hyper_util::rt::TokioExecutor;

/// `[::1]:22`, `host:22` or a bare host, as a host and its port if given; an error names
/// `address` and what does not parse.
pub(super) fn host_and_port<'a>(address: &str, text: &'a str) -> Result<(&'a str, Option<u16>), String> {
    let (host, port) = match text.strip_prefix('[') {
        Some(bracketed) => {
            let (host, after) =
                bracketed.split_once(']').ok_or_else(|| format!("{address}: an unclosed [ in the host"))?;
            (host, after.strip_prefix(':'))
        }
        None => match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        },
    };
    let port = match port {
        Some(port) => Some(port.parse::<u16>().map_err(|_| format!("{address}: the port {port:?} is not a number"))?),
        None => None,
    };
    Ok((host, port))
}

/// An address that does not parse, as bollard's error.
pub(super) fn invalid(message: String) -> bollard::errors::Error {
    bollard::errors::Error::IOError { err: io::Error::new(io::ErrorKind::InvalidInput, message) }
}

/// A bollard client whose every connection `connector` makes; `explain` turns a failed request
/// into the error the tools show. `base` is what bollard writes into each request's URI.
pub(super) fn client_over<C>(
    connector: C,
    base: String,
    timeout_secs: u64,
    explain: impl Fn(hyper_util::client::legacy::Error) -> bollard::errors::Error + Clone + Send + Sync + 'static,
) -> Result<bollard::Docker, bollard::errors::Error>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    let client =
        std::sync::Arc::new(hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector));
    let transport = move |request: bollard::BollardRequest| {
        let (client, explain) = (std::sync::Arc::clone(&client), explain.clone());
        async move { client.request(request).await.map_err(explain) }
    };
    bollard::Docker::connect_with_custom_transport(transport, Some(base), timeout_secs, bollard::API_DEFAULT_VERSION)
}
