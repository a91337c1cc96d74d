//! The one async loop over a byte stream: splits it into lines without trusting it to be UTF-8
//! or to have bounded line lengths.

use crate::error::CollectorError;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Longer lines are cut here; a runaway progress bar must not exhaust memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

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
    let mut reader = BufReader::with_capacity(8 * 1024, reader);
    let mut buf = Vec::with_capacity(1024);
    loop {
        buf.clear();
        let n = read_bounded_line(&mut reader, &mut buf, &mut on_raw).await?;
        if n == 0 {
            return Ok(());
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        on_line(&String::from_utf8_lossy(&buf));
    }
}

/// Reads up to a newline, keeping at most `MAX_LINE_BYTES` of the line (the rest is still
/// passed to `on_raw` and consumed).
async fn read_bounded_line<R, G>(
    reader: &mut BufReader<R>,
    buf: &mut Vec<u8>,
    on_raw: &mut G,
) -> Result<usize, CollectorError>
where
    R: AsyncRead + Unpin,
    G: FnMut(&[u8]),
{
    let mut total = 0;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(total);
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        on_raw(chunk);
        let room = MAX_LINE_BYTES.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = chunk.len();
        total += used;
        reader.consume(used);
        if done {
            return Ok(total);
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

    #[tokio::test]
    async fn cuts_overlong_lines() {
        let mut data = vec![b'x'; MAX_LINE_BYTES + 10];
        data.extend_from_slice(b"\nloss=2\n");
        let mut lines = Vec::new();
        read_lines(&data[..], |_| {}, |l| lines.push(l.len()))
            .await
            .unwrap();
        assert_eq!(lines, vec![MAX_LINE_BYTES, 6]);
    }
}
