//! The record protocol (protocol.md): one envelope on every JSON line, typed data per record,
//! and a reader that passes what it does not handle through byte for byte.

use std::io::BufRead;

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::exit::Exit;
use crate::state::model::{IndexRow, Manifest};

pub const SCHEMA_VERSION: u64 = 1;

/// A record's data, with the type name it travels under and its human rendering.
pub trait Record: Serialize {
    const TYPE: &'static str;
    /// The text format: for people, continuity words first.
    fn text(&self) -> String;
}

#[derive(Serialize)]
struct Envelope<'a, T> {
    schema_version: u64,
    #[serde(rename = "type")]
    kind: &'a str,
    data: &'a T,
}

/// One compact JSON line, without the newline.
pub fn to_line<R: Record>(record: &R) -> Result<String> {
    Ok(serde_json::to_string(&Envelope { schema_version: SCHEMA_VERSION, kind: R::TYPE, data: record })?)
}

/// A checked input line. `line` is the exact text read, so a pass-through is byte for byte.
#[derive(Debug, Clone)]
pub struct InputRecord {
    pub line: String,
    pub line_no: usize,
    pub kind: String,
    pub data: Value,
}

impl InputRecord {
    /// The typed data of a record this tool handles; a record of a known type whose data does
    /// not fit is bad input like any other malformed line.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_value(self.data.clone())
            .map_err(|e| Exit::BadInput.err(format_args!("line {}: bad {} record: {e}", self.line_no, self.kind)))
    }

    /// The instance a record is about, if it names one.
    pub fn container_base(&self) -> Option<&str> {
        self.data.get("container_base").and_then(Value::as_str)
    }
}

/// Reads and checks every line before anything acts on one: a single bad line is exit 3 and the
/// caller has changed nothing. Empty lines are skipped.
pub fn read_all(input: impl BufRead) -> Result<Vec<InputRecord>> {
    let mut records = Vec::new();
    for (i, line) in input.split(b'\n').enumerate() {
        let line_no = i + 1;
        let bytes = line.context("reading records from stdin")?;
        let line =
            String::from_utf8(bytes).map_err(|_| Exit::BadInput.err(format_args!("line {line_no}: not UTF-8")))?;
        let line = line.strip_suffix('\r').map(str::to_owned).unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        records.push(check_line(line, line_no)?);
    }
    Ok(records)
}

fn check_line(line: String, line_no: usize) -> Result<InputRecord> {
    let bad = |why: &str| Exit::BadInput.err(format_args!("line {line_no}: {why}"));
    let value: Value = serde_json::from_str(&line).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let Value::Object(mut envelope) = value else { return Err(bad("not a record (expected a JSON object)")) };
    let version = match envelope.get("schema_version") {
        Some(v) => v.as_u64().ok_or_else(|| bad("schema_version is not a positive integer"))?,
        None => return Err(bad("not a record: no schema_version")),
    };
    if version == 0 {
        return Err(bad("schema_version 0 does not exist"));
    }
    if version > SCHEMA_VERSION {
        return Err(bad(&format!(
            "schema_version {version} is newer than this tool understands ({SCHEMA_VERSION}); upgrade the jackin tools"
        )));
    }
    let kind = match envelope.get("type") {
        Some(Value::String(kind)) if !kind.is_empty() => kind.clone(),
        _ => return Err(bad("not a record: no type")),
    };
    let data = match envelope.remove("data") {
        Some(data @ Value::Object(_)) => data,
        _ => return Err(bad("not a record: data is not an object")),
    };
    Ok(InputRecord { line, line_no, kind, data })
}

/// Instance identity: the fields every per-instance record starts with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    pub container_base: String,
    pub instance_id: String,
    pub workspace_name: Option<String>,
    pub workspace_label: String,
    pub role_key: String,
    pub agent_runtime: String,
}

impl Identity {
    pub fn from_manifest(m: &Manifest) -> Self {
        Identity {
            container_base: m.container_base.clone(),
            instance_id: m.instance_id.clone(),
            workspace_name: m.workspace_name.clone(),
            workspace_label: m.workspace_label.clone(),
            role_key: m.role_key.clone(),
            agent_runtime: m.agent_runtime.clone(),
        }
    }

    pub fn from_row(r: &IndexRow) -> Self {
        Identity {
            container_base: r.container_base.clone(),
            instance_id: r.instance_id.clone(),
            workspace_name: r.workspace_name.clone(),
            workspace_label: r.workspace_label.clone(),
            role_key: r.role_key.clone(),
            agent_runtime: r.agent_runtime.clone(),
        }
    }

    /// The container name and the instance id: the words every text line starts with.
    pub fn short(&self) -> &str {
        &self.container_base
    }
}

/// `error`: one instance (or the run) failed; the others carried on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorRecord {
    pub tool: String,
    pub container_base: Option<String>,
    pub code: String,
    pub message: String,
}

impl Record for ErrorRecord {
    const TYPE: &'static str = "error";
    fn text(&self) -> String {
        match &self.container_base {
            Some(c) => format!("{c} · error · {}", self.message),
            None => format!("error · {}", self.message),
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `decision`: what jackin-keep decided for one assessed instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    #[serde(flatten)]
    pub identity: Identity,
    /// `keep`, `clean` or `return`.
    pub outcome: String,
    /// The policy that applied: `ask`, `keep` or `clean`.
    pub policy: String,
    /// Why, in a word or two: `clean session`, `dirty`, `operator keep`, `policy keep`, …
    pub reason: String,
    /// The assessment's verdict the decision was taken on.
    pub verdict: String,
    /// A clean outcome chosen over work at risk: purge quarantines that work before deleting.
    #[serde(default)]
    pub discard_unfinished: bool,
    /// The status written (keep, clean), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
}

impl Record for Decision {
    const TYPE: &'static str = "decision";
    fn text(&self) -> String {
        let dry = if self.dry_run { " (dry run)" } else { "" };
        format!("{} · {} · {} ({} policy){dry}", self.identity.container_base, self.outcome, self.reason, self.policy)
    }
}

/// One resource a purge removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removed {
    /// `container`, `network`, `volume`, `worktree`, `branch`, `directory`, `name_lock`,
    /// `index_row`, `temp_file`, `quarantine`.
    pub kind: String,
    pub name: String,
}

/// `purged`: one instance (or orphan) deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Purged {
    #[serde(flatten)]
    pub identity: Identity,
    pub removed: Vec<Removed>,
    pub freed_bytes: u64,
    /// Where at-risk work was saved before deletion, if any was.
    pub quarantine: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
}

impl Record for Purged {
    const TYPE: &'static str = "purged";
    fn text(&self) -> String {
        let mut line = format!(
            "{} · purged · {} removed · {} freed",
            self.identity.container_base,
            self.removed.len(),
            human_bytes(self.freed_bytes)
        );
        if let Some(q) = &self.quarantine {
            line.push_str(&format!(" · unfinished work saved in {q}"));
        }
        if self.dry_run {
            line.push_str(" (dry run)");
        }
        line
    }
}

/// `change`: reconcile changed an instance's status to match what Docker says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    #[serde(flatten)]
    pub identity: Identity,
    pub from: String,
    pub to: String,
    /// The finer truth: `killed_by_host`, `container_exited`, `container_removed`,
    /// `container_running`, `row_restored`, `row_dropped`, …
    pub cause: String,
    pub evidence: Value,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
}

impl Record for Change {
    const TYPE: &'static str = "change";
    fn text(&self) -> String {
        let dry = if self.dry_run { " (dry run)" } else { "" };
        format!(
            "{} · {} → {} · {}{dry}",
            self.identity.container_base,
            self.from,
            self.to,
            self.cause.replace('_', " ")
        )
    }
}

/// `orphan`: something of jackin's whose instance no longer exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Orphan {
    /// `container`, `network`, `volume`, `name_lock` or `temp_file`.
    pub kind: String,
    pub name: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
}

impl Record for Orphan {
    const TYPE: &'static str = "orphan";
    fn text(&self) -> String {
        format!("orphan {} {} · {}", self.kind, self.name, self.reason)
    }
}

/// `candidate`: a session that can be resumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    #[serde(flatten)]
    pub identity: Identity,
    pub status: String,
    pub cause: Option<String>,
    pub updated_at: String,
    pub verdict: Option<String>,
    pub summary: String,
    /// 0–3, or `None` when it cannot be restored.
    pub tier: Option<u8>,
    pub ready: bool,
    pub missing: Vec<String>,
    /// The human line: `Resume jk-… · 2h ago · clean · ready`.
    pub label: String,
}

impl Record for Candidate {
    const TYPE: &'static str = "candidate";
    fn text(&self) -> String {
        self.label.clone()
    }
}

/// `restored`: a session resumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Restored {
    #[serde(flatten)]
    pub identity: Identity,
    pub tier: u8,
    pub actions: Vec<String>,
    /// The argv that reconnects to the session.
    pub attach: Vec<String>,
    pub drift: Vec<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
}

impl Record for Restored {
    const TYPE: &'static str = "restored";
    fn text(&self) -> String {
        let dry = if self.dry_run { "would resume" } else { "resumed" };
        format!("{} · {dry} (tier {}) · attach: {}", self.identity.container_base, self.tier, self.attach.join(" "))
    }
}

/// `1.2 GiB`, for people.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<InputRecord>> {
        read_all(text.as_bytes())
    }

    #[test]
    fn unknown_types_keep_their_exact_bytes() {
        let line = r#"{"schema_version":1,"type":"future" ,"data":{"z":1,"a":[ 2 ]}}"#;
        let records = read(&format!("{line}\n\n")).unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].line, line);
        assert_eq!(records[0].kind, "future");
    }

    #[test]
    fn bad_lines_are_exit_3_with_the_line_number() {
        for text in [
            "not json",
            "[1,2]",
            r#"{"type":"assessment","data":{}}"#,
            r#"{"schema_version":2,"type":"assessment","data":{}}"#,
            r#"{"schema_version":"1","type":"assessment","data":{}}"#,
            r#"{"schema_version":1,"data":{}}"#,
            r#"{"schema_version":1,"type":"x","data":3}"#,
        ] {
            let input = format!("{}\n{text}\n", r#"{"schema_version":1,"type":"ok","data":{}}"#);
            let err = read(&input).unwrap_err();
            assert_eq!(Exit::of(&err), Exit::BadInput, "{text}");
            assert!(format!("{err:#}").starts_with("line 2: "), "{err:#}");
        }
    }

    #[test]
    fn envelope_is_first_and_compact() {
        let rec = ErrorRecord { tool: "t".into(), container_base: None, code: "c".into(), message: "m".into() };
        assert_eq!(
            to_line(&rec).unwrap(),
            r#"{"schema_version":1,"type":"error","data":{"tool":"t","container_base":null,"code":"c","message":"m"}}"#
        );
    }
}

/// `repair`: reconcile mended the index: a row restored from its manifest, a row brought back in
/// line with its manifest, a row dropped (data dir and container both gone), or an index that
/// did not parse moved aside and rebuilt. It carries no `container_base`, so a tool that acts on
/// the instances named by its input (`jackin-assess -`) does not go looking for a dropped one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repair {
    pub kind: RepairKind,
    /// The instance (container name), or the index file for `index_rebuilt`.
    pub name: String,
    pub reason: String,
    /// Where the unparsable index was moved (`index_rebuilt` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
}

impl Record for Repair {
    const TYPE: &'static str = "repair";
    fn text(&self) -> String {
        let dry = if self.dry_run { " (dry run)" } else { "" };
        format!("{} · {} · {}{dry}", self.name, self.kind.as_str().replace('_', " "), self.reason)
    }
}

/// What a `repair` mended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepairKind {
    /// A data dir with a manifest had no index row.
    RowRestored,
    /// An index row did not match its manifest.
    RowRefreshed,
    /// A row whose data dir and container are both gone.
    RowDropped,
    /// An index that did not parse, moved aside.
    IndexRebuilt,
}

impl RepairKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RepairKind::RowRestored => "row_restored",
            RepairKind::RowRefreshed => "row_refreshed",
            RepairKind::RowDropped => "row_dropped",
            RepairKind::IndexRebuilt => "index_rebuilt",
        }
    }
}
