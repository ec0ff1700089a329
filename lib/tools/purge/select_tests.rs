//! Which instances a purge picks, from catalogs and homes built here: retention per group, the
//! terminal selection, the slims that are due, and the leftovers named on the command line. A
//! slip in any of these picks a session the operator meant to keep.

use std::collections::BTreeSet;
use std::fs;
use std::time::{Duration, SystemTime};

use serde_json::json;

use super::*;
use crate::base::time::rfc3339;
use crate::state::continuity::{self, Slimmed};
use crate::state::model::{Index, IndexRow};
use crate::state::store::Roots;

const DAY: Duration = Duration::from_secs(86_400);

/// A row of `workspace`'s agent, last updated `days` ago (`None`: a time that does not parse).
fn row(name: &str, status: &str, days: Option<f64>, workspace: &str, role: &str) -> IndexRow {
    let updated = days.map_or("yesterday".to_owned(), |d| rfc3339(SystemTime::now() - DAY.mul_f64(d)));
    serde_json::from_value(json!({
        "instance_id": InstanceName::parse(name).unwrap().instance_id(), "container_base": name,
        "workspace_name": workspace, "workspace_label": workspace, "workdir": "/workspace/app",
        "role_key": role, "agent_runtime": "claude", "status": status, "updated_at": updated,
    }))
    .unwrap()
}

/// Rows in an order that is not newest first: the selection ranks by `updated_at`, not by place.
fn catalog() -> Catalog {
    let rows = vec![
        row("jk-00000002-app-smith", "restore_available", Some(2.0), "app", "smith"),
        row("jk-00000005-web-smith", "preserved_dirty", Some(5.0), "web", "smith"),
        row("jk-00000003-app-smith", "preserved_unpushed", Some(3.0), "app", "smith"),
        row("jk-0000000a-app-smith", "active", Some(10.0), "app", "smith"),
        row("jk-00000001-app-smith", "preserved_dirty", Some(1.0), "app", "smith"),
        row("jk-00000004-app-neo", "preserved_dirty", Some(4.0), "app", "neo"),
        row("jk-0000000b-app-smith", "clean_exited", Some(11.0), "app", "smith"),
        row("jk-0000000c-app-smith", "superseded", Some(12.0), "app", "smith"),
        row("jk-0000000d-app-smith", "failed_setup", Some(13.0), "app", "smith"),
        row("jk-0000000e-app-smith", "preserved_dirty", None, "app", "smith"),
    ];
    Catalog::over_every_dir(Index { version: 1, instances: rows, extra: Default::default() }, BTreeSet::new())
}

/// The picked instances' ids (`00000003`), in the order a run acts on them.
fn picked(items: &[Item<'_>]) -> Vec<String> {
    items
        .iter()
        .map(|item| match item {
            Item::Instance(request) => request.target.name.instance_id().to_owned(),
            other => panic!("not an instance: {other:?}"),
        })
        .collect()
}

fn ids(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| format!("{id:0>8}")).collect()
}

fn select(terminal: bool, older_than_days: Option<f64>, keep_last: Option<usize>) -> Vec<Item<'static>> {
    items_from_catalog(
        &catalog(),
        Selection { terminal, older_than: older_than_days.map(|d| DAY.mul_f64(d)), keep_last },
    )
}

#[test]
fn keep_last_keeps_the_newest_of_each_workspace_role_and_agent() {
    // app/smith's kept rows, newest first as jackin orders its index (`updated_at` in plain
    // string order, state.md), which puts e's time that does not parse first: e, 1, 2, 3.
    // app/neo has one (4), web/smith one (5). Never an active or a terminal row.
    assert_eq!(picked(&select(false, None, Some(1))), ids(&["1", "2", "3"]));
    assert_eq!(picked(&select(false, None, Some(2))), ids(&["2", "3"]));
    assert_eq!(picked(&select(false, None, Some(0))), ids(&["e", "1", "2", "3", "4", "5"]));
    assert_eq!(picked(&select(false, None, Some(4))), ids(&[]));
}

#[test]
fn older_than_picks_kept_rows_last_updated_longer_ago() {
    assert_eq!(picked(&select(false, Some(2.5), None)), ids(&["3", "4", "5"]));
    assert_eq!(picked(&select(false, Some(30.0), None)), ids(&[]));
    // With both, both must hold: beyond the newest one of its group and older than 2.5 days.
    assert_eq!(picked(&select(false, Some(2.5), Some(1))), ids(&["3"]));
}

#[test]
fn without_a_rule_nothing_kept_is_picked_and_terminal_picks_the_finished_ones() {
    assert_eq!(picked(&select(false, None, None)), ids(&[]));
    let terminal = select(true, None, None);
    assert_eq!(picked(&terminal), ids(&["b", "c", "d"]));
    let only_if_clean: Vec<bool> =
        terminal.iter().map(|item| matches!(item, Item::Instance(r) if r.only_if_clean)).collect();
    assert_eq!(only_if_clean, [false, false, true], "a failed setup is purged only when verified clean");
}

fn home() -> (tempfile::TempDir, Store) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    fs::create_dir_all(home.join("data")).unwrap();
    let store = Store::open(Roots { home: home.clone(), config_dir: home }).unwrap();
    (tmp, store)
}

fn slimmed(store: &Store, name: &str, days_ago: f64) {
    let name = InstanceName::parse(name).unwrap();
    fs::create_dir_all(store.continuity_path(&name).parent().unwrap()).unwrap();
    let at = rfc3339(SystemTime::now() - DAY.mul_f64(days_ago));
    continuity::update(store, &name, |c| {
        c.slimmed = Some(Slimmed { at, freed_bytes: 1 });
        Ok(((), true))
    })
    .unwrap();
}

#[test]
fn a_kept_session_is_slimmed_once_after_each_time_it_is_kept() {
    let (_tmp, store) = home();
    // 5 was slimmed after it was last kept; 3 was slimmed before.
    slimmed(&store, "jk-00000005-web-smith", 1.0);
    slimmed(&store, "jk-00000003-app-smith", 4.0);
    assert_eq!(picked(&items_kept(&catalog(), &store, None)), ids(&["e", "1", "2", "3", "4", "5"]));
    assert_eq!(picked(&items_kept(&catalog(), &store, Some(DAY.mul_f64(2.5)))), ids(&["3", "4"]));
    assert_eq!(picked(&items_kept(&catalog(), &store, Some(DAY.mul_f64(30.0)))), ids(&[]));
}

#[test]
fn a_name_on_the_command_line_is_picked_once_and_leftovers_alone_are_finished() {
    let (_tmp, store) = home();
    let lock = InstanceName::parse("jk-0000f001-app-smith").unwrap();
    let sockets = InstanceName::parse("jk-0000f002-app-smith").unwrap();
    let import = InstanceName::parse("jk-0000f003-app-smith").unwrap();
    fs::write(store.name_lock_path(&lock), "").unwrap();
    fs::create_dir_all(store.socket_dir(&sockets)).unwrap();
    fs::create_dir_all(store.imports_dir().join(format!(".partial-{import}-4242"))).unwrap();
    // Not an import's unpacking directory: no process id after the name.
    fs::create_dir_all(store.imports_dir().join(".partial-jk-0000f004-app-smith-")).unwrap();
    let args: Vec<String> = [
        "jk-00000003-app-smith",
        "jk-0000f001-app-smith",
        "jk-00000003-app-smith",
        "jk-0000f002-app-smith",
        "jk-0000f003-app-smith",
        "jk-0000f004-app-smith",
        "jk-0000f005-app-smith",
    ]
    .map(str::to_owned)
    .into();
    let items = items_from_args(&args, &catalog(), &store);
    let kinds: Vec<String> = items
        .iter()
        .map(|item| match item {
            Item::Instance(r) => {
                format!("{} {}", r.target.name, if r.target.row.is_some() { "row" } else { "leftovers" })
            }
            Item::Unresolved { arg, .. } => format!("{arg} unresolved"),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "jk-00000003-app-smith row",
            "jk-0000f001-app-smith leftovers",
            "jk-0000f002-app-smith leftovers",
            "jk-0000f003-app-smith leftovers",
            "jk-0000f004-app-smith unresolved",
            "jk-0000f005-app-smith unresolved",
        ]
    );
    assert!(items.iter().take(4).all(Item::is_work) && !items[4].is_work(), "an unresolved name is not work");
}

/// `--older-than` and `--slim-older-than` pick a row only once the whole age has passed since it
/// was last updated: at the very instant it is that old, it is not older yet.
#[test]
fn a_row_is_older_than_the_age_only_after_the_age_has_passed() {
    let (_tmp, store) = home();
    let mut old = row("jk-00000001-app-smith", "preserved_dirty", None, "app", "smith");
    old.updated_at = "2026-01-01T00:00:00Z".to_owned();
    let updated = crate::base::time::parse_rfc3339(&old.updated_at).unwrap();
    let catalog = || {
        let index = Index { version: 1, instances: vec![old.clone()], extra: Default::default() };
        Catalog::over_every_dir(index, BTreeSet::new())
    };
    let retention = Selection { older_than: Some(DAY), ..Default::default() };
    let at = |now| picked(&items_from_catalog_at(&catalog(), retention, now));
    let slims = |now| picked(&items_kept_at(&catalog(), &store, Some(DAY), now));
    for (now, expected) in [(updated + DAY, ids(&[])), (updated + DAY + Duration::from_nanos(1), ids(&["1"]))] {
        assert_eq!(at(now), expected, "retention as of {}", rfc3339(now));
        assert_eq!(slims(now), expected, "slims as of {}", rfc3339(now));
    }
}
