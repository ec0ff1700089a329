//! The one ssh command line the tools start, for an `ssh://` Docker engine (docker/ssh.rs) and for
//! another host's tools (jackin-hosts): the system's `ssh`, with the operator's config, keys and
//! known hosts, never waiting on a prompt (`BatchMode`: a cron job has no one to answer), with no
//! terminal, giving up on a host that does not answer within the connect timeout.

use std::process::Command;
use std::time::Duration;

/// `ssh -o BatchMode=yes -o ConnectTimeout=… -T [-l USER] [-p PORT] -- DESTINATION REMOTE…`.
pub(crate) fn command(connect: Duration, user: Option<&str>, port: Option<u16>, destination: &str) -> Command {
    let mut ssh = Command::new("ssh");
    let seconds = connect.as_secs().clamp(1, 30);
    ssh.args(["-o", "BatchMode=yes", "-o", &format!("ConnectTimeout={seconds}"), "-T"]);
    if let Some(user) = user {
        ssh.args(["-l", user]);
    }
    if let Some(port) = port {
        ssh.args(["-p", &port.to_string()]);
    }
    ssh.args(["--", destination]);
    ssh
}
