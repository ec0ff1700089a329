//! What keep takes from its stdin: assessments, each a claim about one session here. Before any
//! session is looked at, every assessment must have been made on this host and name the session
//! that has its name here (services/provenance.rs); one that does not refuses the whole run. Then
//! each is taken as it is only when this home's seal proves assess made it as it reads now;
//! any other (composed, replayed, changed) is a request to look again: the session is assessed
//! afresh and that assessment decides.

use anyhow::{Context, Result};

use crate::protocol::assessment::Assessment;
use crate::protocol::envelope::{InputRecord, Record};
use crate::services::assessor::{AssessOptions, Assessor};
use crate::services::provenance::{self, Refusal};
use crate::services::seal::Sealer;
use crate::state::names::InstanceName;
use crate::state::store::Store;

/// One record of keep's input, as keep takes it.
pub enum Input<'a> {
    /// An assessment made here of the session of its name here: keep decides on it.
    Assessment(Box<Assessment>),
    /// Any other record: passed through as it came.
    Pass(&'a InputRecord),
}

impl<'a> Input<'a> {
    pub fn is_assessment(&self) -> bool {
        matches!(self, Input::Assessment(_))
    }

    /// The record to pass through, when it is one.
    pub fn passed(&self) -> Option<&'a InputRecord> {
        match self {
            Input::Pass(record) => Some(record),
            Input::Assessment(_) => None,
        }
    }
}

/// `records` as keep takes them, in order; or every record refused, when any assessment is.
pub fn read<'a>(store: &Store, records: &'a [InputRecord]) -> Result<Result<Vec<Input<'a>>, Vec<Refusal>>> {
    let mut inputs = Vec::new();
    let mut refusals = Vec::new();
    for record in records {
        if record.kind != Assessment::TYPE {
            inputs.push(Input::Pass(record));
            continue;
        }
        let assessment = record.parse::<Assessment>()?;
        let checked = provenance::made_here(record)
            .and_then(|()| provenance::same_session(store, record, &assessment.identity).map(drop));
        match checked {
            Ok(()) => inputs.push(Input::Assessment(Box::new(assessment))),
            Err(refusal) => refusals.push(refusal),
        }
    }
    Ok(if refusals.is_empty() { Ok(inputs) } else { Err(refusals) })
}

/// The assessment keep decides on: the one given when this home's seal holds, else a fresh one;
/// with a note for `-v` when it was made afresh.
pub(crate) fn as_observed(store: &Store, sealer: &Sealer, given: Assessment) -> Result<(Assessment, Option<String>)> {
    if sealer.assessment_holds(&given) {
        return Ok((given, None));
    }
    let name = InstanceName::parse(&given.identity.container_base)?;
    let fresh = Assessor::new(AssessOptions::default())
        .instance(store, &name, None)
        .context("assessing the session again (its assessment on stdin is not sealed by this home)")?;
    Ok((fresh, Some("assessed again: the assessment on stdin is not sealed by this home's assess".into())))
}
