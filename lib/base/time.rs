//! Times as the protocol writes them: RFC 3339 UTC, to the second, like jackin's own files.

use std::time::SystemTime;

pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

pub(crate) fn rfc3339(at: SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

/// Parses an RFC 3339 time as written by jackin or by these tools.
pub(crate) fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_jackin_times() {
        let at = parse_rfc3339("2026-08-20T09:14:03Z").unwrap();
        assert_eq!(rfc3339(at), "2026-08-20T09:14:03Z");
    }
}
