//! The versioned JSON of a code-path trace, written thread by thread and line by line (bounded
//! memory): `{"schema_version": 1, "analysis": {"threads": [{"lines": [...], ...}, ...], ...}}`, the
//! same document [`super::json`] writes for an analysis held in memory.

use std::io::Write;

use hood_tracemodel::trace::{Analysis, PathLine, ThreadSummary};

use super::JSON_VERSION;
use crate::ReportError;

/// Writes the JSON of a code-path trace: [`begin`](Self::begin), per thread
/// [`thread_begin`](Self::thread_begin), [`lines`](Self::lines)…,
/// [`thread_end`](Self::thread_end), then [`end`](Self::end).
pub struct JsonPathsWriter {
    threads: usize,
    lines: usize,
}

impl JsonPathsWriter {
    /// Start the document.
    pub fn begin(out: &mut dyn Write) -> Result<JsonPathsWriter, ReportError> {
        write!(
            out,
            "{{\"schema_version\":{JSON_VERSION},\"analysis\":{{\"threads\":["
        )?;
        Ok(JsonPathsWriter {
            threads: 0,
            lines: 0,
        })
    }

    /// Start a thread's object.
    pub fn thread_begin(&mut self, out: &mut dyn Write) -> Result<(), ReportError> {
        if self.threads > 0 {
            out.write_all(b",\n")?;
        }
        self.threads += 1;
        self.lines = 0;
        write!(out, "{{\"lines\":[")?;
        Ok(())
    }

    /// Lines of the thread.
    pub fn lines(&mut self, lines: &[PathLine], out: &mut dyn Write) -> Result<(), ReportError> {
        for l in lines {
            if self.lines > 0 {
                out.write_all(b",\n")?;
            }
            self.lines += 1;
            super::write_json(out, l)?;
        }
        Ok(())
    }

    /// End the thread's object with its summary.
    pub fn thread_end(
        &mut self,
        t: &ThreadSummary,
        out: &mut dyn Write,
    ) -> Result<(), ReportError> {
        out.write_all(b"]")?;
        rest_of_object(serde_json::to_value(t)?, "lines", out)
    }

    /// End the document with the analysis totals and functions.
    pub fn end(self, a: &Analysis, out: &mut dyn Write) -> Result<(), ReportError> {
        out.write_all(b"]")?;
        rest_of_object(serde_json::to_value(a)?, "threads", out)?;
        writeln!(out, "}}")?;
        Ok(())
    }
}

/// `,"key":value...}` for the fields of object `v` other than `skip`.
fn rest_of_object(
    v: serde_json::Value,
    skip: &str,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    if let serde_json::Value::Object(m) = v {
        for (k, x) in m.into_iter().filter(|(k, _)| k != skip) {
            write!(out, ",")?;
            super::write_json(out, &k)?;
            write!(out, ":")?;
            super::write_json(out, &x)?;
        }
    }
    out.write_all(b"}")?;
    Ok(())
}
