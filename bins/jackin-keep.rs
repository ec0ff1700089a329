//! jackin-keep: apply the exit policy to assessed sessions (lifecycle.md, "The exit policy").
//! Everything is read, checked and decided (the dialog included) before anything is changed, so
//! bad input, an unreachable Docker engine or a Ctrl-C leaves every session as it was.

use anyhow::Result;
use jackin::base::exit::Exit;
use jackin::engines::docker::Engine;
use jackin::face::cli::KeepArgs;
use jackin::face::driver::{self, Ctx};
use jackin::face::screens::{exit as dialog, Tty};
use jackin::protocol::assessment::{Assessment, Verdict};
use jackin::protocol::codes::ErrorCode;
use jackin::protocol::envelope::InputRecord;
use jackin::services::seal::Sealer;
use jackin::state::config::configured_policy;
use jackin::state::store::Store;
use jackin::tools::assess::{AssessOptions, Assessor};
use jackin::tools::keep::input::Input;
use jackin::tools::keep::{self, AnswerSource, Asked, Carried, ExitAction, Flags, Ruling, Session};

fn main() {
    driver::main::<KeepArgs>(keep::TOOL, run)
}

enum Step<'a> {
    Pass(&'a InputRecord),
    Fail(String, ErrorCode, anyhow::Error),
    Live(Session),
    Act(Session, Ruling),
}

fn run(args: KeepArgs, ctx: &mut Ctx) -> Result<Exit> {
    if args.export.is_some() {
        return jackin::face::moved::EXPORT.run_instead(keep::TOOL);
    }
    // In the exit hook, jackin-assess is still reading git while this waits for its records:
    // talking to Docker meanwhile takes the engine's round trips off the hook's critical path.
    let endpoint = args.docker.endpoint();
    let connecting = std::thread::spawn(move || Engine::connect(&endpoint?));
    let input = ctx.read_stdin_records("pipe assessments into it: jackin-assess \"$C\" | jackin-keep")?;
    let store = ctx.store()?;
    let inputs = match keep::input::read(&store, &input)? {
        Ok(inputs) => inputs,
        Err(refusals) => return ctx.refuse_input(refusals),
    };
    let mut sealer = Sealer::read(&store);
    sealer.distrusted.iter().for_each(|why| ctx.warn(why));
    let connected = || connecting.join().unwrap_or_else(|_| Err(anyhow::anyhow!("connecting to Docker panicked")));
    let engine = inputs.iter().any(Input::is_assessment).then(connected).transpose()?;
    let flags = Flags { keep: args.keep, discard_unfinished: args.discard_unfinished };
    let mut tty: Option<Option<Tty>> = None;

    let mut steps = Vec::new();
    for input in inputs {
        let (Some(engine), Input::Assessment(assessment)) = (&engine, &input) else {
            steps.extend(input.passed().map(Step::Pass));
            continue;
        };
        let assessment = Assessment::clone(assessment);
        let container = assessment.identity.container_base.clone();
        let policy = match args.policy {
            Some(policy) => policy,
            None => configured_policy(&store.roots.config_dir, assessment.identity.workspace_name.as_deref())?,
        };
        match keep::observe(&store, engine, &sealer, assessment, policy)? {
            Err(e) if Exit::of(&e) == Exit::Usage => steps.push(Step::Fail(container, ErrorCode::BadName, e)),
            Err(e) => steps.push(Step::Fail(container, ErrorCode::KeepFailed, e)),
            Ok(session) if session.live() && !args.stop => steps.push(Step::Live(session)),
            Ok(session) => {
                let asked = ask(ctx, &args, flags, &store, &session, &mut tty)?;
                let ruling = keep::decide(policy, session.assessment.verdict, flags, asked);
                steps.push(Step::Act(session, ruling));
            }
        }
    }

    let mut busy = 0;
    for step in steps {
        match step {
            Step::Pass(record) => ctx.pass_through(record)?,
            Step::Fail(container, code, e) => ctx.fail(Some(&container), code, &e)?,
            Step::Live(session) => {
                busy += 1;
                let message = format!(
                    "the session is live (its role container {} is running): nothing was changed; --stop stops it first",
                    session.manifest.docker.role_container
                );
                ctx.refuse_busy(session.name.as_str(), ErrorCode::Live, &anyhow::anyhow!(message))?;
            }
            Step::Act(mut session, ruling) => {
                if let Some(warning) = &ruling.warning {
                    ctx.warn(format_args!("{}: {warning}", session.name));
                }
                let engine = engine.as_ref().expect("connected when there are assessments");
                match keep::carry_out(&store, engine, &mut session, &ruling, (args.dry_run, args.stop), &mut sealer) {
                    Ok(Carried::Done(warnings)) => {
                        session.recheck.iter().for_each(|note| ctx.info(format_args!("{}: {note}", session.name)));
                        warnings.iter().for_each(|w| ctx.warn(format_args!("{}: {w}", session.name)))
                    }
                    Ok(Carried::Refused(code, e)) => {
                        busy += 1;
                        ctx.refuse_busy(session.name.as_str(), code, &e)?;
                        continue;
                    }
                    Err(e) => {
                        ctx.fail(Some(session.name.as_str()), ruling.failure_code(), &e)?;
                        continue;
                    }
                }
                ctx.emit(&keep::decision(&session, &ruling, args.dry_run, &sealer))?;
            }
        }
    }
    Ok(if busy > 0 { Exit::Busy } else { Exit::Ok })
}

/// The answer to the table's question, when it asks one: `--answer` (a script run from an
/// interactive shell must not block on the dialog), else the operator on the terminal, else a
/// fresh exit-action file, else nobody (which keeps).
fn ask(
    ctx: &Ctx,
    args: &KeepArgs,
    flags: Flags,
    store: &Store,
    session: &Session,
    tty: &mut Option<Option<Tty>>,
) -> Result<Asked> {
    if !keep::needs_answer(session.policy, session.assessment.verdict, flags) {
        return Ok(Asked::Nobody);
    }
    if let Some(answer) = args.answer {
        return Ok(Asked::Answered(answer.outcome(), AnswerSource::Flag));
    }
    if let Some(tty) = tty.get_or_insert_with(Tty::open) {
        let clean_allowed = session.assessment.verdict != Verdict::Unknown || flags.discard_unfinished;
        let with_diffs =
            || Assessor::new(AssessOptions { with_diff: true, with_disk: false }).instance(store, &session.name, None);
        let outcome = dialog::ask(tty, &session.assessment, clean_allowed, &with_diffs)?;
        return Ok(Asked::Answered(outcome, AnswerSource::Dialog));
    }
    match &session.exit_action {
        ExitAction::Fresh(outcome) => return Ok(Asked::Answered(*outcome, AnswerSource::ExitAction)),
        ExitAction::Stale => {
            ctx.info(format_args!("{}: exit-action.json is from an earlier session; ignored", session.name))
        }
        ExitAction::Unreadable(why) => ctx.warn(format_args!("{}: exit-action.json ignored: {why}", session.name)),
        ExitAction::Absent => {}
    }
    Ok(Asked::Nobody)
}
