//! Inert text for people. The agent writes most of what the tools show (file names, diffs,
//! commit subjects, paths in messages), and a terminal obeys what it is sent: an escape sequence
//! in a file name could erase the `· dirty` line and print `ALL CLEAN` in its place, a
//! right-to-left override reorders what is read, OSC 52 writes the clipboard. Everything the
//! tools render for a person goes through here; JSON does not (it keeps the exact text, and
//! protocol/path_bytes.rs the exact bytes).
//!
//! The escapes are git's where git has one (`core.quotePath`): `\n`, `\t`, `\r` by name, other C0
//! controls, DEL and each byte of a C1 control in octal (`\033`, `\177`, `\302\233`), invalid
//! UTF-8 bytes in octal (`\377`, from [`NameBytes::text`](super::path_bytes::NameBytes::text)).
//! Characters that change the order or the lines of what is shown, which git leaves alone, are
//! written as their code point: the bidirectional controls U+202A–U+202E, U+2066–U+2069, U+200E,
//! U+200F, U+061C and the separators U+2028, U+2029 (`<U+202E>`).

use std::borrow::Cow;

/// What may stay as it is in text that is laid out in lines.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    /// A name, a subject, one field: a newline or a tab in it is escaped too, so it cannot start
    /// a line of its own that reads like the tool's.
    OneLine,
    /// A whole rendering, a diff: newlines and tabs lay it out.
    Lines,
}

/// `text` for a person, on one line: every control character escaped.
pub fn inert_name(text: &str) -> Cow<'_, str> {
    inert(text, Layout::OneLine)
}

/// `text` for a person, newlines and tabs kept: every other control character escaped.
pub fn inert_text(text: &str) -> Cow<'_, str> {
    inert(text, Layout::Lines)
}

fn inert(text: &str, layout: Layout) -> Cow<'_, str> {
    if !text.chars().any(|c| needs_escape(c, layout)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !needs_escape(c, layout) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if is_reordering(c) => out.push_str(&format!("<U+{:04X}>", c as u32)),
            c => {
                let mut utf8 = [0; 4];
                for byte in c.encode_utf8(&mut utf8).bytes() {
                    out.push_str(&format!("\\{byte:03o}"));
                }
            }
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char, layout: Layout) -> bool {
    if layout == Layout::Lines && (c == '\n' || c == '\t') {
        return false;
    }
    c.is_control() || is_reordering(c)
}

/// The characters that reorder text or break it into lines where a terminal shows it.
fn is_reordering(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::path_bytes::NameBytes;

    /// Whether a terminal would take anything in `shown` as other than printable text.
    fn drives_a_terminal(shown: &str, layout: Layout) -> bool {
        shown.chars().any(|c| needs_escape(c, layout))
    }

    #[test]
    fn every_byte_is_shown_inert_and_printable_text_is_left_alone() {
        for byte in 0..=255u8 {
            let name = NameBytes::new(vec![b'a', byte, b'z']);
            for layout in [Layout::OneLine, Layout::Lines] {
                let shown = inert(&name.text(), layout).into_owned();
                assert!(!drives_a_terminal(&shown, layout), "byte {byte:#04x}: {shown:?}");
                assert!(shown.starts_with('a') && shown.ends_with('z'), "byte {byte:#04x}: {shown:?}");
                let printable =
                    (0x20..0x7f).contains(&byte) || (layout == Layout::Lines && matches!(byte, b'\n' | b'\t'));
                if printable {
                    assert_eq!(shown, format!("a{}z", byte as char), "byte {byte:#04x} is left alone");
                } else {
                    assert!(shown.contains('\\'), "byte {byte:#04x} is escaped visibly: {shown:?}");
                }
            }
        }
        assert_eq!(inert_name("x\u{1b}[2A\u{1b}[2KALL CLEAN"), "x\\033[2A\\033[2KALL CLEAN");
        assert_eq!(inert_name("tab\there\nnext"), "tab\\there\\nnext");
        assert_eq!(inert_text("tab\there\nnext\r"), "tab\there\nnext\\r");
        assert_eq!(inert_name("del\u{7f}"), "del\\177");
        assert_eq!(inert_name(&NameBytes::new(b"notes-\xff.txt".to_vec()).text()), "notes-\\377.txt");
        assert!(matches!(inert_text("été ✓ 日本 — fine\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn every_c1_control_and_every_reordering_character_is_made_visible() {
        for c in (0x80..=0x9f).filter_map(char::from_u32) {
            let shown = inert_name(&format!("a{c}z")).into_owned();
            let [lead, trail] = [0xc2u8, c as u32 as u8 & 0x3f | 0x80];
            assert_eq!(shown, format!("a\\{lead:03o}\\{trail:03o}z"), "U+{:04X}", c as u32);
        }
        let reordering = ('\u{202A}'..='\u{202E}')
            .chain('\u{2066}'..='\u{2069}')
            .chain(['\u{200E}', '\u{200F}', '\u{061C}', '\u{2028}', '\u{2029}']);
        for c in reordering {
            for shown in [inert_name(&format!("a{c}z")), inert_text(&format!("a{c}z"))] {
                assert_eq!(shown, format!("a<U+{:04X}>z", c as u32));
            }
        }
        assert_eq!(inert_name("invoice\u{202E}fdp.exe"), "invoice<U+202E>fdp.exe");
    }
}
