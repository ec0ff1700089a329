//! A record is a claim, never an order (docs/threat-model.md, "Records on stdin"). Before keep or
//! purge acts on a line, it checks the line against what this host observes now: the record was
//! made here (its `host`), and the session it names is that session here (its `instance_id`).
//! A record that fails is refused with an `error` record naming it, and the run changes nothing
//! (exit 3, as for any bad input: these tools check their whole input before they act).

use anyhow::anyhow;

use crate::base::host::this_host;
use crate::protocol::codes::ErrorCode;
use crate::protocol::envelope::{made_on, InputRecord};
use crate::protocol::identity::Identity;
use crate::state::model::Manifest;
use crate::state::names::InstanceName;
use crate::state::store::Store;

/// Why a record was not acted on: said as an `error` record about `container_base`.
#[derive(Debug)]
pub struct Refusal {
    pub container_base: Option<String>,
    pub code: ErrorCode,
    pub error: anyhow::Error,
}

impl Refusal {
    fn new(record: &InputRecord, code: ErrorCode, why: String) -> Refusal {
        let container_base = record.container_base().map(str::to_owned);
        Refusal { container_base, code, error: anyhow!("line {} ({} record): {why}", record.line_no, record.kind) }
    }
}

/// The record says it was made on this host, or says nothing (a line the operator composed).
/// A row of another host (a view over `--host`, or that host's tools piped here) names that host.
pub fn made_here(record: &InputRecord) -> Result<(), Refusal> {
    match made_on(record) {
        Some(host) if host != this_host() => Err(Refusal::new(
            record,
            ErrorCode::ForeignRecord,
            format!(
                "made on host {host:?}, not here ({:?}): only that host's tools act on it (run the pipe there)",
                this_host()
            ),
        )),
        _ => Ok(()),
    }
}

/// The session the record names is that session in this home: its manifest (or, without one, its
/// index row) has the record's `instance_id`. `Ok(None)`: nothing of that name is left here.
pub fn same_session(store: &Store, record: &InputRecord, identity: &Identity) -> Result<Option<Manifest>, Refusal> {
    let refuse = |why: String| Refusal::new(record, ErrorCode::IdentityMismatch, why);
    let name = InstanceName::parse(&identity.container_base).map_err(|e| refuse(format!("{e:#}")))?;
    let manifest = store.read_manifest(&name).map_err(|e| refuse(format!("its manifest cannot be read: {e:#}")))?;
    let here = match &manifest {
        Some(manifest) => Some(manifest.instance_id.clone()),
        None => store.read_index().ok().and_then(|index| {
            index.instances.iter().find(|r| r.container_base == name.as_str()).map(|r| r.instance_id.clone())
        }),
    };
    match here {
        Some(id) if id != identity.instance_id => Err(refuse(format!(
            "it names {} with instance_id {:?}, but that session here is {id:?}: another session's record",
            name, identity.instance_id
        ))),
        _ => Ok(manifest),
    }
}
