//! jackin-restore's resume picker: the resumable sessions, newest first, one row each with the
//! words of the text list and the tier a resume would take; `w` and `r` filter by workspace and
//! role, arrows and numbers move, Enter chooses a ready session, `q` or Esc leaves.

use anyhow::Result;
use crossterm::event::KeyCode;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Text};

use crate::protocol::inert::{inert_name, inert_text};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;

use super::{styled, Input, Session, Tty};
use crate::protocol::records::Candidate;

/// The container name of the session chosen, or `None` when the operator left.
pub fn pick(tty: &Tty, candidates: &[Candidate]) -> Result<Option<String>> {
    let mut picker = Picker { candidates, workspace: None, role: None, selected: 0, note: String::new() };
    let mut session = Session::enter(tty, true)?;
    loop {
        let rows = picker.rows();
        picker.selected = picker.selected.min(rows.len().saturating_sub(1));
        session.draw(|frame| picker.draw(frame, &rows))?;
        let Input::Key(key) = session.input()? else { continue };
        picker.note.clear();
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return Ok(None),
            KeyCode::Down | KeyCode::Char('j') if !rows.is_empty() => {
                picker.selected = (picker.selected + 1) % rows.len()
            }
            KeyCode::Up | KeyCode::Char('k') if !rows.is_empty() => {
                picker.selected = (picker.selected + rows.len() - 1) % rows.len()
            }
            KeyCode::Char(c @ '1'..='9') if (c as usize - '1' as usize) < rows.len() => {
                picker.selected = c as usize - '1' as usize
            }
            KeyCode::Char('w') => picker.workspace = next_value(candidates, picker.workspace.take(), workspace_of),
            KeyCode::Char('r') => picker.role = next_value(candidates, picker.role.take(), role_of),
            KeyCode::Enter => match rows.get(picker.selected) {
                Some(chosen) if chosen.ready => return Ok(Some(chosen.identity.container_base.clone())),
                Some(chosen) => {
                    picker.note = format!("{} cannot be resumed: {}", short(chosen), chosen.missing.join("; "))
                }
                None => {}
            },
            _ => {}
        }
    }
}

struct Picker<'a> {
    candidates: &'a [Candidate],
    workspace: Option<String>,
    role: Option<String>,
    selected: usize,
    note: String,
}

fn workspace_of(c: &Candidate) -> &str {
    &c.identity.workspace_label
}

fn role_of(c: &Candidate) -> &str {
    &c.identity.role_key
}

fn short(c: &Candidate) -> String {
    crate::state::names::short_name(&c.identity.instance_id)
}

/// The filter after `current`: each value the candidates have, in order, then none (all).
fn next_value(candidates: &[Candidate], current: Option<String>, of: fn(&Candidate) -> &str) -> Option<String> {
    let mut values: Vec<&str> = candidates.iter().map(of).collect();
    values.sort_unstable();
    values.dedup();
    let next = match current {
        None => 0,
        Some(current) => values.iter().position(|v| *v == current).map_or(values.len(), |i| i + 1),
    };
    values.get(next).map(|v| (*v).to_owned())
}

impl<'a> Picker<'a> {
    /// Newest first, as the list prints them, within the filters.
    fn rows(&self) -> Vec<&'a Candidate> {
        let mut rows: Vec<&Candidate> = self
            .candidates
            .iter()
            .filter(|c| self.workspace.as_deref().is_none_or(|w| workspace_of(c) == w))
            .filter(|c| self.role.as_deref().is_none_or(|r| role_of(c) == r))
            .collect();
        rows.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
        rows
    }

    fn draw(&self, frame: &mut Frame, rows: &[&Candidate]) {
        let [body, keys] = Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
        let mut lines = Vec::new();
        if rows.is_empty() {
            lines.push(Line::raw("  No session to resume here (w and r change the filters)."));
        }
        for (row, candidate) in rows.iter().enumerate() {
            let tier = candidate.tier.map_or("no tier".to_owned(), |t| format!("tier {t}"));
            let marker = if row == self.selected { ">" } else { " " };
            let mut style = Style::new();
            if row == self.selected {
                style = style.add_modifier(Modifier::REVERSED);
            }
            if !candidate.ready {
                style = style.add_modifier(Modifier::DIM);
            }
            let text = format!("{marker} {}  {tier:<7}  {}", row + 1, inert_name(&candidate.label));
            lines.push(Line::styled(text, styled(style)));
        }
        if !self.note.is_empty() {
            lines.push(Line::raw(""));
            lines.push(Line::raw(format!("  {}", inert_text(&self.note))));
        }
        let title = " Pick up where you left off ";
        frame.render_widget(
            Paragraph::new(Text::from(lines)).block(Block::bordered().title(title)).wrap(Wrap { trim: false }),
            body,
        );
        let hint = format!(
            "↑↓ 1-9 move · Enter resume · w workspace: {} · r role: {} · q leave",
            inert_name(self.workspace.as_deref().unwrap_or("all")),
            inert_name(self.role.as_deref().unwrap_or("all"))
        );
        frame.render_widget(Paragraph::new(hint).style(styled(Style::new().add_modifier(Modifier::BOLD))), keys);
    }
}
