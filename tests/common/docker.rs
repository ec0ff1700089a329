//! A real Docker engine for tests: the locally built busybox test image and sessions made the way
//! jackin makes them (role container, DinD sidecar, network, certs volume, jackin's labels).
//! Setup uses the docker CLI; the code under test talks to the engine through its own client.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const TEST_IMAGE: &str = "jackin-test-busybox:2";
/// The test image with `VOLUME /var/lib/docker`, as jackin's DinD image declares: each container
/// made from it gets an anonymous volume.
pub const TEST_DIND_IMAGE: &str = "jackin-test-dind:1";

/// A role image shaped like jackin's: its own `ENV` and `USER`, and the agent capsule at
/// `/jackin/runtime/jackin-capsule` (a script that says who reached it).
pub const TEST_ROLE_IMAGE: &str = "jackin-test-role-real:1";
/// The image's own variables, which a restore must never ask for.
pub const TEST_ROLE_IMAGE_ENV: [(&str, &str); 2] = [("NODE_VERSION", "22.11.0"), ("DOCKER_TLS_CERTDIR", "/certs")];
/// A sidecar image shaped like jackin's DinD image: `VOLUME /var/lib/docker` and its own `ENV`.
pub const TEST_REAL_DIND_IMAGE: &str = "jackin-test-dind-real:1";
pub const TEST_REAL_DIND_IMAGE_ENV: [(&str, &str); 2] = [("DOCKER_VERSION", "28.0.4"), ("DIND_COMMIT", "8b94a1b0a0b1")];

/// Builds the role and sidecar images shaped like a real jackin host's (once per process).
pub fn build_real_images() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        build_test_image();
        let env_lines = |vars: &[(&str, &str)]| vars.iter().map(|(k, v)| format!("ENV {k}={v}\n")).collect::<String>();
        if docker_quiet(&["image", "inspect", TEST_ROLE_IMAGE]).is_none() {
            let dir = tempfile::tempdir().unwrap();
            let capsule = dir.path().join("jackin-capsule");
            std::fs::write(&capsule, "#!/bin/sh\necho \"capsule reached as $(id -u):$(id -g) groups $(id -G)\"\n")
                .unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&capsule, std::fs::Permissions::from_mode(0o755)).unwrap();
            let dockerfile = format!(
                "FROM {TEST_IMAGE}\n{}COPY jackin-capsule /jackin/runtime/jackin-capsule\nUSER 1000:1000\n",
                env_lines(&TEST_ROLE_IMAGE_ENV)
            );
            std::fs::write(dir.path().join("Dockerfile"), dockerfile).unwrap();
            docker(&["build", "-q", "-t", TEST_ROLE_IMAGE, dir.path().to_str().unwrap()]);
        }
        if docker_quiet(&["image", "inspect", TEST_REAL_DIND_IMAGE]).is_none() {
            let dir = tempfile::tempdir().unwrap();
            let dockerfile = format!("FROM {TEST_DIND_IMAGE}\n{}", env_lines(&TEST_REAL_DIND_IMAGE_ENV));
            std::fs::write(dir.path().join("Dockerfile"), dockerfile).unwrap();
            docker(&["build", "-q", "-t", TEST_REAL_DIND_IMAGE, dir.path().to_str().unwrap()]);
        }
    });
}

/// A role image whose agent the test drives: built on [`TEST_ROLE_IMAGE`], with `/agent-init` to
/// run as the container's main process (`--entrypoint /agent-init`), which ends the container
/// with exit 0 on SIGTERM, and a capsule that says `agent ready` and reads one line: `exit` is the
/// agent exiting (the container then exits 0, as jackin's does when its agent exits), anything
/// else the operator's detach (the container runs on). `/agent-busy` is a main process that keeps
/// a good part of a core busy (`--entrypoint /agent-busy`): an agent at work. Its count of 20,000
/// takes busybox's sh about 40 ms against the 50 ms sleep, some 40% of a core: far over the idle
/// check's 5% even on a loaded machine (a count of 2,000 was 7% unloaded, and under CI's load
/// fell below the threshold).
pub const TEST_AGENT_IMAGE: &str = "jackin-test-role-agent:3";

pub fn build_agent_image() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        build_real_images();
        if docker_quiet(&["image", "inspect", TEST_AGENT_IMAGE]).is_some() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let capsule = "#!/bin/sh\necho 'agent ready'\nread -r line\nif [ \"$line\" = exit ]; then kill -TERM 1; fi\n";
        let init = "#!/bin/sh\ntrap 'exit 0' TERM\nwhile :; do sleep 1 & wait $!; done\n";
        use std::os::unix::fs::PermissionsExt;
        let busy = "#!/bin/sh\ntrap 'exit 0' TERM\nwhile :; do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 0.05; done\n";
        for (file, text) in [("jackin-capsule", capsule), ("agent-init", init), ("agent-busy", busy)] {
            std::fs::write(dir.path().join(file), text).unwrap();
            std::fs::set_permissions(dir.path().join(file), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let dockerfile = format!(
            "FROM {TEST_ROLE_IMAGE}\nCOPY jackin-capsule /jackin/runtime/jackin-capsule\nCOPY agent-init /agent-init\nCOPY agent-busy /agent-busy\n"
        );
        std::fs::write(dir.path().join("Dockerfile"), dockerfile).unwrap();
        docker(&["build", "-q", "-t", TEST_AGENT_IMAGE, dir.path().to_str().unwrap()]);
    });
}

/// Whether a Docker engine answers. Without one a test skips with a printed reason; with
/// `CI=true` a missing engine fails the test instead.
/// The engine every tool reaches when nothing names another (the docker CLI's default).
pub const DEFAULT_SOCKET: &str = "unix:///var/run/docker.sock";

/// The address of the engine the tests use: `DOCKER_HOST` when it is set (as rootless Docker
/// sets it; scripts/test-docker-host runs the tests so), else the default socket.
pub fn engine_host() -> String {
    std::env::var("DOCKER_HOST").ok().filter(|host| !host.is_empty()).unwrap_or_else(|| DEFAULT_SOCKET.to_owned())
}

/// `DOCKER_HOST` as the tests were given it, for a command whose environment is cleared (a
/// rootless host's login, user manager and cron carry it too); nothing when it is not set.
pub fn engine_env() -> Option<(&'static str, std::ffi::OsString)> {
    std::env::var_os("DOCKER_HOST").map(|host| ("DOCKER_HOST", host))
}

pub fn engine_available(test: &str) -> bool {
    static AVAILABLE: OnceLock<Result<(), String>> = OnceLock::new();
    let available = AVAILABLE.get_or_init(|| {
        let out = Command::new("docker").args(["version", "--format", "{{.Server.Version}}"]).output();
        match out {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(String::from_utf8_lossy(&out.stderr).trim().to_owned()),
            Err(e) => Err(format!("the docker CLI cannot run: {e}")),
        }
    });
    match available {
        Ok(()) => {
            build_test_image();
            true
        }
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{test}: CI=true and no Docker engine answers: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED {test}: no Docker engine answers ({why})");
            false
        }
    }
}

/// `docker …` that must succeed; returns trimmed stdout.
///
/// A `docker build` is tried again when the engine's cache probe lost an image to another test's
/// removal of its own (`unable to find image "sha256:…"`: the classic builder reads every child
/// of a step's parent, and the tests' images share the test image as their parent), as the
/// product's own build is (`Engine::build_image`).
pub fn docker(args: &[&str]) -> String {
    let mut tries = 0;
    loop {
        tries += 1;
        let out = Command::new("docker").args(args).output().expect("docker runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let raced = args.first() == Some(&"build") && stderr.contains("unable to find image \"sha256:");
        if !out.status.success() && raced && tries < 4 {
            continue;
        }
        assert!(out.status.success(), "docker {args:?}: {stderr}");
        return String::from_utf8_lossy(&out.stdout).trim().to_owned();
    }
}

/// `docker …` whose failure is fine (cleanup, probing).
pub fn docker_quiet(args: &[&str]) -> Option<String> {
    let out = Command::new("docker").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The test image: busybox-static in a `FROM scratch` image, built locally (no registry here).
pub fn build_test_image() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        build_busybox_image();
        if docker_quiet(&["image", "inspect", TEST_DIND_IMAGE]).is_some() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Dockerfile"), format!("FROM {TEST_IMAGE}\nVOLUME /var/lib/docker\n")).unwrap();
        docker(&["build", "-q", "-t", TEST_DIND_IMAGE, dir.path().to_str().unwrap()]);
    });
}

fn build_busybox_image() {
    if docker_quiet(&["image", "inspect", TEST_IMAGE]).is_some() {
        return;
    }
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists())
        .expect("busybox-static is installed (apt-get install busybox-static)");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(busybox, dir.path().join("busybox")).unwrap();
    std::fs::write(
        dir.path().join("Dockerfile"),
        "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n\
             RUN [\"/bin/mkdir\", \"-p\", \"/tmp\", \"/workspace\"]\nENV PATH=/bin\nCMD [\"/bin/sh\"]\n",
    )
    .unwrap();
    docker(&["build", "-q", "-t", TEST_IMAGE, dir.path().to_str().unwrap()]);
}

/// The Docker side of one session, removed on drop.
pub struct Session {
    pub container: String,
    pub sidecar: Option<String>,
    pub network: String,
    pub volume: Option<String>,
    /// The engine's `-H` when it is a test's own ([`OwnEngine::host`]), not the system's.
    pub host: Option<String>,
}

pub struct SessionOptions<'a> {
    pub dind: bool,
    pub env: Vec<(&'a str, &'a str)>,
    /// Host directories bind-mounted into the role container: (source, destination).
    pub binds: Vec<(PathBuf, &'a str)>,
    pub running: bool,
    /// The role container's image (default: the test image).
    pub image: Option<&'a str>,
    /// Seconds the sidecar's health command keeps failing after each start.
    pub sidecar_ready_after: u32,
    /// The sidecar's image (default: the test image).
    pub sidecar_image: Option<&'a str>,
    /// `docker network create --internal`: no route out.
    pub internal_network: bool,
    /// More `docker create` arguments for the role container (`--cap-drop NET_RAW`, …).
    pub role_args: Vec<&'a str>,
    /// More `docker create` arguments for the sidecar (`--privileged`, `--ulimit …`).
    pub sidecar_args: Vec<&'a str>,
    /// The engine to launch on, as `-H` takes it (default: the system's).
    pub host: Option<&'a str>,
}

impl Default for SessionOptions<'_> {
    fn default() -> Self {
        SessionOptions {
            dind: true,
            env: Vec::new(),
            binds: Vec::new(),
            running: true,
            image: None,
            sidecar_ready_after: 0,
            sidecar_image: None,
            internal_network: false,
            role_args: Vec::new(),
            sidecar_args: Vec::new(),
            host: None,
        }
    }
}

impl Session {
    /// Creates the network, the certs volume and the sidecar (when `dind`), and the role
    /// container, with jackin's names and labels; starts them when `running`.
    pub fn launch(container: &str, options: SessionOptions) -> Session {
        let network = format!("{container}-net");
        let host = options.host.map(str::to_owned);
        let docker = |args: &[&str]| docker(&with_host(host.as_deref(), args));
        // What a run of this test that was killed half-way (before its drop) left under these
        // names goes first: each test's names are its own, so nothing else has them.
        drop(Session {
            container: container.to_owned(),
            sidecar: Some(format!("{container}-dind")),
            network: network.clone(),
            volume: Some(format!("{container}-dind-certs")),
            host: host.clone(),
        });
        let role_label = format!("jackin.role={container}");
        let mut network_args = vec!["network", "create", "--label", "jackin.managed=true", "--label", &role_label];
        if options.internal_network {
            network_args.push("--internal");
        }
        network_args.push(&network);
        docker(&network_args);
        let (sidecar, volume) = if options.dind {
            let sidecar = format!("{container}-dind");
            let volume = format!("{container}-dind-certs");
            docker(&["volume", "create", &volume]);
            let mount = format!("{volume}:/certs");
            let sidecar_cmd = format!(
                "rm -f /tmp/healthy; sleep {}; touch /tmp/healthy; exec sleep 3600",
                options.sidecar_ready_after
            );
            let mut args = vec![
                "create",
                "--name",
                &sidecar,
                "--network",
                &network,
                "--network-alias",
                "dind",
                "--label",
                "jackin.managed=true",
                "--label",
                "jackin.kind=dind",
                "--label",
                &role_label,
                "-v",
                &mount,
                "--health-cmd",
                "test -e /tmp/healthy",
                "--health-interval",
                "1s",
            ];
            args.extend(options.sidecar_args.iter().copied());
            args.extend([options.sidecar_image.unwrap_or(TEST_IMAGE), "sh", "-c", &sidecar_cmd]);
            docker(&args);
            (Some(sidecar), Some(volume))
        } else {
            (None, None)
        };
        let envs: Vec<String> = options.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let binds: Vec<String> = options.binds.iter().map(|(src, dst)| format!("{}:{dst}", src.display())).collect();
        let mut args: Vec<&str> = vec![
            "create",
            "--name",
            container,
            "--network",
            &network,
            "--hostname",
            "agent",
            "--label",
            "jackin.managed=true",
            "--label",
            "jackin.kind=role",
            "--label",
            "jackin.class=agent-smith",
            "--label",
            "jackin.display.name=Agent Smith",
            "--label",
            "jackin.image=jackin-test-busybox",
            "-w",
            "/workspace",
            "--memory",
            "64m",
        ];
        for env in &envs {
            args.extend(["-e", env]);
        }
        for bind in &binds {
            args.extend(["-v", bind]);
        }
        args.extend(options.role_args.iter().copied());
        args.extend([options.image.unwrap_or(TEST_IMAGE), "sleep", "3600"]);
        docker(&args);
        let session = Session { container: container.to_owned(), sidecar, network, volume, host: host.clone() };
        if options.running {
            if let Some(sidecar) = &session.sidecar {
                docker(&["start", sidecar]);
            }
            docker(&["start", container]);
        }
        session
    }

    pub fn state(&self, name: &str) -> Option<String> {
        docker_quiet(&["inspect", "-f", "{{.State.Status}}", name])
    }

    pub fn exists(kind: &str, name: &str) -> bool {
        docker_quiet(&[kind, "inspect", name]).is_some()
    }

    /// The anonymous volumes of the sidecar (those its image declares), while it exists.
    pub fn sidecar_anonymous_volumes(&self) -> Vec<String> {
        let Some(sidecar) = &self.sidecar else { return Vec::new() };
        let format =
            "{{range .Mounts}}{{if and (eq .Type \"volume\") (ne .Destination \"/certs\")}}{{.Name}} {{end}}{{end}}";
        docker(&["inspect", "-f", format, sidecar]).split_whitespace().map(str::to_owned).collect()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let quiet = |args: &[&str]| docker_quiet(&with_host(self.host.as_deref(), args));
        let _ = quiet(&["rm", "-f", &self.container]);
        if let Some(sidecar) = &self.sidecar {
            let _ = quiet(&["rm", "-f", "-v", sidecar]);
        }
        let _ = quiet(&["network", "rm", &self.network]);
        if let Some(volume) = &self.volume {
            let _ = quiet(&["volume", "rm", "-f", volume]);
        }
    }
}

/// `args` for the engine at `host` (`-H`), or for the system's.
fn with_host<'a>(host: Option<&'a str>, args: &[&'a str]) -> Vec<&'a str> {
    host.map(|h| vec!["-H", h]).unwrap_or_default().into_iter().chain(args.iter().copied()).collect()
}

/// The host bridge interfaces of an engine's own networks (`br-<network id prefix>`). An engine
/// that is killed, or stopped with networks left, leaves them on the host, where they take
/// address pools away from every engine; a test that runs an engine of its own removes them.
pub fn engine_bridges(host: &str) -> Vec<String> {
    let out = Command::new("docker").args(["-H", host, "network", "ls", "-q", "--filter", "type=custom"]).output();
    let Ok(out) = out else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout).lines().map(|id| format!("br-{}", &id[..id.len().min(12)])).collect()
}

pub fn delete_bridges(bridges: &[String]) {
    for bridge in bridges {
        let _ = Command::new("ip").args(["link", "delete", bridge]).output();
    }
}

/// A Docker engine of the test's own: its socket, data root, exec root and pid file under a
/// temporary directory. Stopped, with its containerd and shims, on drop.
pub struct OwnEngine {
    dir: tempfile::TempDir,
    dockerd: Option<std::process::Child>,
    /// More `dockerd` arguments, e.g. a TLS listener besides the socket.
    extra_args: Vec<String>,
}

impl OwnEngine {
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn host(&self) -> String {
        format!("unix://{}", self.path("docker.sock").display())
    }

    /// An engine started with more `dockerd` arguments; the docker CLI still sets it up through
    /// its socket.
    pub fn start_with(dir: tempfile::TempDir, extra_args: Vec<String>) -> OwnEngine {
        let mut engine = OwnEngine { dir, dockerd: None, extra_args };
        engine.launch();
        engine
    }

    /// An engine of the test's own holding the test image, copied from the default engine.
    pub fn start_with_test_image(dir: tempfile::TempDir, extra_args: Vec<String>) -> OwnEngine {
        let engine = OwnEngine::start_with(dir, extra_args);
        engine.load_image(TEST_IMAGE);
        engine
    }

    /// An image of the system engine, copied into this one.
    pub fn load_image(&self, image: &str) {
        let load = Command::new("sh")
            .arg("-c")
            .arg(format!("docker save {image} | docker -H {} load -q", self.host()))
            .output()
            .unwrap();
        assert!(load.status.success(), "{}", String::from_utf8_lossy(&load.stderr));
    }

    pub fn launch(&mut self) {
        let log = fs::OpenOptions::new().create(true).append(true).open(self.path("dockerd.log")).unwrap();
        let child = Command::new("dockerd")
            .args(["--bridge=none", "--iptables=false", "--host", &self.host()])
            .arg("--data-root")
            .arg(self.path("data"))
            .arg("--exec-root")
            .arg(self.path("exec"))
            .arg("--pidfile")
            .arg(self.path("docker.pid"))
            .args(&self.extra_args)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("dockerd starts");
        self.dockerd = Some(child);
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let up =
                Command::new("docker").args(["-H", &self.host(), "version"]).output().is_ok_and(|o| o.status.success());
            if up {
                return;
            }
            if let Some(status) = self.dockerd.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "dockerd exited with {status}: {}",
                    fs::read_to_string(self.path("dockerd.log")).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "dockerd did not answer within 90 s: {}",
                fs::read_to_string(self.path("dockerd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Every process of this engine: dockerd, its containerd, the shims (they name the
    /// containerd socket under our exec root) and the containers' own processes.
    pub fn processes(&self, container_pids: &[i32]) -> Vec<i32> {
        let exec_root = self.path("exec").display().to_string();
        let mut pids: Vec<i32> = Vec::new();
        if let Some(child) = &self.dockerd {
            pids.push(child.id() as i32);
        }
        for entry in fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else { continue };
            let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains(&exec_root) && !pids.contains(&pid) {
                pids.push(pid);
            }
        }
        pids.extend(container_pids.iter().copied().filter(|p| *p > 0));
        pids
    }

    /// Everything at once with SIGKILL, as when the host or its VM goes away.
    pub fn docker(&self, args: &[&str]) -> String {
        let out = Command::new("docker").arg("-H").arg(self.host()).args(args).output().unwrap();
        assert!(out.status.success(), "docker {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    pub fn kill_all(&mut self, container_pids: &[i32]) {
        let pids = self.processes(container_pids);
        assert!(pids.len() >= 4, "dockerd, containerd, shims and containers: {pids:?}");
        for pid in &pids {
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        self.dockerd.take().unwrap().wait().unwrap();
        // The orphans are reaped by init; dockerd refuses to start while its old pids live.
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && pids.iter().any(|p| Path::new(&format!("/proc/{p}")).exists()) {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl OwnEngine {
    /// Stops dockerd the way a service manager does (SIGTERM, then up to 30 s to shut down);
    /// `launch` starts it again over the same data root.
    pub fn stop_gracefully(&mut self) {
        if let Some(mut child) = self.dockerd.take() {
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline && child.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(200));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for OwnEngine {
    fn drop(&mut self) {
        let bridges = engine_bridges(&self.host());
        self.stop_gracefully();
        for pid in self.processes(&[]) {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let root = self.dir.path().display().to_string();
        let mounts = fs::read_to_string("/proc/mounts").unwrap_or_default();
        let mut points: Vec<&str> =
            mounts.lines().filter_map(|l| l.split(' ').nth(1)).filter(|p| p.starts_with(&root)).collect();
        points.sort_by_key(|p| std::cmp::Reverse(p.len()));
        for point in points {
            let _ = Command::new("umount").arg("-l").arg(point).status();
        }
        delete_bridges(&bridges);
    }
}

/// An operator attached to a running container as `jackin hardline` and `jackin-restore --exec`
/// attach: a `docker exec -i` whose process runs until this is dropped (its stdin closed).
pub struct Attached {
    child: std::process::Child,
}

impl Attached {
    pub fn to(container: &str) -> Attached {
        let mut child = Command::new("docker")
            .args(["exec", "-i", container, "sh", "-c", "echo attached; exec cat"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("docker exec starts");
        // Attached once the exec's process runs in the container and says so.
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("the exec answers");
        assert_eq!(line.trim(), "attached", "the exec into {container} did not start");
        Attached { child }
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// What jackin-keep does before it tears a running session down, through the library: the launch
/// recipe captured from the engine into the tools' own file, then the kept status
/// (`restore_available`). The caller removes what keep would remove.
pub fn keep_with_recipe(home: &super::Home, container: &str) {
    use jackin::state::model::Status;
    use jackin::state::names::InstanceName;
    use jackin::state::store::{Roots, Store};
    let store = Store::open(Roots { home: home.home.clone(), config_dir: home.config.clone() }).unwrap();
    let name = InstanceName::parse(container).unwrap();
    let manifest = store.read_manifest(&name).unwrap().unwrap();
    let engine =
        jackin::engines::docker::Engine::connect(&jackin::engines::endpoint::Endpoint::resolve(None).unwrap()).unwrap();
    let recipe = jackin::services::capture::capture(&engine, &store, &name, &manifest, "test").unwrap().unwrap();
    jackin::state::continuity::update(&store, &name, |c| {
        c.recipe = Some(recipe);
        c.cause = Some("kept".into());
        Ok(((), true))
    })
    .unwrap();
    store.set_status(&name, Status::RestoreAvailable, "2026-11-29T10:00:00Z").unwrap();
}
