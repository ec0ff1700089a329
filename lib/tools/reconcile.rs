//! Reconciliation (lifecycle.md, "Reconcile"): make the index and the manifests tell the truth
//! about Docker, label host-level kills honestly with their evidence, mend the index, report
//! orphans, and capture the launch recipe of every live session that has none yet.
//!
//! One list call covers every instance; only exited role containers under live rows are
//! inspected. jackin-restore calls [`reconcile`] for its candidates before it decides anything.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::base::exit::Exit;
use crate::base::time::{now_rfc3339, parse_rfc3339, rfc3339};
use crate::engines::docker::{self, ContainerBrief, Engine, RunState};
use crate::protocol::records::{Change, Identity, Orphan, Repair};
use crate::state::continuity::{self, HistoryEntry};
use crate::state::model::{Index, IndexRow, Manifest, Status};
use crate::state::names::{is_valid_name, InstanceName};
use crate::state::select::check_arg;
use crate::state::store::{name_lock_held, write_json_atomic, IndexLock, Store};

/// Which instances to reconcile.
#[derive(Debug, Clone)]
pub enum Selection {
    /// Every instance on the host; also the orphan scan, which only makes sense host-wide.
    All,
    /// An operator's arguments (container name, id or unique id prefix); one that names no
    /// instance is a failure of its own.
    Args(Vec<String>),
    /// Instances named by a program (jackin-restore, the event watcher); unknown ones are skipped.
    Instances(Vec<InstanceName>),
}

#[derive(Debug, Clone)]
pub struct Options {
    pub dry_run: bool,
    /// The tool named in history entries and captured recipes.
    pub tool: &'static str,
}

/// What a reconciliation found and (unless a dry run) did.
#[derive(Debug, Default)]
pub struct Report {
    pub changes: Vec<Change>,
    pub repairs: Vec<Repair>,
    pub orphans: Vec<Orphan>,
    /// Instances whose launch recipe was captured on first sight.
    pub recipes_captured: Vec<String>,
    pub failures: Vec<Failure>,
}

impl Report {
    /// Whether the index or a manifest changed (or would have, in a dry run).
    pub fn changed(&self) -> bool {
        !self.changes.is_empty() || !self.repairs.is_empty()
    }
}

/// One instance that could not be reconciled; the others were.
#[derive(Debug)]
pub struct Failure {
    pub container_base: Option<String>,
    pub code: &'static str,
    pub error: anyhow::Error,
}

/// How long after the engine's start a container may read `FinishedAt` and still count as one
/// the restarting engine found dead (Docker stamps the moment it came back, not the kill).
const RESTART_WINDOW: Duration = Duration::from_secs(300);

/// The engine, the host and the time, read once per run and only when something is inspected.
struct Clock {
    host_boot: Option<SystemTime>,
    engine_started: Option<SystemTime>,
    engine: Option<BTreeMap<String, String>>,
}

impl Clock {
    fn read(engine: &Engine) -> Clock {
        let local = docker::local_socket().is_some();
        Clock {
            host_boot: if local { host_boot_time() } else { None },
            engine_started: docker::local_engine_started_at(),
            engine: engine.engine_facts().ok(),
        }
    }
}

/// `btime` of `/proc/stat`: when this host booted (Linux).
pub fn host_boot_time() -> Option<SystemTime> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let secs: u64 = stat.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

/// What Docker showed of a session's containers when it ended.
#[derive(Debug, Clone)]
pub struct Ended {
    pub role: RunState,
    /// `None`: the session has no sidecar, or it is gone.
    pub sidecar: Option<RunState>,
    pub host_boot: Option<SystemTime>,
    pub engine_started: Option<SystemTime>,
}

/// Whether the host (the engine, its VM or the machine) went away under a session, and by
/// which sign; `None` for an exit of the session's own.
pub fn host_kill_sign(ended: &Ended) -> Option<&'static str> {
    let role = &ended.role;
    let at = |t: &Option<String>| t.as_deref().and_then(parse_rfc3339);
    let started = at(&role.started_at);
    let finished = at(&role.finished_at);
    if let (Some(boot), Some(started)) = (ended.host_boot, started) {
        if boot > started {
            return Some("host_rebooted_after_start");
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
        return Some("role_and_sidecar_exited_255");
    }
    if let (Some(engine), Some(started), Some(finished)) = (ended.engine_started, started, finished) {
        let within = finished.duration_since(engine).is_ok_and(|d| d <= RESTART_WINDOW);
        if started < engine && within {
            return Some("engine_restarted_after_start");
        }
    }
    if role.exit_code == Some(255) && sidecar_exited(0) {
        return Some("role_255_sidecar_0");
    }
    None
}

fn state_evidence(name: &str, state: Option<&RunState>) -> Value {
    match state {
        None => json!({"name": name, "status": "gone"}),
        Some(s) => json!({
            "name": name, "status": s.status, "exit_code": s.exit_code, "oom_killed": s.oom_killed,
            "started_at": s.started_at, "finished_at": s.finished_at,
        }),
    }
}

/// One instance as the disk shows it.
struct Seen {
    name: InstanceName,
    row: Option<IndexRow>,
    dir: bool,
    manifest: Result<Option<Manifest>>,
}

/// A status change decided, not yet written.
struct Planned {
    name: InstanceName,
    manifest: Manifest,
    from: Status,
    to: Status,
    cause: &'static str,
    evidence: Value,
}

/// Reconciles the selected instances against one engine. Nothing is written before the engine
/// has answered the list calls, so an unreachable engine (exit 4) leaves every file unchanged.
pub fn reconcile(engine: &Engine, store: &Store, selection: &Selection, options: &Options) -> Result<Report> {
    let now = now_rfc3339();
    let whole_host = matches!(selection, Selection::All);
    let containers = engine.list_managed()?;
    let (networks, volumes) = if whole_host {
        let networks = engine.list_managed_networks().map_err(|e| Exit::Unavailable.wrap(e))?;
        let volumes = engine.list_volumes().map_err(|e| Exit::Unavailable.wrap(e))?;
        (networks, volumes)
    } else {
        (Vec::new(), Vec::new())
    };
    let by_name: HashMap<&str, &ContainerBrief> = containers.iter().map(|c| (c.name.as_str(), c)).collect();

    let mut report = Report::default();
    let dirs = instance_dirs(store)?;
    let index = load_index(store, &dirs, options, &mut report)?;
    let mut rows: BTreeMap<InstanceName, IndexRow> = BTreeMap::new();
    for row in &index.instances {
        if let Ok(name) = InstanceName::parse(&row.container_base) {
            rows.entry(name).or_insert_with(|| row.clone());
        }
    }
    let names = select(selection, &rows, &dirs, &mut report);
    let seen: Vec<Seen> = crate::base::parallel::map(&names, |name| Seen {
        name: name.clone(),
        row: rows.get(name).cloned(),
        dir: dirs.contains(name),
        manifest: if dirs.contains(name) { store.read_manifest(name) } else { Ok(None) },
    });

    let mut clock: Option<Clock> = None;
    let mut planned: Vec<Planned> = Vec::new();
    let mut row_repairs: Vec<(InstanceName, &'static str)> = Vec::new();
    let mut live: Vec<(InstanceName, Manifest)> = Vec::new();
    for s in &seen {
        let manifest = match &s.manifest {
            Ok(Some(m)) => m,
            Ok(None) => {
                let container_gone = !by_name.contains_key(s.name.as_str());
                if !s.dir && s.row.is_some() && container_gone && !lock_held(store, &s.name) {
                    row_repairs.push((s.name.clone(), "row_dropped"));
                }
                continue;
            }
            Err(e) => {
                report.failures.push(Failure {
                    container_base: Some(s.name.to_string()),
                    code: "manifest_unreadable",
                    error: anyhow::anyhow!("{e:#}"),
                });
                continue;
            }
        };
        match &s.row {
            None => row_repairs.push((s.name.clone(), "row_restored")),
            Some(row) if !row_matches(row, manifest) => row_repairs.push((s.name.clone(), "row_refreshed")),
            Some(_) => {}
        }
        let role = by_name.get(manifest.docker.role_container.as_str()).copied();
        if role.is_some_and(|c| c.state == "running") {
            live.push((s.name.clone(), manifest.clone()));
        }
        let Some(status) = Status::parse(&manifest.status) else { continue };
        let plan = |to: Status, cause: &'static str, evidence: Value| Planned {
            name: s.name.clone(),
            manifest: manifest.clone(),
            from: status,
            to,
            cause,
            evidence,
        };
        let session_live = matches!(status, Status::Active | Status::Running);
        match role.map(|c| c.state.as_str()) {
            None if session_live => {
                if lock_held(store, &s.name) {
                    continue;
                }
                let evidence = json!({
                    "role": state_evidence(&manifest.docker.role_container, None),
                    "observed_at": now,
                });
                planned.push(plan(Status::Crashed, "container_removed", evidence));
            }
            Some("exited" | "dead") if session_live || status == Status::FailedSetup => {
                if lock_held(store, &s.name) {
                    continue;
                }
                let clock = clock.get_or_insert_with(|| Clock::read(engine));
                match judge_exit(engine, manifest, &by_name, clock, &now) {
                    Ok(Some((cause, evidence))) if session_live || cause == "killed_by_host" => {
                        planned.push(plan(Status::Crashed, cause, evidence))
                    }
                    Ok(_) => {}
                    Err(e) => report.failures.push(Failure {
                        container_base: Some(s.name.to_string()),
                        code: "inspect_failed",
                        error: e,
                    }),
                }
            }
            Some("running") if status.is_kept() || status == Status::Crashed => {
                let evidence = json!({
                    "role": {"name": manifest.docker.role_container, "status": "running"},
                    "observed_at": now,
                });
                planned.push(plan(Status::Running, "container_running", evidence));
            }
            _ => {}
        }
    }

    let changed_names: BTreeSet<InstanceName> = planned.iter().map(|p| p.name.clone()).collect();
    for p in planned {
        match apply(store, &p, options, &now) {
            Ok(true) => report.changes.push(Change {
                identity: Identity::from_manifest(&p.manifest),
                from: p.from.to_string(),
                to: p.to.to_string(),
                cause: p.cause.to_owned(),
                evidence: p.evidence,
                dry_run: options.dry_run,
            }),
            Ok(false) => {}
            Err(e) => report.failures.push(Failure {
                container_base: Some(p.name.to_string()),
                code: "status_write_failed",
                error: e,
            }),
        }
    }
    row_repairs.retain(|(name, _)| !changed_names.contains(name));
    repair_rows(store, &row_repairs, options, &mut report)?;
    if !options.dry_run {
        capture_recipes(engine, store, &live, options, &mut report);
    }
    if whole_host {
        let mut alive: BTreeSet<InstanceName> = rows.keys().cloned().collect();
        alive.extend(dirs.iter().cloned());
        for r in report.repairs.iter().filter(|r| r.kind == "row_dropped") {
            if let Ok(name) = InstanceName::parse(&r.name) {
                if !dirs.contains(&name) {
                    alive.remove(&name);
                }
            }
        }
        let owned = owned_resources(&seen);
        find_orphans(store, &alive, &owned, &containers, &networks, &volumes, &dirs, options, &mut report)?;
    }
    Ok(report)
}

fn lock_held(store: &Store, name: &InstanceName) -> bool {
    // A lock we cannot even test is treated as held: the session may be live.
    name_lock_held(&store.name_lock_path(name)).unwrap_or(true)
}

fn row_matches(row: &IndexRow, manifest: &Manifest) -> bool {
    let fresh = IndexRow::from_manifest(manifest);
    row.instance_id == fresh.instance_id
        && row.workspace_name == fresh.workspace_name
        && row.workspace_label == fresh.workspace_label
        && row.workdir == fresh.workdir
        && row.role_key == fresh.role_key
        && row.agent_runtime == fresh.agent_runtime
        && row.status == fresh.status
        && row.updated_at == fresh.updated_at
}

/// Why an exited role container ended: `killed_by_host` or `container_exited`, with the evidence.
fn judge_exit(
    engine: &Engine,
    manifest: &Manifest,
    by_name: &HashMap<&str, &ContainerBrief>,
    clock: &Clock,
    now: &str,
) -> Result<Option<(&'static str, Value)>> {
    let role_name = &manifest.docker.role_container;
    let Some(role) = engine.inspect(role_name)? else { return Ok(None) };
    let sidecar_name = manifest.docker.dind_container.as_deref();
    let sidecar = match sidecar_name {
        Some(name) if by_name.contains_key(name) => engine.inspect(name)?.map(|d| d.state),
        _ => None,
    };
    let ended = Ended {
        role: role.state.clone(),
        sidecar: sidecar.clone(),
        host_boot: clock.host_boot,
        engine_started: clock.engine_started,
    };
    let sign = host_kill_sign(&ended);
    let evidence = json!({
        "sign": sign,
        "role": state_evidence(role_name, Some(&role.state)),
        "sidecar": sidecar_name.map(|n| state_evidence(n, sidecar.as_ref())),
        "host_boot_time": clock.host_boot.map(rfc3339),
        "engine_started_at": clock.engine_started.map(rfc3339),
        "engine": clock.engine,
        "observed_at": now,
    });
    Ok(Some((if sign.is_some() { "killed_by_host" } else { "container_exited" }, evidence)))
}

/// Writes one status change: the evidence into the tools' own file, then the status (manifest,
/// then index). Returns false when the manifest no longer holds the status the change was
/// decided on (another program got there first).
fn apply(store: &Store, p: &Planned, options: &Options, now: &str) -> Result<bool> {
    let current = store.read_manifest(&p.name)?.map(|m| m.status);
    if current.as_deref() != Some(p.from.as_str()) {
        return Ok(false);
    }
    if options.dry_run {
        return Ok(true);
    }
    continuity::update(store, &p.name, |c| {
        c.cause = Some(p.cause.to_owned());
        c.evidence = Some(p.evidence.clone());
        c.history.push(HistoryEntry {
            at: now.to_owned(),
            tool: options.tool.to_owned(),
            from: p.from.to_string(),
            to: p.to.to_string(),
            cause: p.cause.to_owned(),
            evidence: p.evidence.clone(),
        });
        Ok(((), true))
    })?;
    store.set_status(&p.name, p.to, now)?;
    Ok(true)
}

/// Data directories whose names are instance names.
fn instance_dirs(store: &Store) -> Result<BTreeSet<InstanceName>> {
    let data = store.data_dir();
    let mut dirs = BTreeSet::new();
    let entries = match std::fs::read_dir(&data) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(dirs),
        Err(e) => return Err(e).with_context(|| format!("listing {}", data.display())),
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", data.display()))?;
        let Some(text) = entry.file_name().to_str().map(str::to_owned) else { continue };
        if is_valid_name(&text) && entry.file_type().is_ok_and(|t| t.is_dir()) {
            dirs.insert(InstanceName::parse(&text)?);
        }
    }
    Ok(dirs)
}

/// The index; one that does not parse is moved aside to `instances.json.corrupt-<time>` and
/// rebuilt from the manifests (state.md: never silently replaced). A readable index of another
/// version is an error and is never rewritten.
fn load_index(store: &Store, dirs: &BTreeSet<InstanceName>, options: &Options, report: &mut Report) -> Result<Index> {
    let path = store.index_path();
    let parse = || -> Result<std::result::Result<Index, String>> {
        match std::fs::read(&path) {
            Ok(bytes) => Ok(serde_json::from_slice::<Index>(&bytes).map_err(|e| e.to_string())),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(Ok(Index::default())),
            Err(e) => {
                Err(Exit::Unavailable.wrap(anyhow::Error::new(e).context(format!("cannot read {}", path.display()))))
            }
        }
    };
    let check = |index: Index| -> Result<Index> {
        if index.version != 1 {
            return Err(Exit::Unavailable.err(format_args!(
                "{}: unsupported index version {} (expected 1); not touching it",
                path.display(),
                index.version
            )));
        }
        Ok(index)
    };
    let why = match parse()? {
        Ok(index) => return check(index),
        Err(why) => why,
    };
    let rebuild = || {
        let mut index = Index::default();
        for name in dirs {
            if let Ok(Some(manifest)) = store.read_manifest(name) {
                index.upsert(IndexRow::from_manifest(&manifest));
            }
        }
        index
    };
    let stamp = now_rfc3339().replace([':', '-'], "");
    let moved_to = path.with_file_name(format!("instances.json.corrupt-{stamp}"));
    if options.dry_run {
        report.repairs.push(Repair {
            kind: "index_rebuilt".into(),
            name: path.display().to_string(),
            reason: format!("the index does not parse ({why}); it would be moved aside and rebuilt from the manifests"),
            moved_to: Some(moved_to.display().to_string()),
            dry_run: true,
        });
        return Ok(rebuild());
    }
    let _lock = IndexLock::acquire(&store.index_lock_path(), Duration::from_secs(10))?;
    // Another reconcile may have rebuilt it while we waited for the lock.
    if let Ok(index) = parse()? {
        return check(index);
    }
    std::fs::rename(&path, &moved_to).with_context(|| format!("moving the corrupt index to {}", moved_to.display()))?;
    let index = rebuild();
    write_json_atomic(&path, &index).context("writing the rebuilt index")?;
    report.repairs.push(Repair {
        kind: "index_rebuilt".into(),
        name: path.display().to_string(),
        reason: format!(
            "the index did not parse ({why}); moved aside and rebuilt from {} manifests",
            index.instances.len()
        ),
        moved_to: Some(moved_to.display().to_string()),
        dry_run: false,
    });
    Ok(index)
}

fn select(
    selection: &Selection,
    rows: &BTreeMap<InstanceName, IndexRow>,
    dirs: &BTreeSet<InstanceName>,
    report: &mut Report,
) -> Vec<InstanceName> {
    let known: BTreeSet<&InstanceName> = rows.keys().chain(dirs.iter()).collect();
    let mut names: Vec<InstanceName> = Vec::new();
    let mut add = |name: &InstanceName| {
        if !names.contains(name) {
            names.push(name.clone());
        }
    };
    match selection {
        Selection::All => known.iter().for_each(|n| add(n)),
        Selection::Instances(wanted) => wanted.iter().filter(|n| known.contains(n)).for_each(add),
        Selection::Args(args) => {
            for arg in args {
                let fail = |code: &'static str, message: String| Failure {
                    container_base: Some(arg.clone()),
                    code,
                    error: anyhow::anyhow!(message),
                };
                if let Err(why) = check_arg(arg) {
                    report.failures.push(fail(why.code, why.message));
                    continue;
                }
                let matches: Vec<&&InstanceName> = if arg.starts_with("jk-") {
                    known.iter().filter(|n| n.as_str() == arg).collect()
                } else {
                    known.iter().filter(|n| n.instance_id().starts_with(arg.as_str())).collect()
                };
                match matches.as_slice() {
                    [] => report.failures.push(fail("unknown_instance", format!("no instance named {arg}"))),
                    [one] => add(one),
                    many => report.failures.push(fail(
                        "ambiguous",
                        format!(
                            "{arg} names {} instances: {}",
                            many.len(),
                            many.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
                        ),
                    )),
                }
            }
        }
    }
    names
}

/// Restores, refreshes and drops rows in one index update. Each case is checked again under the
/// lock against the manifest as it is now, so a launch or a status change in between wins.
fn repair_rows(
    store: &Store,
    repairs: &[(InstanceName, &'static str)],
    options: &Options,
    report: &mut Report,
) -> Result<()> {
    if repairs.is_empty() {
        return Ok(());
    }
    let reason = |kind: &str| match kind {
        "row_restored" => "a data dir with a manifest but no index row: row restored from the manifest",
        "row_refreshed" => "the index row did not match the manifest: row rewritten from the manifest",
        _ => "neither the data dir nor the container exists: row dropped",
    };
    let record = |name: &InstanceName, kind: &str| Repair {
        kind: kind.to_owned(),
        name: name.to_string(),
        reason: reason(kind).to_owned(),
        moved_to: None,
        dry_run: options.dry_run,
    };
    if options.dry_run {
        report.repairs.extend(repairs.iter().map(|(name, kind)| record(name, kind)));
        return Ok(());
    }
    let done = store.update_index(|index| {
        let mut done = Vec::new();
        for (name, kind) in repairs {
            let applied = if *kind == "row_dropped" {
                !store.instance_dir(name).exists() && index.remove(name.as_str())
            } else {
                match store.read_manifest(name) {
                    Ok(Some(manifest)) => {
                        let needed = index.row(name.as_str()).is_none_or(|row| !row_matches(row, &manifest));
                        if needed {
                            index.upsert(IndexRow::from_manifest(&manifest));
                        }
                        needed
                    }
                    _ => false,
                }
            };
            if applied {
                done.push(record(name, kind));
            }
        }
        let changed = !done.is_empty();
        Ok((done, changed))
    })?;
    report.repairs.extend(done);
    Ok(())
}

/// The launch recipe of every running session that has none yet, so that a later loss can
/// still be recreated. Names and sources of the environment only (tools::capture).
fn capture_recipes(
    engine: &Engine,
    store: &Store,
    live: &[(InstanceName, Manifest)],
    options: &Options,
    report: &mut Report,
) {
    for (name, manifest) in live {
        let result = (|| -> Result<bool> {
            if continuity::read(store, name)?.recipe.is_some() {
                return Ok(false);
            }
            let Some(recipe) = crate::tools::capture::capture(engine, store, name, &manifest.docker, options.tool)?
            else {
                return Ok(false);
            };
            continuity::update(store, name, |c| {
                if c.recipe.is_some() {
                    return Ok((false, false));
                }
                c.recipe = Some(recipe);
                Ok((true, true))
            })
        })();
        match result {
            Ok(true) => report.recipes_captured.push(name.to_string()),
            Ok(false) => {}
            Err(e) => report.failures.push(Failure {
                container_base: Some(name.to_string()),
                code: "recipe_capture_failed",
                error: e,
            }),
        }
    }
}

/// Docker resource names that some manifest records (an adopted prewarmed sidecar keeps a name
/// that cannot be derived).
fn owned_resources(seen: &[Seen]) -> BTreeSet<String> {
    let mut owned = BTreeSet::new();
    for s in seen {
        if let Ok(Some(m)) = &s.manifest {
            owned.insert(m.docker.role_container.clone());
            owned.insert(m.docker.network.clone());
            owned.extend(m.docker.dind_container.clone());
            owned.extend(m.docker.certs_volume.clone());
        }
    }
    owned
}

/// The instance a labelled Docker resource belongs to: its `jackin.role` label, else its name
/// without jackin's suffix. `None` when that is no instance name (a prewarmed sidecar).
fn instance_of(name: &str, labels: &BTreeMap<String, String>, suffix: &str) -> Option<InstanceName> {
    let base = labels.get("jackin.role").map(String::as_str).or_else(|| name.strip_suffix(suffix)).unwrap_or(name);
    InstanceName::parse(base).ok()
}

#[allow(clippy::too_many_arguments)]
fn find_orphans(
    store: &Store,
    alive: &BTreeSet<InstanceName>,
    owned: &BTreeSet<String>,
    containers: &[ContainerBrief],
    networks: &[(String, BTreeMap<String, String>)],
    volumes: &[(String, BTreeMap<String, String>)],
    dirs: &BTreeSet<InstanceName>,
    options: &Options,
    report: &mut Report,
) -> Result<()> {
    let gone = |instance: &InstanceName| !alive.contains(instance) && !lock_held(store, instance);
    let orphan = |kind: &str, name: &str, reason: String| Orphan {
        kind: kind.to_owned(),
        name: name.to_owned(),
        reason,
        dry_run: options.dry_run,
    };
    let why = |instance: &InstanceName| format!("its instance {instance} no longer exists (no data dir, no index row)");
    for c in containers {
        if owned.contains(&c.name) {
            continue;
        }
        let suffix = if c.labels.get("jackin.kind").is_some_and(|k| k == "dind") { "-dind" } else { "" };
        if let Some(instance) = instance_of(&c.name, &c.labels, suffix) {
            if gone(&instance) {
                report.orphans.push(orphan("container", &c.name, why(&instance)));
            }
        }
    }
    for (name, labels) in networks {
        if owned.contains(name) {
            continue;
        }
        if let Some(instance) = instance_of(name, labels, "-net") {
            if gone(&instance) {
                report.orphans.push(orphan("network", name, why(&instance)));
            }
        }
    }
    for (name, labels) in volumes {
        let jackins = name.ends_with("-dind-certs") || labels.get("jackin.managed").is_some_and(|v| v == "true");
        if !jackins || owned.contains(name) {
            continue;
        }
        if let Some(instance) = instance_of(name, labels, "-dind-certs") {
            if gone(&instance) {
                report.orphans.push(orphan("volume", name, why(&instance)));
            }
        }
    }

    let data = store.data_dir();
    let entries = match std::fs::read_dir(&data) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", data.display())),
    };
    for entry in entries.flatten() {
        let Some(file) = entry.file_name().to_str().map(str::to_owned) else { continue };
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        // Only `<container>.lock`: jackin's other locks (`instances.json.lock`, `*.repo.lock`,
        // `caffeinate.lock`, …) never have an instance name as their stem.
        if let Some(instance) = file.strip_suffix(".lock").and_then(|stem| InstanceName::parse(stem).ok()) {
            if gone(&instance) {
                report.orphans.push(orphan(
                    "name_lock",
                    instance.as_str(),
                    format!("unheld name lock {file} of an instance that no longer exists"),
                ));
            }
        } else if let Some(pid) = temp_file_pid(&file) {
            if !pid_alive(pid) {
                report.orphans.push(orphan(
                    "temp_file",
                    &file,
                    format!("temp file of an atomic write by process {pid}, which is gone"),
                ));
            }
        }
    }
    for dir in dirs {
        let meta = store.meta_dir(dir);
        let Ok(entries) = std::fs::read_dir(&meta) else { continue };
        for entry in entries.flatten() {
            let Some(file) = entry.file_name().to_str().map(str::to_owned) else { continue };
            if let Some(pid) = temp_file_pid(&file) {
                if !pid_alive(pid) && entry.file_type().is_ok_and(|t| t.is_file()) {
                    let name = format!("{dir}/.jackin/{file}");
                    report.orphans.push(orphan(
                        "temp_file",
                        &name,
                        format!("temp file of an atomic write by process {pid}, which is gone"),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The writer's pid of a temp file named `<file>.tmp.<pid>.<n>` (state.md, "Writing files").
pub fn temp_file_pid(file: &str) -> Option<u32> {
    let (rest, n) = file.rsplit_once('.')?;
    let (rest, pid) = rest.rsplit_once('.')?;
    let (target, tmp) = rest.rsplit_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if tmp != "tmp" || target.is_empty() || !digits(n) || !digits(pid) {
        return None;
    }
    pid.parse().ok()
}

/// Whether a process with this pid exists (a signal 0 reaches it, or it is someone else's).
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The engine events that can change what an instance's row should say.
pub const WATCHED_EVENTS: [&str; 4] = ["die", "destroy", "start", "oom"];

/// Follows the engine's events and reconciles the instance each one concerns, after one full
/// pass; reconnects with backoff when the engine goes away (and makes a full pass again, since
/// events were missed). Returns when `stop` is set. `sink` gets every report; `say` the notices.
pub fn watch(
    store: &Store,
    options: &Options,
    stop: &AtomicBool,
    mut sink: impl FnMut(Report) -> Result<()>,
    mut say: impl FnMut(String),
) -> Result<()> {
    const POLL: Duration = Duration::from_millis(250);
    const SETTLE: Duration = Duration::from_millis(500);
    const MAX_BACKOFF: Duration = Duration::from_secs(30);
    let mut backoff = Duration::from_secs(1);
    let mut connected_once = false;
    let pause = |wait: Duration| {
        let until = std::time::Instant::now() + wait;
        while std::time::Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(POLL.min(until.saturating_duration_since(std::time::Instant::now())));
        }
    };
    while !stop.load(Ordering::Relaxed) {
        let engine = match Engine::connect() {
            Ok(engine) => engine,
            Err(e) if !connected_once => return Err(e),
            Err(e) => {
                say(format!("{e:#}; retrying in {}s", backoff.as_secs()));
                pause(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        connected_once = true;
        let mut events = engine.subscribe_events(&WATCHED_EVENTS);
        // Sends the subscription before the full pass, so nothing between the two is lost.
        if let Err(e) = engine.next_event(&mut events, Duration::from_millis(200)) {
            say(format!("{e:#}; reconnecting"));
            pause(backoff);
            backoff = (backoff * 2).min(MAX_BACKOFF);
            continue;
        }
        match reconcile(&engine, store, &Selection::All, options) {
            Ok(report) => sink(report)?,
            Err(e) => {
                say(format!("{e:#}; retrying in {}s", backoff.as_secs()));
                pause(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        }
        backoff = Duration::from_secs(1);
        say("watching the engine's events".to_owned());
        'events: while !stop.load(Ordering::Relaxed) {
            let mut affected: Vec<InstanceName> = Vec::new();
            let mut wait = POLL;
            let gathering = std::time::Instant::now();
            // The engine sends `die` before its container list shows the exit, so the events of
            // a moment are gathered (which also coalesces a burst) before one reconciliation.
            loop {
                match engine.next_event(&mut events, wait) {
                    Ok(Some(event)) => {
                        say(format!("event: {} {}", event.action, event.name));
                        let dind = event.labels.get("jackin.kind").is_some_and(|k| k == "dind");
                        if let Some(instance) = instance_of(&event.name, &event.labels, if dind { "-dind" } else { "" })
                        {
                            if !affected.contains(&instance) {
                                affected.push(instance);
                            }
                        }
                        wait = SETTLE;
                        // A burst that never pauses is still reconciled every few seconds.
                        if gathering.elapsed() >= Duration::from_secs(5) {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        say(format!("{e:#}; reconnecting"));
                        break 'events;
                    }
                }
            }
            if affected.is_empty() {
                continue;
            }
            match reconcile(&engine, store, &Selection::Instances(affected), options) {
                Ok(report) => sink(report)?,
                Err(e) => {
                    say(format!("{e:#}; reconnecting"));
                    break;
                }
            }
        }
    }
    Ok(())
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
        assert_eq!(host_kill_sign(&base), Some("role_and_sidecar_exited_255"));
        let other_engine = Ended { sidecar: Some(exited(0, t0, t1)), ..base.clone() };
        assert_eq!(host_kill_sign(&other_engine), Some("role_255_sidecar_0"));
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
        assert_eq!(host_kill_sign(&restarted), Some("engine_restarted_after_start"));
        let later_exit = Ended { role: exited(1, t0, "2026-11-29T13:00:00Z"), ..restarted.clone() };
        assert_eq!(host_kill_sign(&later_exit), None, "an exit long after the engine came back is the session's own");
        let rebooted = Ended {
            role: exited(0, t0, t1),
            sidecar: None,
            host_boot: at("2026-11-29T10:30:00Z"),
            engine_started: None,
        };
        assert_eq!(host_kill_sign(&rebooted), Some("host_rebooted_after_start"));
        let mut oom = base.clone();
        oom.role.oom_killed = true;
        assert_eq!(host_kill_sign(&oom), None);
    }

    #[test]
    fn temp_file_names() {
        assert_eq!(temp_file_pid("instances.json.tmp.4242.0"), Some(4242));
        assert_eq!(temp_file_pid("instance.json.tmp.7.12"), Some(7));
        assert_eq!(temp_file_pid("instances.json.lock"), None);
        assert_eq!(temp_file_pid(".tmp.1.2"), None);
        assert_eq!(temp_file_pid("x.tmp.a.2"), None);
        assert!(pid_alive(std::process::id()));
    }
}
