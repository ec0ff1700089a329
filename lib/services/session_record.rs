//! The record a purge leaves of a session before it removes the session's data directory
//! (protocol/records/session.rs): written into `<home>/records/.partial-<c>-<pid>/`, then renamed
//! to `<home>/records/<c>/` in one step, so a record is there whole or not at all. A rerun that
//! finds it leaves it as it is. Purge, the only deleter, removes it when it expires.
//!
//! The agent's conversation logs are copied out of its home (`data/<c>/home/`, the paths of
//! [`CONVERSATION_PATHS`] or the operator's), byte for byte: regular files only, never through a
//! link (a link anywhere on the way is left out and said), each opened without following a link
//! and without waiting on a FIFO, up to a cap on their apparent sizes (a sparse file that claims a
//! terabyte is left out, not copied hole by hole).

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use rustix::fs::{Mode, OFlags};

use crate::base::time::{parse_rfc3339, rfc3339};
use crate::engines::git;
use crate::protocol::assessment::Assessment;
use crate::protocol::identity::Identity;
use crate::protocol::records::{
    CommitFate, Conversation, CopiedFile, Launch, LaunchMount, SessionOutcome, SessionRecord, SkippedFile,
    StatusChange, Work, WorkMount,
};
use crate::state::model::StatusWord;
use crate::state::names::InstanceName;
use crate::state::store::Store;

/// Where the known agents keep their conversations, relative to the agent home.
pub const CONVERSATION_PATHS: &[&str] = &[
    ".claude/projects",
    ".codex/sessions",
    ".local/share/opencode/storage",
    ".local/share/amp",
    ".kimi/sessions",
    ".grok/sessions",
];

/// The conversation copy's cap, on the files' apparent sizes.
pub const DEFAULT_CONVERSATION_CAP: u64 = 64 * 1024 * 1024;

/// How long a record is kept.
pub const DEFAULT_RECORD_DAYS: u64 = 90;

/// Entries of the conversation a record names at most (copied or left out): an agent that made a
/// million empty files does not make a million-line record or a purge that never ends.
const MOST_CONVERSATION_ENTRIES: usize = 10_000;

/// The session's own commits listed per mount, at most.
const MOST_COMMITS: usize = 100;

#[derive(Debug, Clone)]
pub struct RecordOptions {
    pub days: u64,
    /// Relative to the agent home.
    pub conversation_paths: Vec<String>,
    pub conversation_cap: u64,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            days: DEFAULT_RECORD_DAYS,
            conversation_paths: CONVERSATION_PATHS.iter().map(|p| (*p).to_owned()).collect(),
            conversation_cap: DEFAULT_CONVERSATION_CAP,
        }
    }
}

/// Writes the record of `name` unless one is there; its directory. `None`: the session has no
/// data directory (nothing to record beyond what the purge's own record says).
pub(crate) fn write(
    store: &Store,
    name: &InstanceName,
    assessment: Option<&Assessment>,
    quarantine: Option<&str>,
    options: &RecordOptions,
) -> Result<Option<PathBuf>> {
    let instance_dir = store.instance_dir(name);
    if fs::symlink_metadata(&instance_dir).is_err() {
        return Ok(None);
    }
    let root = store.records_root();
    let done = store.session_record_dir(name);
    if done.join("record.json").exists() {
        return Ok(Some(done));
    }
    fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let partial = store.session_record_partial(name, std::process::id());
    if fs::symlink_metadata(&partial).is_ok() {
        fs::remove_dir_all(&partial).with_context(|| format!("cannot clear {}", partial.display()))?;
    }
    fs::create_dir(&partial).with_context(|| format!("cannot create {}", partial.display()))?;
    let conversation = copy_conversation(&store.agent_home_dir(name), &partial.join("conversation"), options)?;
    // On disk before the record is renamed into place, and so before purge deletes the originals
    // (on Linux one sync of the filesystem rather than one per file: base/os).
    crate::base::os::sync_written(&partial).with_context(|| format!("cannot sync {}", partial.display()))?;
    let record = build(store, name, assessment, quarantine, conversation, options)?;
    crate::state::store::write_json_atomic(&partial.join("record.json"), &record)?;
    if fs::symlink_metadata(&done).is_ok() {
        // A record without its record.json: a directory some earlier run could not finish.
        fs::remove_dir_all(&done).with_context(|| format!("cannot clear {}", done.display()))?;
    }
    fs::rename(&partial, &done).with_context(|| format!("cannot move the record into {}", done.display()))?;
    fs::File::open(&root).and_then(|d| d.sync_all()).with_context(|| format!("cannot sync {}", root.display()))?;
    Ok(Some(done))
}

fn build(
    store: &Store,
    name: &InstanceName,
    assessment: Option<&Assessment>,
    quarantine: Option<&str>,
    conversation: Conversation,
    options: &RecordOptions,
) -> Result<SessionRecord> {
    let now = SystemTime::now();
    let manifest = store.read_manifest(name).ok().flatten();
    let identity = match (&manifest, assessment) {
        (Some(m), _) => Identity::from_manifest(m),
        (None, Some(a)) => a.identity.clone(),
        (None, None) => Identity::of_name(name.as_str(), name.instance_id()),
    };
    let records = store.read_isolation(name).map(|i| i.mounts()).unwrap_or_default();
    let records: Vec<_> = records.into_iter().flatten().collect();
    let launch = Launch {
        image: manifest.as_ref().map(|m| m.image_tag.clone()).unwrap_or_default(),
        role: identity.role_key.clone(),
        workspace: identity.workspace_name.clone(),
        workdir: manifest.as_ref().map(|m| m.workdir.clone()).unwrap_or_default(),
        agent: identity.agent_runtime.clone(),
        mounts: records
            .iter()
            .map(|r| LaunchMount {
                dst: r.mount_dst.clone(),
                src: r.original_src.clone(),
                isolation: r.isolation.into(),
            })
            .collect(),
    };
    let created_at = manifest.as_ref().map(|m| m.created_at.clone()).unwrap_or_default();
    let duration_secs = parse_rfc3339(&created_at).and_then(|c| now.duration_since(c).ok()).map(|d| d.as_secs());
    let continuity = crate::state::continuity::read(store, name).unwrap_or_default();
    let outcome = SessionOutcome {
        created_at,
        ended_at: rfc3339(now),
        duration_secs,
        last_status: manifest.as_ref().map_or_else(|| StatusWord::of(""), |m| m.status.clone()),
        statuses: continuity
            .history
            .iter()
            .map(|h| StatusChange { at: h.at.clone(), from: h.from.clone(), to: h.to.clone(), cause: h.cause.clone() })
            .collect(),
    };
    let work = work(&records, assessment, quarantine);
    Ok(SessionRecord {
        identity,
        recorded_at: rfc3339(now),
        expires_at: rfc3339(now + Duration::from_secs(options.days * 86_400)),
        launch,
        outcome,
        work,
        conversation,
        path: None,
    })
}

/// Per mount, the session's own commits and what each became.
fn work(
    records: &[crate::state::model::IsolationRecord],
    assessment: Option<&Assessment>,
    quarantine: Option<&str>,
) -> Work {
    let integrated: Vec<&str> = assessment
        .into_iter()
        .flat_map(|a| a.mounts.iter())
        .flat_map(|m| m.integrated())
        .map(|i| i.commit.as_str())
        .collect();
    let mounts = records
        .iter()
        .map(|record| {
            let assessed = assessment.and_then(|a| a.mounts.iter().find(|m| m.mount_dst == record.mount_dst));
            let verdict = assessed.map_or(crate::protocol::assessment::Verdict::Unknown, |m| m.verdict);
            let commits = git::Repo::open(&record.worktree_path)
                .and_then(|repo| repo.session_commits(&record.base_commit, MOST_COMMITS));
            let (commits, unreadable) = match commits {
                Ok(commits) => (commits, None),
                Err(e) => (Vec::new(), Some(e.message().to_owned())),
            };
            let commits = commits
                .into_iter()
                .map(|c| {
                    let became = if c.pushed {
                        "pushed"
                    } else if integrated.contains(&c.id.as_str()) {
                        "integrated"
                    } else if quarantine.is_some() {
                        "quarantined"
                    } else {
                        "lost"
                    };
                    CommitFate { id: c.id, subject: c.subject, became: became.into() }
                })
                .collect();
            WorkMount { dst: record.mount_dst.clone(), verdict, commits, unreadable }
        })
        .collect();
    Work {
        verdict: assessment.map_or(crate::protocol::assessment::Verdict::Unknown, |a| a.verdict),
        summary: assessment.map(|a| a.summary.clone()).unwrap_or_default(),
        quarantine: quarantine.map(str::to_owned),
        mounts,
    }
}

/// Copies the conversation logs under `home` into `into` (see the module's comment).
fn copy_conversation(home: &Path, into: &Path, options: &RecordOptions) -> Result<Conversation> {
    let mut conversation =
        Conversation { copied: Vec::new(), skipped: Vec::new(), bytes: 0, cap_bytes: options.conversation_cap };
    let mut seen = 0;
    for rel in &options.conversation_paths {
        let rel = Path::new(rel);
        let plain = rel.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain || !real_dirs_all_the_way(home, rel, &mut conversation) {
            continue;
        }
        let walk =
            walkdir::WalkDir::new(home.join(rel)).follow_links(false).follow_root_links(false).sort_by_file_name();
        for entry in walk {
            seen += 1;
            if seen > MOST_CONVERSATION_ENTRIES {
                let reason = format!("more than {MOST_CONVERSATION_ENTRIES} entries: the rest left out");
                conversation.skipped.push(SkippedFile { path: rel.to_string_lossy().into_owned(), reason });
                return Ok(conversation);
            }
            // What the agent made there is taken as it comes: an entry that cannot be read (a
            // path past PATH_MAX, a directory it may not list) or copied is named and left out,
            // never a record, and so a purge, that fails.
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    let at = e.path().and_then(|p| p.strip_prefix(home).ok()).unwrap_or(rel);
                    let reason =
                        format!("cannot be read: {}", e.io_error().map_or_else(|| e.to_string(), ToString::to_string));
                    conversation.skipped.push(SkippedFile { path: at.to_string_lossy().into_owned(), reason });
                    continue;
                }
            };
            let Ok(inside) = entry.path().strip_prefix(home) else { continue };
            let shown = inside.to_string_lossy().into_owned();
            let target = into.join(inside);
            let kind = entry.file_type();
            let copied = if kind.is_dir() {
                fs::create_dir_all(&target).map_err(anyhow::Error::new)
            } else if !kind.is_file() {
                conversation.skipped.push(SkippedFile { path: shown.clone(), reason: "not a regular file".into() });
                Ok(())
            } else {
                copy_one(entry.path(), &target, shown.clone(), &mut conversation)
            };
            if let Err(e) = copied {
                conversation.skipped.push(SkippedFile { path: shown, reason: format!("cannot be copied: {e:#}") });
            }
        }
    }
    Ok(conversation)
}

/// Whether each component of `rel` under `home` is a directory and not a link; a link on the way
/// is said and the path left out.
fn real_dirs_all_the_way(home: &Path, rel: &Path, conversation: &mut Conversation) -> bool {
    let mut at = home.to_path_buf();
    for component in rel.components() {
        at.push(component);
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                let shown = at.strip_prefix(home).unwrap_or(&at).to_string_lossy().into_owned();
                conversation.skipped.push(SkippedFile { path: shown, reason: "a link or not a directory".into() });
                return false;
            }
            Err(_) => return false,
        }
    }
    true
}

fn copy_one(source: &Path, target: &Path, shown: String, conversation: &mut Conversation) -> Result<()> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let Ok(fd) = rustix::fs::open(source, flags, Mode::empty()) else {
        conversation.skipped.push(SkippedFile { path: shown, reason: "cannot be opened".into() });
        return Ok(());
    };
    let mut file = fs::File::from(fd);
    let meta = file.metadata()?;
    if !meta.is_file() {
        conversation.skipped.push(SkippedFile { path: shown, reason: "not a regular file".into() });
        return Ok(());
    }
    if conversation.bytes + meta.len() > conversation.cap_bytes {
        conversation.skipped.push(SkippedFile { path: shown, reason: "over the conversation cap".into() });
        return Ok(());
    }
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let mut out = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(target)
        .with_context(|| format!("cannot create {}", target.display()))?;
    let copied = match std::io::copy(&mut std::io::Read::take(&mut file, meta.len()), &mut out) {
        Ok(copied) => copied,
        Err(e) => {
            // No half a file in the record: what it names as copied is whole.
            let _ = fs::remove_file(target);
            return Err(anyhow::Error::new(e).context(format!("copying {}", source.display())));
        }
    };
    conversation.bytes += copied;
    conversation.copied.push(CopiedFile { path: shown, bytes: copied });
    Ok(())
}

/// The records in `<home>/records/`, newest first; one that cannot be read is left out.
pub(crate) fn list(store: &Store) -> Result<Vec<SessionRecord>> {
    let root = store.records_root();
    let entries = match fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", root.display())),
    };
    let mut records: Vec<SessionRecord> = entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(crate::state::names::is_valid_name))
        .filter_map(|e| read(&e.path()))
        .collect();
    records.sort_by(|a, b| b.recorded_at.cmp(&a.recorded_at));
    Ok(records)
}

/// The record in `dir`, with its path.
pub(crate) fn read(dir: &Path) -> Option<SessionRecord> {
    let mut record: SessionRecord = crate::state::store::read_json(&dir.join("record.json")).ok().flatten()?;
    record.path = Some(dir.to_string_lossy().into_owned());
    Some(record)
}
