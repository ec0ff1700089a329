//! `jackin-restore --records` and `--record C`: the records purged sessions left
//! (services/session_record.rs), read only.

use anyhow::Result;

use crate::base::exit::Exit;
use crate::protocol::records::SessionRecord;
use crate::services::session_record;
use crate::state::store::Store;

/// Every record, newest first; with `which`, the record of that session: its container name, or
/// a prefix of at least 4 characters of its instance id that names one session.
pub fn records(store: &Store, which: Option<&str>) -> Result<Vec<SessionRecord>> {
    let all = session_record::list(store)?;
    let Some(which) = which else { return Ok(all) };
    let named = |r: &SessionRecord| {
        r.identity.container_base == which || (which.len() >= 4 && r.identity.instance_id.starts_with(which))
    };
    let mut found: Vec<SessionRecord> = all.into_iter().filter(named).collect();
    found.dedup_by(|a, b| a.identity.container_base == b.identity.container_base);
    match found.len() {
        1 => Ok(found),
        // A name that is no record's ends the run as any name that is no session's does (6).
        0 => Err(Exit::Partial.err(format_args!(
            "no record of a purged session named {which:?} in {} (jackin-restore --records lists them)",
            store.records_root().display()
        ))),
        n => Err(Exit::Usage.err(format_args!("{which:?} names {n} records: give more of the name"))),
    }
}
