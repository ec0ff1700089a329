//! jackin-keep's exit dialog. Screen 1 shows the unfinished work and waits for the operator to
//! acknowledge it; screen 2 asks what to do: Return to agent (default), Exit and keep, Exit and
//! clean up, or Inspect (each changed file's diff and the unpushed commits, in the pager). On a
//! terminal that cannot draw, the same two steps as numbered text.

use std::path::Path;

use anyhow::Result;
use crossterm::event::KeyCode;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Text};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;

use super::{styled, Input, Session, Tty};
use crate::protocol::assessment::Assessment;
use crate::protocol::inert::inert_text;
use crate::protocol::records::Outcome;

/// Shows the unfinished work, waits for the acknowledgement, then asks. `clean_allowed` is false
/// when the work cannot be read and `--discard-unfinished` was not given. `with_diffs`
/// re-assesses the session with each changed file's diff.
pub fn ask(
    tty: &Tty,
    assessment: &Assessment,
    clean_allowed: bool,
    with_diffs: &dyn Fn() -> Result<Assessment>,
) -> Result<Outcome> {
    let dialog = Dialog { assessment, clean_allowed, with_diffs };
    if tty.can_draw() {
        dialog.on_screens(&mut Session::enter(tty, true)?)
    } else {
        dialog.as_text(&mut Session::enter(tty, false)?)
    }
}

struct Dialog<'a> {
    assessment: &'a Assessment,
    clean_allowed: bool,
    with_diffs: &'a dyn Fn() -> Result<Assessment>,
}

const CHOICES: [Outcome; 3] = [Outcome::Return, Outcome::Keep, Outcome::Clean];
/// The row after the three outcomes.
const INSPECT: usize = 3;

impl Dialog<'_> {
    fn name(&self) -> &str {
        &self.assessment.identity.container_base
    }

    fn clean_label(&self) -> &'static str {
        if self.clean_allowed {
            "Exit and clean up: the unfinished work is saved to a quarantine, then deleted"
        } else {
            "Exit and clean up: unavailable, the work cannot be verified (--discard-unfinished allows it)"
        }
    }

    fn on_screens(&self, session: &mut Session) -> Result<Outcome> {
        let work = work_lines(self.assessment);
        let mut scroll: u16 = 0;
        loop {
            session.draw(|frame| self.draw_work(frame, &work, scroll))?;
            let Input::Key(key) = session.input()? else { continue };
            match key.code {
                KeyCode::Enter => break,
                KeyCode::Down | KeyCode::Char('j') => scroll = scroll.saturating_add(1),
                KeyCode::Up | KeyCode::Char('k') => scroll = scroll.saturating_sub(1),
                KeyCode::PageDown | KeyCode::Char(' ') => scroll = scroll.saturating_add(10),
                KeyCode::PageUp => scroll = scroll.saturating_sub(10),
                _ => {}
            }
        }
        let mut selected = 0;
        let mut note = String::new();
        loop {
            session.draw(|frame| self.draw_choices(frame, selected, &note))?;
            let Input::Key(key) = session.input()? else { continue };
            match key.code {
                KeyCode::Down | KeyCode::Tab | KeyCode::Char('j') => selected = (selected + 1) % (INSPECT + 1),
                KeyCode::Up | KeyCode::BackTab | KeyCode::Char('k') => selected = (selected + INSPECT) % (INSPECT + 1),
                KeyCode::Char(c @ '1'..='3') => selected = c as usize - '1' as usize,
                KeyCode::Char('i') | KeyCode::Char('d') => selected = INSPECT,
                KeyCode::Enter if selected == INSPECT => note = self.inspect(session),
                KeyCode::Enter if CHOICES[selected] == Outcome::Clean && !self.clean_allowed => {
                    note = "Clean-up is not possible for work that cannot be verified.".to_owned()
                }
                KeyCode::Enter => return Ok(CHOICES[selected]),
                _ => {}
            }
        }
    }

    fn draw_work(&self, frame: &mut Frame, work: &str, scroll: u16) {
        let [body, keys] = Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
        let title = format!(" {} has unfinished work ", self.name());
        frame.render_widget(
            Paragraph::new(work).block(Block::bordered().title(title)).wrap(Wrap { trim: false }).scroll((scroll, 0)),
            body,
        );
        let hint = "Enter: I have read this · ↑↓ scroll · Ctrl-C changes nothing";
        frame.render_widget(Paragraph::new(hint).style(styled(Style::new().add_modifier(Modifier::BOLD))), keys);
    }

    fn draw_choices(&self, frame: &mut Frame, selected: usize, note: &str) {
        let [body, keys] = Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
        let labels = [
            "1  Return to agent (default)",
            "2  Exit and keep: resume it later with jackin-restore",
            &format!("3  {}", self.clean_label()),
            "i  Inspect: each changed file's diff in your pager, and the unpushed commits",
        ];
        let mut lines = vec![Line::raw(format!("  {}", inert_text(&self.assessment.summary))), Line::raw("")];
        for (row, label) in labels.iter().enumerate() {
            let unavailable = row == 2 && !self.clean_allowed;
            let mut style = Style::new();
            if row == selected {
                style = style.add_modifier(Modifier::REVERSED);
            }
            if unavailable {
                style = style.add_modifier(Modifier::DIM);
            }
            let marker = if row == selected { ">" } else { " " };
            lines.push(Line::styled(format!("{marker} {label}"), styled(style)));
        }
        if !note.is_empty() {
            lines.push(Line::raw(""));
            lines.push(Line::raw(format!("  {}", inert_text(note))));
        }
        let title = format!(" What now for {}? ", self.name());
        frame.render_widget(
            Paragraph::new(Text::from(lines)).block(Block::bordered().title(title)).wrap(Wrap { trim: false }),
            body,
        );
        let hint = "↑↓ 1-3 i: move · Enter: choose · Ctrl-C changes nothing";
        frame.render_widget(Paragraph::new(hint).style(styled(Style::new().add_modifier(Modifier::BOLD))), keys);
    }

    /// Pages the diffs and the unpushed commits; what to say on the screen afterwards.
    fn inspect(&self, session: &mut Session) -> String {
        let shown = (self.with_diffs)().and_then(|full| session.page(&inspection(&full)));
        match shown {
            Ok(()) => String::new(),
            Err(e) => format!("The diffs cannot be shown: {e:#}"),
        }
    }

    fn as_text(&self, session: &mut Session) -> Result<Outcome> {
        let name = self.name();
        session.say(&format!("\n{name} has unfinished work:\n{}\n\n", work_lines(self.assessment)))?;
        session.say("Press Enter once you have read this (Ctrl-C changes nothing): ")?;
        while !session.line()?.is_empty() {
            session.say("Read the list above, then press Enter (Ctrl-C changes nothing): ")?;
        }
        loop {
            session.say(&format!(
                "\nWhat now for {name}?\n  1) Return to agent (default)\n  2) Exit and keep: resume it later with jackin-restore\n  3) {}\n  d) View the full diffs\nChoose [1]: ",
                self.clean_label()
            ))?;
            match session.line()?.to_ascii_lowercase().as_str() {
                "" | "1" => return Ok(Outcome::Return),
                "2" => return Ok(Outcome::Keep),
                "3" if self.clean_allowed => return Ok(Outcome::Clean),
                "3" => session.say("Clean-up is not possible for work that cannot be verified.\n")?,
                "d" => match (self.with_diffs)() {
                    Ok(full) => session.say(&format!("\n{}\n", work_lines(&full)))?,
                    Err(e) => session.say(&inert_text(&format!("The diffs cannot be shown: {e:#}\n")))?,
                },
                other => session.say(&format!("{other:?} is not a choice: type 1, 2, 3 or d.\n"))?,
            }
        }
    }
}

/// Per mount: the changed files with their status letters, each unpushed ref with "N commits
/// ahead of <upstream>" or "no upstream", stashes, and why a mount cannot be verified; inert
/// (protocol/inert.rs), as the agent named much of it.
fn work_lines(assessment: &Assessment) -> String {
    let text = crate::protocol::envelope::Record::text(assessment);
    // The first line repeats the name; the summary is worth keeping.
    let lines = match text.split_once('\n') {
        Some((_, rest)) => format!("  {}\n{rest}", assessment.summary),
        None => format!("  {}", assessment.summary),
    };
    inert_text(&lines).into_owned()
}

/// What Inspect pages: each changed file's diff as `git diff` shows it, then per unpushed ref
/// its commits as `git log --oneline` shows them.
fn inspection(full: &Assessment) -> String {
    let mut out = String::new();
    for mount in &full.mounts {
        for file in &mount.files {
            out.push_str(&format!("{} · {}\n", mount.mount_dst, file.text()));
            match &file.diff {
                Some(diff) if !diff.is_empty() => out.push_str(diff),
                _ => out.push_str("(no diff to show)\n"),
            }
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push('\n');
        }
        for r in &mount.unpushed {
            let phrase = crate::protocol::assessment::ahead_phrase(r);
            out.push_str(&format!("{} · {} · {phrase}\n", mount.mount_dst, r.display_name()));
            if r.name == crate::engines::git::REFLOG_ONLY {
                // Not a ref to walk: commits a reset or an amend left only in the session's reflogs.
                out.push_str(&format!(
                    "  (`git reflog` in {} lists them; a discard saves them to the quarantine)\n",
                    mount.path
                ));
                out.push('\n');
                continue;
            }
            match crate::engines::git::oneline_log(Path::new(&mount.path), &r.name, r.upstream.as_deref(), r.commits) {
                Ok(lines) => lines.iter().for_each(|line| out.push_str(&format!("  {line}\n"))),
                Err(e) => out.push_str(&format!("  (the commits cannot be read: {})\n", e.message())),
            }
            out.push('\n');
        }
    }
    if out.is_empty() {
        out.push_str("No changed file and no unpushed commit to show.\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::assessment::{MountAssessment, UnpushedRef, Verdict};
    use crate::protocol::identity::Identity;

    #[test]
    fn inspect_names_where_commits_only_the_reflog_holds_can_be_seen() {
        let mut mount =
            MountAssessment::unknown("/workspace/app".into(), "worktree".into(), "/wt".into(), String::new());
        mount.unpushed.push(UnpushedRef {
            name: crate::engines::git::REFLOG_ONLY.into(),
            commits: 2,
            upstream: None,
            integrated: Vec::new(),
        });
        let assessment = Assessment {
            identity: Identity::of_name("jk-a1b2c3d4-app", "a1b2c3d4"),
            verdict: Verdict::Unpushed,
            in_place: false,
            mounts: vec![mount],
            summary: "2 commits only in the reflog".into(),
            assessed_at: "2026-12-01T10:00:00Z".into(),
            status: None,
            disk: None,
            seal: None,
        };
        let shown = inspection(&assessment);
        assert!(shown.contains("(`git reflog` in /wt lists them; a discard saves them to the quarantine)"), "{shown}");
        assert!(!shown.contains("cannot be read"), "{shown}");
    }
}
