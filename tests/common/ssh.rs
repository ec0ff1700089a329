//! An OpenSSH server on loopback for tests, with an ssh-agent holding the one key it accepts and
//! a home whose `known_hosts` names the server's host key: what an operator's machine has when a
//! role source lives at `ssh://…` or `git@host:…`. Real sshd, real agent, real `git-upload-pack`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

/// Whether an sshd can run here; without one a test is skipped with a printed reason, except
/// under CI=true, where it fails.
pub fn sshd_available(test: &str) -> bool {
    if Path::new(SSHD).is_file() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: CI=true and there is no {SSHD} (apt-get install openssh-server)");
    }
    eprintln!("SKIPPED {test}: no {SSHD}");
    false
}

pub struct SshServer {
    pub port: u16,
    pub user: String,
    /// The agent's socket, for `SSH_AUTH_SOCK`.
    pub agent_socket: PathBuf,
    /// A home directory whose `.ssh/known_hosts` holds the server's key, for `HOME`.
    pub home: PathBuf,
    sshd: Child,
    agent: Child,
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(Instant::now() < deadline, "{what} did not come up within 10 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl SshServer {
    pub fn start(dir: &Path) -> SshServer {
        SshServer::start_with(dir, "")
    }

    /// A server with more `sshd_config` lines, e.g. `SetEnv DOCKER_HOST=…` for the sessions it runs.
    pub fn start_with(dir: &Path, extra_config: &str) -> SshServer {
        fs::create_dir_all(dir).unwrap();
        for key in ["host_key", "client_key"] {
            run(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(dir.join(key)));
        }
        fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys")).unwrap();
        let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap().trim().to_owned();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = dir.join("sshd_config");
        // The sessions it runs reach the tests' engine, as a host set up for rootless Docker sets
        // DOCKER_HOST in its login environment (scripts/test-docker-host).
        // sshd takes the first SetEnv line: the engine joins the one the caller gives, if any.
        let mut extra_config = extra_config.to_owned();
        let mut engine = String::new();
        if let Ok(host) = std::env::var("DOCKER_HOST").map(|h| format!("DOCKER_HOST={h}")) {
            if host != "DOCKER_HOST=" && !extra_config.contains("DOCKER_HOST=") {
                match extra_config.find("SetEnv ") {
                    Some(at) => extra_config.insert_str(at + "SetEnv ".len(), &format!("{host} ")),
                    None => engine = format!("SetEnv {host}\n"),
                }
            }
        }
        fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {dir}/host_key\nPidFile {dir}/sshd.pid\n\
                 AuthorizedKeysFile {dir}/authorized_keys\nPubkeyAuthentication yes\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                 PermitRootLogin prohibit-password\nStrictModes no\n{engine}{extra_config}",
                dir = dir.display()
            ),
        )
        .unwrap();
        // sshd refuses to start without its privilege separation directory (made by its
        // service on a normal boot, absent on a fresh CI machine).
        let _ = fs::create_dir_all("/run/sshd");
        let sshd = Command::new(SSHD)
            .arg("-D")
            .arg("-E")
            .arg(dir.join("sshd.log"))
            .arg("-f")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting sshd");
        wait_for("sshd", || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());

        let agent_socket = dir.join("agent.sock");
        let agent = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&agent_socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting ssh-agent");
        // The socket is there a moment before the agent accepts on it: `ssh-add -l` exits 2 until
        // it can connect (1: no keys yet).
        wait_for("ssh-agent", || {
            let listed = Command::new("ssh-add").arg("-l").env("SSH_AUTH_SOCK", &agent_socket).output();
            listed.is_ok_and(|out| out.status.code() != Some(2))
        });
        run(Command::new("ssh-add").arg("-q").arg(dir.join("client_key")).env("SSH_AUTH_SOCK", &agent_socket));

        let home = dir.join("home");
        fs::create_dir_all(home.join(".ssh")).unwrap();
        let host_key = fs::read_to_string(dir.join("host_key.pub")).unwrap();
        let mut fields = host_key.split_whitespace();
        let (kind, key) = (fields.next().unwrap(), fields.next().unwrap());
        fs::write(home.join(".ssh/known_hosts"), format!("[127.0.0.1]:{port} {kind} {key}\n")).unwrap();
        SshServer { port, user, agent_socket, home, sshd, agent }
    }

    /// What sshd logged, for a failure message.
    pub fn log(&self, dir: &Path) -> String {
        fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
    }

    /// The URL of the repository at `path` on this server.
    pub fn url(&self, path: &Path) -> String {
        format!("ssh://{}@127.0.0.1:{}{}", self.user, self.port, path.display())
    }
}

impl Drop for SshServer {
    fn drop(&mut self) {
        let _ = self.sshd.kill();
        let _ = self.agent.kill();
        let _ = self.sshd.wait();
        let _ = self.agent.wait();
    }
}
