//! Resuming one session, in the order that keeps surprises out: the session's claim
//! (services/claim.rs) first, so no purge or keep changes it while it is read, planned, acknowledged
//! and started; then the plan; then what stops it (not resumable, not ready) before the operator
//! is asked to acknowledge anything; then the acknowledgement; then the tier, and the statuses.

use super::observe::RoleSource;
use super::plan::Tier;
use super::prepare::planned;
use super::prepare::prepare;
use super::prepare::resumable;
use super::prepare::resumed;
use super::prepare::Prepared;
use super::run::execute;
use super::run::mark_resumed;
use super::run::Waits;
use crate::base::exit::Exit;
use crate::base::tool::Tool;
use crate::engines::docker::Engine;
use crate::protocol::assessment::Assessment;
use crate::protocol::codes::ErrorCode;
use crate::protocol::envelope::Record;
use crate::protocol::evidence::{history_entry, Because, Evidence, ResumeFailed};
use crate::protocol::records::Change;
use crate::protocol::records::Restored;
use crate::services::assessor::AssessOptions;
use crate::services::assessor::Assessor;
use crate::services::claim::SessionClaim;
use crate::state::continuity;
use crate::state::model::IndexRow;
use crate::state::model::Manifest;
use crate::state::names::InstanceName;
use crate::state::store::Store;
use anyhow::{Context, Result};
use std::io::BufReader;
use std::io::{BufRead, Write};

/// How a resume runs.
#[derive(Debug, Clone, Copy)]
pub struct ResumeOptions {
    /// `--plan` or `--dry-run`: plan, hold nothing, change nothing.
    pub plan_only: bool,
    /// `--yes`: the preserved work is acknowledged without a terminal.
    pub yes: bool,
    /// `--as-is`: a stopped container that no longer matches its recipe is started as it is.
    pub as_is: bool,
    pub waits: Waits,
}

/// What a resume of one session came to.
#[derive(Debug)]
pub enum Resume {
    /// `--plan`/`--dry-run`: the plan, and why it cannot run when it cannot.
    Planned(Restored, Option<String>),
    /// Not resumed, nothing changed, ending the run with `exit`: 5 when another process holds
    /// the session, 4 when what it needs could not be reached (retry later), else 6.
    Refused {
        code: ErrorCode,
        why: anyhow::Error,
        exit: Exit,
    },
    /// The tier failed part-way (exit 6); it deleted nothing.
    Failed(anyhow::Error),
    Resumed(Restored),
}

/// Resumes `name` (reconciled already: `changes` are what reconciliation changed or, in a dry
/// run, would have). The claim is held from before the manifest is read to after the statuses
/// are written.
pub fn resume(
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    row: Option<&IndexRow>,
    changes: &[Change],
    options: ResumeOptions,
) -> Result<Resume> {
    let claim = match SessionClaim::take(store, name, options.plan_only) {
        Ok(claim) => claim,
        Err(why) if Exit::of(&why) == Exit::Busy => {
            return Ok(Resume::Refused { code: ErrorCode::Busy, why, exit: Exit::Busy })
        }
        Err(e) => return Err(e),
    };
    let refused = |code, why: String| Ok(Resume::Refused { code, why: anyhow::anyhow!(why), exit: Exit::Partial });
    let Prepared { manifest, kept, plan } =
        prepare(engine, store, name, changes, RoleSource::for_run(options.plan_only), options.as_is)?;
    if !resumable(manifest.known_status(), plan.role.is_some()) {
        return refused(
            ErrorCode::NotResumable,
            format!(
            "status {} is not resumable (`jackin-restore --list` shows the sessions that are; `jackin-assess {name}` \
             what this one holds)",
            manifest.status
        ),
        );
    }
    if options.plan_only {
        let why = (!plan.stated()).then(|| plan.not_ready());
        return Ok(Resume::Planned(planned(&manifest, &plan), why));
    }
    // What stops the resume is said before the operator is asked to read and acknowledge the work.
    if !plan.ready() {
        let why = anyhow::anyhow!("cannot resume, nothing was changed: {}", plan.missing.join("; "));
        return Ok(Resume::Refused { code: ErrorCode::NotReady, why, exit: plan.refusal_exit() });
    }
    let assessment = Assessor::new(AssessOptions::default()).instance(store, name, row)?;
    acknowledge(&assessment, options.yes)?;
    let tier = plan.tier.expect("a ready plan has a tier");
    let ran = match execute(engine, store, name, &manifest, kept.recipe.as_ref(), &plan, options.waits) {
        Ok(ran) => ran,
        Err(e) => {
            note_failed_attempt(store, name, &manifest, tier, &e)?;
            return Ok(Resume::Failed(e));
        }
    };
    mark_resumed(store, name, &manifest, tier)?;
    drop(claim);
    Ok(Resume::Resumed(resumed(&manifest, &plan, ran)))
}

/// A failed attempt changes nothing it resumes from: the manifest, the index row, the recipe and
/// the cause stay as they were, byte for byte, so the next attempt starts from the same place.
/// Only an entry appended to the history says that it was tried, when, at which tier and why it
/// failed. (A plan that stops the resume tried nothing and writes nothing at all.)
fn note_failed_attempt(
    store: &Store,
    name: &InstanceName,
    manifest: &Manifest,
    tier: Tier,
    why: &anyhow::Error,
) -> Result<()> {
    let status = manifest.known_status().context("a resumable status")?;
    let evidence = Evidence::ResumeFailed(ResumeFailed { tier: tier.number(), failed: format!("{why:#}") });
    let now = crate::base::time::now_rfc3339();
    continuity::update(store, name, |c| {
        c.history.push(history_entry(&now, Tool::Restore, &manifest.status, status, Because::ResumeFailed, &evidence)?);
        Ok(((), true))
    })
}

/// The preserved work is shown and acknowledged on the terminal before anything starts.
pub fn acknowledge(assessment: &Assessment, yes: bool) -> Result<()> {
    if yes {
        return Ok(());
    }
    let Ok(tty) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty") else {
        return Err(Exit::Usage.err("no terminal to show the preserved work on\n  hint: pass --yes to acknowledge it"));
    };
    let mut out = &tty;
    writeln!(out, "Preserved work of this session:\n{}\n", assessment.text())?;
    write!(out, "Press Enter to resume it, or Ctrl-C to stop: ")?;
    out.flush()?;
    let mut line = String::new();
    if BufReader::new(&tty).read_line(&mut line)? == 0 {
        return Err(Exit::Interrupted.err("not acknowledged; nothing was changed"));
    }
    Ok(())
}
