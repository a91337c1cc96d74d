//! Size limits on what Vernier reads from users: a spec file, a warm-start file, the nesting of
//! a YAML or JSON document. Without them `vernier validate /dev/zero` grew to 2 GB and a spec
//! nested 100,000 brackets deep took 37 s to parse.

use std::io::Read;
use std::path::Path;

/// The largest experiment file read (a spec with 1,000,000 categorical values fits).
pub const MAX_SPEC_BYTES: u64 = 32 << 20;

/// The largest `spec.warmStart.file` read.
pub const MAX_WARM_START_BYTES: u64 = 256 << 20;

/// The deepest `[`/`{` nesting a document may have (Katib specs use about 20; serde_json's own
/// recursion limit is 128).
pub const MAX_NESTING: usize = 128;

/// Why a capped read failed.
#[derive(Debug)]
pub enum CappedReadError {
    Io(std::io::Error),
    /// The file holds more than the limit (in bytes).
    TooLarge(u64),
}

/// Reads a text file of at most `limit` bytes (invalid UTF-8 is an error, as in
/// `read_to_string`); never reads more than `limit + 1` bytes, so `/dev/zero` is refused
/// at once.
pub fn read_text_capped(path: &Path, limit: u64) -> Result<String, CappedReadError> {
    let file = std::fs::File::open(path).map_err(CappedReadError::Io)?;
    let mut text = String::new();
    file.take(limit + 1)
        .read_to_string(&mut text)
        .map_err(CappedReadError::Io)?;
    if text.len() as u64 > limit {
        return Err(CappedReadError::TooLarge(limit));
    }
    Ok(text)
}

/// The 1-based line where flow nesting (`[` and `{`, in or out of strings) first goes deeper
/// than `limit`, if it does. Counting brackets inside strings too keeps the check one pass
/// without a parser; a real spec never has 128 unclosed brackets in its strings.
pub fn nesting_beyond(text: &str, limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut line = 1;
    for b in text.bytes() {
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(line);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'\n' => line += 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_measured_on_brackets() {
        assert_eq!(nesting_beyond("a: [[1], {b: [2]}]", 3), None);
        assert_eq!(nesting_beyond("a: [[1], {b: [2]}]", 2), Some(1));
        let deep = format!("x: 1\na: {}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(nesting_beyond(&deep, MAX_NESTING), Some(2));
    }

    #[test]
    fn a_capped_read_refuses_an_endless_file() {
        match read_text_capped(Path::new("/dev/zero"), 1 << 20) {
            Err(CappedReadError::TooLarge(limit)) => assert_eq!(limit, 1 << 20),
            other => panic!("{other:?}"),
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "abc").unwrap();
        assert_eq!(read_text_capped(&p, 3).unwrap(), "abc");
        assert!(matches!(
            read_text_capped(&p, 2),
            Err(CappedReadError::TooLarge(2))
        ));
    }
}
