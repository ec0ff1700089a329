//! The archive reader's name guard, each case alone: an entry whose name climbs out with `..`,
//! an absolute name, and a name that changes when its path is read (`a/./b`, `a//b`) are each
//! refused before anything is unpacked.

use std::io::Write;

use super::*;

/// An archive of `format.json` and one file entry named exactly `name` (raw header bytes: tar's
/// own writer refuses such names).
fn archive_with(dir: &Path, name: &[u8]) -> PathBuf {
    let path = dir.join("forged.tar.gz");
    let gz = flate2::write::GzEncoder::new(File::create(&path).unwrap(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    let format = format!(r#"{{"format": {FORMAT}, "written_by": "a test"}}"#);
    for (entry, bytes) in [(FORMAT_ENTRY.as_bytes(), format.as_bytes()), (name, b"x".as_slice())] {
        let mut header = tar::Header::new_old();
        header.as_old_mut().name[..entry.len()].copy_from_slice(entry);
        header.set_size(bytes.len() as u64);
        header.set_mode(0o600);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        builder.append(&header, bytes).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap().flush().unwrap();
    path
}

#[test]
fn an_entry_name_out_of_the_archive_or_not_as_written_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let into = dir.path().join("into");
    fs::create_dir(&into).unwrap();
    for name in [
        &b"../escape"[..],
        b"instance/../../escape",
        b"/etc/escape",
        b"instance/./home",
        b"instance//home",
        b"./instance",
    ] {
        let archive = archive_with(dir.path(), name);
        let err = read(&archive, &|_| false, Some(&into)).map(drop).unwrap_err();
        assert!(
            format!("{err:#}").contains("is not a plain relative name"),
            "{:?}: {err:#}",
            String::from_utf8_lossy(name)
        );
        assert_eq!(fs::read_dir(&into).unwrap().count(), 0, "nothing unpacked");
        assert!(!dir.path().join("escape").exists());
    }
    // The same archive with a plain name passes this guard (and fails later, for want of an index).
    let err = read(&archive_with(dir.path(), b"instance/home"), &|_| false, None).map(drop).unwrap_err();
    assert!(!format!("{err:#}").contains("plain relative name"), "{err:#}");
}
