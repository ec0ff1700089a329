//! The exit-code tables of docs/reference.md and docs/operator-guide.md are the one `Exit` enum's,
//! rendered: a code or a meaning changed in one place and not the other fails here.
//! `JACKIN_UPDATE_GENERATED=1 cargo test --test tests docs::exit_tables::` rewrites them.

use std::path::Path;

use jackin::base::exit::Exit;

/// The reference's table: code and meaning.
fn reference_table() -> String {
    let mut table = String::from("| code | meaning |\n|---|---|\n");
    for exit in Exit::ALL {
        table.push_str(&format!("| {} | {} |\n", exit.code(), exit.meaning()));
    }
    table
}

/// The guide's table: code, meaning and what a script does.
fn guide_table() -> String {
    let mut table = String::from("| code | meaning | what a script does |\n|---|---|---|\n");
    for exit in Exit::ALL {
        table.push_str(&format!("| {} | {} | {} |\n", exit.code(), exit.meaning(), exit.advice()));
    }
    table
}

/// `doc` with the table that starts with `table`'s header line replaced by `table`.
fn with_table(doc: &str, table: &str) -> String {
    let header = table.lines().next().unwrap();
    let start = doc.find(&format!("\n{header}\n")).map(|at| at + 1).expect("the table's header line");
    let len: usize = doc[start..].lines().take_while(|l| l.starts_with('|')).map(|l| l.len() + 1).sum();
    format!("{}{table}{}", &doc[..start], &doc[start + len..])
}

#[test]
fn the_exit_code_tables_are_the_exit_enums() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let update = std::env::var_os("JACKIN_UPDATE_GENERATED").is_some();
    for (file, table) in [("docs/reference.md", reference_table()), ("docs/operator-guide.md", guide_table())] {
        let path = root.join(file);
        let doc = std::fs::read_to_string(&path).unwrap();
        let expected = with_table(&doc, &table);
        if update {
            std::fs::write(&path, &expected).unwrap();
        } else {
            assert!(
                doc == expected,
                "{file}: the exit-code table is not the Exit enum's (run `JACKIN_UPDATE_GENERATED=1 cargo test \
                 --test tests docs::exit_tables::`); it should read:\n{table}"
            );
        }
    }
}

#[test]
fn a_table_is_replaced_whole_and_nothing_else() {
    let doc = "intro\n\n| code | meaning |\n|---|---|\n| 0 | old |\n| 9 | gone |\n\nafter\n";
    let new = with_table(doc, "| code | meaning |\n|---|---|\n| 0 | new |\n");
    assert_eq!(new, "intro\n\n| code | meaning |\n|---|---|\n| 0 | new |\n\nafter\n");
}
