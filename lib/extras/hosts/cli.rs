//! jackin-hosts's command line: where the hosts are, then the tool and its arguments as they would
//! run here.

use std::ffi::OsString;
use std::time::Duration;

use clap::{CommandFactory, Parser};

use crate::base::tool::Tool;
use crate::face::cli::{exit_status_help, AssessArgs, CommonArgs, KeepArgs, PurgeArgs, Reach, ReconcileArgs};
use crate::face::cli::{RestoreArgs, ToolArgs};

/// One view of the jackin tools across hosts, over ssh.
#[derive(Debug, Clone, Parser)]
#[command(
    name = Tool::Hosts.name(),
    version,
    about = "Run a jackin tool here and on other hosts over ssh, one view merged",
    long_about = "Runs TOOL with ARGS as it would run here, and on each host named over ssh (the \
system's ssh, with its config, keys and known hosts; no password prompt). A view (jackin-assess; \
--list, --dry-run or --plan of the others; jackin-restore --quarantined or --records) runs here \
and on every host at once: this host's output first, as the tool prints it, then each host's rows, \
each with its `host`, and one `host` record per host saying how many rows it gave or why none \
(unreachable, no tools there, another protocol, no answer in time, too much). A run that changes \
something runs on the one host named instead of here, its stdin handed on. Only the record types \
a view makes are taken from another host; the rest are counted in its `host` record.",
    after_help = exit_status_help(Tool::Hosts.name()),
)]
pub struct HostsArgs {
    /// Another host, over ssh (user@host, ssh://user@host:port); repeat for each
    #[arg(long = "host", value_name = "DEST")]
    pub hosts: Vec<String>,

    /// Every host listed in <config-dir>/jackin-tools-hosts too (one per line, # for a comment)
    #[arg(long)]
    pub all_hosts: bool,

    /// How long each host may take to answer
    #[arg(long, value_name = "DUR", value_parser = crate::face::cli::duration, default_value = "30s")]
    pub hosts_timeout: Duration,

    /// The tool to run: jackin-assess, jackin-keep, jackin-purge, jackin-reconcile or jackin-restore
    #[arg(value_name = "TOOL", value_parser = clap::builder::PossibleValuesParser::new(Tool::PROGRAMS.map(Tool::name)))]
    tool: String,

    /// Its arguments, as it would take them here (its --home, --config-dir and --format stay
    /// here; each host uses its own home and answers in JSON)
    #[arg(value_name = "ARGS", trailing_var_arg = true, allow_hyphen_values = true, value_parser = clap::value_parser!(OsString))]
    args: Vec<OsString>,

    /// The tool's common flags, as its own parser read them (`resolved`).
    #[arg(skip)]
    common: CommonArgs,

    #[arg(skip)]
    reach: Option<Reach>,
}

impl HostsArgs {
    /// The tool's name, one of the five.
    pub fn tool(&self) -> &'static str {
        Tool::PROGRAMS.map(Tool::name).into_iter().find(|name| *name == self.tool).expect("a value clap checked")
    }

    /// The tool's arguments.
    pub fn tool_args(&self) -> &[OsString] {
        &self.args
    }

    /// Whether the tool's run is a view or acts, as its flags say.
    pub fn reach(&self) -> Reach {
        self.reach.expect("resolved before the run")
    }
}

/// The common flags and the reach of a tool's parsed arguments.
fn of<A: ToolArgs>(args: A) -> (CommonArgs, Reach) {
    (args.common().clone(), args.reach())
}

impl ToolArgs for HostsArgs {
    fn common(&self) -> &CommonArgs {
        &self.common
    }

    /// The tool's arguments read by the tool's own parser: a usage error is the tool's, and its
    /// common flags (the home, the format) are this run's.
    fn resolved(mut self) -> Result<Self, clap::Error> {
        let argv = std::iter::once(OsString::from(&self.tool)).chain(self.args.iter().cloned());
        let (common, reach) = match self.tool() {
            "jackin-assess" => of(AssessArgs::try_parse_from(argv)?),
            "jackin-keep" => of(KeepArgs::try_parse_from(argv)?),
            "jackin-purge" => of(PurgeArgs::try_parse_from(argv)?),
            "jackin-reconcile" => of(ReconcileArgs::try_parse_from(argv)?),
            _ => of(RestoreArgs::try_parse_from(argv)?),
        };
        if !common.host.is_empty() || common.all_hosts {
            return Err(HostsArgs::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                "--host and --all-hosts are jackin-hosts's: give them before TOOL",
            ));
        }
        self.common = common;
        self.reach = Some(reach);
        Ok(self)
    }
}
