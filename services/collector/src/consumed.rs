//! What a follower has consumed of a file, to tell an append from a rewrite. Trainers (and
//! tools copying their output, as `rsync` does) rewrite or replace a file they append to; a
//! follower keeps a hash of the bytes it consumed and their first and last few bytes: when the
//! file is replaced or shrinks, when those last bytes change, or when it was modified without
//! growing or its first bytes changed, it may have been rewritten, and a file that still
//! begins with every byte consumed is followed on from where it was. The text follower
//! ([`crate::FileFollower`]) and the event follower ([`crate::TfEventFollower`]) share it.

use std::collections::hash_map::DefaultHasher;
use std::fs::{File, Metadata};
use std::hash::Hasher;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::time::SystemTime;

/// How many of the first and last consumed bytes are compared to notice a rewrite.
const EDGE_BYTES: usize = 64;

/// The consumed bytes `0..offset` of one file.
#[derive(Debug)]
pub(crate) struct Consumed {
    inode: u64,
    offset: u64,
    /// Hash of the bytes `0..offset` (a streaming hash: chunking does not change it).
    hash: DefaultHasher,
    /// When the file was last modified as of the last read.
    modified: Option<SystemTime>,
    /// The first (up to [`EDGE_BYTES`]) bytes consumed.
    head: Vec<u8>,
    /// The last (up to [`EDGE_BYTES`]) bytes before `offset`.
    tail: Vec<u8>,
}

impl Consumed {
    pub(crate) fn new(inode: u64) -> Self {
        Consumed {
            inode,
            offset: 0,
            hash: DefaultHasher::new(),
            modified: None,
            head: Vec::new(),
            tail: Vec::new(),
        }
    }

    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Counts `chunk`, read at `offset`, as consumed; `modified` is the file's modification
    /// time taken after the read (a write during it would otherwise look, at the next look,
    /// like a rewrite of the same length, and cost a hash of the whole file).
    pub(crate) fn advance(&mut self, chunk: &[u8], modified: Option<SystemTime>) {
        self.modified = modified;
        self.offset += chunk.len() as u64;
        self.hash.write(chunk);
        let room = EDGE_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let keep = chunk.len().min(EDGE_BYTES);
        let drop = (self.tail.len() + keep).saturating_sub(EDGE_BYTES);
        self.tail.drain(..drop);
        self.tail.extend_from_slice(&chunk[chunk.len() - keep..]);
    }

    /// Whether the file at the path (`meta`) may no longer hold the consumed bytes where they
    /// were read: it is another file, or shorter, or `same` (the consumed file, open) has other
    /// last bytes, or was modified without growing, or has other first bytes.
    pub(crate) fn may_be_rewritten(
        &self,
        meta: &Metadata,
        same: Option<&mut File>,
    ) -> std::io::Result<bool> {
        let Some(file) = same else {
            return Ok(true);
        };
        if meta.ino() != self.inode || meta.len() < self.offset {
            return Ok(true);
        }
        if !holds(file, self.offset - self.tail.len() as u64, &self.tail)? {
            return Ok(true);
        }
        if meta.modified().ok() == self.modified {
            return Ok(false);
        }
        Ok(meta.len() == self.offset || !holds(file, 0, &self.head)?)
    }

    /// Whether `file` (of `len` bytes) begins with every byte consumed so far: a rewrite or a
    /// copy that kept them, to be followed on from `offset`.
    pub(crate) fn begins(&self, mut file: &File, len: u64) -> std::io::Result<bool> {
        if self.offset == 0 || len < self.offset {
            return Ok(false);
        }
        let mut hash = DefaultHasher::new();
        let mut left = self.offset;
        let mut buf = vec![0; 64 << 10];
        file.seek(SeekFrom::Start(0))?;
        while left > 0 {
            let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            match file.read_exact(&mut buf[..n]) {
                Ok(()) => hash.write(&buf[..n]),
                // Shrunk while being read: rewritten again, so read from the start.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
                Err(e) => return Err(e),
            }
            left -= n as u64;
        }
        Ok(hash.finish() == self.hash.finish())
    }

    /// Follows the file now at the path (inode `inode`): on from `offset` when `kept` (it
    /// begins with every consumed byte), else from its start.
    pub(crate) fn reopened(&mut self, inode: u64, kept: bool) {
        match kept {
            true => self.inode = inode,
            false => *self = Consumed::new(inode),
        }
    }
}

/// Whether `file` holds `bytes` at offset `at`.
fn holds(file: &mut File, at: u64, bytes: &[u8]) -> std::io::Result<bool> {
    let mut now = vec![0; bytes.len()];
    file.seek(SeekFrom::Start(at))?;
    match file.read_exact(&mut now) {
        Ok(()) => Ok(now == bytes),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}
