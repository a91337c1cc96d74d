//! The one async loop over a byte stream: splits it into lines without trusting it to be UTF-8
//! or to have bounded line lengths.

use crate::error::CollectorError;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Longer lines are cut here; a runaway progress bar must not exhaust memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The warning for a line cut at [`MAX_LINE_BYTES`]: what came after the cut was not read.
pub fn cut_line_warning(bytes: usize) -> String {
    format!(
        "a line of {bytes} bytes was cut at {} MiB; metrics after the cut were not read; \
         hint: print each metric on a line of its own",
        MAX_LINE_BYTES >> 20
    )
}

/// Calls `on_line` for each line (without its terminator, invalid UTF-8 replaced) until EOF.
/// `on_raw` receives the bytes exactly as read, for keeping a faithful log.
pub async fn read_lines<R, F, G>(
    reader: R,
    mut on_raw: G,
    mut on_line: F,
) -> Result<(), CollectorError>
where
    R: AsyncRead + Unpin,
    F: FnMut(&str),
    G: FnMut(&[u8]),
{
    let mut lines = LineReader::new(reader);
    while let Some(line) = lines.next_line(&mut on_raw).await? {
        on_line(&line);
    }
    Ok(())
}

/// Pull-style line splitting, for callers that must await between lines (a bounded channel to
/// the store gives back-pressure: a trial printing faster than the store writes waits on its
/// pipe instead of growing the collector's memory).
#[derive(Debug)]
pub struct LineReader<R> {
    reader: BufReader<R>,
    buf: Vec<u8>,
    /// The length of the last line returned, if it was cut at [`MAX_LINE_BYTES`].
    cut: Option<usize>,
    /// The bytes that end a line: `\n`, or also `\r` ([`LineReader::ending_at_carriage_returns`]).
    ends: &'static [u8],
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(reader: R) -> Self {
        LineReader {
            reader: BufReader::with_capacity(8 * 1024, reader),
            buf: Vec::with_capacity(1024),
            cut: None,
            ends: b"\n",
        }
    }

    /// Ends lines at a carriage return too: a progress bar that redraws itself with `\r`
    /// (tqdm on stderr, in the stream stdout shares) never writes a newline while it runs,
    /// and would otherwise grow one line past the cap that then drops the metric printed
    /// after it. No `name=value` pair spans a carriage return.
    pub fn ending_at_carriage_returns(mut self) -> Self {
        self.ends = b"\r\n";
        self
    }

    /// The next line (terminator removed, invalid UTF-8 replaced), `None` at EOF. `on_raw`
    /// receives the bytes exactly as read.
    pub async fn next_line<G: FnMut(&[u8])>(
        &mut self,
        on_raw: &mut G,
    ) -> Result<Option<String>, CollectorError> {
        self.buf.clear();
        let ends = self.ends;
        let (n, cut) = read_bounded_line(&mut self.reader, &mut self.buf, ends, on_raw).await?;
        if n == 0 {
            return Ok(None);
        }
        self.cut = cut.then_some(n);
        if cut {
            drop_cut_token(&mut self.buf);
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        Ok(Some(String::from_utf8_lossy(&self.buf).into_owned()))
    }
}

impl<R> LineReader<R> {
    /// The length in bytes of the line [`next_line`](Self::next_line) returned last, if it was
    /// cut at [`MAX_LINE_BYTES`].
    pub fn last_cut(&self) -> Option<usize> {
        self.cut
    }
}

/// Removes the token a cut went through, so `... loss=123456789` cut after `loss=12` does not
/// record 12: a cut line keeps only what ends before its last whitespace.
pub fn drop_cut_token(kept: &mut Vec<u8>) {
    let end = kept
        .iter()
        .rposition(|b| b.is_ascii_whitespace())
        .unwrap_or(0);
    kept.truncate(end);
}

/// Reads up to one of `ends`, keeping at most `MAX_LINE_BYTES` of the line (the rest is still
/// passed to `on_raw` and consumed). Returns the bytes consumed and whether the line was cut.
async fn read_bounded_line<R, G>(
    reader: &mut BufReader<R>,
    buf: &mut Vec<u8>,
    ends: &[u8],
    on_raw: &mut G,
) -> Result<(usize, bool), CollectorError>
where
    R: AsyncRead + Unpin,
    G: FnMut(&[u8]),
{
    let mut total = 0;
    let mut cut = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok((total, cut));
        }
        let (chunk, done) = match available.iter().position(|b| ends.contains(b)) {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        on_raw(chunk);
        let room = MAX_LINE_BYTES.saturating_sub(buf.len());
        // The terminator does not count against the cap.
        let body = chunk.len() - usize::from(done);
        cut |= body > room;
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = chunk.len();
        total += used;
        reader.consume(used);
        if done {
            return Ok((total, cut));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn splits_lines_and_survives_bad_bytes() {
        let data: &[u8] = b"loss=1\r\nacc=\xff2\nlast";
        let mut lines = Vec::new();
        let mut raw = Vec::new();
        read_lines(
            data,
            |b| raw.extend_from_slice(b),
            |l| lines.push(l.to_string()),
        )
        .await
        .unwrap();
        assert_eq!(lines, vec!["loss=1", "acc=\u{fffd}2", "last"]);
        assert_eq!(raw, data);
    }

    /// A progress bar redrawn with carriage returns for longer than the cap still lets the
    /// metric printed after it through, when carriage returns end lines.
    #[tokio::test]
    async fn a_carriage_return_ends_a_line_when_asked() {
        let mut data = Vec::new();
        while data.len() <= MAX_LINE_BYTES {
            data.extend_from_slice(b"\r 50%|#####     | 5/10 [00:01<00:01]");
        }
        data.extend_from_slice(b"\raccuracy=0.9\r\n");
        async fn metric_lines(mut reader: LineReader<&[u8]>) -> Vec<String> {
            let mut found = Vec::new();
            while let Some(line) = reader.next_line(&mut |_| {}).await.unwrap() {
                if line.contains("accuracy=") {
                    found.push(line);
                }
            }
            found
        }
        assert_eq!(
            metric_lines(LineReader::new(&data[..]).ending_at_carriage_returns()).await,
            ["accuracy=0.9"]
        );
        // By newlines alone the whole is one line, cut at the cap with the metric after it.
        assert!(metric_lines(LineReader::new(&data[..])).await.is_empty());
    }

    #[tokio::test]
    async fn cuts_overlong_lines_before_the_token_the_cut_went_through() {
        let mut data = vec![b'x'; MAX_LINE_BYTES + 10];
        data.extend_from_slice(b"\nloss=2\n");
        let mut pad = vec![b'x'; MAX_LINE_BYTES - 8];
        pad.extend_from_slice(b" loss=123456789\nacc=1 loss=3\n");
        data.extend_from_slice(&pad);
        let exact = vec![b'y'; MAX_LINE_BYTES];
        data.extend_from_slice(&exact);
        data.extend_from_slice(b"\n");
        let mut lines = Vec::new();
        read_lines(&data[..], |_| {}, |l| lines.push(l.to_string()))
            .await
            .unwrap();
        let lens: Vec<usize> = lines.iter().map(String::len).collect();
        assert_eq!(lens, vec![0, 6, MAX_LINE_BYTES - 8, 12, MAX_LINE_BYTES]);
        assert!(!lines[2].contains("loss"));

        // Each cut line says so, with its whole length; the others do not.
        let mut reader = LineReader::new(&data[..]);
        let mut cuts = Vec::new();
        while let Some(_line) = reader.next_line(&mut |_| {}).await.unwrap() {
            cuts.push(reader.last_cut());
        }
        let first = MAX_LINE_BYTES + 11;
        let third = MAX_LINE_BYTES + 8;
        assert_eq!(cuts, vec![Some(first), None, Some(third), None, None]);
    }

    #[test]
    fn a_cut_keeps_what_ends_before_the_last_whitespace() {
        let mut kept = b"acc=1 loss=12".to_vec();
        drop_cut_token(&mut kept);
        assert_eq!(kept, b"acc=1");
        let mut kept = b"loss=12".to_vec();
        drop_cut_token(&mut kept);
        assert!(kept.is_empty());
    }
}
