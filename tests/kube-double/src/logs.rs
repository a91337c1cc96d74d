//! Container logs behind `GET .../pods/{name}/log`. Nothing in the Kubernetes API writes
//! logs (the kubelet does), so the simulated training operator (or a test) appends to them
//! through [`PodLogs`], and readers get the text so far or, with `follow=true`, a stream that
//! ends when the container finishes or the pod is deleted. Each line is stamped with the time
//! its first byte was written, which `timestamps=true` puts before it as the kubelet does.

use axum::body::Bytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// One container's log: the text so far and whether the container has finished.
#[derive(Debug)]
struct LogBuffer {
    data: Mutex<LogText>,
    progress: watch::Sender<(usize, bool)>,
}

/// A log's bytes and, for each line, where it starts and when its first byte was written
/// (RFC 3339 with nanoseconds, the kubelet's form).
#[derive(Debug, Default)]
struct LogText {
    bytes: Vec<u8>,
    line_starts: Vec<(usize, String)>,
}

impl LogText {
    fn append(&mut self, bytes: &[u8]) {
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
        let mut at_line_start = self.bytes.last().is_none_or(|&b| b == b'\n');
        for (i, &b) in bytes.iter().enumerate() {
            if at_line_start {
                self.line_starts.push((self.bytes.len() + i, now.clone()));
            }
            at_line_start = b == b'\n';
        }
        self.bytes.extend_from_slice(bytes);
    }

    /// Bytes `from..` (clamped), each line started in them preceded by its time and a space
    /// when `timestamps`.
    fn render(&self, from: usize, timestamps: bool) -> Vec<u8> {
        let from = from.min(self.bytes.len());
        if !timestamps {
            return self.bytes[from..].to_vec();
        }
        let mut out = Vec::with_capacity(self.bytes.len() - from);
        let mut at = from;
        let first = self.line_starts.partition_point(|(start, _)| *start < from);
        for (start, time) in &self.line_starts[first..] {
            out.extend_from_slice(&self.bytes[at..*start]);
            out.extend_from_slice(time.as_bytes());
            out.push(b' ');
            at = *start;
        }
        out.extend_from_slice(&self.bytes[at..]);
        out
    }
}

/// Logs by namespace, pod and container.
type LogBuffers = HashMap<(String, String, String), Arc<LogBuffer>>;

/// All container logs of the double, keyed by namespace, pod and container. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct PodLogs {
    buffers: Arc<Mutex<LogBuffers>>,
}

/// The write end of one container's log.
#[derive(Debug, Clone)]
pub struct LogSink {
    buffer: Arc<LogBuffer>,
}

impl LogSink {
    /// Append output (any bytes; lines are the writer's business).
    pub fn write(&self, bytes: &[u8]) {
        let len = {
            let mut data = self.buffer.data.lock().unwrap_or_else(|e| e.into_inner());
            data.append(bytes);
            data.bytes.len()
        };
        self.buffer.progress.send_modify(|p| p.0 = len);
    }

    /// The container has exited: following readers reach the end of the stream.
    pub fn finish(&self) {
        self.buffer.progress.send_modify(|p| p.1 = true);
    }
}

impl PodLogs {
    /// Start (or restart, replacing the old text) the log of a container that begins running.
    pub fn start(&self, namespace: &str, pod: &str, container: &str) -> LogSink {
        let (progress, _) = watch::channel((0, false));
        let buffer = Arc::new(LogBuffer {
            data: Mutex::new(LogText::default()),
            progress,
        });
        self.buffers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key(namespace, pod, container), buffer.clone());
        LogSink { buffer }
    }

    /// The whole log so far (each line after its time when `timestamps`), `None` if the
    /// container never started.
    pub fn read(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        timestamps: bool,
    ) -> Option<Vec<u8>> {
        let buffer = self.buffer(namespace, pod, container)?;
        let data = buffer.data.lock().unwrap_or_else(|e| e.into_inner());
        Some(data.render(0, timestamps))
    }

    /// Forget a deleted pod's logs (what the kubelet does when the pod goes).
    pub fn forget_pod(&self, namespace: &str, pod: &str) {
        let mut buffers = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        buffers.retain(|(ns, p, _), buffer| {
            let keep = !(ns == namespace && p == pod);
            if !keep {
                buffer.progress.send_modify(|p| p.1 = true);
            }
            keep
        });
    }

    fn buffer(&self, namespace: &str, pod: &str, container: &str) -> Option<Arc<LogBuffer>> {
        self.buffers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key(namespace, pod, container))
            .cloned()
    }

    /// Follow a log from its start: chunks as they are written (each line after its time when
    /// `timestamps`), ending when the container finishes or the pod is forgotten. `None` if the
    /// container never started.
    pub fn follow(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        timestamps: bool,
    ) -> Option<tokio::sync::mpsc::Receiver<Bytes>> {
        let buffer = self.buffer(namespace, pod, container)?;
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        tokio::spawn(async move {
            let mut progress = buffer.progress.subscribe();
            let mut sent = 0;
            loop {
                let (len, finished) = *progress.borrow_and_update();
                if len > sent {
                    let chunk = {
                        let data = buffer.data.lock().unwrap_or_else(|e| e.into_inner());
                        let chunk = Bytes::from(data.render(sent, timestamps));
                        sent = data.bytes.len();
                        chunk
                    };
                    if tx.send(chunk).await.is_err() {
                        return;
                    }
                    continue;
                }
                if finished {
                    return;
                }
                tokio::select! {
                    changed = progress.changed() => if changed.is_err() { return },
                    _ = tx.closed() => return,
                }
            }
        });
        Some(rx)
    }
}

fn key(namespace: &str, pod: &str, container: &str) -> (String, String, String) {
    (namespace.to_owned(), pod.to_owned(), container.to_owned())
}
