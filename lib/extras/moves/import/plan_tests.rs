//! The import's plan decided from an archive's account and a look at this host, without git:
//! each refusal, and the steps in their order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::*;
use crate::base::exit::Exit;
use crate::engines::git::BundleHeader;
use crate::extras::moves::archive::{Part, PartKind};
use crate::extras::moves::import::hosts::{HostView, MountView, RefThere, SubmoduleView};
use crate::state::store::Roots;

const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "2222222222222222222222222222222222222222";
const TIP: &str = "3333333333333333333333333333333333333333";
const OTHER: &str = "4444444444444444444444444444444444444444";
const NAME: &str = "jk-a-k7p9m2xq";
const FILE: &str = "/tmp/s.tar.gz";

fn store() -> Store {
    Store { roots: Roots { home: "/h/.jackin".into(), config_dir: "/h/.config/jackin".into() } }
}

fn name() -> InstanceName {
    InstanceName::parse(NAME).unwrap()
}

fn layout_parts() -> Vec<Part> {
    let part =
        |path: &str, kind| Part { path: path.into(), path_bytes: None, kind, mode: 0o755, size: 0, sha256: None };
    vec![
        part("mounts", PartKind::Dir),
        part("mounts/0-app", PartKind::Dir),
        part("mounts/0-app/commits.bundle", PartKind::File),
        part("mounts/0-app/submodule-0.bundle", PartKind::File),
    ]
}

/// A worktree mount whose bundle has the scratch branch at TIP, built on BASE, HEAD on `main`.
fn worktree_mount() -> ExportedMount {
    serde_json::from_value(serde_json::json!({
        "mount_dst": "/workspace/app", "isolation": "worktree", "path": "/other/app", "original_src": "/src/app",
        "head": HEAD, "verdict": "unpushed", "bundle": "0-app/commits.bundle",
        "bundle_contents": {"commits": 2, "refs": [], "prerequisites": []}, "files_dir": null, "files": [], "tree": null, "note": null,
        "base_commit": BASE, "scratch_branch": format!("jackin/scratch/{NAME}"), "scratch_tip": TIP,
        "head_branch": "refs/heads/main", "remotes": [{"name": "origin", "url": "https://example.invalid/app.git"}],
    }))
    .unwrap()
}

fn bundles() -> BTreeMap<String, BundleHeader> {
    let refs = vec![
        (format!("refs/heads/jackin/scratch/{NAME}"), TIP.to_owned()),
        ("refs/heads/main".to_owned(), HEAD.to_owned()),
        ("refs/jackin/reflog/0".to_owned(), OTHER.to_owned()),
    ];
    BTreeMap::from([("mounts/0-app/commits.bundle".to_owned(), BundleHeader::for_tests(vec![BASE.into()], refs))])
}

/// A repository of this host that has everything the mount asks for, none of its refs.
fn host() -> HostView {
    let scratch = format!("refs/heads/jackin/scratch/{NAME}");
    HostView {
        path: "/src/app".into(),
        usable: true,
        git_dir: "/src/app/.git".into(),
        has: BTreeSet::from([HEAD.to_owned()]),
        refs: [scratch.as_str(), "refs/heads/main", "refs/jackin/reflog/0"]
            .into_iter()
            .map(|r| (r.to_owned(), RefThere::Free))
            .collect(),
        ..HostView::default()
    }
}

fn decide(mounts: &[ExportedMount], views: &[MountView]) -> Result<ImportPlan> {
    let (store, name, parts) = (store(), name(), layout_parts());
    let layout = Layout::new(Path::new(FILE), &parts).unwrap();
    let bundles = bundles();
    let inputs =
        Inputs { store: &store, name: &name, file: Path::new(FILE), mounts, bundles: &bundles, layout: &layout };
    plan(&inputs, views, 42)
}

fn one(host: HostView) -> Vec<MountView> {
    vec![MountView { sources: 3, candidates: vec![host] }]
}

fn refusal(result: Result<ImportPlan>) -> String {
    let e = result.expect_err("refused");
    assert_eq!(Exit::of(&e), Exit::BadInput, "{e:#}");
    format!("{e:#}")
}

#[test]
fn a_worktree_mount_is_planned_from_the_look_alone_and_its_steps_come_in_order() {
    let plan = decide(&[worktree_mount()], &one(host())).unwrap();
    let mount = &plan.mounts[0];
    assert_eq!(mount.host, PathBuf::from("/src/app"));
    assert_eq!(mount.path, store().mount_dir(&name(), "worktree", "/workspace/app").unwrap());
    assert_eq!(mount.scratch, Some((format!("refs/heads/jackin/scratch/{NAME}"), TIP.to_owned())));
    assert_eq!(mount.refs, [("refs/heads/main".to_owned(), HEAD.to_owned())]);
    assert_eq!(mount.reflog, [OTHER]);
    assert_eq!(
        plan.steps,
        [
            ImportStep::Unpack { into: store().import_staging_dir(&name(), 42) },
            ImportStep::MoveIn { to: store().instance_dir(&name()) },
            ImportStep::RecordIsolation,
            ImportStep::MakeMount(0),
            ImportStep::RecordContinuity,
            ImportStep::RecordManifest,
            ImportStep::AddIndexRow,
        ]
    );
    let words = plan.describe(&ImportStep::MakeMount(0));
    assert!(words.starts_with("make /workspace/app: a worktree of /src/app at "), "{words}");
    assert!(words.ends_with("on refs/heads/main · 2 commits · 2 refs · 0 files"), "{words}");
}

#[test]
fn a_session_without_mounts_writes_no_isolation_records() {
    let plan = decide(&[], &[]).unwrap();
    assert!(!plan.steps.contains(&ImportStep::RecordIsolation));
    assert_eq!(plan.steps.last(), Some(&ImportStep::AddIndexRow));
}

#[test]
fn the_repository_here_is_the_one_candidate_or_a_refusal_that_says_how_to_name_it() {
    let none = vec![MountView { sources: 3, candidates: vec![] }];
    let why = refusal(decide(&[worktree_mount()], &none));
    assert!(why.contains("none of the 3 repositories") && why.contains("--repo /workspace/app=PATH"), "{why}");
    let mut other = host();
    other.path = "/src/app-copy".into();
    let two = vec![MountView { sources: 3, candidates: vec![host(), other] }];
    let why = refusal(decide(&[worktree_mount()], &two));
    assert!(why.contains("2 repositories") && why.contains("/src/app-copy"), "{why}");
    let mut no_remote = worktree_mount();
    no_remote.remotes.clear();
    let why = refusal(decide(&[no_remote], &none));
    assert!(why.contains("its repository had no remote"), "{why}");
    let bare = HostView { usable: false, ..host() };
    let why = refusal(decide(&[worktree_mount()], &one(bare)));
    assert!(why.contains("not a repository with a work tree"), "{why}");
}

#[test]
fn what_the_commits_need_must_be_here() {
    let lacking = HostView { missing: vec![BASE.into()], ..host() };
    let why = refusal(decide(&[worktree_mount()], &one(lacking)));
    assert!(why.contains("lacks 1 commit(s)") && why.contains(&BASE[..12]), "{why}");
    // HEAD neither here nor a tip of the bundle.
    let mut mount = worktree_mount();
    mount.saved.head = Some(OTHER.replace('4', "5"));
    let why = refusal(decide(&[mount], &one(host())));
    assert!(why.contains("does not have the commit the work tree was on"), "{why}");
}

#[test]
fn a_ref_of_the_sessions_is_made_only_where_this_repository_leaves_room() {
    let scratch = format!("refs/heads/jackin/scratch/{NAME}");
    let mut taken = host();
    taken.refs.insert(scratch, RefThere::At(OTHER.into()));
    assert!(refusal(decide(&[worktree_mount()], &one(taken))).contains("has the branch or worktree"));
    let named = HostView { worktree_named: true, ..host() };
    assert!(refusal(decide(&[worktree_mount()], &one(named))).contains("has the branch or worktree"));
    let mut elsewhere = host();
    elsewhere.refs.insert("refs/heads/main".into(), RefThere::At(OTHER.into()));
    let why = refusal(decide(&[worktree_mount()], &one(elsewhere)));
    assert!(why.contains("refs/heads/main is at 444444444444"), "{why}");
    let mut blocked = host();
    blocked.refs.insert("refs/heads/main".into(), RefThere::Blocked);
    assert!(refusal(decide(&[worktree_mount()], &one(blocked))).contains("cannot be made"));
    // Where this repository has it at the same commit, it is left as it is.
    let mut same = host();
    same.refs.insert("refs/heads/main".into(), RefThere::At(HEAD.into()));
    assert!(decide(&[worktree_mount()], &one(same)).unwrap().mounts[0].refs.is_empty());
}

#[test]
fn a_clone_takes_this_repositorys_origin_and_its_own_branches() {
    let mut mount = worktree_mount();
    mount.saved.isolation = "clone".into();
    let host = HostView { origin_url: Some("git@example.invalid:app.git".into()), ..host() };
    let plan = decide(&[mount], &one(host)).unwrap();
    let made = &plan.mounts[0];
    assert_eq!(made.origin_url.as_deref(), Some("git@example.invalid:app.git"));
    assert_eq!(made.scratch, None);
    let names: Vec<&str> = made.refs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, [format!("refs/heads/jackin/scratch/{NAME}").as_str(), "refs/heads/main"]);
    assert!(plan.describe(&ImportStep::MakeMount(0)).contains(": a clone of /src/app"));
}

#[test]
fn a_submodule_needs_its_git_directory_here() {
    let mut mount = worktree_mount();
    mount.saved.submodules = vec![serde_json::from_value(serde_json::json!({
        "path": "vendor/lib", "bundle": "0-app/submodule-0.bundle", "head": HEAD,
        "bundle_contents": {"commits": 1, "refs": [], "prerequisites": []},
    }))
    .unwrap()];
    let mut with_bundles = bundles();
    with_bundles.insert("mounts/0-app/submodule-0.bundle".into(), BundleHeader::for_tests(vec![BASE.into()], vec![]));
    let decide_with = |host: HostView| {
        let (store, name, parts) = (store(), name(), layout_parts());
        let layout = Layout::new(Path::new(FILE), &parts).unwrap();
        let mounts = [mount.clone()];
        let inputs = Inputs {
            store: &store,
            name: &name,
            file: Path::new(FILE),
            mounts: &mounts,
            bundles: &with_bundles,
            layout: &layout,
        };
        plan(&inputs, &one(host), 42)
    };
    let no_dir = HostView { submodules: vec![Some(SubmoduleView::default())], ..host() };
    let why = refusal(decide_with(no_dir));
    assert!(why.contains("has no git directory of it") && why.contains("submodule update --init vendor/lib"), "{why}");
    let source = |missing: Vec<String>| SubmoduleView {
        source: Some("/src/app/.git/modules/vendor/lib".into()),
        missing,
        has: BTreeSet::from([HEAD.to_owned()]),
    };
    let lacking = HostView { submodules: vec![Some(source(vec![BASE.into()]))], ..host() };
    assert!(refusal(decide_with(lacking)).contains("lacks 1 commit(s) its commits build on"));
    let there = HostView { submodules: vec![Some(source(vec![]))], ..host() };
    let plan = decide_with(there).unwrap();
    let sub = &plan.mounts[0].submodules[0];
    assert_eq!((sub.path.as_path(), sub.head.as_str()), (Path::new("vendor/lib"), HEAD));
    assert!(plan.describe(&ImportStep::MakeMount(0)).ends_with("· 1 submodule"));
}
