//! `jackin-restore C --exec` where jackin is not installed: the tools' own attach, which settles
//! the session when the operator leaves it as jackin's exit would (issue 65). The agent is the
//! test agent image's (common::docker::build_agent_image), driven on a real pseudo-terminal; the
//! attach is the real `docker exec -it` into it; the exit dialog is jackin-keep's.

use std::fs;
use std::process::Command;

use crate::common;
use common::docker::{self, docker, engine_available, Session, SessionOptions, TEST_AGENT_IMAGE};
use common::{Home, Instance};
use jackin::state::model::Status;
use jackin::state::names::InstanceName;
use jackin::state::store::{Roots, Store};
use rexpect::process::WaitStatus;
use rexpect::session::PtySession;

/// A kept worktree session whose role container runs the test agent, stopped (as after a host
/// restart): the next resume is tier 1.
fn kept_agent_session(home: &mut Home, id: &str) -> (Instance, Session, std::path::PathBuf) {
    docker::build_agent_image();
    let host = home.host_repo("app");
    let inst = home.instance(id, |h, c| vec![h.worktree_record(c, &host, "/workspace/app")]);
    home.write_agent_toml(&inst.container);
    let options = SessionOptions {
        dind: false,
        image: Some(TEST_AGENT_IMAGE),
        role_args: vec!["--entrypoint", "/agent-init"],
        ..Default::default()
    };
    let session = Session::launch(&inst.container, options);
    let store = Store::open(Roots { home: home.home.clone(), config_dir: home.config.clone() }).unwrap();
    store
        .set_status(&InstanceName::parse(&inst.container).unwrap(), Status::RestoreAvailable, "2026-12-06T10:00:00Z")
        .unwrap();
    docker(&["stop", "-t", "0", &inst.container]);
    (inst, session, host)
}

/// `jackin-restore C --yes --exec` on a pseudo-terminal, with no jackin on PATH and the exit
/// dialog in numbered text (TERM=dumb).
fn exec_on_a_terminal(home: &Home, container: &str) -> PtySession {
    let mut cmd = Command::new(common::tool_path("jackin-restore"));
    cmd.arg("--home").arg(&home.home).arg("--config-dir").arg(&home.config);
    cmd.args([container, "--yes", "--exec", "--format=text"]);
    cmd.env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR").env("TERM", "dumb");
    rexpect::session::spawn_command(cmd, Some(60_000)).unwrap()
}

fn ends_with_0(mut pty: PtySession) -> String {
    let rest = pty.exp_eof().unwrap();
    let status = pty.process.wait().unwrap();
    assert_eq!(status, WaitStatus::Exited(pty.process.child_pid, 0), "{rest}");
    rest
}

/// Left through the tools' own attach: a detach leaves the session running and says so; a clean
/// exit of the agent is settled as jackin's exit settles it (nothing at risk: torn down), where
/// before the row stayed `active` beside an exited container, for a reconcile to call a crash.
#[test]
fn without_jackin_the_tools_attach_leaves_a_detach_running_and_settles_a_clean_exit() {
    if !engine_available("without_jackin_the_tools_attach_leaves_a_detach_running_and_settles_a_clean_exit") {
        return;
    }
    let mut home = Home::new();
    let (inst, session, host) = kept_agent_session(&mut home, &common::unique_id());

    let mut pty = exec_on_a_terminal(&home, &inst.container);
    pty.exp_string("agent ready").unwrap();
    pty.send_line("detach").unwrap();
    let said = ends_with_0(pty);
    assert!(said.contains("left running (detached)"), "{said}");
    assert_eq!(session.state(&inst.container).as_deref(), Some("running"));
    assert_eq!(home.index_row(&inst.container).map(|r| r.status).as_deref(), Some("active"));

    // Attached again (tier 0: it runs), the agent exits: nothing at risk, torn down.
    let mut pty = exec_on_a_terminal(&home, &inst.container);
    pty.exp_string("agent ready").unwrap();
    pty.send_line("exit").unwrap();
    ends_with_0(pty);
    let row = home.index_row(&inst.container).map(|r| r.status);
    assert_eq!(row, None, "settled as a clean exit: purged, its row removed");
    assert!(!inst.dir.exists(), "the data directory went with the clean-up");
    assert!(!Session::exists("container", &inst.container), "the role container went with it");
    assert!(!common::branches(&host).iter().any(|b| b.contains(&inst.container)));
}

/// Work at risk: the agent's exit brings jackin-keep's dialog; "Return to agent" resumes the
/// session and attaches again, and the next exit's "Exit and keep" keeps it with its work, its
/// containers freed, to resume later.
#[test]
fn without_jackin_return_to_the_agent_attaches_again_and_exit_and_keep_keeps_the_work() {
    if !engine_available("without_jackin_return_to_the_agent_attaches_again_and_exit_and_keep_keeps_the_work") {
        return;
    }
    let mut home = Home::new();
    let (inst, _session, _) = kept_agent_session(&mut home, &common::unique_id());
    fs::write(inst.mount_path(0).join("notes.md"), "half done\n").unwrap();

    let mut pty = exec_on_a_terminal(&home, &inst.container);
    for choice in ["1", "2"] {
        pty.exp_string("agent ready").unwrap();
        pty.send_line("exit").unwrap();
        pty.exp_string("Press Enter once you have read this").unwrap();
        pty.send_line("").unwrap();
        pty.exp_string("Choose [1]").unwrap();
        pty.send_line(choice).unwrap();
        if choice == "1" {
            pty.exp_string("back to the agent").unwrap();
        }
    }
    let said = ends_with_0(pty);
    assert_eq!(home.index_row(&inst.container).map(|r| r.status).as_deref(), Some("preserved_dirty"), "{said}");
    assert!(!Session::exists("container", &inst.container), "kept with its containers freed");
    assert_eq!(fs::read_to_string(inst.mount_path(0).join("notes.md")).unwrap(), "half done\n");
    let listed = home.cmd("jackin-restore").args(["--list", "--format=json"]).output().unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&inst.container), "resumable later");
}

/// An attach that cannot attach (`docker exec -it` with no terminal) leaves the resumed session
/// running and says so, with exit 6: resumed, never attached, nothing settled.
#[test]
fn an_attach_that_fails_leaves_the_session_running_and_the_run_partial() {
    if !engine_available("an_attach_that_fails_leaves_the_session_running_and_the_run_partial") {
        return;
    }
    let mut home = Home::new();
    let (inst, session, _) = kept_agent_session(&mut home, &common::unique_id());
    let out = home.detached("jackin-restore").args([&inst.container, "--yes", "--exec"]).output().unwrap();
    let said = common::stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{said}");
    assert!(said.contains("the attach ended with exit") && said.contains("the session runs on"), "{said}");
    assert_eq!(session.state(&inst.container).as_deref(), Some("running"));
    assert_eq!(home.index_row(&inst.container).map(|r| r.status).as_deref(), Some("active"));
}
