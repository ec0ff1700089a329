//! jackin-move: take a kept session to another host. `export` writes it to one archive on the host
//! that kept it; `import` makes it a kept session of this host, for jackin-restore to resume.

use anyhow::Result;
use jackin::base::exit::Exit;
use jackin::base::tool::Tool;
use jackin::extras::moves::cli::{MoveArgs, Verb};
use jackin::extras::moves::run;
use jackin::face::driver::{self, Ctx};

fn main() {
    driver::main::<MoveArgs>(Tool::Move.name(), |args, ctx: &mut Ctx| -> Result<Exit> {
        match &args.verb {
            Verb::Export(export) => run::export(export, ctx),
            Verb::Import(import) => run::import(import, ctx),
        }
    })
}
