//! jackin-idle: find running sessions nobody uses; with `--yes`, keep them to resume later
//! (`jackin-idle --yes` from a schedule; contrib/cron, contrib/systemd, contrib/launchd).

use jackin::base::tool::Tool;
use jackin::extras::idle::{self, cli::IdleArgs};
use jackin::face::driver;

fn main() {
    driver::main::<IdleArgs>(Tool::Idle.name(), |args, ctx| idle::run(&args, ctx))
}
