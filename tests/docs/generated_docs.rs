//! man/ and completions/ are rendered from the clap definitions. This test fails when the
//! committed files are stale; `JACKIN_UPDATE_GENERATED=1 cargo test --test tests docs::generated_docs::`
//! rewrites them.

use std::path::{Path, PathBuf};

use clap_complete::Shell;

fn rendered() -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for cmd in jackin::face::cli::man_commands() {
        let name = cmd.get_name().to_owned();
        files.push((root.join("man").join(format!("{name}.1")), man_page(cmd)));
    }
    for mut cmd in jackin::face::cli::commands() {
        let name = cmd.get_name().to_owned();
        for (shell, file) in [
            (Shell::Bash, format!("{name}.bash")),
            (Shell::Zsh, format!("_{name}")),
            (Shell::Fish, format!("{name}.fish")),
        ] {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, &name, &mut script);
            files.push((root.join("completions").join(file), script));
        }
    }
    files
}

/// clap_mangen's page with an EXIT STATUS section (man-pages(7)) before VERSION.
fn man_page(cmd: clap::Command) -> Vec<u8> {
    let exits = jackin::face::cli::exit_status(cmd.get_name());
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut page).unwrap();
    let page = String::from_utf8(page).unwrap();
    let mut section = String::from(".SH \"EXIT STATUS\"\n");
    for usage in exits {
        let meaning = usage.meaning().replace('\\', "\\e").replace('-', "\\-");
        section.push_str(&format!(".TP\n\\fB{}\\fR\n{meaning}\n", usage.exit.code()));
    }
    let at = page.find(".SH VERSION").expect("clap_mangen renders a VERSION section");
    format!("{}{section}{}", &page[..at], &page[at..]).into_bytes()
}

#[test]
fn man_pages_and_completions_are_current() {
    let update = std::env::var_os("JACKIN_UPDATE_GENERATED").is_some();
    let mut stale = Vec::new();
    for (path, bytes) in rendered() {
        if std::fs::read(&path).ok().as_deref() == Some(&bytes[..]) {
            continue;
        }
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        } else {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files (run `JACKIN_UPDATE_GENERATED=1 cargo test --test tests docs::generated_docs::`):\n  {}",
        stale.join("\n  ")
    );
}
