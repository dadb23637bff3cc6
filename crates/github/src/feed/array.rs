//! Splitting a JSON array read line by line into its elements, whatever its layout: a saved
//! `/events` response pretty-printed (each event over dozens of lines, GitHub's and `jq`'s
//! format), one element per line, or several on one line. Pure: bytes in, elements out.
//!
//! It tracks only what decides where an element ends — nesting depth and whether it is inside
//! a string (with its escapes) — and leaves parsing to serde. Text between elements (commas,
//! whitespace, the closing bracket) is dropped. An element that grows past `max_bytes` without
//! closing (an unbalanced brace would otherwise swallow the rest of the file) is handed over
//! as it stands, flagged, and the splitter starts afresh.

/// One element's bytes, and whether it was cut at the size bound (then it is not JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub bytes: Vec<u8>,
    pub overlong: bool,
}

/// The state between lines.
#[derive(Debug)]
pub struct ArraySplitter {
    buf: Vec<u8>,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The array's own opening bracket has been passed.
    opened: bool,
    /// Inside a bare scalar between elements (`1`, `null`): it ends at a delimiter.
    in_scalar: bool,
    max_bytes: usize,
}

impl ArraySplitter {
    pub fn new(max_bytes: usize) -> Self {
        Self {
            buf: Vec::new(),
            depth: 0,
            in_string: false,
            escaped: false,
            opened: false,
            in_scalar: false,
            max_bytes,
        }
    }

    /// Feeds one line (without its newline); calls `emit` for each element it completes.
    pub fn push(&mut self, line: &[u8], emit: &mut dyn FnMut(Element)) {
        for &b in line {
            if self.in_scalar {
                if matches!(b, b',' | b']' | b' ' | b'\t' | b'\r') {
                    self.finish(false, emit);
                } else {
                    self.buf.push(b);
                }
                continue;
            }
            if self.depth == 0 {
                match b {
                    b'[' if !self.opened => self.opened = true,
                    b'{' | b'[' | b'"' => self.open_element(b),
                    // Between elements: separators, whitespace, the closing bracket, or a bare
                    // scalar (not an event: it starts an element that will not parse).
                    b',' | b']' | b' ' | b'\t' | b'\r' => {}
                    _ => self.scalar(b),
                }
                continue;
            }
            self.buf.push(b);
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
            } else {
                match b {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => self.depth -= 1,
                    _ => {}
                }
            }
            if self.depth == 0 {
                self.finish(false, emit);
            } else if self.buf.len() > self.max_bytes {
                self.finish(true, emit);
            }
        }
        if self.in_scalar {
            self.finish(false, emit);
        }
        // A newline inside a string is not JSON, but a line break between tokens is fine.
        if self.depth > 0 && !self.in_string {
            self.buf.push(b'\n');
        }
    }

    /// Hands over an element left open at the end of input (it will not parse).
    pub fn finish_input(&mut self, emit: &mut dyn FnMut(Element)) {
        if !self.buf.is_empty() {
            self.finish(false, emit);
        }
    }

    fn open_element(&mut self, b: u8) {
        self.buf.push(b);
        if b == b'"' {
            self.in_string = true;
        }
        self.depth = 1;
    }

    fn scalar(&mut self, b: u8) {
        // Kept as an element of its own: the caller quarantines what is not an event.
        self.buf.push(b);
        self.in_scalar = true;
    }

    fn finish(&mut self, overlong: bool, emit: &mut dyn FnMut(Element)) {
        let bytes = std::mem::take(&mut self.buf);
        self.depth = 0;
        self.in_string = false;
        self.escaped = false;
        self.in_scalar = false;
        emit(Element { bytes, overlong });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn split(text: &str, max: usize) -> Vec<Element> {
        let mut out = Vec::new();
        let mut s = ArraySplitter::new(max);
        for line in text.split('\n') {
            s.push(line.as_bytes(), &mut |e| out.push(e));
        }
        s.finish_input(&mut |e| out.push(e));
        out
    }

    fn parsed(elements: &[Element]) -> Vec<Value> {
        elements
            .iter()
            .map(|e| serde_json::from_slice(&e.bytes).expect("an element parses"))
            .collect()
    }

    #[test]
    fn a_pretty_printed_array_splits_into_its_events() {
        let events = json!([
            {"id": "1", "type": "PushEvent", "payload": {"ref": "refs/heads/a]b{c", "commits": [{"message": "quote \" and }"}]}},
            {"id": "2", "type": "WatchEvent", "payload": {}}
        ]);
        let text = serde_json::to_string_pretty(&events).expect("json");
        let elements = split(&text, 1 << 20);
        assert_eq!(
            parsed(&elements),
            events.as_array().cloned().unwrap_or_default()
        );
    }

    #[test]
    fn a_bare_scalar_is_an_element_of_its_own() {
        let elements = split("[\n  {\"id\": \"1\"},\n  42,\n  null\n]", 1 << 20);
        let values = parsed(&elements);
        assert_eq!(values, vec![json!({"id": "1"}), json!(42), Value::Null]);
    }

    #[test]
    fn an_unbalanced_element_is_cut_at_the_bound_and_the_rest_still_splits() {
        let text = "[\n{\"id\": \"1\", \"open\": {\n\"x\": 1\n,\n{\"id\": \"2\"}";
        let elements = split(text, 12);
        assert!(elements[0].overlong, "{elements:?}");
        assert!(elements.iter().any(|e| !e.overlong));
    }

    proptest! {
        /// Whatever the events and the layout (pretty, one per line, all on one line), the
        /// splitter hands back exactly the array's elements.
        #[test]
        fn every_layout_splits_into_the_same_elements(
            ids in proptest::collection::vec("[ -~]{0,12}", 0..8),
            layout in 0..3u8,
        ) {
            let events: Vec<Value> = ids
                .iter()
                .map(|id| json!({"id": id, "payload": {"list": [id, {"k": id}]}}))
                .collect();
            let text = match layout {
                0 => serde_json::to_string_pretty(&events).expect("json"),
                1 => format!(
                    "[\n{}\n]",
                    events.iter().map(Value::to_string).collect::<Vec<_>>().join(",\n")
                ),
                _ => Value::Array(events.clone()).to_string(),
            };
            let elements = split(&text, 1 << 20);
            prop_assert!(elements.iter().all(|e| !e.overlong));
            prop_assert_eq!(parsed(&elements), events);
        }
    }
}
