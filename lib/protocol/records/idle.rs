//! jackin-idle's record (extras/idle/): one running session as its idle check saw it, and what
//! became of it. A session it keeps is also a `change` (cause `idle_kept`), the event.

use serde::{Deserialize, Serialize};

use super::is_false;
use crate::protocol::envelope::Record;
use crate::protocol::identity::Identity;

/// `idle`: a running session, whether nobody used it for its window, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleCheck {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    /// Nobody used it for its whole window.
    pub idle: bool,
    /// The window, when the session has one (`--idle-for`, else its workspace's policy).
    pub window_secs: Option<u64>,
    /// Where the window came from: `--idle-for`, `workspace NAME`, or `none`.
    pub policy: String,
    /// Why it is idle or not, in words: the freshest sign of use, or what stopped the check.
    pub why: String,
    /// `docker exec` processes in its role container now (jackin's hardline is one).
    pub clients: u32,
    /// Who holds its name lock now (jackin while it has the session attached), if anyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_held_by: Option<String>,
    pub started_at: Option<String>,
    pub cpu_quiet_since: Option<String>,
    pub last_file_change: Option<String>,
    pub last_attached: Option<String>,
    /// With `--yes`: `kept`, or `left` with the reason in `why` (it woke up, another process
    /// holds it); a dry run's `would keep`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
}

impl Record for IdleCheck {
    const TYPE: &'static str = "idle";
    fn text(&self) -> String {
        let state = match (&self.action, self.idle) {
            (Some(action), _) => action.clone(),
            (None, true) => "idle".to_owned(),
            (None, false) => "in use".to_owned(),
        };
        let dry = if self.dry_run { " (dry run)" } else { "" };
        format!("{} · {state}{dry} · {}", self.identity.container_base, self.why)
    }
}
