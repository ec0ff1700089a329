//! Times as the protocol writes them: RFC 3339 UTC, to the second, like jackin's own files.

use std::time::SystemTime;

pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

/// Now, to the microsecond: for a stamp a later moment is compared with closely (an
/// assessment's start, which a role container's end and the ctimes of the work are held
/// against), where a second's grain would make everything in that second count as after it.
pub fn now_rfc3339_micros() -> String {
    rfc3339_micros(SystemTime::now())
}

/// `at` to the microsecond: for a time a later one is subtracted from (the idle watch's samples,
/// whose CPU share over a short interval a second's grain would understate).
pub(crate) fn rfc3339_micros(at: SystemTime) -> String {
    humantime::format_rfc3339_micros(at).to_string()
}

/// Seconds from `now` until `at` (negative once past); `None` when `at` cannot be read.
pub(crate) fn seconds_until(at: &str, now: SystemTime) -> Option<i64> {
    let at = parse_rfc3339(at)?;
    Some(match at.duration_since(now) {
        Ok(ahead) => ahead.as_secs() as i64,
        Err(past) => -(past.duration().as_secs() as i64),
    })
}

/// "in 13d 4h", "in 3h 12m", "in 40m", or "past": how a countdown reads to people.
pub(crate) fn countdown(seconds: i64) -> String {
    if seconds <= 0 {
        return "past".into();
    }
    let (days, hours, minutes) = (seconds / 86_400, seconds % 86_400 / 3600, (seconds % 3600 + 59) / 60);
    match (days, hours) {
        (0, 0) => format!("in {minutes}m"),
        (0, _) => format!("in {hours}h {}m", seconds % 3600 / 60),
        _ => format!("in {days}d {hours}h"),
    }
}

/// A file's ctime: when its content, its mode, its links or its name last changed (no program
/// can set it).
pub(crate) fn ctime(meta: &std::fs::Metadata) -> SystemTime {
    use std::os::unix::fs::MetadataExt;
    at_epoch_offset(meta.ctime(), meta.ctime_nsec())
}

/// The moment `secs` seconds and `nanos` nanoseconds from the epoch (before it when negative).
pub(crate) fn at_epoch_offset(secs: i64, nanos: i64) -> SystemTime {
    let whole = std::time::Duration::from_secs(secs.unsigned_abs());
    let at = if secs >= 0 { SystemTime::UNIX_EPOCH + whole } else { SystemTime::UNIX_EPOCH - whole };
    at + std::time::Duration::from_nanos(nanos.clamp(0, 999_999_999) as u64)
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

    #[test]
    fn a_microsecond_time_keeps_its_fraction_through_a_round_trip() {
        let at = parse_rfc3339("2026-08-20T09:14:03Z").unwrap() + std::time::Duration::from_micros(987_654);
        let text = rfc3339_micros(at);
        assert_eq!(text, "2026-08-20T09:14:03.987654Z");
        assert_eq!(parse_rfc3339(&text), Some(at), "an interval from it is not stretched to the second");
    }
}
