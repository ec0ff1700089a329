//! An engine on another machine reached over ssh, as the docker CLI reaches it: every connection
//! is `ssh [-l user] [-p port] -- host docker system dial-stdio`, the engine's API over the ssh
//! process's stdin and stdout. bollard's own ssh transport drops the port of
//! `ssh://user@host:2222` (it hands `user@host:2222` to ssh as the host name), so the tools carry
//! their own: the ssh command line is the docker CLI's, plus `BatchMode=yes`, because a cron job
//! or a git hook has nobody to type a password or accept a host key. Keys come from ssh-agent or
//! `~/.ssh/config`, host keys from `known_hosts`, as for `docker -H ssh://…`. The connection itself
//! is a program's stdin and stdout (dial_stdio.rs), as for a TLS engine.

/// Where `ssh://[user@]host[:port]` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SshDestination {
    pub(crate) user: Option<String>,
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
}

impl SshDestination {
    /// The parts of an `ssh://` engine address; an error names what does not parse. A path
    /// (`ssh://host/path`) is refused, as the docker CLI refuses it.
    pub(crate) fn parse(address: &str) -> Result<SshDestination, String> {
        let url = url::Url::parse(address).map_err(|e| format!("{address}: {e}"))?;
        if url.scheme() != "ssh" {
            return Err(format!("{address}: not an ssh:// address"));
        }
        if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
            return Err(format!("{address}: an ssh engine address has no path"));
        }
        // The URL's user is percent-encoded (an `@` before the last one becomes %40): ssh takes it
        // as written.
        let decoded = |text: &str| percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned();
        let user = Some(decoded(url.username())).filter(|u| !u.is_empty());
        let host = match url.host() {
            Some(url::Host::Ipv6(address)) => address.to_string(),
            Some(host) => decoded(&host.to_string()),
            None => String::new(),
        };
        let port = url.port();
        if host.is_empty()
            || host.starts_with('-')
            || user.as_deref().is_some_and(|u| u.is_empty() || u.starts_with('-'))
        {
            return Err(format!("{address}: no host to reach"));
        }
        Ok(SshDestination { user, host, port })
    }

    /// The ssh command (engines/ssh.rs) that runs the engine's `dial-stdio` on the remote host.
    pub(crate) fn ssh_command(&self) -> std::process::Command {
        let connect = std::time::Duration::from_secs(10);
        let mut ssh = crate::engines::ssh::command(connect, self.user.as_deref(), self.port, &self.host);
        ssh.args(["docker", "system", "dial-stdio"]);
        ssh
    }
}

/// A bollard client whose every connection is an ssh process to `address` (`ssh://…`).
pub(super) fn client(address: &str, timeout_secs: u64) -> Result<bollard::Docker, bollard::errors::Error> {
    let destination = SshDestination::parse(address).map_err(super::transport::invalid)?;
    // The address bollard writes into each request's URI (its Host header); ssh ignores it.
    let base = match destination.port {
        Some(port) => format!("ssh://{}:{port}", destination.host),
        None => format!("ssh://{}", destination.host),
    };
    let dial = std::sync::Arc::new(move || destination.ssh_command());
    super::dial_stdio::client(dial, "ssh", base, timeout_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn destination(user: Option<&str>, host: &str, port: Option<u16>) -> SshDestination {
        SshDestination { user: user.map(str::to_owned), host: host.to_owned(), port }
    }

    #[test]
    fn the_port_and_the_user_are_their_own_arguments() {
        let cases = [
            ("ssh://me@127.0.0.1:2222", destination(Some("me"), "127.0.0.1", Some(2222))),
            ("ssh://build.example", destination(None, "build.example", None)),
            ("ssh://me@[::1]:22/", destination(Some("me"), "::1", Some(22))),
            ("ssh://a@b@host", destination(Some("a@b"), "host", None)),
        ];
        for (address, expected) in cases {
            assert_eq!(SshDestination::parse(address), Ok(expected), "{address}");
        }
        let ssh = SshDestination::parse("ssh://me@127.0.0.1:2222").unwrap().ssh_command();
        let args: Vec<&str> = ssh.get_args().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(args[5..], ["-l", "me", "-p", "2222", "--", "127.0.0.1", "docker", "system", "dial-stdio"]);
        assert!(args.contains(&"BatchMode=yes"), "never waits on a prompt: {args:?}");
    }

    #[test]
    fn what_ssh_would_read_as_an_option_or_a_path_is_refused() {
        for bad in
            ["ssh://", "ssh://me@", "ssh://-oProxyCommand=x", "ssh://-l@host", "ssh://host:port", "ssh://host/path"]
        {
            assert!(SshDestination::parse(bad).is_err(), "{bad}");
        }
    }
}
