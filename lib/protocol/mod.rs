//! The wire format (protocol.md): the envelope every JSON line carries, every record the tools
//! read and write, and its text rendering.

pub mod assessment;
pub mod codes;
pub mod envelope;
pub mod evidence;
pub mod identity;
pub mod inert;
pub mod path_bytes;
pub mod records;

use serde::de::DeserializeOwned;

use assessment::Assessment;
use envelope::{InputRecord, Record};
use records::{
    Candidate, Change, Decision, ErrorRecord, Expiring, Exported, HostRow, Imported, Interrupted, Orphan, Purged,
    Quarantined, Recovered, Repair, Restored, SessionRecord,
};

/// The text form of an input record of a type the tools write, if its data fits that type: a
/// record passed through to a person reads as the tool that wrote it would have printed it.
pub(crate) fn text_of(record: &InputRecord) -> Option<String> {
    fn render<T: Record + DeserializeOwned>(data: &serde_json::Value) -> Option<String> {
        T::deserialize(data).ok().map(|typed| typed.text())
    }
    let data = &record.data;
    match record.kind.as_str() {
        Assessment::TYPE => render::<Assessment>(data),
        Decision::TYPE => render::<Decision>(data),
        Purged::TYPE => render::<Purged>(data),
        Change::TYPE => render::<Change>(data),
        Orphan::TYPE => render::<Orphan>(data),
        Candidate::TYPE => render::<Candidate>(data),
        Restored::TYPE => render::<Restored>(data),
        Quarantined::TYPE => render::<Quarantined>(data),
        Recovered::TYPE => render::<Recovered>(data),
        Repair::TYPE => render::<Repair>(data),
        Expiring::TYPE => render::<Expiring>(data),
        Interrupted::TYPE => render::<Interrupted>(data),
        Exported::TYPE => render::<Exported>(data),
        Imported::TYPE => render::<Imported>(data),
        ErrorRecord::TYPE => render::<ErrorRecord>(data),
        SessionRecord::TYPE => render::<SessionRecord>(data),
        HostRow::TYPE => render::<HostRow>(data),
        _ => None,
    }
}

/// The text form of one JSON line of the wire, as [`text_of`] gives it: `None` for a line that is
/// no record, or a record of a type the tools do not write.
pub fn text_of_line(line: &str) -> Option<String> {
    envelope::check_line(line.to_owned(), 0).ok().as_ref().and_then(text_of)
}
