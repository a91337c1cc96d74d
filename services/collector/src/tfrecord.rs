//! TFRecord framing, the container of TensorFlow event files: each record is a little-endian
//! u64 length, the masked CRC32C of those 8 bytes, the record bytes, and the masked CRC32C of
//! the record. Pure: callers hand in bytes, so the same code serves a growing file and a test.

/// A record whose length claims more than this is treated as a corrupt header; an event with
/// a few scalars is a few hundred bytes, and a lying length must not make us buffer gigabytes.
pub const MAX_RECORD_BYTES: u64 = 16 << 20;

const HEADER_BYTES: usize = 12;
const FOOTER_BYTES: usize = 4;

/// TensorFlow's CRC mask (`tensorflow/core/lib/hash/crc32c.h`): rotate right by 15 and add a
/// constant, so that a CRC of data containing CRCs stays well distributed.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// Frames `payload` as one TFRecord (what a writer appends to an event file).
pub fn encode_record(payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u64).to_le_bytes();
    let mut out = Vec::with_capacity(payload.len() + HEADER_BYTES + FOOTER_BYTES);
    out.extend_from_slice(&len);
    out.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(&masked_crc32c(payload).to_le_bytes());
    out
}

/// What the bytes at the start of a buffer hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A record whose both checksums hold; `consumed` bytes belong to it.
    Record { payload: &'a [u8], consumed: usize },
    /// The buffer ends inside a record: wait for the writer to append the rest.
    Incomplete,
    /// A record with a good header but a bad payload checksum: skip `consumed` bytes.
    BadPayload { consumed: usize },
    /// A header whose checksum (or length) is wrong: nothing after it can be trusted, so the
    /// reader skips `consumed` bytes to the next position where a valid header starts.
    BadHeader { consumed: usize },
}

/// Reads the frame at the start of `buf`.
pub fn next_frame(buf: &[u8]) -> Frame<'_> {
    if buf.len() < HEADER_BYTES {
        return Frame::Incomplete;
    }
    if !header_ok(buf) {
        return Frame::BadHeader {
            consumed: resync(buf),
        };
    }
    let mut len_bytes = [0u8; 8];
    len_bytes.copy_from_slice(&buf[..8]);
    // header_ok has checked the length against MAX_RECORD_BYTES, so it fits in usize.
    let len = u64::from_le_bytes(len_bytes) as usize;
    let total = HEADER_BYTES + len + FOOTER_BYTES;
    if buf.len() < total {
        return Frame::Incomplete;
    }
    let payload = &buf[HEADER_BYTES..HEADER_BYTES + len];
    let mut crc_bytes = [0u8; 4];
    crc_bytes.copy_from_slice(&buf[HEADER_BYTES + len..total]);
    if u32::from_le_bytes(crc_bytes) != masked_crc32c(payload) {
        return Frame::BadPayload { consumed: total };
    }
    Frame::Record {
        payload,
        consumed: total,
    }
}

/// A plausible header: its CRC matches its length and the length is not absurd.
fn header_ok(buf: &[u8]) -> bool {
    if buf.len() < HEADER_BYTES {
        return false;
    }
    let mut crc_bytes = [0u8; 4];
    crc_bytes.copy_from_slice(&buf[8..12]);
    let mut len_bytes = [0u8; 8];
    len_bytes.copy_from_slice(&buf[..8]);
    u32::from_le_bytes(crc_bytes) == masked_crc32c(&buf[..8])
        && u64::from_le_bytes(len_bytes) <= MAX_RECORD_BYTES
}

/// Bytes to skip after a bad header: up to the next offset holding a valid header, or up to
/// the last 11 bytes (which may be the start of a header still being written).
fn resync(buf: &[u8]) -> usize {
    (1..buf.len())
        .find(|&i| buf.len() - i < HEADER_BYTES || header_ok(&buf[i..]))
        .unwrap_or(buf.len())
}

/// All complete frames in `buf`: the payloads of good records, how many bytes were used (the
/// rest is an incomplete record to read again once it has grown) and how many were corrupt.
pub fn split_records(buf: &[u8]) -> (Vec<&[u8]>, usize, usize) {
    let mut records = Vec::new();
    let mut pos = 0;
    let mut corrupt = 0;
    loop {
        match next_frame(&buf[pos..]) {
            Frame::Record { payload, consumed } => {
                records.push(payload);
                pos += consumed;
            }
            Frame::BadPayload { consumed } | Frame::BadHeader { consumed } => {
                corrupt += 1;
                pos += consumed;
            }
            Frame::Incomplete => return (records, pos, corrupt),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_crc_matches_tensorflow() {
        // crc32c("123456789") = 0xe3069283 is the standard check value.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(
            masked_crc32c(b"123456789"),
            0xe306_9283u32.rotate_right(15).wrapping_add(0xa282_ead8)
        );
    }

    #[test]
    fn round_trips_and_waits_for_truncated_records() {
        let mut buf = encode_record(b"first");
        buf.extend(encode_record(b"second"));
        let (recs, used, bad) = split_records(&buf);
        assert_eq!(recs, vec![&b"first"[..], &b"second"[..]]);
        assert_eq!((used, bad), (buf.len(), 0));
        for cut in 1..buf.len() {
            let (recs, used, bad) = split_records(&buf[..cut]);
            assert_eq!(bad, 0, "a truncated record is never corrupt (cut {cut})");
            assert!(used <= cut);
            assert!(recs.len() <= 1 || cut == buf.len());
        }
    }

    #[test]
    fn bad_payload_crc_is_skipped_and_counted() {
        let mut buf = encode_record(b"first");
        let second_at = buf.len();
        buf.extend(encode_record(b"second"));
        buf.extend(encode_record(b"third"));
        buf[second_at + 13] ^= 0xff;
        let (recs, used, bad) = split_records(&buf);
        assert_eq!(recs, vec![&b"first"[..], &b"third"[..]]);
        assert_eq!((used, bad), (buf.len(), 1));
    }

    #[test]
    fn bad_header_resyncs_at_the_next_record() {
        let mut buf = encode_record(b"first");
        let second_at = buf.len();
        buf.extend(encode_record(b"second"));
        buf.extend(encode_record(b"third"));
        buf[second_at] ^= 0x01;
        let (recs, used, bad) = split_records(&buf);
        assert_eq!(recs, vec![&b"first"[..], &b"third"[..]]);
        assert_eq!((used, bad), (buf.len(), 1));
    }

    #[test]
    fn garbage_is_skipped_without_losing_the_tail() {
        let mut buf = vec![0xabu8; 100];
        buf.extend(encode_record(b"after"));
        let (recs, used, bad) = split_records(&buf);
        assert_eq!(recs, vec![&b"after"[..]]);
        assert_eq!((used, bad), (buf.len(), 1));
    }
}
