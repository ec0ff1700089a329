//! jackin-hosts: a jackin tool run here and on other hosts over ssh, one view merged; a run that
//! acts, on the one host named (`jackin-hosts --host DEST TOOL ARGS`).

use jackin::base::tool::Tool;
use jackin::extras::hosts::{self, cli::HostsArgs};
use jackin::face::driver;

fn main() {
    driver::main::<HostsArgs>(Tool::Hosts.name(), |args, ctx| hosts::run(&args, ctx))
}
