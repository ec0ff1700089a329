//! jackin-notify: run the operator's program for each status change and each expiry in
//! jackin-reconcile's records, passing every record on (`jackin-reconcile --watch | jackin-notify
//! PROGRAM`).

use jackin::base::tool::Tool;
use jackin::extras::notify::{self, cli::NotifyArgs};
use jackin::face::driver;

fn main() {
    driver::main::<NotifyArgs>(Tool::Notify.name(), |args, ctx| notify::run(&args, ctx))
}
