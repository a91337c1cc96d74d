//! One HTTP/1.1 GET of a trial's Prometheus endpoint on the loopback interface.
//!
//! Hand-written over `tokio::net::TcpStream` instead of an HTTP client crate: the collector
//! only ever talks to 127.0.0.1, sends one fixed request and reads one bounded body, so the
//! whole client is a request line, a status line, `Content-Length` or chunked decoding, a
//! timeout and a size cap: far less code (and build time on small machines) than hyper or
//! reqwest, and nothing that could follow a redirect or resolve a name elsewhere.

use crate::error::CollectorError;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A metrics page larger than this is cut here; Prometheus pages are kilobytes.
pub const MAX_BODY_BYTES: usize = 4 << 20;

/// The longest a scrape may take, connect to last byte.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);

/// Why a scrape found nothing to parse.
#[derive(Debug)]
pub enum ScrapeFailure {
    /// Nothing listens on the port (yet, or any more): normal while a trial starts or exits.
    NotListening,
    /// The connection was reset before any byte of an answer: what a server that is shutting
    /// down does to the connections it had queued (Python's `http.server` after `shutdown()`),
    /// so normal once while a trial exits, a fault when it repeats.
    Reset(CollectorError),
    /// Something answered, but not with a usable page.
    Failed(CollectorError),
}

/// The I/O errors of a peer that dropped the connection.
fn is_reset(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset};
    matches!(e.kind(), ConnectionReset | ConnectionAborted | BrokenPipe)
}

/// `GET http://127.0.0.1:<port><path>`, returning the body of a 200 response as text
/// (invalid UTF-8 replaced).
pub async fn scrape(port: u16, path: &str) -> Result<String, ScrapeFailure> {
    let url = format!("http://127.0.0.1:{port}{path}");
    let error = |reason: String| CollectorError::Scrape {
        url: url.clone(),
        reason,
    };
    let fail = |reason: String| ScrapeFailure::Failed(error(reason));
    // Before the first byte of the answer a dropped connection is a server going away.
    let lost = |e: std::io::Error, answered: bool| {
        if is_reset(&e) && !answered {
            ScrapeFailure::Reset(error(e.to_string()))
        } else {
            fail(e.to_string())
        }
    };
    let exchange = async {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let mut stream = match TcpStream::connect(addr).await {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(ScrapeFailure::NotListening);
            }
            Err(e) => return Err(fail(e.to_string())),
        };
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/plain;version=0.0.4\r\nConnection: close\r\nUser-Agent: vernier-collector\r\n\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| lost(e, false))?;
        let mut raw = Vec::new();
        // Headers on top of the body cap; a server sending more is cut off, not buffered.
        let read = (&mut stream)
            .take((MAX_BODY_BYTES + 64 * 1024) as u64)
            .read_to_end(&mut raw)
            .await;
        read.map_err(|e| lost(e, !raw.is_empty()))?;
        parse_response(&raw).map_err(fail)
    };
    match tokio::time::timeout(SCRAPE_TIMEOUT, exchange).await {
        Ok(result) => result,
        Err(_) => Err(fail(format!(
            "no complete answer within {} s",
            SCRAPE_TIMEOUT.as_secs()
        ))),
    }
}

/// The body of a `200` response; chunked bodies are decoded, `Content-Length` is honoured.
pub fn parse_response(raw: &[u8]) -> Result<String, String> {
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| "the response has no complete header".to_string())?;
    let head = String::from_utf8_lossy(&raw[..head_end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        return Err(format!(
            "status line {:?} is not 200",
            status_line.chars().take(100).collect::<String>()
        ));
    }
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if k.eq_ignore_ascii_case("content-length") {
            length = v.parse::<usize>().ok();
        }
    }
    let body = &raw[head_end + 4..];
    let body = if chunked {
        dechunk(body)?
    } else {
        let n = length.unwrap_or(body.len()).min(body.len());
        body[..n].to_vec()
    };
    let body = &body[..body.len().min(MAX_BODY_BYTES)];
    Ok(String::from_utf8_lossy(body).into_owned())
}

/// Decodes `Transfer-Encoding: chunked`; a body cut short keeps the chunks that arrived.
fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = body.windows(2).position(|w| w == b"\r\n") else {
            return Ok(out);
        };
        let size_text = String::from_utf8_lossy(&body[..eol]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("chunk size {size_text:?} is not hexadecimal"))?;
        if size == 0 {
            return Ok(out);
        }
        let start = eol + 2;
        let end = start.saturating_add(size).min(body.len());
        out.extend_from_slice(&body[start..end]);
        if end >= body.len() || out.len() >= MAX_BODY_BYTES {
            return Ok(out);
        }
        body = &body[(end + 2).min(body.len())..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_plain_and_chunked_bodies() {
        let plain = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 7\r\n\r\nloss 1\nextra";
        assert_eq!(parse_response(plain).unwrap(), "loss 1\n");
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nloss\r\n3;x=y\r\n 1\n\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked).unwrap(), "loss 1\n");
    }

    #[test]
    fn rejects_errors_and_garbage() {
        let e = parse_response(b"HTTP/1.1 404 Not Found\r\n\r\n").unwrap_err();
        assert!(e.contains("404"), "{e}");
        assert!(parse_response(b"\x00\x01 garbage").is_err());
        let bad = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert!(parse_response(bad).unwrap_err().contains("zz"));
    }

    #[tokio::test]
    async fn scrapes_a_loopback_server_and_knows_when_nobody_listens() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut req = vec![0u8; 1024];
            let n = s.read(&mut req).await.unwrap();
            let req = String::from_utf8_lossy(&req[..n]).to_string();
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nloss 0.5\n")
                .await
                .unwrap();
            req
        });
        assert_eq!(scrape(port, "/metrics").await.unwrap(), "loss 0.5\n");
        let req = server.await.unwrap();
        assert!(req.starts_with("GET /metrics HTTP/1.1\r\n"), "{req}");
        assert!(matches!(
            scrape(port, "/metrics").await,
            Err(ScrapeFailure::NotListening)
        ));
    }

    /// A server that drops a queued connection unanswered (as one shutting down does) resets
    /// it; that is told apart from other failures.
    #[tokio::test]
    async fn a_connection_reset_before_any_answer_is_its_own_failure() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            // Closing with a zero linger sends RST instead of FIN.
            s.set_zero_linger().unwrap();
            drop(s);
        });
        let got = scrape(port, "/metrics").await;
        server.await.unwrap();
        match got {
            Err(ScrapeFailure::Reset(e)) => {
                assert!(
                    e.to_string().starts_with("scraping http://127.0.0.1:"),
                    "{e}"
                )
            }
            other => panic!("not a reset: {other:?}"),
        }
    }
}
