//! Host-kill evidence: whether the host (the engine, its VM or the machine) went away under a
//! session whose role container exited, and what was seen that says so. Reconcile judges every
//! exit with it; restore's sweep (`--interrupted`) with it finds the kept sessions the host
//! stopped under a status jackin left them in (issue 65).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use crate::base::time::{parse_rfc3339, rfc3339};
use crate::engines::docker::{Engine, RunState};
use crate::protocol::codes::Cause;
use crate::protocol::evidence::{ContainerSeen, Exit, KillSign, RunSeen};

/// How long after the engine's start a container may read `FinishedAt` and still count as one
/// the restarting engine found dead (Docker stamps the moment it came back, not the kill).
const RESTART_WINDOW: Duration = Duration::from_secs(300);

/// The engine, the host and the time, read once per run and only when something is inspected.
#[derive(Debug, Clone, Default)]
pub(crate) struct Clock {
    pub(crate) host_boot: Option<SystemTime>,
    pub(crate) engine_started: Option<SystemTime>,
    pub(crate) engine: Option<BTreeMap<String, String>>,
}

impl Clock {
    pub(crate) fn read(engine: &Engine) -> Clock {
        let local = engine.endpoint().local_socket().is_some();
        Clock {
            host_boot: if local { crate::base::os::host_boot_time() } else { None },
            engine_started: engine.local_started_at(),
            engine: engine.engine_facts().ok(),
        }
    }
}

/// What Docker showed of a session's containers when it ended.
#[derive(Debug, Clone)]
pub struct Ended {
    pub(crate) role: RunState,
    /// `None`: the session has no sidecar, or it is gone.
    pub(crate) sidecar: Option<RunState>,
    pub(crate) host_boot: Option<SystemTime>,
    pub(crate) engine_started: Option<SystemTime>,
}

/// Whether the host went away under a session, and by which sign; `None` for an exit of the
/// session's own.
pub fn host_kill_sign(ended: &Ended) -> Option<KillSign> {
    let role = &ended.role;
    let at = |t: &Option<String>| t.as_deref().and_then(parse_rfc3339);
    let started = at(&role.started_at);
    let finished = at(&role.finished_at);
    // A restart stamps the containers it found dead with its own time; one that had finished
    // before the latest known restart was over by then, whatever it and its sidecar read.
    if let (Some(restarted), Some(finished)) = (ended.engine_started.max(ended.host_boot), finished) {
        if finished < restarted {
            return None;
        }
    }
    if let (Some(boot), Some(started)) = (ended.host_boot, started) {
        if boot > started {
            return Some(KillSign::HostRebootedAfterStart);
        }
    }
    if role.oom_killed {
        return None;
    }
    let sidecar_exited = |code: i64| {
        ended
            .sidecar
            .as_ref()
            .is_some_and(|s| !s.running && !s.oom_killed && s.exit_code == Some(code) && s.finished_at.is_some())
    };
    if role.exit_code == Some(255) && sidecar_exited(255) {
        return Some(KillSign::RoleAndSidecarExited255);
    }
    if let (Some(engine), Some(started), Some(finished)) = (ended.engine_started, started, finished) {
        let within = finished.duration_since(engine).is_ok_and(|d| d <= RESTART_WINDOW);
        if started < engine && within {
            return Some(KillSign::EngineRestartedAfterStart);
        }
    }
    if role.exit_code == Some(255) && sidecar_exited(0) {
        return Some(KillSign::Role255Sidecar0);
    }
    None
}

/// A container's state as evidence; `None` is a container that is gone.
pub(crate) fn state_evidence(name: &str, state: Option<&RunState>) -> ContainerSeen {
    let Some(s) = state else {
        return ContainerSeen { name: name.to_owned(), status: "gone".into(), state: None };
    };
    ContainerSeen {
        name: name.to_owned(),
        status: s.status.clone(),
        state: Some(RunSeen {
            exit_code: s.exit_code,
            oom_killed: s.oom_killed,
            started_at: s.started_at.clone(),
            finished_at: s.finished_at.clone(),
        }),
    }
}

/// Why an exited role container ended, `killed_by_host` or `container_exited`, with the
/// evidence: the states of the role and its sidecar, and the clock they are judged against.
pub(crate) fn judge_exit(
    role_name: &str,
    role: &RunState,
    sidecar: Option<(&str, Option<&RunState>)>,
    clock: &Clock,
    now: &str,
) -> (Cause, Exit) {
    let ended = Ended {
        role: role.clone(),
        sidecar: sidecar.and_then(|(_, state)| state.cloned()),
        host_boot: clock.host_boot,
        engine_started: clock.engine_started,
    };
    let sign = host_kill_sign(&ended);
    let evidence = Exit {
        sign,
        role: state_evidence(role_name, Some(role)),
        sidecar: sidecar.map(|(name, state)| state_evidence(name, state)),
        host_boot_time: clock.host_boot.map(rfc3339),
        engine_started_at: clock.engine_started.map(rfc3339),
        engine: clock.engine.clone(),
        observed_at: now.to_owned(),
    };
    (if sign.is_some() { Cause::KilledByHost } else { Cause::ContainerExited }, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i64, started: &str, finished: &str) -> RunState {
        RunState {
            status: "exited".into(),
            running: false,
            exit_code: Some(code),
            oom_killed: false,
            started_at: Some(started.into()),
            finished_at: Some(finished.into()),
            attached: 0,
        }
    }

    fn at(text: &str) -> Option<SystemTime> {
        parse_rfc3339(text)
    }

    #[test]
    fn host_kill_signs() {
        let t0 = "2026-11-29T10:00:00Z";
        let t1 = "2026-11-29T11:00:00Z";
        let base = Ended {
            role: exited(255, t0, t1),
            sidecar: Some(exited(255, t0, t1)),
            host_boot: at("2026-11-01T00:00:00Z"),
            engine_started: None,
        };
        assert_eq!(host_kill_sign(&base), Some(KillSign::RoleAndSidecarExited255));
        let other_engine = Ended { sidecar: Some(exited(0, t0, t1)), ..base.clone() };
        assert_eq!(host_kill_sign(&other_engine), Some(KillSign::Role255Sidecar0));
        let own_exit = Ended { role: exited(1, t0, t1), sidecar: Some(exited(0, t0, t1)), ..base.clone() };
        assert_eq!(host_kill_sign(&own_exit), None);
        let lone_255 = Ended { sidecar: None, ..base.clone() };
        assert_eq!(host_kill_sign(&lone_255), None, "a program may exit 255 on its own");
        let restarted = Ended {
            role: exited(137, t0, "2026-11-29T11:00:02Z"),
            sidecar: None,
            engine_started: at(t1),
            ..base.clone()
        };
        assert_eq!(host_kill_sign(&restarted), Some(KillSign::EngineRestartedAfterStart));
        let later_exit = Ended { role: exited(1, t0, "2026-11-29T13:00:00Z"), ..restarted.clone() };
        assert_eq!(host_kill_sign(&later_exit), None, "an exit long after the engine came back is the session's own");
        let rebooted = Ended {
            role: exited(0, t0, t1),
            sidecar: None,
            host_boot: at("2026-11-29T10:30:00Z"),
            engine_started: None,
        };
        assert_eq!(host_kill_sign(&rebooted), Some(KillSign::HostRebootedAfterStart));
        let over_before_reboot = Ended { role: exited(0, t0, "2026-11-29T10:10:00Z"), ..rebooted.clone() };
        assert_eq!(host_kill_sign(&over_before_reboot), None, "it finished before the host went away");
        let over_before_restart = Ended { engine_started: at("2026-11-29T12:00:00Z"), ..base.clone() };
        assert_eq!(host_kill_sign(&over_before_restart), None, "255 and 255, but before the engine restarted");
        let mut oom = base.clone();
        oom.role.oom_killed = true;
        assert_eq!(host_kill_sign(&oom), None);
    }
}
