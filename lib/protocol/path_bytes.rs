//! Names as bytes on the wire. A file the agent made may be named with any bytes, and JSON
//! strings hold only Unicode: a name that is not UTF-8 travels as two fields, the name with each
//! invalid byte written `\xNN` (for people and for readers that want text) and the raw bytes in
//! base64 beside it (`path` + `path_bytes`, `name` + `name_bytes`). A reader that finds the
//! second field takes the bytes from it; a UTF-8 name has no second field and is its own bytes.
//! So `notes-\xff.txt` (four characters `\`, `x`, `f`, `f` in a UTF-8 name) and `notes-<0xFF>.txt`
//! stay two names.

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use base64::Engine;

/// A name as the bytes the filesystem (or git's index) holds.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NameBytes(Vec<u8>);

impl NameBytes {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        NameBytes(bytes.into())
    }

    pub fn of_path(path: &Path) -> Self {
        NameBytes(path.as_os_str().as_bytes().to_vec())
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn as_path(&self) -> &Path {
        Path::new(OsStr::from_bytes(&self.0))
    }

    /// The name as text: itself when it is UTF-8, else with each invalid byte as `\xNN`.
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.0.len());
        for chunk in self.0.utf8_chunks() {
            out.push_str(chunk.valid());
            for byte in chunk.invalid() {
                out.push_str(&format!("\\x{byte:02X}"));
            }
        }
        out
    }

    /// The second field of the wire form: the raw bytes in base64, only for a name that is not
    /// UTF-8.
    pub fn wire_bytes(&self) -> Option<String> {
        std::str::from_utf8(&self.0).is_err().then(|| base64::engine::general_purpose::STANDARD.encode(&self.0))
    }

    /// Reads the wire form back: the bytes from `bytes` when present, else `text` as UTF-8.
    pub fn from_wire(text: String, bytes: Option<&str>) -> Result<Self, String> {
        match bytes {
            None => Ok(NameBytes(text.into_bytes())),
            Some(b64) => base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map(NameBytes)
                .map_err(|e| format!("a name's bytes are not base64 ({e}): {b64:?}")),
        }
    }
}

impl fmt::Display for NameBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl fmt::Debug for NameBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.text())
    }
}

impl AsRef<Path> for NameBytes {
    fn as_ref(&self) -> &Path {
        self.as_path()
    }
}

impl From<&str> for NameBytes {
    fn from(s: &str) -> Self {
        NameBytes(s.as_bytes().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_names_are_their_own_text_and_have_no_second_field() {
        let name = NameBytes::from("src/ä \\xff.rs");
        assert_eq!(name.text(), "src/ä \\xff.rs");
        assert_eq!(name.wire_bytes(), None);
        assert_eq!(NameBytes::from_wire(name.text(), None).unwrap(), name);
    }

    #[test]
    fn invalid_bytes_are_escaped_in_the_text_and_kept_in_the_second_field() {
        let raw = NameBytes::new(b"notes-\xff\xfe.txt".to_vec());
        assert_eq!(raw.text(), "notes-\\xFF\\xFE.txt");
        let b64 = raw.wire_bytes().expect("a second field");
        assert_eq!(NameBytes::from_wire(raw.text(), Some(&b64)).unwrap(), raw);
        // The UTF-8 name that reads the same is another name.
        assert_ne!(NameBytes::from_wire(raw.text(), None).unwrap(), raw);
        assert!(NameBytes::from_wire(raw.text(), Some("not base64!")).is_err());
    }
}
