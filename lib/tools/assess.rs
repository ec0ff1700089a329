//! `jackin-assess`: which instances to assess, in which order, from its arguments and its
//! input. The assessing itself is a service the other tools share (services/assessor.rs).

pub use crate::services::assessor::{AssessOptions, Assessor};

use crate::protocol::envelope::InputRecord;
use crate::state::select::{Catalog, Target, Unresolved};

/// One entry of `jackin-assess`'s output, in the order of its arguments and then of its input.
pub enum Step<'a> {
    /// The assessment of `targets[i]`.
    Assess(usize),
    /// A record read on stdin that names no instance: it keeps its place among the assessments.
    PassThrough(&'a InputRecord),
    /// An argument, or an instance a record named, that names no instance.
    Unresolved(String, Unresolved),
}

/// What to assess and what to print in which order: the instances named on the command line,
/// then, in input order, the records on stdin, each instance assessed once.
pub fn plan<'a>(catalog: &Catalog, named: &[&String], records: &'a [InputRecord]) -> (Vec<Target>, Vec<Step<'a>>) {
    let from_args = named.iter().map(|arg| Ok(arg.to_string()));
    // A record names an instance by its `container_base`; an `error` record only reports one.
    let from_records = records.iter().map(|record| match record.container_base() {
        Some(name) if record.kind != "error" => Ok(name.to_owned()),
        _ => Err(record),
    });
    let mut targets: Vec<Target> = Vec::new();
    let mut steps = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for entry in from_args.chain(from_records) {
        let arg = match entry {
            Err(record) => {
                steps.push(Step::PassThrough(record));
                continue;
            }
            Ok(arg) if seen.contains(&arg) => continue,
            Ok(arg) => arg,
        };
        seen.push(arg.clone());
        match catalog.resolve(&arg) {
            Ok(target) if targets.iter().any(|t| t.name == target.name) => {}
            Ok(target) => {
                steps.push(Step::Assess(targets.len()));
                targets.push(target);
            }
            Err(why) => steps.push(Step::Unresolved(arg, why)),
        }
    }
    (targets, steps)
}
