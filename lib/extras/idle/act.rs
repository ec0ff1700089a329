//! Keeping an idle session (`jackin-idle --yes`): under the session's claim, the check is made
//! again just before the stop, so a session that woke up since it was found idle is never
//! stopped; then it is kept as `jackin-keep --keep --stop` keeps one (services/keeping.rs), with
//! the history entry `idle_kept` and what showed it idle.

use std::time::{Duration, SystemTime};

use anyhow::Result;

use super::watch::{self, Seen};
use crate::base::exit::Exit;
use crate::base::time::rfc3339;
use crate::base::tool::Tool;
use crate::engines::docker::Engine;
use crate::protocol::codes::Cause;
use crate::protocol::evidence::{Because, Evidence, Idle};
use crate::protocol::records::Change;
use crate::services::assessor::{AssessOptions, Assessor};
use crate::services::claim::SessionClaim;
use crate::services::keeping::{self, Keeper};
use crate::state::store::Store;

/// The steps of a keep of an idle session a test can stop or pause it at (base/crash.rs):
/// `checked` (found idle, before the claim and the second look), then the keep's own.
pub const CRASH_POINTS: &[&str] = &["checked", "stopped", "recorded", "torn_down", "stamped", "isolation"];

/// The second look's CPU window: at least this long after the check's own count.
const SECOND_LOOK: Duration = Duration::from_secs(1);

/// What became of a session found idle.
#[derive(Debug)]
pub enum Acted {
    /// Kept (in a dry run: would be, the change marked so).
    Kept(Box<Change>),
    /// Left running, and why.
    Left(String),
}

/// Keeps `seen` (found idle) unless the second look under its claim finds it in use.
pub fn keep_idle(engine: &Engine, store: &Store, seen: &Seen, dry_run: bool) -> Result<Acted> {
    crate::base::crash::point(Tool::Idle, CRASH_POINTS, "checked");
    let _claim = match SessionClaim::take(store, &seen.name, dry_run) {
        Ok(claim) => claim,
        Err(busy) if Exit::of(&busy) == Exit::Busy => return Ok(Acted::Left(format!("{busy:#}"))),
        Err(e) => return Err(e),
    };
    if let Some(woke) = second_look(engine, store, seen)? {
        return Ok(Acted::Left(woke));
    }
    let assessment = Assessor::new(AssessOptions::default()).instance(store, &seen.name, None)?;
    let mut manifest = seen.manifest.clone();
    let window = seen.window.clone().expect("a session found idle has a window");
    let seen_at = |at: Option<SystemTime>| at.map(rfc3339);
    let idle = Idle {
        idle_for_secs: window.length.as_secs(),
        policy: window.policy.clone(),
        started_at: seen_at(seen.started_at),
        cpu_quiet_since: seen_at(Some(seen.cpu_quiet_since)),
        last_file_change: seen_at(seen.last_file_change),
        last_attached: seen_at(seen.last_attached),
        verdict: assessment.verdict,
        recipe: None,
    };
    let evidence = |recipe| Evidence::Idle(Box::new(Idle { recipe, ..idle.clone() }));
    let unused = humantime::format_duration(Duration::from_secs(seen.unused_for().as_secs()));
    let keeper = Keeper {
        tool: Tool::Idle,
        crash_points: CRASH_POINTS,
        reason: format!("idle: unused for {unused}"),
        policy: format!("idle {}", humantime::format_duration(window.length)),
        because: Because::IdleKept,
        evidence: &evidence,
    };
    let from = manifest.status.clone();
    if dry_run {
        let to = keeping::kept_status(assessment.verdict).into();
        let change =
            Change { identity: seen.identity(), from, to, cause: Cause::IdleKept, evidence: evidence(None), dry_run };
        return Ok(Acted::Kept(Box::new(change)));
    }
    let kept = keeping::keep(store, engine, &seen.name, &mut manifest, &assessment, true, &keeper)?;
    Ok(Acted::Kept(Box::new(Change {
        identity: seen.identity(),
        from,
        to: manifest.status.clone(),
        cause: Cause::IdleKept,
        evidence: evidence(kept.recipe),
        dry_run: false,
    })))
}

/// The check again, under the claim: why the session is in use now, or `None` when it is still
/// idle. Its role container must still be its own and running with nothing attached, its status
/// unchanged, no file changed since the check, and its CPU use since the check's count under the
/// threshold (over at least [`SECOND_LOOK`]).
fn second_look(engine: &Engine, store: &Store, seen: &Seen) -> Result<Option<String>> {
    let Some(manifest) = store.read_manifest(&seen.name)? else {
        return Ok(Some("its manifest is gone since the check".into()));
    };
    if manifest.status != seen.manifest.status || manifest.updated_at != seen.manifest.updated_at {
        return Ok(Some(format!("its status changed since the check (now {})", manifest.status)));
    }
    let role = crate::services::ownership::own_role_container(engine, store, &seen.name, &manifest.docker)?;
    let Some(role) = role.filter(|r| r.state.running) else {
        return Ok(Some("its role container is no longer running".into()));
    };
    if role.state.attached > 0 {
        return Ok(Some(format!("woke up: {} client(s) attached since the check", role.state.attached)));
    }
    if let Some(changed) = watch::newest_change(&watch::watched_paths(store, &seen.name)) {
        if seen.last_file_change.is_none_or(|before| changed > before) {
            return Ok(Some(format!("woke up: a file changed at {} since the check", rfc3339(changed))));
        }
    }
    std::thread::sleep(SECOND_LOOK.saturating_sub(seen.sampled.elapsed()));
    let used = watch::cpu_times(engine, &[&manifest])?[0].saturating_sub(seen.cpu_ns);
    let over = seen.sampled.elapsed();
    if watch::busy(used, over) {
        let share = used as f64 / over.as_nanos() as f64 * 100.0;
        return Ok(Some(format!("woke up: its CPU use rose to {share:.0}% of a core since the check")));
    }
    Ok(None)
}
