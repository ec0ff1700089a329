//! man/ and completions/ are rendered from the clap definitions and the tables of
//! `jackin::face::manual`. This test fails when the committed files are stale;
//! `JACKIN_UPDATE_GENERATED=1 cargo test --test tests docs::generated_docs::` rewrites them.

use std::path::{Path, PathBuf};

use clap_complete::Shell;
use jackin::base::tool::Tool;
use jackin::face::manual::{self, Manual, Reference};

use super::session_names;

fn rendered() -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for cmd in jackin::extras::man_commands() {
        let name = cmd.get_name().to_owned();
        files.push((root.join("man").join(format!("{name}.1")), man_page(cmd)));
    }
    for mut cmd in jackin::extras::commands() {
        let name = cmd.get_name().to_owned();
        let listing = jackin::extras::manual(tool(&name)).sessions;
        for (shell, file) in [
            (Shell::Bash, format!("{name}.bash")),
            (Shell::Zsh, format!("_{name}")),
            (Shell::Fish, format!("{name}.fish")),
        ] {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, &name, &mut script);
            let script = String::from_utf8(script).unwrap();
            let script = match &listing {
                Some(listing) => session_names::added(shell, &cmd, listing, &script),
                None => script,
            };
            files.push((root.join("completions").join(file), script.into_bytes()));
        }
    }
    files
}

/// The tool of a command's name.
pub(super) fn tool(name: &str) -> Tool {
    Tool::PROGRAMS.into_iter().chain(Tool::EXTRAS).find(|tool| tool.name() == name).expect("one of the tools")
}

/// clap_mangen's page with the sections of man-pages(7) it does not write: EXIT STATUS,
/// ENVIRONMENT and FILES before its VERSION, EXAMPLES and SEE ALSO after it.
fn man_page(cmd: clap::Command) -> Vec<u8> {
    let name = cmd.get_name().to_owned();
    let manual = jackin::extras::manual(tool(&name));
    let repeated = repeated_positionals(&cmd);
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut page).unwrap();
    let mut page = String::from_utf8(page).unwrap();
    // clap_mangen 0.3 shows a positional that takes several values as one ([INSTANCE]); --help
    // says [INSTANCE]..., and so must the page.
    for value in repeated {
        page = page.replace(&format!("[\\fI{value}\\fR]"), &format!("[\\fI{value}\\fR]..."));
    }
    let before_version = format!("{}{}{}", exit_status(&name), environment(&manual), files(&manual));
    let at = page.find(".SH VERSION").expect("clap_mangen renders a VERSION section");
    format!("{}{before_version}{}{}{}", &page[..at], &page[at..], examples(&manual), see_also(&manual)).into_bytes()
}

/// The value names of the positionals that take several values.
fn repeated_positionals(cmd: &clap::Command) -> Vec<String> {
    cmd.get_positionals()
        .filter(|arg| matches!(arg.get_action(), clap::ArgAction::Append))
        .map(|arg| arg.get_value_names().map_or_else(|| arg.get_id().to_string(), |names| names.join(" ")))
        .collect()
}

/// Text as roff shows it: backslashes and hyphens escaped, a line never read as a request.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    match escaped.starts_with(['.', '\'']) {
        true => format!("\\&{escaped}"),
        false => escaped,
    }
}

fn exit_status(tool: &str) -> String {
    let mut section = String::from(".SH \"EXIT STATUS\"\n");
    for usage in jackin::face::cli::exit_status(tool) {
        section.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", usage.exit.code(), roff(&usage.meaning())));
    }
    section
}

fn environment(manual: &Manual) -> String {
    if manual.environment.is_empty() {
        return String::new();
    }
    let mut section = String::from(".SH ENVIRONMENT\n");
    for variable in &manual.environment {
        section.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(variable.name), roff(variable.about)));
    }
    section
}

fn files(manual: &Manual) -> String {
    if manual.files.is_empty() {
        return String::new();
    }
    let mut section = format!(".SH FILES\n{}\n", roff(manual::FILES_INTRO));
    for file in &manual.files {
        section.push_str(&format!(".TP\n\\fI{}\\fR\n{}\n", roff(file.path), roff(file.about)));
    }
    section
}

fn examples(manual: &Manual) -> String {
    let mut section = format!(".SH EXAMPLES\n{}\n", roff(manual::EXAMPLES_INTRO));
    for example in manual.examples {
        let exit = match example.exit.code() {
            0 => String::new(),
            code => format!(" (exit {code})"),
        };
        section.push_str(&format!(
            ".PP\n{}{exit}:\n.RS 4\n.nf\n{}\n.fi\n.RE\n",
            roff(example.about),
            roff(example.command)
        ));
    }
    section
}

fn see_also(manual: &Manual) -> String {
    let mut pages = Vec::new();
    let mut documents = Vec::new();
    for reference in &manual.see_also {
        match reference {
            Reference::Page(name, section) => pages.push(format!("\\fB{}\\fR({section})", roff(name))),
            Reference::Document(path, about) => documents.push(format!("\\fI{}\\fR ({})", roff(path), roff(about))),
        }
    }
    format!(".SH \"SEE ALSO\"\n{}\n.PP\nIn the jackin\\-keep sources: {}.\n", pages.join(", "), documents.join(", "))
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

#[test]
fn the_documents_the_pages_name_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for tool in Tool::PROGRAMS.into_iter().chain(Tool::EXTRAS) {
        for reference in jackin::extras::manual(tool).see_also {
            if let Reference::Document(path, _) = reference {
                assert!(root.join(path).is_file(), "{}: SEE ALSO names {path}, which is not there", tool.name());
            }
        }
    }
}

#[test]
fn the_synopsis_shows_instance_as_help_does() {
    for (mut cmd, man) in jackin::face::cli::commands().into_iter().zip(jackin::face::cli::man_commands()) {
        let usage = cmd.render_usage().to_string();
        let last = usage.split_whitespace().last().unwrap();
        if !last.contains("INSTANCE") {
            continue; // keep takes its sessions on stdin
        }
        let instance = last.replace("INSTANCE", "\\fIINSTANCE\\fR");
        let page = String::from_utf8(man_page(man)).unwrap();
        let synopsis = page.split(".SH SYNOPSIS\n").nth(1).and_then(|rest| rest.lines().next()).unwrap();
        assert!(synopsis.trim_end().ends_with(&instance), "{}: {usage}, and the page: {synopsis}", cmd.get_name());
    }
}
