//! The idle check of one running session: every sign of use it can see, each from where it cannot
//! be made up. A record is a claim; these are observations:
//! - clients: the `docker exec` processes the engine runs in the role container now (jackin's
//!   hardline and capsule attach are such processes), and a holder of the session's name lock
//!   (jackin holds it while it has the session attached);
//! - CPU: the engine's count of CPU time of the role container and its sidecar, compared with the
//!   count the last check saw (kept in the tools' own file): busy when the two used more than
//!   [`BUSY_SHARE`] of one core in between;
//! - files: the newest change time (ctime, which the kernel sets and the agent cannot) under the
//!   session's work trees and agent home;
//! - the role container's last start.
//!
//! The last sign of use is the newest of these; the session is idle when nothing is attached and
//! that sign is older than its window. The first check of a session only starts the CPU watch, so
//! it never finds a session idle: the CPU use over the window is not known yet.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;

use crate::base::time::{ctime, parse_rfc3339, rfc3339, rfc3339_micros};
use crate::engines::docker::Engine;
use crate::protocol::identity::Identity;
use crate::services::claim::SessionClaim;
use crate::state::continuity::{self, IdleWatch};
use crate::state::model::Manifest;
use crate::state::names::InstanceName;
use crate::state::store::Store;

/// The share of one CPU core above which a session counts as busy (5%): an agent at work, a
/// build, a test run; an idle agent and an idle Docker-in-Docker daemon stay well under it.
pub const BUSY_SHARE: f64 = 0.05;

/// A session's window and where it came from (`--idle-for`, `workspace NAME`).
#[derive(Debug, Clone)]
pub struct Window {
    pub length: Duration,
    pub policy: String,
}

/// A running session as one check saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub name: InstanceName,
    pub manifest: Manifest,
    pub window: Option<Window>,
    pub clients: u32,
    pub lock_held_by: Option<String>,
    pub started_at: Option<SystemTime>,
    /// This check's count of CPU time, and when it was read.
    pub cpu_ns: u64,
    pub sampled: Instant,
    pub cpu_quiet_since: SystemTime,
    /// This check began the CPU watch (none before it, or the container started again).
    pub cpu_watch_new: bool,
    pub last_file_change: Option<SystemTime>,
    pub last_attached: Option<SystemTime>,
    pub checked_at: SystemTime,
}

impl Seen {
    /// The newest sign of use.
    pub fn last_use(&self) -> SystemTime {
        [self.started_at, Some(self.cpu_quiet_since), self.last_file_change, self.last_attached]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(self.checked_at)
    }

    /// How long nothing has used it.
    pub fn unused_for(&self) -> Duration {
        self.checked_at.duration_since(self.last_use()).unwrap_or_default()
    }

    /// Nobody attached, and no sign of use within its window.
    pub fn idle(&self) -> bool {
        self.clients == 0
            && self.lock_held_by.is_none()
            && self.window.as_ref().is_some_and(|w| self.unused_for() >= w.length)
    }

    /// Why it is idle or not, in words.
    pub fn why(&self) -> String {
        if self.clients > 0 {
            return format!("in use: {} client(s) attached (docker exec)", self.clients);
        }
        if let Some(holder) = &self.lock_held_by {
            return format!("in use: {holder}");
        }
        let unused = humantime::format_duration(Duration::from_secs(self.unused_for().as_secs()));
        let (sign, at) = self.freshest_sign();
        let last = format!("last sign of use {sign} at {}", rfc3339(at));
        match &self.window {
            None => format!("no idle policy for its workspace; unused for {unused}, {last}"),
            Some(w) if self.idle() => {
                format!("unused for {unused} (window {}, {}); {last}", humantime::format_duration(w.length), w.policy)
            }
            Some(w) => format!(
                "unused for {unused} of its window {} ({}); {last}",
                humantime::format_duration(w.length),
                w.policy
            ),
        }
    }

    /// The kind and time of the newest sign of use.
    fn freshest_sign(&self) -> (&'static str, SystemTime) {
        let signs = [
            ("its start", self.started_at),
            (if self.cpu_watch_started() { "the CPU watch began" } else { "CPU use" }, Some(self.cpu_quiet_since)),
            ("a file change", self.last_file_change),
            ("a client", self.last_attached),
        ];
        signs
            .into_iter()
            .filter_map(|(kind, at)| Some((kind, at?)))
            .max_by_key(|(_, at)| *at)
            .unwrap_or(("", self.checked_at))
    }

    fn cpu_watch_started(&self) -> bool {
        self.cpu_watch_new
    }

    pub fn identity(&self) -> Identity {
        Identity::from_manifest(&self.manifest)
    }
}

/// The CPU time of each session now, its role container's and its sidecar's, asked of the
/// engine all at once.
pub fn cpu_times(engine: &Engine, manifests: &[&Manifest]) -> Result<Vec<u64>> {
    let mut names: Vec<&str> = Vec::new();
    for manifest in manifests {
        names.push(&manifest.docker.role_container);
        names.extend(manifest.docker.dind_container.as_deref());
    }
    let mut times = engine.cpu_times(&names)?.into_iter();
    let mut totals = Vec::with_capacity(manifests.len());
    for manifest in manifests {
        let sidecar = manifest.docker.dind_container.is_some();
        let role = times.next().flatten().unwrap_or(0);
        let sidecar = if sidecar { times.next().flatten().unwrap_or(0) } else { 0 };
        totals.push(role + sidecar);
    }
    Ok(totals)
}

/// Whether `used` nanoseconds of CPU time over `over` is more than [`BUSY_SHARE`] of a core.
pub fn busy(used: u64, over: Duration) -> bool {
    over.as_nanos() > 0 && used as f64 / over.as_nanos() as f64 > BUSY_SHARE
}

/// A running session of this home: its status live, its role container its own and running.
#[derive(Debug, Clone)]
pub struct Running {
    pub name: InstanceName,
    pub manifest: Manifest,
    started_at: Option<String>,
    clients: u32,
}

/// `name` when it is a running session of this home, else `None` (its status is not live, or its
/// role container is not running or not its own).
pub fn running(engine: &Engine, store: &Store, name: &InstanceName) -> Result<Option<Running>> {
    let Some(manifest) = store.read_manifest(name)? else { return Ok(None) };
    if !manifest.status.known().is_some_and(|s| s.is_live()) {
        return Ok(None);
    }
    let Some(role) = crate::services::ownership::own_role_container(engine, store, name, &manifest.docker)? else {
        return Ok(None);
    };
    if !role.state.running {
        return Ok(None);
    }
    Ok(Some(Running { name: name.clone(), manifest, started_at: role.state.started_at, clients: role.state.attached }))
}

/// One check of a running session, given its CPU time read at `sampled`. Records what the CPU
/// watch needs in the tools' own file unless `dry_run`.
pub fn observe(
    store: &Store,
    running: Running,
    (cpu_ns, sampled): (u64, Instant),
    window: impl FnOnce(&Manifest) -> Option<Window>,
    dry_run: bool,
) -> Result<Seen> {
    let Running { name, manifest, started_at: started, clients } = running;
    let checked_at = SystemTime::now() - sampled.elapsed();
    let lock_held_by = SessionClaim::held_by(store, &name)?;
    let previous = continuity::read(store, &name)?.idle_watch.filter(|w| w.started_at == started && w.cpu_ns <= cpu_ns);
    let cpu_quiet_since = match &previous {
        Some(w) => {
            let since = parse_rfc3339(&w.checked_at).and_then(|at| checked_at.duration_since(at).ok());
            let quiet_since = parse_rfc3339(&w.cpu_quiet_since);
            match (since, quiet_since) {
                (Some(over), Some(quiet)) if !busy(cpu_ns - w.cpu_ns, over) => quiet,
                _ => checked_at,
            }
        }
        None => checked_at,
    };
    let in_use = clients > 0 || lock_held_by.is_some();
    let last_attached = if in_use {
        Some(checked_at)
    } else {
        previous.as_ref().and_then(|w| w.last_attached.as_deref()).and_then(parse_rfc3339)
    };
    let last_file_change = newest_change(&watched_paths(store, &name));
    let seen = Seen {
        window: window(&manifest),
        name,
        manifest,
        clients,
        lock_held_by,
        started_at: started.as_deref().and_then(parse_rfc3339),
        cpu_ns,
        sampled,
        cpu_quiet_since,
        cpu_watch_new: previous.is_none(),
        last_file_change,
        last_attached,
        checked_at,
    };
    if !dry_run {
        let watch = IdleWatch {
            checked_at: rfc3339_micros(checked_at),
            started_at: started,
            cpu_ns,
            cpu_quiet_since: rfc3339_micros(cpu_quiet_since),
            last_attached: last_attached.map(rfc3339_micros),
        };
        continuity::update(store, &seen.name, |c| {
            c.idle_watch = Some(watch);
            Ok(((), true))
        })?;
    }
    Ok(seen)
}

/// The session's work trees (its isolation records' paths inside its own data directory: a
/// record naming a path elsewhere is not followed) and its agent home.
pub fn watched_paths(store: &Store, name: &InstanceName) -> Vec<PathBuf> {
    let dir = store.instance_dir(name);
    let mut paths = vec![dir.join("home")];
    if let Ok(isolation) = store.read_isolation(name) {
        for record in isolation.mounts().into_iter().flatten() {
            let path = PathBuf::from(&record.worktree_path);
            if path.is_absolute() && path.starts_with(&dir) && !path.components().any(|c| c.as_os_str() == "..") {
                paths.push(path);
            }
        }
    }
    paths
}

/// The newest ctime of anything under `paths` (each walked without following a link).
pub fn newest_change(paths: &[PathBuf]) -> Option<SystemTime> {
    paths.iter().filter_map(|path| newest_under(path)).max()
}

fn newest_under(root: &Path) -> Option<SystemTime> {
    // The root too: a link where the agent home or a work tree should be is not walked through.
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .follow_root_links(false)
        .into_iter()
        .filter_map(|entry| Some(ctime(&entry.ok()?.metadata().ok()?)))
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_more_than_a_twentieth_of_a_core() {
        let second = Duration::from_secs(1);
        assert!(!busy(50_000_000, second));
        assert!(busy(50_000_001, second));
        assert!(busy(2_000_000_000, second), "two cores");
        assert!(!busy(1, Duration::ZERO), "no time between the samples says nothing");
    }

    #[test]
    fn the_newest_change_is_found_at_any_depth_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        let before = newest_change(&[dir.path().to_path_buf()]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(deep.join("new.txt"), "x").unwrap();
        let after = newest_change(&[dir.path().to_path_buf()]).unwrap();
        assert!(after > before, "{after:?} > {before:?}");
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let with_link = newest_change(&[dir.path().to_path_buf()]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(outside.path().join("elsewhere.txt"), "x").unwrap();
        assert_eq!(newest_change(&[dir.path().to_path_buf()]).unwrap(), with_link, "not followed");
        assert_eq!(newest_change(&[dir.path().join("missing")]), None);
    }
}
