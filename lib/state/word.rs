//! A word read from a file or a record that the tools know a closed set of (a status, a cause, an
//! isolation kind): parsed once where it is read, and a word this version does not know (a newer
//! jackin's, or a newer tool's) kept as it is and written back unchanged.

use serde::{Deserialize, Serialize};

/// A closed set of words, each spelled one way: strum's `EnumString` reads it and
/// `IntoStaticStr` writes it. Implemented by name for each set, so that no other type is one.
pub trait Vocabulary: Copy + Eq + std::str::FromStr + Into<&'static str> {}

/// One of the set, or a word outside it kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word<T> {
    Known(T),
    Other(String),
}

impl<T: Vocabulary> Word<T> {
    pub fn of(word: &str) -> Self {
        word.parse().map_or_else(|_| Word::Other(word.to_owned()), Word::Known)
    }

    /// The word, when it is one of the set.
    pub fn known(&self) -> Option<T> {
        match self {
            Word::Known(known) => Some(*known),
            Word::Other(_) => None,
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Word::Known(known) => (*known).into(),
            Word::Other(word) => word,
        }
    }
}

impl<T: Vocabulary> PartialEq<T> for Word<T> {
    fn eq(&self, other: &T) -> bool {
        self.known() == Some(*other)
    }
}

/// Compared as it is written: `row.status == "active"` holds for a row that says `active`.
impl<T: Vocabulary> PartialEq<str> for Word<T> {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl<T: Vocabulary> PartialEq<&str> for Word<T> {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl<T: Vocabulary> From<T> for Word<T> {
    fn from(known: T) -> Self {
        Word::Known(known)
    }
}

impl<T: Vocabulary> From<&str> for Word<T> {
    fn from(word: &str) -> Self {
        Word::of(word)
    }
}

impl<T: Vocabulary> std::fmt::Display for Word<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<T: Vocabulary> Serialize for Word<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de, T: Vocabulary> Deserialize<'de> for Word<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|word| Word::of(&word))
    }
}

#[cfg(test)]
mod tests {
    use crate::state::continuity::{CauseKind, CauseWord};
    use crate::state::model::{IsolationKind, IsolationWord};

    #[test]
    fn a_known_word_is_parsed_and_another_is_kept_verbatim() {
        let kept: CauseWord = serde_json::from_str(r#""killed_by_host""#).unwrap();
        assert_eq!(kept, CauseWord::Known(CauseKind::KilledByHost));
        let newer: CauseWord = serde_json::from_str(r#""paused_by_schedule""#).unwrap();
        assert_eq!((newer.known(), newer.as_str()), (None, "paused_by_schedule"));
        assert_eq!(serde_json::to_string(&newer).unwrap(), r#""paused_by_schedule""#, "written back as it was read");
        let clone: IsolationWord = "clone".into();
        assert!(clone == IsolationKind::Clone && clone == "clone" && format!("{clone}") == "clone");
        let odd: IsolationWord = "Clone".into();
        assert_eq!(odd.known(), None, "one spelling only");
    }
}
