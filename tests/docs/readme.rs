//! Runs the README's examples of the five tools as written: every `sh` block of its section "The
//! five tools", in order, as one `bash -e -o pipefail` script each, with `$C` a session with
//! unfinished work and a stopped container (the exit hook's moment) and `$D` one whose work is
//! discarded and recovered. Each block must exit 0.

use crate::common;

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use common::docker::{docker, engine_available, Session, SessionOptions};
use common::{branches, commit_file, Home};

fn five_tools_blocks(readme: &str) -> Vec<(usize, String)> {
    let section = readme.split("\n## ").find(|s| s.starts_with("The five tools")).expect("the section");
    let start = readme.find(section).unwrap();
    let mut blocks = Vec::new();
    let mut lines = section.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let Some(tag) = line.strip_prefix("```") else { continue };
        assert_eq!(tag, "sh", "README.md, block at line {}: only `sh` blocks in this section", n + 1);
        let body: Vec<&str> = lines.by_ref().map(|(_, l)| l).take_while(|l| !l.starts_with("```")).collect();
        let line_no = readme[..start].lines().count() + n + 1;
        blocks.push((line_no, body.join("\n")));
    }
    blocks
}

#[test]
fn the_readmes_examples_run_as_written() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = five_tools_blocks(&readme);
    assert_eq!(blocks.len(), 5, "one block per tool");
    let tools = ["jackin-assess", "jackin-keep", "jackin-purge", "jackin-reconcile", "jackin-restore"];
    for tool in tools {
        assert!(blocks.iter().any(|(_, b)| b.contains(tool)), "an example of {tool}");
    }
    if !engine_available("readme") {
        return;
    }

    let mut home = Home::new();
    let host = home.host_repo("my-app");
    let kept = home.instance("rdme0000", |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    let discarded = home.instance("rdmd0000", |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    commit_file(&kept.mount_path(0), "feature.rs", "fn feature() {}\n", "feature");
    fs::write(kept.mount_path(0).join("notes.md"), "half done\n").unwrap();
    commit_file(&discarded.mount_path(0), "idea.rs", "fn idea() {}\n", "an idea");
    let sockets = home.home.join("sockets").join(&kept.container);
    fs::create_dir_all(&sockets).unwrap();
    fs::write(sockets.join("agent.toml"), "role = \"agent-smith\"\nworkdir = \"/workspace/my-app\"\n").unwrap();
    let _session = Session::launch(
        &kept.container,
        SessionOptions {
            dind: false,
            binds: vec![(kept.mount_path(0), "/workspace/my-app")],
            running: false,
            ..Default::default()
        },
    );

    let path = format!("{}:{}", common::tools_dir().display(), std::env::var("PATH").unwrap());
    for (line, script) in &blocks {
        let out = Command::new("bash")
            .args(["-e", "-o", "pipefail", "-c", script])
            .env("PATH", &path)
            .env("JACKIN_HOME_DIR", &home.home)
            .env("JACKIN_CONFIG_DIR", &home.config)
            .env("C", &kept.container)
            .env("D", &discarded.container)
            .current_dir(&root)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "README.md:{line}:\n{script}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // What the blocks did: C kept, then resumed; D's work discarded into the quarantine and back.
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &kept.container]), "true");
    assert!(!discarded.dir.exists(), "D was purged");
    let recovered = format!("jackin/recovered/{}", discarded.container);
    assert!(branches(&host).contains(&recovered), "{:?}", branches(&host));
}
