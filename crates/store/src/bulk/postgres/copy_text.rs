//! PostgreSQL's `COPY … FROM STDIN` text format, written: one row per line, columns
//! separated by tabs, `\N` for NULL, and a backslash, tab, newline or carriage return inside
//! a value escaped (`\\`, `\t`, `\n`, `\r`) so it cannot end a column or a row. Pure.
//!
//! A NUL character is passed through as it is: PostgreSQL's text cannot hold one and refuses
//! the COPY, which the writer then retries one event at a time, so that event fails alone
//! (as binding it on the page path does).

/// The COPY text of a run of rows, in one buffer.
#[derive(Debug, Default)]
pub(crate) struct CopyText {
    buf: Vec<u8>,
    /// Whether the next value starts a row (no tab before it).
    row_start: bool,
}

impl CopyText {
    /// An empty buffer with room for `bytes`.
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        Self {
            buf: Vec::with_capacity(bytes),
            row_start: true,
        }
    }

    fn separate(&mut self) {
        if !self.row_start {
            self.buf.push(b'\t');
        }
        self.row_start = false;
    }

    /// A text column (`None`: NULL).
    pub(crate) fn text(&mut self, value: Option<&str>) {
        self.separate();
        match value {
            Some(v) => escape_into(&mut self.buf, v),
            None => self.buf.extend_from_slice(b"\\N"),
        }
    }

    /// An integer column (`None`: NULL).
    pub(crate) fn int(&mut self, value: Option<i64>) {
        self.separate();
        match value {
            Some(v) => {
                use std::io::Write as _;
                // Writing to a Vec cannot fail.
                let _ = write!(self.buf, "{v}");
            }
            None => self.buf.extend_from_slice(b"\\N"),
        }
    }

    /// Ends the current row.
    pub(crate) fn end_row(&mut self) {
        self.buf.push(b'\n');
        self.row_start = true;
    }

    /// The rows written.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// Appends `value` escaped for a COPY text column. The bytes escaped are ASCII, which never
/// occur inside a multi-byte UTF-8 sequence, so the rest is copied through in runs.
pub(crate) fn escape_into(buf: &mut Vec<u8>, value: &str) {
    let bytes = value.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escaped: &[u8] = match b {
            b'\\' => b"\\\\",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            _ => continue,
        };
        buf.extend_from_slice(&bytes[start..i]);
        buf.extend_from_slice(escaped);
        start = i + 1;
    }
    buf.extend_from_slice(&bytes[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// PostgreSQL's reading of one COPY text line (the escapes [`escape_into`] writes, and
    /// `\N`), to check the writing against.
    fn decode_row(line: &str) -> Vec<Option<String>> {
        line.split('\t')
            .map(|column| {
                if column == "\\N" {
                    return None;
                }
                let mut out = String::new();
                let mut chars = column.chars();
                while let Some(c) = chars.next() {
                    if c != '\\' {
                        out.push(c);
                        continue;
                    }
                    match chars.next() {
                        Some('t') => out.push('\t'),
                        Some('n') => out.push('\n'),
                        Some('r') => out.push('\r'),
                        Some(other) => out.push(other),
                        None => {}
                    }
                }
                Some(out)
            })
            .collect()
    }

    #[test]
    fn a_literal_backslash_n_is_text_not_null() {
        let mut copy = CopyText::with_capacity(16);
        copy.text(Some("\\N"));
        copy.text(None);
        copy.int(Some(-42));
        copy.end_row();
        assert_eq!(copy.bytes(), b"\\\\N\t\\N\t-42\n");
    }

    proptest! {
        /// Any row of texts (no NUL) and NULLs reads back as written, on one line.
        #[test]
        fn rows_round_trip(
            row in proptest::collection::vec(
                proptest::option::of("[\\\\\t\n\r a-zA-Z0-9\"{}:,é€😀N]{0,12}"),
                1..8,
            )
        ) {
            let mut copy = CopyText::with_capacity(64);
            for value in &row {
                copy.text(value.as_deref());
            }
            copy.end_row();
            let text = std::str::from_utf8(copy.bytes()).expect("UTF-8 in, UTF-8 out");
            let line = text.strip_suffix('\n').expect("one row ends in a newline");
            prop_assert!(!line.contains('\n') && !line.contains('\r'));
            prop_assert_eq!(decode_row(line), row);
        }

        /// Integers are their decimal text.
        #[test]
        fn integers_round_trip(values in proptest::collection::vec(proptest::option::of(any::<i64>()), 1..6)) {
            let mut copy = CopyText::with_capacity(64);
            for v in &values {
                copy.int(*v);
            }
            copy.end_row();
            let text = std::str::from_utf8(copy.bytes()).expect("ASCII");
            let read: Vec<Option<i64>> = decode_row(text.trim_end_matches('\n'))
                .into_iter()
                .map(|c| c.map(|c| c.parse().expect("an integer")))
                .collect();
            prop_assert_eq!(read, values);
        }
    }
}
