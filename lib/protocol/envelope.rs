//! The envelope on every JSON line (protocol.md, "Records"): how a record is written, and a reader
//! that checks every line and keeps its exact bytes for what it passes through.

use std::io::{BufRead, Read};

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::base::exit::Exit;

pub(crate) const SCHEMA_VERSION: u64 = 1;

/// A record's data, with the type name it travels under and its human rendering.
pub trait Record: Serialize {
    const TYPE: &'static str;
    /// The text format: for people, continuity words first.
    fn text(&self) -> String;
}

#[derive(Serialize)]
struct Envelope<'a> {
    schema_version: u64,
    #[serde(rename = "type")]
    kind: &'a str,
    data: Value,
}

/// One compact JSON line, without the newline. Its data says where it was made: `host`, this
/// machine's name (a `host` record's own `host` is the machine it is about, and stays).
pub(crate) fn to_line<R: Record>(record: &R) -> Result<String> {
    let mut data = serde_json::to_value(record)?;
    if let Value::Object(fields) = &mut data {
        fields.entry("host").or_insert_with(|| Value::String(crate::base::host::this_host().to_owned()));
    }
    Ok(serde_json::to_string(&Envelope { schema_version: SCHEMA_VERSION, kind: R::TYPE, data })?)
}

/// A record read from another host's tools, written again as one line with `host` set to the host
/// it came from, whatever it claimed.
pub fn from_host(record: &InputRecord, host: &str) -> String {
    let mut data = record.data.clone();
    if let Value::Object(fields) = &mut data {
        fields.insert("host".into(), Value::String(host.to_owned()));
    }
    let envelope = Envelope { schema_version: SCHEMA_VERSION, kind: &record.kind, data };
    serde_json::to_string(&envelope).expect("a JSON value writes")
}

/// The host a record says it was made on (`data.host`), if it says.
pub fn made_on(record: &InputRecord) -> Option<&str> {
    record.data.get("host").and_then(Value::as_str)
}

/// A checked input line. `line` is the exact text read (a trailing `\r` included, only the `\n`
/// taken off), so a pass-through is byte for byte.
#[derive(Debug, Clone)]
pub struct InputRecord {
    pub(crate) line: String,
    pub(crate) line_no: usize,
    pub kind: String,
    pub(crate) data: Value,
}

impl InputRecord {
    /// The typed data of a record this tool handles; a record of a known type whose data does
    /// not fit is bad input like any other malformed line.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_value(self.data.clone())
            .map_err(|e| Exit::BadInput.err(format_args!("line {}: bad {} record: {e}", self.line_no, self.kind)))
    }

    /// The exact text read, for a record handed on byte for byte.
    pub fn line(&self) -> &str {
        &self.line
    }

    /// Which line of the input it was.
    pub fn line_no(&self) -> usize {
        self.line_no
    }

    /// The instance a record is about, if it names one.
    pub fn container_base(&self) -> Option<&str> {
        self.data.get("container_base").and_then(Value::as_str)
    }
}

/// The longest input line a tool reads: past it the input is bad (exit 3), never memory. More
/// than any record the tools write (an assessment with `--diff` of large files is the longest).
pub(crate) const INPUT_LINE_LIMIT: usize = 64 << 20;

/// Reads and checks every line before anything acts on one: a single bad line is exit 3 and the
/// caller has changed nothing. Empty lines are skipped.
pub(crate) fn read_all(input: impl BufRead) -> Result<Vec<InputRecord>> {
    let mut records = Vec::new();
    read_each(input, &mut |record| {
        records.push(record);
        Ok(())
    })?;
    Ok(records)
}

/// Hands each record to `each` as soon as its line is read and checked, for a reader that follows
/// a stream (`jackin-reconcile --watch | jackin-notify`); a bad line ends the read with exit 3,
/// after the records before it. Empty lines are skipped.
pub fn read_each(mut input: impl BufRead, each: &mut dyn FnMut(InputRecord) -> Result<()>) -> Result<()> {
    for line_no in 1.. {
        let mut bytes = Vec::new();
        let read = (&mut input).take(INPUT_LINE_LIMIT as u64 + 1).read_until(b'\n', &mut bytes);
        if read.context("reading records from stdin")? == 0 {
            break;
        }
        if bytes.len() > INPUT_LINE_LIMIT {
            return Err(Exit::BadInput.err(format_args!("line {line_no}: longer than {} MiB", INPUT_LINE_LIMIT >> 20)));
        }
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
        }
        let line =
            String::from_utf8(bytes).map_err(|_| Exit::BadInput.err(format_args!("line {line_no}: not UTF-8")))?;
        if line.trim().is_empty() {
            continue;
        }
        each(check_line(line, line_no)?)?;
    }
    Ok(())
}

pub(crate) fn check_line(line: String, line_no: usize) -> Result<InputRecord> {
    let bad = |why: &str| Exit::BadInput.err(format_args!("line {line_no}: {why}"));
    let json = line.strip_suffix('\r').unwrap_or(&line);
    let value: Value = serde_json::from_str(json).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let Value::Object(mut envelope) = value else { return Err(bad("not a record (expected a JSON object)")) };
    let version = match envelope.get("schema_version") {
        Some(v) => v.as_u64().ok_or_else(|| bad("schema_version is not a positive integer"))?,
        None => return Err(bad("not a record: no schema_version")),
    };
    if version == 0 {
        return Err(bad("schema_version 0 does not exist"));
    }
    if version > SCHEMA_VERSION {
        return Err(bad(&format!(
            "schema_version {version} is newer than this tool understands ({SCHEMA_VERSION}); upgrade the jackin tools"
        )));
    }
    let kind = match envelope.get("type") {
        Some(Value::String(kind)) if !kind.is_empty() => kind.clone(),
        _ => return Err(bad("not a record: no type")),
    };
    let data = match envelope.remove("data") {
        Some(data @ Value::Object(_)) => data,
        _ => return Err(bad("not a record: data is not an object")),
    };
    Ok(InputRecord { line, line_no, kind, data })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::records::ErrorRecord;

    fn read(text: &str) -> Result<Vec<InputRecord>> {
        read_all(text.as_bytes())
    }

    #[test]
    fn unknown_types_keep_their_exact_bytes() {
        let line = r#"{"schema_version":1,"type":"future" ,"data":{"z":1,"a":[ 2 ]}}"#;
        let records = read(&format!("{line}\n\n")).unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].line, line);
        assert_eq!(records[0].kind, "future");
    }

    #[test]
    fn a_line_past_the_bound_is_bad_input_not_memory() {
        let long = format!("{}\n", "x".repeat(INPUT_LINE_LIMIT + 1));
        let err = read(&long).unwrap_err();
        assert_eq!(Exit::of(&err), Exit::BadInput);
        assert!(format!("{err:#}").contains("longer than 64 MiB"), "{err:#}");
        let at_most = format!("{{\"schema_version\":1,\"type\":\"x\",\"data\":{{\"a\":\"{}\"}}}}", "y".repeat(1000));
        assert_eq!(read(&at_most).unwrap().len(), 1, "a line without its newline is read");
    }

    #[test]
    fn a_crlf_line_keeps_its_carriage_return() {
        let line = r#"{"schema_version":1,"type":"future","data":{}}"#;
        let records = read(&format!("{line}\r\n{line}\r")).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].line, format!("{line}\r"));
        assert_eq!(records[1].line, format!("{line}\r"));
        assert_eq!(records[0].kind, "future");
    }

    #[test]
    fn bad_lines_are_exit_3_with_the_line_number() {
        for text in [
            "not json",
            "[1,2]",
            r#"{"type":"assessment","data":{}}"#,
            r#"{"schema_version":2,"type":"assessment","data":{}}"#,
            r#"{"schema_version":"1","type":"assessment","data":{}}"#,
            r#"{"schema_version":1,"data":{}}"#,
            r#"{"schema_version":1,"type":"x","data":3}"#,
        ] {
            let input = format!("{}\n{text}\n", r#"{"schema_version":1,"type":"ok","data":{}}"#);
            let err = read(&input).unwrap_err();
            assert_eq!(Exit::of(&err), Exit::BadInput, "{text}");
            assert!(format!("{err:#}").starts_with("line 2: "), "{err:#}");
        }
    }

    #[test]
    fn envelope_is_first_and_compact() {
        let rec = ErrorRecord {
            tool: "t".into(),
            container_base: None,
            code: crate::protocol::codes::ErrorCode::Busy,
            message: "m".into(),
            dry_run: false,
        };
        assert_eq!(
            to_line(&rec).unwrap(),
            format!(
                r#"{{"schema_version":1,"type":"error","data":{{"tool":"t","container_base":null,"code":"busy","message":"m","host":"{}"}}}}"#,
                crate::base::host::this_host()
            )
        );
    }
}
