//! The records each tool writes (protocol.md, "Record types") other than the assessment, and
//! their text renderings.

use crate::protocol::assessment::Verdict;
use crate::protocol::codes::{Cause, ErrorCode, OrphanKind, ResourceKind};
use crate::protocol::envelope::Record;
use crate::protocol::evidence::Evidence;
use crate::protocol::identity::Identity;
use crate::protocol::path_bytes::NameBytes;
use crate::state::config::Policy;
use serde::{Deserialize, Serialize};

mod idle;
mod moves;
mod restore;
mod session;
mod sweep;

pub(crate) use crate::protocol::assessment::human_bytes;

pub use idle::*;
pub use moves::*;
pub use restore::*;
pub use session::*;
pub use sweep::*;

/// `error`: one instance (or the run) failed; the others carried on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ErrorRecord {
    pub(crate) tool: String,
    pub(crate) container_base: Option<String>,
    pub(crate) code: ErrorCode,
    pub(crate) message: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
}

impl Record for ErrorRecord {
    const TYPE: &'static str = "error";
    fn text(&self) -> String {
        let dry = if self.dry_run { " (dry run)" } else { "" };
        match &self.container_base {
            Some(c) => format!("{c} · error · {}{dry}", self.message),
            None => format!("error · {}{dry}", self.message),
        }
    }
}

/// How one other host answered a view: the `status` of its `host` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum HostStatus {
    /// The tool ran there: its rows, and its exit code.
    Ok,
    /// ssh could not reach or log in to it.
    Unreachable,
    /// No such program on its `PATH`.
    NoTools,
    /// It printed a line that is not a record of this protocol.
    Protocol,
    /// No answer within the timeout.
    TimedOut,
    /// It printed more than a view takes.
    TooMuch,
}

/// `host`: how one other host answered a jackin-hosts view (extras/hosts/), after its rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRow {
    pub(crate) host: String,
    pub(crate) status: HostStatus,
    pub(crate) reason: Option<String>,
    /// The rows it gave.
    pub(crate) rows: usize,
    /// What the tool there exited with, when it ran.
    pub(crate) exit: Option<i32>,
    /// Records it printed of types this view does not make, not passed on.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) left_out: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Record for HostRow {
    const TYPE: &'static str = "host";
    fn text(&self) -> String {
        let exit = self.exit.filter(|e| *e != 0).map(|e| format!(" · exit {e}")).unwrap_or_default();
        match &self.reason {
            Some(why) => format!("[{}] {} · {} row(s){exit} · {why}", self.host, self.status, self.rows),
            None => format!("[{}] {} · {} row(s){exit}", self.host, self.status, self.rows),
        }
    }
}

/// `expiring`: something jackin-purge will delete soon (jackin-reconcile `--warn-before`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expiring {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    /// `quarantine` or `kept_session`.
    pub(crate) kind: String,
    /// The quarantine's directory, or the session's data directory.
    pub(crate) path: String,
    pub(crate) expires_at: String,
    pub(crate) expires_in_secs: i64,
    /// The command that will delete it.
    pub(crate) deleted_by: String,
}

impl Record for Expiring {
    const TYPE: &'static str = "expiring";
    fn text(&self) -> String {
        format!(
            "{} · {} expires {} ({}) · deleted by {} · {}",
            self.identity.container_base,
            self.kind.replace('_', " "),
            crate::base::time::countdown(self.expires_in_secs),
            self.expires_at,
            self.deleted_by,
            self.path
        )
    }
}

/// A plan's steps under a record's line, one a line, numbered in the order they run (a dry run's
/// text: restore's `--plan`, export's and import's `--dry-run`).
pub(crate) fn numbered_steps(text: &mut String, steps: &[String]) {
    for (n, step) in steps.iter().enumerate() {
        text.push_str(&format!("\n  {}. {step}", n + 1));
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What jackin-keep decided for a session: the three answers of the exit policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Keep,
    Clean,
    Return,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Keep => "keep",
            Outcome::Clean => "clean",
            Outcome::Return => "return",
        }
    }
}

/// `decision`: what jackin-keep decided for one assessed instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    pub(crate) outcome: Outcome,
    /// The policy that applied.
    pub(crate) policy: Policy,
    /// Why, in a word or two: `clean session`, `dirty`, `operator keep`, `policy keep`, …
    pub(crate) reason: String,
    /// The assessment's verdict the decision was taken on.
    pub(crate) verdict: Verdict,
    /// A clean outcome chosen over work at risk: purge quarantines that work before deleting.
    #[serde(default)]
    pub(crate) discard_unfinished: bool,
    /// The clean-up was chosen in the container (its exit-action file, which the agent can
    /// write): purge saves the work at risk even under `--no-quarantine`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) quarantine_required: bool,
    /// The status written (keep, clean), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<String>,
    /// When keep wrote that status: the manifest's `updated_at` it left. purge honours a discard
    /// only while the manifest still says so (nothing resumed or changed the session since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stamped_at: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
    /// This home's seal over the rest (services/seal.rs): purge takes `discard_unfinished` and
    /// `quarantine_required` from a decision only when it verifies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
}

impl Record for Decision {
    const TYPE: &'static str = "decision";
    fn text(&self) -> String {
        let dry = if self.dry_run { " (dry run)" } else { "" };
        format!(
            "{} · {} · {} ({} policy){dry}",
            self.identity.container_base,
            self.outcome.as_str(),
            self.reason,
            self.policy.as_str()
        )
    }
}

/// One resource a purge removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removed {
    /// For a slim, `ignored`: an ignored file or directory of a mount, whose name ends in `/`
    /// when it is a directory.
    pub kind: ResourceKind,
    /// The name as text; a file name that is not UTF-8 has its bytes in `name_bytes`
    /// (protocol/path_bytes.rs).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_bytes: Option<String>,
}

impl Removed {
    pub fn new(kind: ResourceKind, name: impl Into<String>) -> Self {
        Removed { kind, name: name.into(), name_bytes: None }
    }

    /// A file or directory removed, named by its own bytes.
    pub fn file(kind: ResourceKind, name: &NameBytes) -> Self {
        Removed { kind, name: name.text(), name_bytes: name.wire_bytes() }
    }
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
    /// `jackin-purge --slim`: only what git ignores was removed; the session is still kept.
    #[serde(default, skip_serializing_if = "is_false")]
    pub slimmed: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
}

impl Record for Purged {
    const TYPE: &'static str = "purged";
    fn text(&self) -> String {
        let mut line = format!(
            "{} · {} · {} removed · {} freed",
            self.identity.container_base,
            if self.slimmed { "slimmed" } else { "purged" },
            self.removed.len(),
            human_bytes(self.freed_bytes)
        );
        match (&self.quarantine, self.dry_run) {
            (Some(q), false) => line.push_str(&format!(" · unfinished work saved in {q}")),
            (Some(q), true) => line.push_str(&format!(" · unfinished work would be saved in {q} first")),
            (None, _) => {}
        }
        if self.dry_run {
            line.push_str(" (dry run)");
        }
        line
    }
}

/// `purged` with the text format listing what went and how much space came back.
pub struct PurgedReport<'a>(pub &'a Purged);

impl Serialize for PurgedReport<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl Record for PurgedReport<'_> {
    const TYPE: &'static str = Purged::TYPE;
    fn text(&self) -> String {
        let p = self.0;
        let verb = if p.dry_run { "would remove" } else { "removed" };
        let mut out = p.text();
        for r in &p.removed {
            let name = crate::protocol::inert::inert_name(&r.name);
            out.push_str(&format!("\n  {verb} {} {name}", r.kind.to_string().replace('_', " ")));
        }
        if p.removed.is_empty() {
            out.push_str("\n  nothing left to remove");
        }
        out
    }
}

/// `change`: reconcile changed an instance's status to match what Docker says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    pub(crate) from: crate::state::model::StatusWord,
    pub(crate) to: crate::state::model::StatusWord,
    /// The finer truth behind the new status.
    pub(crate) cause: Cause,
    pub(crate) evidence: Evidence,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
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
            self.cause.to_string().replace('_', " ")
        )
    }
}

/// `orphan`: something of jackin's whose instance no longer exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Orphan {
    /// `container`, `network`, `volume`, `name_lock` or `temp_file`.
    pub(crate) kind: OrphanKind,
    pub name: String,
    pub(crate) reason: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
}

impl Record for Orphan {
    const TYPE: &'static str = "orphan";
    fn text(&self) -> String {
        format!("orphan {} {} · {}", self.kind, self.name, self.reason)
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
    pub(crate) moved_to: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
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
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RepairKind::RowRestored => "row_restored",
            RepairKind::RowRefreshed => "row_refreshed",
            RepairKind::RowDropped => "row_dropped",
            RepairKind::IndexRebuilt => "index_rebuilt",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::envelope::to_line;

    fn identity() -> Identity {
        Identity {
            container_base: "jk-k7p9m2xq-app".into(),
            instance_id: "k7p9m2xq".into(),
            workspace_name: None,
            workspace_label: "app".into(),
            role_key: "r".into(),
            agent_runtime: "claude".into(),
        }
    }

    #[test]
    fn a_decision_writes_its_enums_as_the_words_of_the_protocol() {
        let decision = Decision {
            identity: identity(),
            outcome: Outcome::Return,
            policy: Policy::Ask,
            reason: "operator return".into(),
            verdict: Verdict::Unpushed,
            discard_unfinished: false,
            quarantine_required: false,
            status: None,
            stamped_at: None,
            dry_run: false,
            seal: None,
        };
        let line = to_line(&decision).unwrap();
        assert!(line.contains(r#""outcome":"return","policy":"ask","reason":"operator return","verdict":"unpushed""#));
        let data: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(serde_json::from_value::<Decision>(data["data"].clone()).unwrap(), decision);
    }

    #[test]
    fn an_error_in_a_dry_run_says_so() {
        let error = ErrorRecord {
            tool: "t".into(),
            container_base: None,
            code: ErrorCode::Busy,
            message: "m".into(),
            dry_run: true,
        };
        let line = to_line(&error).unwrap();
        assert!(line.contains(r#""code":"busy","message":"m","dry_run":true,"host":"#), "{line}");
        assert_eq!(error.text(), "error · m (dry run)");
    }

    #[test]
    fn a_plan_without_a_tier_says_why() {
        let plan = Restored {
            identity: identity(),
            tier: None,
            missing: vec!["no launch recipe".into()],
            actions: Vec::new(),
            attach: vec!["docker".into()],
            drift: Vec::new(),
            dry_run: true,
        };
        assert!(to_line(&plan).unwrap().contains(r#""tier":null,"missing":["no launch recipe"]"#));
        assert_eq!(plan.text(), "jk-k7p9m2xq-app · cannot resume: no launch recipe");
    }
}
