//! A view that names sessions (`jackin-hosts --host B jackin-assess C`): each session lives on one
//! host, so a name that another host answers is no failure here or there. This host's run gets
//! only the names it knows (none: it does not run). Of another host, an `unknown_instance` error
//! for a name some host answered is left out, and that host's exit is what its rows say (1 with
//! `--exit-code` and work found, else 0). A name no host knows is one `unknown_instance` error of
//! the view, which then exits 6, as a tool does for a name that is no session's.

use std::collections::BTreeSet;
use std::ffi::OsString;

use anyhow::Result;

use super::Answer;
use crate::face::driver::Ctx;
use crate::protocol::envelope::{check_line, InputRecord};
use crate::state::select::Unresolvable;

/// TOOL's session names: the values of its positional arguments, as its own parser reads them
/// (`-`, the names on stdin, is none).
pub(super) fn session_names(tool: &str, args: &[OsString]) -> Vec<String> {
    let Some(command) = crate::face::cli::commands().into_iter().find(|c| c.get_name() == tool) else {
        return Vec::new();
    };
    let positionals: Vec<String> = command.get_positionals().map(|arg| arg.get_id().to_string()).collect();
    let argv = std::iter::once(OsString::from(tool)).chain(args.iter().cloned());
    let Ok(matches) = command.try_get_matches_from(argv) else { return Vec::new() };
    let values = positionals.iter().filter_map(|id| matches.get_raw(id)).flatten();
    values.filter_map(|value| value.to_str()).filter(|value| *value != "-").map(str::to_owned).collect()
}

/// Of `names`, those that are no session of this host (its catalog says so, nothing else).
pub(super) fn not_here(ctx: &Ctx, names: &[String]) -> Result<Vec<String>> {
    let catalog = ctx.catalog(&ctx.store()?)?;
    let unknown = |name: &&String| catalog.resolve(name).is_err_and(|why| why.code == Unresolvable::UnknownInstance);
    Ok(names.iter().filter(unknown).cloned().collect())
}

/// TOOL's arguments less the session names in `elsewhere`.
pub(super) fn without(args: &[OsString], elsewhere: &[String]) -> Vec<OsString> {
    args.iter().filter(|arg| !elsewhere.iter().any(|name| arg.to_str() == Some(name.as_str()))).cloned().collect()
}

/// Whether `record` is about the session `name` names: its container name, or its instance id or
/// a prefix of it (4+ characters), as the tools resolve a name.
fn names_it(record: &InputRecord, name: &str) -> bool {
    let text = |key: &str| record.data.get(key).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
    text("container_base") == name || (name.len() >= 4 && text("instance_id").starts_with(name))
}

fn is_unknown_instance(record: &InputRecord) -> bool {
    record.kind == "error" && record.data.get("code").and_then(|c| c.as_str()) == Some("unknown_instance")
}

/// Work a host's rows report: with `--exit-code`, what makes its tool exit 1.
fn findings(tool: &str, rows: &[InputRecord]) -> bool {
    rows.iter().any(|row| match tool {
        "jackin-assess" => {
            row.kind == "assessment" && row.data.get("verdict").and_then(|v| v.as_str()) != Some("clean")
        }
        "jackin-reconcile" => row.kind == "change",
        _ => false,
    })
}

/// Settles the answers of a view naming `names` (`elsewhere`: those this host does not know):
/// leaves out what only says a session lives on another host, puts a name no host knows in
/// `nowhere`, and returns the view's exit from this host's (`here`) and the other hosts' findings.
pub(super) fn settle(
    tool: &str,
    names: &[String],
    elsewhere: &[String],
    here: crate::base::exit::Exit,
    answers: &mut [Answer],
    nowhere: &mut Vec<String>,
) -> crate::base::exit::Exit {
    use crate::base::exit::Exit;
    let parsed: Vec<Vec<InputRecord>> =
        answers.iter().map(|a| a.rows.iter().filter_map(|r| check_line(r.clone(), 0).ok()).collect()).collect();
    let answered: BTreeSet<&String> = names
        .iter()
        .filter(|name| {
            !elsewhere.contains(name) || parsed.iter().flatten().any(|r| !is_unknown_instance(r) && names_it(r, name))
        })
        .collect();
    let mut found_there = false;
    for (answer, rows) in answers.iter_mut().zip(&parsed) {
        // A name some host knows is that host's; one no host knows is said once, by the view.
        let spoken_for = |r: &InputRecord| is_unknown_instance(r) && names.iter().any(|name| names_it(r, name));
        let kept: Vec<usize> = (0..rows.len()).filter(|&i| !spoken_for(&rows[i])).collect();
        let dropped = rows.len() - kept.len();
        if dropped > 0 {
            answer.rows = kept.iter().map(|&i| rows[i].line.clone()).collect();
            answer.closing.rows = answer.rows.len();
            let other_errors = kept.iter().any(|&i| rows[i].kind == "error");
            if answer.closing.exit == Some(Exit::Partial.code()) && !other_errors {
                let kept_rows: Vec<InputRecord> = kept.iter().map(|&i| rows[i].clone()).collect();
                let exit = if findings(tool, &kept_rows) { Exit::Findings } else { Exit::Ok };
                answer.closing.exit = Some(exit.code());
                answer.closing.reason = None;
            }
        }
        found_there |= answer.closing.exit == Some(Exit::Findings.code());
    }
    nowhere.extend(names.iter().filter(|name| !answered.contains(name)).cloned());
    if here == Exit::Ok && found_there {
        Exit::Findings
    } else {
        here
    }
}
