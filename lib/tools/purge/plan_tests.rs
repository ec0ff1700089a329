//! Purge's decisions, case by case, from observations built here: no Docker, no git, no files.

use std::path::PathBuf;

use super::*;
use crate::protocol::assessment::Verdict;
use crate::protocol::codes::ErrorCode;
use crate::state::model::{IndexRow, IsolationKind, Manifest};
use crate::state::names::InstanceName;
use crate::state::store::{MarkedSession, PurgeMark};
use crate::tools::purge::observe::{DirectorySeen, WorktreeSeen};

const NAME: &str = "jk-abcd1234-app";
const HOST: &str = "/srv/app";

fn name() -> InstanceName {
    InstanceName::parse(NAME).unwrap()
}

fn manifest() -> Manifest {
    Manifest::sample(NAME, "clean_exited")
}

fn row() -> IndexRow {
    IndexRow::from_manifest(&manifest())
}

fn record(branch: &str) -> IsolationRecord {
    IsolationRecord {
        workspace: "app".into(),
        mount_dst: "/workspace/app".into(),
        original_src: HOST.into(),
        isolation: IsolationKind::Worktree,
        worktree_path: format!("/home/jackin/data/{NAME}/git/app"),
        scratch_branch: branch.into(),
        base_commit: "0".repeat(40),
        selector_key: "app".into(),
        container_name: NAME.into(),
        cleanup_status: "active".into(),
        extra: Default::default(),
    }
}

fn assessment(verdict: Verdict) -> Assessment {
    Assessment {
        identity: Identity::from_manifest(&manifest()),
        verdict,
        in_place: true,
        mounts: Vec::new(),
        summary: if verdict.at_risk() { "1 unpushed commit".into() } else { "clean".into() },
        assessed_at: "2026-11-29T12:00:00Z".into(),
        status: None,
        disk: None,
        seal: None,
    }
}

/// A whole session, stopped, with one worktree mount: everything of it is there.
fn seen(verdict: Verdict) -> Observation {
    let manifest = manifest();
    let docker = manifest.docker.clone();
    Observation {
        name: name(),
        row: Some(row()),
        docker_present: crate::services::ownership::resources(&docker),
        docker,
        manifest: Ok(Some(manifest)),
        role_running: false,
        role_attached: 0,
        records: Records::Read(vec![Ok(record(&name().scratch_branch()))]),
        data_dir_exists: true,
        name_lock: Some(PathBuf::from(format!("/home/jackin/data/{NAME}.lock"))),
        observed_at: "2026-11-29T12:00:00Z".into(),
        mark: None,
        assessment: Some(Ok(assessment(verdict))),
        worktrees: vec![WorktreeSeen {
            host: HOST.into(),
            path: record("").worktree_path,
            registered: true,
            branch: Some(name().scratch_branch()),
        }],
        directories: vec![
            DirectorySeen { path: format!("/home/jackin/data/{NAME}").into(), exists: true, bytes: 7 },
            DirectorySeen { path: format!("/home/jackin/sockets/{NAME}").into(), exists: true, bytes: 3 },
        ],
    }
}

fn options() -> PurgeOptions {
    PurgeOptions { quarantine_days: 14, ..Default::default() }
}

fn kinds(plan: &Plan) -> Vec<(String, String)> {
    plan.deletions.iter().map(Deletion::removed).map(|r| (r.kind.to_string(), r.name)).collect()
}

/// The word a refusal is reported by: its error code, or `not_clean` for a skip.
fn code(refusal: Refusal) -> String {
    match refusal {
        Refusal::Live(_) | Refusal::Attached { .. } => ErrorCode::Live.to_string(),
        Refusal::AtRisk { .. } => ErrorCode::AtRisk.to_string(),
        Refusal::NotClean { .. } => "not_clean".into(),
        Refusal::Failed { code, .. } => code.to_string(),
    }
}

#[test]
fn a_clean_session_is_deleted_whole_in_lifecycle_order() {
    let seen = seen(Verdict::Clean);
    assert_eq!(liveness(&seen, false, &options()).unwrap(), Next::Purge);
    let plan = plan(&seen, false, false, &options()).unwrap();
    let expected: Vec<(String, String)> = [
        ("container", NAME.to_owned()),
        ("container", format!("{NAME}-dind")),
        ("network", format!("{NAME}-net")),
        ("volume", format!("{NAME}-dind-certs")),
        ("worktree", record("").worktree_path),
        ("branch", name().scratch_branch()),
        ("directory", format!("/home/jackin/data/{NAME}")),
        ("directory", format!("/home/jackin/sockets/{NAME}")),
        ("name_lock", format!("/home/jackin/data/{NAME}.lock")),
        ("index_row", NAME.to_owned()),
    ]
    .into_iter()
    .map(|(k, n)| (k.to_owned(), n))
    .collect();
    assert_eq!(kinds(&plan), expected);
    assert!(plan.save.is_none() && plan.assessed);
    assert_eq!(plan.stamp, Stamp::Manifest { write_mark: Some(as_found()) });
    assert_eq!(plan.directory_bytes, 10);
    let report = plan.printed(None);
    assert!(report.dry_run && report.quarantine.is_none());
    assert_eq!(report.freed_bytes, 10);
}

#[test]
fn only_what_is_there_is_planned() {
    let mut seen = seen(Verdict::Clean);
    seen.docker_present.clear();
    seen.worktrees[0].registered = false;
    seen.worktrees[0].branch = None;
    seen.directories[1].exists = false;
    seen.name_lock = None;
    seen.row = None;
    let plan = plan(&seen, false, false, &options()).unwrap();
    assert_eq!(kinds(&plan), [("directory".to_owned(), format!("/home/jackin/data/{NAME}"))]);
}

#[test]
fn work_at_risk_is_refused_without_a_discard() {
    for verdict in [Verdict::Unpushed, Verdict::Dirty, Verdict::Unknown] {
        let refusal = plan(&seen(verdict), false, false, &options()).unwrap_err();
        let Refusal::AtRisk { summary } = refusal else { panic!("{verdict:?}: not at_risk") };
        assert_eq!(summary, "1 unpushed commit");
    }
}

#[test]
fn a_discard_saves_the_work_at_risk_first_by_its_records() {
    let seen = seen(Verdict::Unpushed);
    for (discard, discard_unfinished) in [(true, false), (false, true)] {
        let options = PurgeOptions { discard_unfinished, ..options() };
        let plan = plan(&seen, discard, false, &options).unwrap();
        let save = plan.save.expect("saved");
        assert_eq!(save.assessment.verdict, Verdict::Unpushed);
        assert_eq!(save.records.unwrap().len(), 1);
        assert_eq!(plan.deletions.len(), 10, "and then everything goes");
    }
    let no_quarantine = PurgeOptions { discard_unfinished: true, no_quarantine: true, ..options() };
    assert!(plan(&seen, false, false, &no_quarantine).unwrap().save.is_none());
}

#[test]
fn a_failed_setup_under_terminal_is_left_alone_unless_clean() {
    assert_eq!(code(plan(&seen(Verdict::Dirty), true, true, &options()).unwrap_err()), "not_clean");
    assert!(plan(&seen(Verdict::Clean), false, true, &options()).is_ok());
}

#[test]
fn unreadable_records_save_the_whole_git_tree_and_touch_no_host_repository() {
    let mut seen = seen(Verdict::Unknown);
    seen.records = Records::Unreadable;
    seen.worktrees.clear();
    assert_eq!(liveness(&seen, false, &options()).unwrap(), Next::Purge);
    let plan = plan(&seen, true, false, &options()).unwrap();
    assert!(plan.save.as_ref().expect("saved").records.is_none(), "the whole git/ tree");
    assert!(!kinds(&plan).iter().any(|(kind, _)| kind == "worktree" || kind == "branch"));
}

#[test]
fn a_live_session_is_refused_stopped_on_stop_and_never_stopped_by_a_dry_run() {
    let mut seen = seen(Verdict::Clean);
    seen.role_running = true;
    assert_eq!(code(liveness(&seen, false, &options()).unwrap_err()), "live");
    let stop = PurgeOptions { stop: true, ..options() };
    assert_eq!(liveness(&seen, false, &stop).unwrap(), Next::StopFirst(seen.docker.clone()));
    let dry = PurgeOptions { stop: true, dry_run: true, ..options() };
    assert_eq!(liveness(&seen, false, &dry).unwrap(), Next::Purge);
    let dry_without_stop = PurgeOptions { dry_run: true, ..options() };
    assert_eq!(code(liveness(&seen, false, &dry_without_stop).unwrap_err()), "live");
}

/// A running session with a process attached (an operator's `jackin hardline`, any `docker
/// exec`) is live whatever the flags: `--stop` does not stop it under them, a dry run says so.
#[test]
fn a_session_someone_is_attached_to_is_never_stopped() {
    let mut seen = seen(Verdict::Clean);
    seen.role_running = true;
    seen.role_attached = 1;
    for options in [
        options(),
        PurgeOptions { stop: true, ..options() },
        PurgeOptions { stop: true, dry_run: true, ..options() },
        PurgeOptions { stop: true, discard_unfinished: true, ..options() },
    ] {
        let refusal = liveness(&seen, true, &options).unwrap_err();
        assert!(matches!(refusal, Refusal::Attached { processes: 1, .. }), "{options:?}");
    }
    seen.role_running = false;
    assert_eq!(liveness(&seen, false, &options()).unwrap(), Next::Purge, "a stopped container has no process");
}

/// After `--stop` stopped it, a session whose role container runs again is live: it is not
/// stopped twice, and nothing is deleted under a running agent.
#[test]
fn a_session_running_again_after_its_stop_is_refused() {
    let mut seen = seen(Verdict::Clean);
    seen.role_running = true;
    let stop = PurgeOptions { stop: true, ..options() };
    assert_eq!(code(liveness_after_stop(&seen, false, &stop).unwrap_err()), "live");
    seen.role_running = false;
    assert!(liveness_after_stop(&seen, false, &stop).is_ok());
}

#[test]
fn a_record_naming_another_branch_is_refused_before_anything() {
    let mut seen = seen(Verdict::Clean);
    seen.records = Records::Read(vec![Ok(record("main"))]);
    let stop = PurgeOptions { stop: true, ..options() };
    seen.role_running = true;
    let Refusal::Failed { code, error } = liveness(&seen, false, &stop).unwrap_err() else { panic!("not failed") };
    assert_eq!(code, ErrorCode::PurgeFailed);
    assert!(error.to_string().contains("names branch \"main\""), "{error}");
}

#[test]
fn an_unreadable_manifest_is_refused() {
    let mut seen = seen(Verdict::Clean);
    seen.manifest = Err("expected value at line 1".into());
    let Refusal::Failed { code, error } = liveness(&seen, false, &options()).unwrap_err() else { panic!() };
    assert_eq!(code, ErrorCode::ManifestUnreadable);
    assert!(error.to_string().contains("nothing deleted; --discard-unfinished purges it"), "{error}");
}

#[test]
fn an_unreadable_manifest_with_a_discard_is_purged_by_the_derived_names_after_its_work_is_saved() {
    let mut seen = seen(Verdict::Dirty);
    seen.manifest = Err("expected value at line 1".into());
    assert_eq!(liveness(&seen, true, &options()).unwrap(), Next::Purge, "a decision's discard");
    let discarding = PurgeOptions { discard_unfinished: true, ..options() };
    assert_eq!(liveness(&seen, false, &discarding).unwrap(), Next::Purge, "--discard-unfinished");
    seen.role_running = true;
    assert_eq!(code(liveness(&seen, true, &options()).unwrap_err()), "live", "still never a live one");
    seen.role_running = false;

    let plan = plan(&seen, true, false, &options()).unwrap();
    assert!(plan.assessed && plan.save.is_some(), "the work at risk is saved first");
    assert_eq!(plan.stamp, Stamp::Row, "no manifest to stamp, no mark to trust later");
    assert_eq!(plan.identity.container_base, NAME);
}

/// The session as [`manifest`] has it, as a purge mark records it.
fn as_found() -> MarkedSession {
    MarkedSession { status: "clean_exited".into(), updated_at: "2026-11-29T09:00:00Z".into() }
}

fn mark(session: Option<MarkedSession>) -> PurgeMark {
    PurgeMark {
        started_at: "2026-11-29T12:00:00Z".into(),
        verdict: "at_risk_quarantined".into(),
        quarantine: Some("/home/jackin/quarantine/q".into()),
        session,
    }
}

#[test]
fn a_rerun_after_step_2_trusts_the_purge_mark() {
    let mut seen = seen(Verdict::Unpushed);
    seen.assessment = Some(Err("the worktree's registration is gone".into()));
    seen.mark = Some(mark(Some(as_found())));
    let plan = plan(&seen, false, false, &options()).unwrap();
    assert!(!plan.assessed && plan.save.is_none());
    assert_eq!(plan.saved_before.as_deref(), Some("/home/jackin/quarantine/q"));
    assert_eq!(plan.stamp, Stamp::Manifest { write_mark: None });

    // The crash came after the stamp: the manifest reads as the purge left it.
    if let Ok(Some(manifest)) = &mut seen.manifest {
        manifest.status = "purged".into();
        manifest.updated_at = "2026-11-29T12:00:00Z".into();
    }
    assert!(!plan_of(&seen).assessed, "the purge's own stamp does not void its mark");
}

fn plan_of(seen: &Observation) -> Plan {
    plan(seen, true, false, &options()).unwrap()
}

#[test]
fn a_mark_of_another_state_of_the_session_is_not_trusted() {
    let mut seen = seen(Verdict::Dirty);
    // Resumed after the failed purge, and worked on: the manifest moved on.
    seen.mark = Some(mark(Some(as_found())));
    if let Ok(Some(manifest)) = &mut seen.manifest {
        manifest.status = "active".into();
        manifest.updated_at = "2026-11-30T08:00:00Z".into();
    }
    assert!(matches!(plan(&seen, false, false, &options()), Err(Refusal::AtRisk { .. })), "assessed again");
    let plan = plan_of(&seen);
    assert!(plan.assessed && plan.save.is_some(), "the new work is saved before anything goes");
    let Stamp::Manifest { write_mark: Some(session) } = &plan.stamp else { panic!("{:?}", plan.stamp) };
    assert_eq!(session.status, "active", "the new mark is for the session as it is now");

    // A terminal status, but not written at the mark's time: not that purge's stamp.
    if let Ok(Some(manifest)) = &mut seen.manifest {
        manifest.status = "purged".into();
    }
    assert!(plan_of(&seen).assessed);

    // A mark that names no session (an earlier version's) speaks for none.
    seen.mark = Some(mark(None));
    if let Ok(Some(manifest)) = &mut seen.manifest {
        manifest.status = "clean_exited".into();
        manifest.updated_at = "2026-11-29T09:00:00Z".into();
    }
    assert!(plan_of(&seen).assessed);
}

#[test]
fn nothing_left_to_read_is_clean_and_an_assessment_that_failed_is_not() {
    let mut seen = seen(Verdict::Clean);
    seen.manifest = Ok(None);
    seen.data_dir_exists = false;
    seen.assessment = Some(Err("no data directory".into()));
    let plan = plan(&seen, false, false, &options()).unwrap();
    assert_eq!(plan.stamp, Stamp::Row);
    assert_eq!(plan.identity.container_base, NAME);

    seen.data_dir_exists = true;
    assert_eq!(code(super::plan(&seen, false, false, &options()).unwrap_err()), "assess_failed");
}
