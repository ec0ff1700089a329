//! The `evidence` of a `change`: what reconcile saw of a session's containers, the engine and
//! the host when it decided a cause, field for field as it travels. Keep's and restore's
//! evidence (which rests in the tools' own file, not on the wire) are here too, so that every
//! shape that file can hold has one type.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::base::tool::Tool;
use crate::protocol::assessment::Verdict;
use crate::protocol::codes::Cause;
use crate::state::config::Policy;
use crate::state::continuity::{CauseKind, HistoryEntry};
use crate::state::model::{Status, StatusWord};

/// Why a status was decided. One type, shaped by what was seen; a shape this version does not
/// know (in the tools' own file, written by another version) is kept as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Evidence {
    /// The role container was seen gone or running: `container_removed`, `container_running`.
    Seen(RoleSeen),
    /// The role container had exited: `container_exited` or `killed_by_host`, and by which sign.
    Exit(Box<Exit>),
    /// jackin-keep kept the session.
    Kept(Kept),
    /// jackin-restore resumed it.
    Resumed(Resumed),
    /// A resume of jackin-restore did not bring it back; nothing else was written.
    ResumeFailed(ResumeFailed),
    /// jackin-restore --import made it a session of this home.
    Imported(Imported),
    /// jackin-idle kept it: what showed nobody used it.
    Idle(Box<Idle>),
    Other(serde_json::Value),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSeen {
    pub role: ContainerSeen,
    pub observed_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exit {
    /// The sign that the host went away; `None` for an exit of the session's own.
    pub sign: Option<KillSign>,
    pub role: ContainerSeen,
    /// `None`: the session has no sidecar.
    pub sidecar: Option<ContainerSeen>,
    pub host_boot_time: Option<String>,
    pub engine_started_at: Option<String>,
    /// The engine's id, version and clock (`engine_id`, `engine_version`, `engine_time`), when
    /// it answered.
    pub engine: Option<BTreeMap<String, String>>,
    pub observed_at: String,
}

/// One container as it was seen: its name and Docker's status word (`gone` when there is no
/// such container), with its run state when it was inspected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerSeen {
    pub name: String,
    pub status: String,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub state: Option<RunSeen>,
}

/// What an inspection of a container said of its last run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSeen {
    pub exit_code: Option<i64>,
    pub oom_killed: bool,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

/// How reconcile tells that the host went away under a session (lifecycle.md, "Reconcile").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KillSign {
    /// The host booted after the role container started.
    #[serde(rename = "host_rebooted_after_start")]
    HostRebootedAfterStart,
    /// Both the role container and its sidecar exited 255: the engine's VM went away.
    #[serde(rename = "role_and_sidecar_exited_255")]
    RoleAndSidecarExited255,
    /// The engine restarted while the session ran, and found it dead.
    #[serde(rename = "engine_restarted_after_start")]
    EngineRestartedAfterStart,
    /// The role container exited 255 and its sidecar 0: an engine stop.
    #[serde(rename = "role_255_sidecar_0")]
    Role255Sidecar0,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kept {
    pub reason: String,
    pub policy: Policy,
    pub verdict: Verdict,
    /// The launch recipe the kept session holds, which a resume recreates it from: the one
    /// this keep captured, or an earlier one when its role container was gone. `None`: none at
    /// all (entries written before keeps said so lack it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<RecipeHeld>,
}

/// Why jackin-idle kept a session: nobody attached, and the last sign of use of each kind older
/// than the window (extras/idle/). Times are RFC 3339; a kind never seen is `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Idle {
    /// The window: no sign of use for this long.
    pub idle_for_secs: u64,
    /// Where the window came from: `--idle-for`, or the workspace's policy.
    pub policy: String,
    /// The role container's last start.
    pub started_at: Option<String>,
    /// The last check that found the session's CPU use (role container and sidecar) over the
    /// threshold, or the first check that watched it.
    pub cpu_quiet_since: Option<String>,
    /// The newest change time (ctime: the kernel's, not the agent's to set) under the session's
    /// work trees and agent home.
    pub last_file_change: Option<String>,
    /// The last check that saw a client attached (a `docker exec`, jackin's name lock held).
    pub last_attached: Option<String>,
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<RecipeHeld>,
}

/// Which launch recipe a kept session holds (lifecycle.md, "The launch recipe").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecipeHeld {
    pub captured_at: String,
    /// `jackin-keep` or `jackin-reconcile`.
    pub captured_by: String,
    /// Whether it holds the Docker-in-Docker sidecar, which a resume then recreates if it is gone.
    pub sidecar: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resumed {
    pub tier: u8,
}

/// A resume whose tier failed part-way: the tier it tried and why, in the words the tool printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeFailed {
    pub tier: u8,
    pub failed: String,
}

/// The archive an import read, and where and when it was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Imported {
    pub file: String,
    pub exported_by: String,
    pub exported_at: String,
    pub exported_from: String,
}

/// Why a history entry was written: what reconcile found, or a tool's own act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Because {
    Found(Cause),
    Kept,
    Resumed,
    ResumeFailed,
    Imported,
    IdleKept,
}

impl Because {
    /// The word the history's `cause` holds.
    pub(crate) fn word(self) -> CauseKind {
        match self {
            Because::Found(cause) => cause.into(),
            Because::Kept => CauseKind::Kept,
            Because::Resumed => CauseKind::Resumed,
            Because::ResumeFailed => CauseKind::ResumeFailed,
            Because::Imported => CauseKind::Imported,
            Because::IdleKept => CauseKind::IdleKept,
        }
    }
}

/// One entry of a session's history, as every tool writes one: when, by which tool, from which
/// status to which, why, and what was seen.
pub(crate) fn history_entry(
    at: &str,
    tool: Tool,
    from: &StatusWord,
    to: Status,
    because: Because,
    evidence: &Evidence,
) -> serde_json::Result<HistoryEntry> {
    Ok(HistoryEntry {
        at: at.to_owned(),
        tool: tool.name().to_owned(),
        from: from.clone(),
        to: to.into(),
        cause: because.word().into(),
        evidence: serde_json::to_value(evidence)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> Evidence {
        let evidence: Evidence = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&evidence).unwrap(), text, "written back as it was read");
        evidence
    }

    #[test]
    fn each_shape_reads_as_its_own_variant_and_writes_back_the_same_bytes() {
        let gone = round_trip(r#"{"role":{"name":"jk-a","status":"gone"},"observed_at":"t"}"#);
        assert!(matches!(&gone, Evidence::Seen(s) if s.role.state.is_none()));
        let exit = round_trip(
            r#"{"sign":"role_and_sidecar_exited_255","role":{"name":"jk-a","status":"exited","exit_code":255,"oom_killed":false,"started_at":"s","finished_at":"f"},"sidecar":{"name":"jk-a-dind","status":"gone"},"host_boot_time":null,"engine_started_at":null,"engine":{"engine_id":"x"},"observed_at":"t"}"#,
        );
        let Evidence::Exit(exit) = exit else { panic!("{exit:?}") };
        assert_eq!(exit.sign, Some(KillSign::RoleAndSidecarExited255));
        assert_eq!(exit.role.state.as_ref().and_then(|s| s.exit_code), Some(255));
        assert!(matches!(
            round_trip(r#"{"reason":"operator keep","policy":"ask","verdict":"dirty"}"#),
            Evidence::Kept(_)
        ));
        assert!(matches!(round_trip(r#"{"tier":2}"#), Evidence::Resumed(Resumed { tier: 2 })));
        let failed = round_trip(r#"{"tier":1,"failed":"jk-a did not become healthy within 120s"}"#);
        assert!(matches!(failed, Evidence::ResumeFailed(ResumeFailed { tier: 1, .. })));
        let imported = r#"{"file":"/tmp/a.tar.gz","exported_by":"jackin-keep","exported_at":"2026-12-01T12:00:00Z","exported_from":"/home/a/.jackin"}"#;
        assert!(matches!(round_trip(imported), Evidence::Imported(_)));
        assert!(matches!(round_trip(r#"{"something":"else"}"#), Evidence::Other(_)));
        assert!(matches!(round_trip("null"), Evidence::Other(serde_json::Value::Null)));
    }

    #[test]
    fn a_history_entry_names_its_tool_statuses_and_cause_in_the_words_of_the_file() {
        let evidence = Evidence::Resumed(Resumed { tier: 1 });
        let entry = history_entry(
            "2026-12-04T12:00:00Z",
            Tool::Restore,
            &"crashed".into(),
            Status::Active,
            Because::Resumed,
            &evidence,
        )
        .unwrap();
        assert_eq!(
            (entry.tool.as_str(), entry.from.as_str(), entry.to.as_str(), entry.cause.as_str()),
            ("jackin-restore", "crashed", "active", "resumed")
        );
        assert_eq!(entry.evidence, serde_json::json!({"tier": 1}));
        let found = Because::Found(Cause::KilledByHost);
        let entry = history_entry("t", Tool::Reconcile, &"running".into(), Status::Crashed, found, &evidence).unwrap();
        assert_eq!((entry.tool.as_str(), entry.cause.as_str()), ("jackin-reconcile", "killed_by_host"));
    }

    #[test]
    fn the_signs_are_the_words_of_the_protocol() {
        for (sign, word) in [
            (KillSign::HostRebootedAfterStart, "host_rebooted_after_start"),
            (KillSign::RoleAndSidecarExited255, "role_and_sidecar_exited_255"),
            (KillSign::EngineRestartedAfterStart, "engine_restarted_after_start"),
            (KillSign::Role255Sidecar0, "role_255_sidecar_0"),
        ] {
            assert_eq!(serde_json::to_value(sign).unwrap(), word);
        }
    }
}
