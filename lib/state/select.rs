//! Which instances a command line or a record stream names.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use anyhow::Result;

use crate::state::model::{Index, IndexRow};
use crate::state::names::{is_id_prefix, InstanceName, MIN_ID_PREFIX};
use crate::state::store::Store;

/// What to try after a name that is no session's: the listings that show every name there is.
const LISTING_HINT: &str =
    " (every session: `jackin-assess --all --format text`; the resumable ones: `jackin-restore --list`)";

/// An instance to act on, with its index row when it has one.
#[derive(Debug, Clone)]
pub struct Target {
    pub name: InstanceName,
    pub row: Option<IndexRow>,
}

/// Why an argument names no instance; the `error` record's code is named after `code`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    pub code: Unresolvable,
    pub(crate) message: String,
}

/// The ways an argument can fail to name one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresolvable {
    /// Not an instance name or id at all.
    BadName,
    /// A name or id of no instance this home knows.
    UnknownInstance,
    /// An id prefix of more than one instance.
    Ambiguous,
    /// jackin's `purged` tombstone: a row whose session jackin removed (real-host.md, "Tombstones
    /// are jackin's"). Nothing is left to act on, and the row is jackin's to prune.
    Tombstone,
}

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Unresolved {}

/// Every instance the host knows: index rows and per-instance data directories.
#[derive(Debug)]
pub struct Catalog {
    pub(crate) index: Index,
    known: BTreeMap<InstanceName, Option<IndexRow>>,
    /// Index rows whose `container_base` is not a valid name: never used as a path.
    pub(crate) invalid_rows: Vec<String>,
    /// Every data directory whose name is an instance name, with a manifest or not.
    pub(crate) dirs: BTreeSet<InstanceName>,
}

impl Catalog {
    /// The instances of the index and of the data directories that hold a manifest.
    pub(crate) fn load(store: &Store) -> Result<Self> {
        let index = store.read_index()?;
        let dirs = store.instance_dirs()?;
        let with_manifest: Vec<InstanceName> =
            dirs.iter().filter(|name| store.manifest_path(name).exists()).cloned().collect();
        Ok(Catalog::build(index, dirs, with_manifest))
    }

    /// Over an index already read, every data directory counting as an instance, with a manifest
    /// or not: reconcile's view, where a directory alone keeps its row from being dropped and a
    /// manifest that cannot be read is reported, not passed over.
    pub(crate) fn over_every_dir(index: Index, dirs: BTreeSet<InstanceName>) -> Self {
        let listed: Vec<InstanceName> = dirs.iter().cloned().collect();
        Catalog::build(index, dirs, listed)
    }

    fn build(index: Index, dirs: BTreeSet<InstanceName>, listed: Vec<InstanceName>) -> Self {
        let mut known = BTreeMap::new();
        let mut invalid_rows = Vec::new();
        for row in &index.instances {
            match InstanceName::parse(&row.container_base) {
                Ok(name) => {
                    known.entry(name).or_insert_with(|| Some(row.clone()));
                }
                Err(_) => invalid_rows.push(row.container_base.clone()),
            }
        }
        for name in listed {
            known.entry(name).or_insert(None);
        }
        Catalog { index, known, invalid_rows, dirs }
    }

    /// Every known instance, in name order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &InstanceName> {
        self.known.keys()
    }

    pub(crate) fn is_known(&self, name: &InstanceName) -> bool {
        self.known.contains_key(name)
    }

    /// The first index row of an instance.
    pub(crate) fn row(&self, name: &InstanceName) -> Option<&IndexRow> {
        self.known.get(name).and_then(Option::as_ref)
    }

    /// Whether the instance is only jackin's `purged` tombstone: its row says `purged` and it
    /// has no data directory.
    pub(crate) fn is_tombstone(&self, name: &InstanceName) -> bool {
        self.row(name).is_some_and(IndexRow::says_purged) && !self.dirs.contains(name)
    }

    /// Every instance: index rows in index order (newest first), then data directories that have
    /// a manifest but no row. jackin's tombstones are not instances to act on.
    pub fn all(&self) -> Vec<Target> {
        let mut targets: Vec<Target> = Vec::new();
        // A name's first row only, found in a set: a search of the list per row was quadratic.
        let mut seen = std::collections::HashSet::new();
        for row in &self.index.instances {
            if let Ok(name) = InstanceName::parse(&row.container_base) {
                if !self.is_tombstone(&name) && seen.insert(name.clone()) {
                    targets.push(Target { name, row: Some(row.clone()) });
                }
            }
        }
        for (name, row) in &self.known {
            if row.is_none() {
                targets.push(Target { name: name.clone(), row: None });
            }
        }
        targets
    }

    /// A container name, an instance id, or a unique id prefix of 4+ characters; a tombstone is
    /// named as one.
    pub fn resolve(&self, arg: &str) -> Result<Target, Unresolved> {
        let target = self.resolve_including_tombstones(arg)?;
        if self.is_tombstone(&target.name) {
            return Err(Unresolved {
                code: Unresolvable::Tombstone,
                message: format!(
                    "{} was purged: its row is jackin's tombstone, with nothing left to assess, keep, resume or \
                     delete (jackin's `prune instances` removes it)",
                    target.name
                ),
            });
        }
        Ok(target)
    }

    /// [`Catalog::resolve`] that takes a tombstone for an instance: reconcile's view of the index,
    /// and what jackin-purge finishes when it is named.
    pub fn resolve_including_tombstones(&self, arg: &str) -> Result<Target, Unresolved> {
        check_arg(arg)?;
        if arg.starts_with("jk-") {
            let name = InstanceName::parse(arg)
                .map_err(|e| Unresolved { code: Unresolvable::BadName, message: format!("{e:#}") })?;
            return match self.known.get(&name) {
                Some(row) => Ok(Target { name, row: row.clone() }),
                None => Err(Unresolved {
                    code: Unresolvable::UnknownInstance,
                    message: format!("no instance named {arg}{LISTING_HINT}"),
                }),
            };
        }
        let matches: Vec<(&InstanceName, &Option<IndexRow>)> =
            self.known.iter().filter(|(name, _)| name.instance_id().starts_with(arg)).collect();
        match matches.as_slice() {
            [] => Err(Unresolved {
                code: Unresolvable::UnknownInstance,
                message: format!("no instance with id {arg}{LISTING_HINT}"),
            }),
            [(name, row)] => Ok(Target { name: (*name).clone(), row: (*row).clone() }),
            many => Err(Unresolved {
                code: Unresolvable::Ambiguous,
                message: format!(
                    "{arg} names {} instances: {}",
                    many.len(),
                    many.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
                ),
            }),
        }
    }
}

/// Whether an argument could name an instance at all; checked before anything is looked up, so
/// a path-like argument is refused without touching the disk.
pub(crate) fn check_arg(arg: &str) -> Result<(), Unresolved> {
    if arg.starts_with("jk-") {
        return InstanceName::parse(arg)
            .map(|_| ())
            .map_err(|e| Unresolved { code: Unresolvable::BadName, message: format!("{e:#}") });
    }
    if is_id_prefix(arg) {
        return Ok(());
    }
    Err(Unresolved {
        code: Unresolvable::BadName,
        message: format!(
            "not an instance name or id: {arg:?} (a container name jk-…, or {MIN_ID_PREFIX}+ \
             lowercase letters and digits of an instance id)"
        ),
    })
}
