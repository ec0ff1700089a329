//! jackin-assess: what would a purge of this session destroy that exists nowhere else?

use anyhow::Result;
use jackin::base::exit::Exit;
use jackin::base::parallel;
use jackin::base::tool::Tool;
use jackin::face::cli::AssessArgs;
use jackin::face::driver::{self, Ctx};
use jackin::protocol::assessment::Assessment;
use jackin::protocol::codes::ErrorCode;
use jackin::services::seal::Sealer;
use jackin::tools::assess::{self, AssessOptions, Assessor, Step};

fn main() {
    driver::main::<AssessArgs>(Tool::Assess.name(), run)
}

fn run(args: AssessArgs, ctx: &mut Ctx) -> Result<Exit> {
    let read_stdin = args.instances.iter().any(|a| a == "-");
    let named: Vec<&String> = args.instances.iter().filter(|a| *a != "-").collect();
    if !args.all && args.instances.is_empty() {
        return Err(Exit::Usage.err(
            "no instance selected\n  hint: name one (jackin-assess jk-…), use --all, or `-` to assess the \
             instances named by the records on stdin",
        ));
    }
    let records = if read_stdin {
        ctx.read_stdin_records("pipe records into it: jackin-reconcile | jackin-assess -")?
    } else {
        Vec::new()
    };

    let store = ctx.store()?;
    let catalog = ctx.catalog(&store)?;
    let (targets, steps) = if args.all {
        let targets = catalog.all();
        let steps = (0..targets.len()).map(Step::Assess).collect();
        (targets, steps)
    } else {
        assess::plan(&catalog, &named, &records)
    };

    let assessor = Assessor::new(AssessOptions { with_diff: args.diff, with_disk: args.disk });
    // Sealed with this home's key, when it has one, so keep can trust the verdict without looking again.
    let sealer = Sealer::read(&store);
    let mut results: Vec<Option<Result<Assessment>>> =
        parallel::map(&targets, |t| assessor.instance(&store, &t.name, t.row.as_ref())).into_iter().map(Some).collect();
    let mut findings = false;
    for step in steps {
        match step {
            Step::PassThrough(record) => ctx.pass_through(record)?,
            Step::Unresolved(arg, why) => ctx.unresolved(&arg, why)?,
            Step::Assess(i) => match results[i].take().expect("each target is assessed once") {
                Ok(mut assessment) => {
                    findings |= assessment.verdict.at_risk();
                    sealer.seal_assessment(&mut assessment);
                    ctx.emit(&assessment)?;
                }
                Err(e) => ctx.fail(Some(targets[i].name.as_str()), ErrorCode::AssessFailed, &e)?,
            },
        }
    }
    Ok(if args.exit_code && findings { Exit::Findings } else { Exit::Ok })
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use jackin::face::driver::OutputFormat;

    use super::*;

    fn run_in_process(home: &std::path::Path, argv: &[&str]) -> (Exit, String, String) {
        let home = home.to_str().unwrap();
        let mut all = vec!["jackin-assess", "--home", home, "--config-dir", home, "--format", "json"];
        all.extend_from_slice(argv);
        let args = AssessArgs::try_parse_from(all).unwrap();
        let (mut ctx, captured) = Ctx::capturing("jackin-assess", &args.common, OutputFormat::Json);
        let exit = run(args, &mut ctx).unwrap();
        (ctx.final_exit(exit), captured.out(), captured.err())
    }

    #[test]
    fn an_unknown_instance_is_an_error_record_and_exit_6_the_others_go_on() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("data")).unwrap();
        let (exit, out, err) = run_in_process(home.path(), &["jk-nope1234-r"]);
        assert_eq!(exit, Exit::Partial);
        let record: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(record["type"], "error");
        assert_eq!(record["data"]["code"], "unknown_instance");
        assert_eq!(record["data"]["container_base"], "jk-nope1234-r");
        assert!(err.starts_with("jackin-assess: error: jk-nope1234-r: no instance named"), "{err}");
    }

    #[test]
    fn an_empty_home_has_nothing_to_assess() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("data")).unwrap();
        let (exit, out, err) = run_in_process(home.path(), &["--all", "--exit-code"]);
        assert_eq!((exit, out.as_str(), err.as_str()), (Exit::Ok, "", ""));
    }
}
