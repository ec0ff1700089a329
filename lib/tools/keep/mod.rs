//! The exit policy (lifecycle.md, "The exit policy"): what happens to a session when it ends, and
//! the two outcomes that change anything — keep (free Docker, keep everything resuming needs) and
//! clean (stamp `clean_exited` for jackin-purge, or keep a `preserved_*` status while work is at risk). The table itself is [`decide`], a pure function.

use std::time::SystemTime;

use crate::base::tool::Tool;
use anyhow::Result;

use crate::base::exit::Exit;
use crate::engines::docker::{Engine, RunState};
use crate::protocol::assessment::{Assessment, Verdict};
use crate::protocol::codes::ErrorCode;
use crate::protocol::envelope::Record;
use crate::protocol::evidence::{Because, Evidence, Kept as KeptEvidence};
use crate::protocol::records::{Decision, Outcome};
use crate::services::claim::SessionClaim;
use crate::services::keeping::{self, kept_status, Keeper};
use crate::services::seal::Sealer;
use crate::state::config::Policy;
use crate::state::model::{Manifest, Status};
use crate::state::names::InstanceName;
use crate::state::store::{ExitActionFile, ExitChoice, Store};

pub mod input;
mod stands;

use stands::reassess_before_clean_exited;
#[cfg(test)]
use stands::stopped_before_assessed;

pub const TOOL: &str = Tool::Keep.name();

/// Who answered the ask dialog's question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerSource {
    /// The operator, on the terminal.
    Dialog,
    /// `--answer`.
    Flag,
    /// The in-container exit modal, through a fresh `exit-action.json`.
    ExitAction,
}

impl AnswerSource {
    fn word(self) -> &'static str {
        match self {
            AnswerSource::Dialog => "operator",
            AnswerSource::Flag => "answer",
            AnswerSource::ExitAction => "exit-action",
        }
    }
}

/// The answer to the ask dialog's question, when one was needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// No terminal, no `--answer`, no fresh exit-action file.
    Nobody,
    Answered(Outcome, AnswerSource),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flags {
    /// `--keep`: keep whatever the verdict.
    pub keep: bool,
    /// `--discard-unfinished`: a session whose work cannot be read may be cleaned.
    pub discard_unfinished: bool,
}

/// What the policy table decided, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruling {
    pub outcome: Outcome,
    pub(crate) reason: String,
    /// A clean outcome over work at risk: purge quarantines it first.
    pub(crate) discard_unfinished: bool,
    /// The clean-up came from the exit-action file, which the agent can write: purge saves the
    /// work even when its pipeline passes `--no-quarantine`.
    pub(crate) quarantine_required: bool,
    /// Said on stderr: the decision is not what was asked for, or keeps what cannot be saved.
    pub warning: Option<String>,
}

impl Ruling {
    /// The `error` code of a ruling that could not be carried out.
    pub fn failure_code(&self) -> ErrorCode {
        match self.outcome {
            Outcome::Keep => ErrorCode::KeepFailed,
            Outcome::Clean | Outcome::Return => ErrorCode::CleanFailed,
        }
    }
}

fn ruling(outcome: Outcome, reason: impl Into<String>) -> Ruling {
    Ruling { outcome, reason: reason.into(), discard_unfinished: false, quarantine_required: false, warning: None }
}

fn discard(reason: impl Into<String>) -> Ruling {
    Ruling { discard_unfinished: true, ..ruling(Outcome::Clean, reason) }
}

const UNREADABLE: &str = "what cannot be read cannot be saved before it is deleted";

/// Whether the table asks a question for this session (the dialog, `--answer`, exit-action).
pub fn needs_answer(policy: Policy, verdict: Verdict, flags: Flags) -> bool {
    policy == Policy::Ask && verdict.at_risk() && !flags.keep
}

/// The exit-policy table: policy × verdict × flags × the answer, if one was needed.
pub fn decide(policy: Policy, verdict: Verdict, flags: Flags, asked: Asked) -> Ruling {
    if flags.keep {
        return ruling(Outcome::Keep, "operator keep");
    }
    match (policy, verdict) {
        (Policy::Keep, _) => ruling(Outcome::Keep, "policy keep"),
        (_, Verdict::Clean) => ruling(Outcome::Clean, "clean session"),
        (Policy::Clean, Verdict::Unknown) if !flags.discard_unfinished => Ruling {
            warning: Some(format!("kept, not cleaned: its work cannot be verified, and {UNREADABLE} (--discard-unfinished allows it)")),
            ..ruling(Outcome::Keep, "unknown")
        },
        (Policy::Clean, _) => discard("policy clean"),
        (Policy::Ask, _) => match asked {
            Asked::Nobody => ruling(Outcome::Keep, format!("{}, no answer", verdict.as_str())),
            Asked::Answered(Outcome::Clean, source) if verdict == Verdict::Unknown && !flags.discard_unfinished => Ruling {
                warning: Some(format!(
                    "kept, not cleaned up as the {} asked: its work cannot be verified, and {UNREADABLE} (--discard-unfinished allows it)",
                    source.word()
                )),
                ..ruling(Outcome::Keep, "unknown")
            },
            Asked::Answered(Outcome::Clean, source) => Ruling {
                quarantine_required: source == AnswerSource::ExitAction,
                ..discard(format!("{} clean", source.word()))
            },
            Asked::Answered(outcome, source) => ruling(outcome, format!("{} {}", source.word(), outcome.as_str())),
        },
    }
}

/// jackin's status for a session cleaned up. jackin's own prune deletes `clean_exited` rows with
/// a plain recursive delete, so work at risk keeps its `preserved_*` status until jackin-purge
/// has quarantined it and stamps the terminal status itself.
pub(crate) fn cleaned_status(verdict: Verdict) -> Status {
    match verdict {
        Verdict::Clean => Status::CleanExited,
        at_risk => kept_status(at_risk),
    }
}

/// What the in-container exit modal's choice means here: its "discard" is a clean-up.
pub(crate) fn exit_choice_outcome(choice: ExitChoice) -> Outcome {
    match choice {
        ExitChoice::Keep => Outcome::Keep,
        ExitChoice::Discard => Outcome::Clean,
    }
}

/// When this session started: the role container's last start when Docker still has it, else
/// the manifest's `updated_at` (a launch or resume writes it), else its `created_at`.
pub(crate) fn session_start(role_started_at: Option<&str>, manifest: &Manifest) -> Option<SystemTime> {
    let parse = crate::base::time::parse_rfc3339;
    role_started_at.and_then(parse).or_else(|| parse(&manifest.updated_at)).or_else(|| parse(&manifest.created_at))
}

/// An exit-action file decides only when it was written during this session.
pub(crate) fn is_fresh(written: SystemTime, session_start: Option<SystemTime>) -> bool {
    session_start.is_some_and(|start| written >= start)
}

/// The exit-action file as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitAction {
    Absent,
    Fresh(Outcome),
    /// Written before this session started: it must not decide.
    Stale,
    /// Present but not `"keep"` or `"discard"`.
    Unreadable(String),
}

/// The exit-action file; it is read only when it was written during this session.
pub(crate) fn read_exit_action(store: &Store, name: &InstanceName, session_start: Option<SystemTime>) -> ExitAction {
    match store.read_exit_action(name, |written| is_fresh(written, session_start)) {
        ExitActionFile::Absent => ExitAction::Absent,
        ExitActionFile::Fresh(choice) => ExitAction::Fresh(exit_choice_outcome(choice)),
        ExitActionFile::Stale => ExitAction::Stale,
        ExitActionFile::Unreadable(why) => ExitAction::Unreadable(why),
    }
}

/// One assessed session, with what keep needs to decide and act on it.
#[derive(Debug, Clone)]
pub struct Session {
    pub assessment: Assessment,
    pub name: InstanceName,
    pub manifest: Manifest,
    pub policy: Policy,
    /// The role container's state; `None` when Docker no longer has it.
    pub(crate) role: Option<RunState>,
    pub exit_action: ExitAction,
    /// How the assessment was checked before a `clean_exited` stamp, when it was: said with `-v`.
    pub recheck: Option<String>,
}

impl Session {
    pub fn live(&self) -> bool {
        self.role.as_ref().is_some_and(|r| r.running)
    }
}

/// Looks at one assessed session: its assessment as this host observes it (keep/input.rs), its
/// manifest, its role container, its exit-action file. The
/// outer error ends the run (Docker cannot answer); the inner one fails this session alone.
pub fn observe(
    store: &Store,
    engine: &Engine,
    sealer: &Sealer,
    assessment: Assessment,
    policy: Policy,
) -> Result<Result<Session>> {
    let (assessment, recheck) = match input::as_observed(store, sealer, assessment) {
        Ok(taken) => taken,
        Err(e) => return Ok(Err(e)),
    };
    let name = match InstanceName::parse(&assessment.identity.container_base) {
        Ok(name) => name,
        Err(e) => return Ok(Err(e)),
    };
    let manifest = match store.read_manifest(&name) {
        Ok(Some(manifest)) => manifest,
        Ok(None) => return Ok(Err(anyhow::anyhow!("no manifest: the session cannot be kept or stamped"))),
        Err(e) => return Ok(Err(e)),
    };
    let role = crate::services::ownership::own_role_container(engine, store, &name, &manifest.docker)
        .map_err(|e| Exit::Unavailable.wrap(e))?
        .map(|details| details.state);
    let start = session_start(role.as_ref().and_then(|r| r.started_at.as_deref()), &manifest);
    let exit_action = read_exit_action(store, &name, start);
    Ok(Ok(Session { assessment, name, manifest, policy, role, exit_action, recheck }))
}

/// The decision record for a ruling; `status` is what keep or clean writes (or would write). A
/// decision carried out says when its status was written (`stamped_at`) and carries this home's
/// seal, so purge can tell it from a line typed, replayed or sent from elsewhere.
pub fn decision(session: &Session, ruling: &Ruling, dry_run: bool, sealer: &Sealer) -> Decision {
    let status = match ruling.outcome {
        Outcome::Keep => Some(kept_status(session.assessment.verdict).as_str().to_owned()),
        Outcome::Clean => Some(cleaned_status(session.assessment.verdict).as_str().to_owned()),
        Outcome::Return => None,
    };
    let stamped = !dry_run && ruling.outcome != Outcome::Return;
    let mut decision = Decision {
        identity: session.assessment.identity.clone(),
        outcome: ruling.outcome,
        policy: session.policy,
        reason: ruling.reason.clone(),
        verdict: session.assessment.verdict,
        discard_unfinished: ruling.discard_unfinished,
        quarantine_required: ruling.quarantine_required,
        status,
        stamped_at: stamped.then(|| session.manifest.updated_at.clone()),
        dry_run,
        seal: None,
    };
    if stamped {
        decision.seal = sealer.seal(Decision::TYPE, &decision);
    }
    decision
}

/// What carrying out a ruling came to.
#[derive(Debug)]
pub enum Carried {
    /// Done (in a dry run: would be done); the warnings worth saying on stderr.
    Done(Vec<String>),
    /// Left as it is, nothing changed (exit 5): another process holds the session's claim, or
    /// the session was started again meanwhile and `--stop` was not given.
    Refused(ErrorCode, anyhow::Error),
}

/// Carries out a ruling under the session's claim (services/claim.rs), held from before the session
/// is looked at again to after the last write, and let go before the decision is emitted (the
/// purge it is piped into takes it next). `return` changes nothing and takes no claim; a dry run
/// takes none, but is refused as the run would be. `(dry_run, stop)`: the run's flags.
pub fn carry_out(
    store: &Store,
    engine: &Engine,
    session: &mut Session,
    ruling: &Ruling,
    (dry_run, stop): (bool, bool),
    sealer: &mut Sealer,
) -> Result<Carried> {
    if ruling.outcome == Outcome::Return {
        return Ok(Carried::Done(Vec::new()));
    }
    let claim = match SessionClaim::take(store, &session.name, dry_run) {
        Ok(claim) => claim,
        Err(why) if Exit::of(&why) == Exit::Busy => return Ok(Carried::Refused(ErrorCode::Busy, why)),
        Err(e) => return Err(e),
    };
    if dry_run {
        return Ok(Carried::Done(Vec::new()));
    }
    // The session as it is now, not as it was before the dialog: a restore may have started it
    // again, a purge may have removed it.
    let Some(manifest) = store.read_manifest(&session.name)? else {
        anyhow::bail!("its manifest is gone since it was looked at (purged meanwhile?): nothing was changed");
    };
    session.role = crate::services::ownership::own_role_container(engine, store, &session.name, &manifest.docker)?
        .map(|details| details.state);
    session.manifest = manifest;
    if let Some(attached) = session.role.as_ref().filter(|r| r.running && r.attached > 0).map(|r| r.attached) {
        let why = Exit::Busy.err(format_args!(
            "someone is using the session: {attached} process(es) attached to its role container {} (docker exec: \
             jackin hardline, jackin-restore --exec); nothing was changed and nothing stopped",
            session.manifest.docker.role_container
        ));
        return Ok(Carried::Refused(ErrorCode::Live, why));
    }
    if session.live() && !stop {
        let why = anyhow::anyhow!(
            "the session was started again while it was decided (its role container {} is running): nothing was \
             changed; --stop stops it first",
            session.manifest.docker.role_container
        );
        return Ok(Carried::Refused(ErrorCode::Live, why));
    }
    // The decision this writes is sealed: the home's first keep that changes a session makes its key.
    sealer.make_unless(store, dry_run)?;
    let warnings = apply(store, engine, session, ruling)?;
    drop(claim);
    Ok(Carried::Done(warnings))
}

/// Carries out a ruling. Returns warnings worth saying on stderr. A clean-up that would stamp
/// `clean_exited` assesses the session again first, and `session.assessment` is then that
/// assessment (the decision record says what was stamped, on what).
pub fn apply(store: &Store, engine: &Engine, session: &mut Session, ruling: &Ruling) -> Result<Vec<String>> {
    match ruling.outcome {
        Outcome::Return => Ok(Vec::new()),
        Outcome::Keep => keep(store, engine, session, ruling),
        Outcome::Clean => {
            stop_if_live(engine, session)?;
            let warnings = reassess_before_clean_exited(store, engine, session)?;
            let status = cleaned_status(session.assessment.verdict);
            session.manifest = store.set_status(&session.name, status, &crate::base::time::now_rfc3339())?;
            store.clear_exit_action(&session.name)?;
            Ok(warnings)
        }
    }
}

fn stop_if_live(engine: &Engine, session: &Session) -> Result<()> {
    if session.live() {
        engine.stop(&session.manifest.docker.role_container, keeping::STOP_GRACE)?;
    }
    Ok(())
}

/// Keep: the launch recipe first (nothing is torn down before it is safe on disk), then Docker
/// is freed, then the status, then the isolation records (services/keeping.rs).
fn keep(store: &Store, engine: &Engine, session: &mut Session, ruling: &Ruling) -> Result<Vec<String>> {
    let (policy, verdict, reason) = (session.policy, session.assessment.verdict, ruling.reason.clone());
    let evidence = |recipe| Evidence::Kept(KeptEvidence { reason: reason.clone(), policy, verdict, recipe });
    let keeper = Keeper {
        tool: Tool::Keep,
        crash_points: CRASH_POINTS,
        reason: ruling.reason.clone(),
        policy: policy.as_str().to_owned(),
        because: Because::Kept,
        evidence: &evidence,
    };
    let live = session.live();
    keeping::keep(store, engine, &session.name, &mut session.manifest, &session.assessment, live, &keeper)
        .map(|kept| kept.warnings)
}

/// Keep's crash points, in the order a run passes them.
pub use crate::services::keeping::CRASH_POINTS;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::keeping::{kept_cleanup_status, mark_kept_records};
    use crate::state::model::Isolation;
    use crate::state::store::parse_exit_choice;
    use std::time::Duration;
    use Outcome as O;
    use Verdict as V;

    const NONE: Flags = Flags { keep: false, discard_unfinished: false };
    const KEEP: Flags = Flags { keep: true, discard_unfinished: false };
    const DISCARD: Flags = Flags { keep: false, discard_unfinished: true };

    fn cell(policy: Policy, verdict: Verdict, flags: Flags, asked: Asked) -> (Outcome, String, bool) {
        let r = decide(policy, verdict, flags, asked);
        (r.outcome, r.reason, r.discard_unfinished)
    }

    fn is(outcome: Outcome, reason: &str, discard: bool) -> (Outcome, String, bool) {
        (outcome, reason.to_owned(), discard)
    }

    fn answered(o: Outcome, s: AnswerSource) -> Asked {
        Asked::Answered(o, s)
    }

    /// A record is its mount's only when both its container path and its worktree match: one whose
    /// worktree moved since the assessment (same `mount_dst`, another path) is not described by
    /// it and takes the instance's worst verdict, never the clean one of the mount it no longer is.
    #[test]
    fn a_record_takes_its_own_mounts_verdict_only_when_path_and_mount_both_match() {
        use crate::protocol::assessment::MountAssessment;
        let mount = |dst: &str, path: &str, verdict: Verdict| {
            let mut m = MountAssessment::unknown(dst.into(), "worktree".into(), path.into(), String::new());
            m.verdict = verdict;
            m.error = None;
            m
        };
        let assessment = Assessment {
            identity: crate::protocol::identity::Identity::of_name("jk-a1b2c3d4-app", "a1b2c3d4"),
            verdict: V::Dirty,
            in_place: false,
            mounts: vec![mount("/workspace/a", "/wt/a", V::Clean), mount("/workspace/b", "/wt/b", V::Dirty)],
            summary: "1 file dirty".into(),
            assessed_at: "2026-12-01T10:00:00Z".into(),
            status: None,
            disk: None,
            seal: None,
        };
        let record = |dst: &str, path: &str| {
            serde_json::json!({
                "workspace": "w", "mount_dst": dst, "original_src": "/src", "isolation": "worktree",
                "worktree_path": path, "scratch_branch": "jackin/scratch/x", "base_commit": "0",
                "selector_key": "k", "container_name": "jk-a1b2c3d4-app", "cleanup_status": "active"
            })
        };
        let mut isolation = Isolation {
            version: 1,
            records: vec![
                record("/workspace/a", "/wt/a"),
                record("/workspace/b", "/wt/b"),
                record("/workspace/a", "/wt/moved"),
                record("/workspace/c", "/wt/a"),
            ],
            extra: Default::default(),
        };
        mark_kept_records(&mut isolation, &assessment);
        let statuses: Vec<&str> = isolation.records.iter().map(|r| r["cleanup_status"].as_str().unwrap()).collect();
        assert_eq!(statuses, ["active", "preserved_dirty", "preserved_dirty", "preserved_dirty"]);
    }

    #[test]
    fn ask_cleans_a_clean_session_without_a_question_unless_keep() {
        assert!(!needs_answer(Policy::Ask, V::Clean, NONE));
        assert_eq!(cell(Policy::Ask, V::Clean, NONE, Asked::Nobody), is(O::Clean, "clean session", false));
        assert_eq!(cell(Policy::Ask, V::Clean, KEEP, Asked::Nobody), is(O::Keep, "operator keep", false));
        assert_eq!(cell(Policy::Ask, V::Clean, DISCARD, Asked::Nobody), is(O::Clean, "clean session", false));
    }

    #[test]
    fn ask_asks_about_unfinished_work() {
        for verdict in [V::Dirty, V::Unpushed, V::Unknown] {
            assert!(needs_answer(Policy::Ask, verdict, NONE));
            assert!(!needs_answer(Policy::Ask, verdict, KEEP), "--keep needs no question");
            assert_eq!(cell(Policy::Ask, verdict, KEEP, Asked::Nobody), is(O::Keep, "operator keep", false));
            let nobody = format!("{}, no answer", verdict.as_str());
            assert_eq!(cell(Policy::Ask, verdict, NONE, Asked::Nobody), is(O::Keep, &nobody, false));
            for (source, word) in [
                (AnswerSource::Dialog, "operator"),
                (AnswerSource::Flag, "answer"),
                (AnswerSource::ExitAction, "exit-action"),
            ] {
                assert_eq!(
                    cell(Policy::Ask, verdict, NONE, answered(O::Return, source)),
                    is(O::Return, &format!("{word} return"), false)
                );
                assert_eq!(
                    cell(Policy::Ask, verdict, NONE, answered(O::Keep, source)),
                    is(O::Keep, &format!("{word} keep"), false)
                );
                let clean = cell(Policy::Ask, verdict, NONE, answered(O::Clean, source));
                if verdict == V::Unknown {
                    assert_eq!(clean, is(O::Keep, "unknown", false), "clean-up of unreadable work needs the flag");
                    assert!(decide(Policy::Ask, verdict, NONE, answered(O::Clean, source)).warning.is_some());
                } else {
                    assert_eq!(clean, is(O::Clean, &format!("{word} clean"), true));
                }
                assert_eq!(
                    cell(Policy::Ask, verdict, DISCARD, answered(O::Clean, source)),
                    is(O::Clean, &format!("{word} clean"), true)
                );
                let required = decide(Policy::Ask, verdict, DISCARD, answered(O::Clean, source)).quarantine_required;
                assert_eq!(
                    required,
                    source == AnswerSource::ExitAction,
                    "only the container's choice insists on a save"
                );
            }
        }
    }

    #[test]
    fn keep_policy_keeps_everything() {
        for verdict in [V::Clean, V::Dirty, V::Unpushed, V::Unknown] {
            for flags in [NONE, DISCARD] {
                assert!(!needs_answer(Policy::Keep, verdict, flags));
                assert_eq!(cell(Policy::Keep, verdict, flags, Asked::Nobody), is(O::Keep, "policy keep", false));
                assert_eq!(
                    cell(Policy::Keep, verdict, flags, answered(O::Clean, AnswerSource::Flag)),
                    is(O::Keep, "policy keep", false)
                );
            }
            assert_eq!(cell(Policy::Keep, verdict, KEEP, Asked::Nobody), is(O::Keep, "operator keep", false));
        }
    }

    #[test]
    fn clean_policy_cleans_at_risk_work_but_keeps_what_it_cannot_read() {
        assert_eq!(cell(Policy::Clean, V::Clean, NONE, Asked::Nobody), is(O::Clean, "clean session", false));
        for verdict in [V::Dirty, V::Unpushed] {
            assert!(!needs_answer(Policy::Clean, verdict, NONE));
            assert_eq!(cell(Policy::Clean, verdict, NONE, Asked::Nobody), is(O::Clean, "policy clean", true));
            assert_eq!(
                cell(Policy::Clean, verdict, NONE, answered(O::Return, AnswerSource::Flag)),
                is(O::Clean, "policy clean", true)
            );
        }
        let unknown = decide(Policy::Clean, V::Unknown, NONE, Asked::Nobody);
        assert_eq!((unknown.outcome, unknown.reason.as_str()), (O::Keep, "unknown"));
        assert!(unknown.warning.unwrap().contains("cannot be saved"));
        assert_eq!(cell(Policy::Clean, V::Unknown, DISCARD, Asked::Nobody), is(O::Clean, "policy clean", true));
        for verdict in [V::Clean, V::Dirty, V::Unpushed, V::Unknown] {
            assert_eq!(cell(Policy::Clean, verdict, KEEP, Asked::Nobody), is(O::Keep, "operator keep", false));
        }
    }

    #[test]
    fn only_a_role_container_that_finished_before_the_assessment_spares_the_second_one() {
        let role = |running: bool, finished: Option<&str>| RunState {
            status: if running { "running" } else { "exited" }.into(),
            running,
            exit_code: Some(0),
            oom_killed: false,
            started_at: Some("2026-12-01T09:00:00Z".into()),
            finished_at: finished.map(str::to_owned),
            attached: 0,
        };
        let assessed = "2026-12-01T10:00:00Z";
        let before = role(false, Some("2026-12-01T09:59:59.5Z"));
        assert!(stopped_before_assessed(Some(&before), assessed), "the exit hook's path");
        let after = role(false, Some("2026-12-01T10:00:00.25Z"));
        assert!(!stopped_before_assessed(Some(&after), assessed), "it wrote on after the assessment");
        assert!(!stopped_before_assessed(Some(&role(true, None)), assessed), "it still runs");
        assert!(!stopped_before_assessed(None, assessed), "gone: when it stopped is unknown");
        assert!(!stopped_before_assessed(Some(&role(false, Some("not a time"))), assessed));
        assert!(!stopped_before_assessed(Some(&before), "not a time"));
    }

    #[test]
    fn kept_statuses_follow_the_verdict() {
        assert_eq!(kept_status(V::Clean), Status::RestoreAvailable);
        assert_eq!(kept_status(V::Dirty), Status::PreservedDirty);
        assert_eq!(kept_status(V::Unpushed), Status::PreservedUnpushed);
        assert_eq!(kept_status(V::Unknown), Status::PreservedDirty);
        assert_eq!(kept_cleanup_status(V::Clean), None);
        assert_eq!(kept_cleanup_status(V::Unknown), Some(Status::PreservedDirty));
        assert_eq!(kept_cleanup_status(V::Unpushed), Some(Status::PreservedUnpushed));
    }

    #[test]
    fn exit_actions_decide_only_when_written_this_session() {
        let parse = |bytes: &[u8]| parse_exit_choice(bytes).map(exit_choice_outcome);
        assert_eq!(parse(b"\"keep\""), Some(O::Keep));
        assert_eq!(parse(b" \"discard\"\n"), Some(O::Clean));
        assert_eq!(parse(b"\"maybe\""), None);
        assert_eq!(parse(b"keep"), None);
        let start = crate::base::time::parse_rfc3339("2026-08-20T09:00:00Z").unwrap();
        assert!(is_fresh(start + Duration::from_secs(1), Some(start)));
        assert!(is_fresh(start, Some(start)));
        assert!(!is_fresh(start - Duration::from_secs(1), Some(start)));
        assert!(!is_fresh(start, None), "a session of unknown start cannot prove a file fresh");
    }
}
