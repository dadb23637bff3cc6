//! Reading a gzip file as `gzip -d` does: every member in turn (GH Archive concatenates them),
//! and trailing zero bytes after the last member ignored (tape and block padding; `gzip -t`
//! and `zcat` accept them). Anything else after a member must be another member: other
//! trailing bytes are an error, raised only after everything before them was read.

use std::io::{self, BufRead, Read};

use flate2::bufread::GzDecoder;

/// A reader of every gzip member of `R`, then end of input at zero padding.
pub struct GzipMembers<R: BufRead> {
    state: State<R>,
}

impl<R: BufRead> std::fmt::Debug for GzipMembers<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            State::Member(_) => "member",
            State::Between(_) => "between members",
            State::Done => "done",
            State::Failed => "failed",
        };
        f.debug_struct("GzipMembers")
            .field("state", &state)
            .finish()
    }
}

enum State<R: BufRead> {
    /// Inside a member.
    Member(Box<GzDecoder<R>>),
    /// After a member: padding, another member, or the end.
    Between(R),
    /// The input ended cleanly.
    Done,
    /// A read failed; the error was returned.
    Failed,
}

impl<R: BufRead> GzipMembers<R> {
    /// Reads `inner`, which starts with a gzip member.
    pub fn new(inner: R) -> Self {
        Self {
            state: State::Member(Box::new(GzDecoder::new(inner))),
        }
    }
}

/// What follows a member: the end (after any zero padding), or the start of another member.
fn after_member<R: BufRead>(inner: &mut R) -> io::Result<bool> {
    loop {
        let available = match inner.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(false);
        }
        let zeros = available.iter().take_while(|&&b| b == 0).count();
        if zeros > 0 {
            inner.consume(zeros);
            continue;
        }
        return if available[0] == 0x1f {
            Ok(true)
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bytes after a gzip member are neither another member nor zero padding",
            ))
        };
    }
}

impl<R: BufRead> Read for GzipMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match std::mem::replace(&mut self.state, State::Failed) {
                State::Member(mut decoder) => match decoder.read(buf) {
                    Ok(0) => self.state = State::Between(decoder.into_inner()),
                    Ok(n) => {
                        self.state = State::Member(decoder);
                        return Ok(n);
                    }
                    Err(e) => return Err(e),
                },
                State::Between(mut inner) => match after_member(&mut inner) {
                    Ok(true) => self.state = State::Member(Box::new(GzDecoder::new(inner))),
                    Ok(false) => {
                        self.state = State::Done;
                        return Ok(0);
                    }
                    Err(e) => return Err(e),
                },
                State::Done => {
                    self.state = State::Done;
                    return Ok(0);
                }
                State::Failed => {
                    return Err(io::Error::other("the gzip input failed before"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn member(text: &str) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).expect("write");
        e.finish().expect("finish")
    }

    fn read_all(bytes: &[u8]) -> (String, Option<io::Error>) {
        let mut out = Vec::new();
        let mut reader = GzipMembers::new(io::BufReader::with_capacity(7, bytes));
        let mut buf = [0u8; 5];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return (String::from_utf8(out).expect("utf-8"), None),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (String::from_utf8(out).expect("utf-8"), Some(e)),
            }
        }
    }

    #[test]
    fn members_in_turn_and_zero_padding_as_gzip_reads_them() {
        let mut bytes = member("one\ntwo\n");
        bytes.extend(member("three\n"));
        assert_eq!(read_all(&bytes).0, "one\ntwo\nthree\n");
        bytes.extend([0u8; 1024]);
        let (text, error) = read_all(&bytes);
        assert_eq!(text, "one\ntwo\nthree\n");
        assert!(error.is_none(), "{error:?}");
    }

    #[test]
    fn other_trailing_bytes_and_a_cut_member_fail_after_what_came_before() {
        let mut bytes = member("one\n");
        bytes.extend(b"garbage");
        let (text, error) = read_all(&bytes);
        assert_eq!(text, "one\n");
        assert!(error.is_some());

        let mut bytes = member("one\n");
        let second = member(&"x".repeat(10_000));
        bytes.extend(&second[..second.len() / 2]);
        let (text, error) = read_all(&bytes);
        assert!(text.starts_with("one\n"), "{text:.10}");
        assert!(error.is_some());
    }
}
