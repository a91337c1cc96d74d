#!/usr/bin/env python3
"""A toy training run that logs its metrics as TensorFlow event files, standard library only.

It writes what TensorBoard writers (tf.summary, tensorboardX) write: TFRecord files named
events.out.tfevents.<time>.<host> holding Event protobufs with scalar summaries, one run
directory per split:

    <logdir>/train/events.out.tfevents...   tags "loss", "accuracy"
    <logdir>/test/events.out.tfevents...    tags "loss", "accuracy"

so Katib's metric names "train/loss" and "test/accuracy" pick the tag from the right
directory. No TensorFlow or protobuf package is needed: the records are framed and the
protobufs encoded by hand below. The byte format was checked against files written by
tensorboardX in the collector's tests (services/collector/tests/tfevent_fixture.rs).

    python3 trainers/tfevent_trainer.py --lr 0.05 --dropout 0.2 --logdir /tmp/tfevent
"""

import argparse
import math
import os
import random
import socket
import struct
import time

# --- CRC32C (Castagnoli), as TFRecord framing needs; reflected polynomial 0x82F63B78 ---
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(payload):
    length = struct.pack("<Q", len(payload))
    return (length + struct.pack("<I", masked_crc(length)) + payload
            + struct.pack("<I", masked_crc(payload)))


# --- Protobuf wire format, just the fields an Event with scalars uses ---
def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(number, data):
    return varint(number << 3 | 2) + varint(len(data)) + data


def event(wall_time, step=0, file_version=None, scalars=()):
    """Event{wall_time=1 double, step=2 int64, file_version=3 string, summary=5 Summary}."""
    out = varint(1 << 3 | 1) + struct.pack("<d", wall_time)
    if step:
        out += varint(2 << 3) + varint(step)
    if file_version is not None:
        out += field_bytes(3, file_version.encode())
    if scalars:
        # Summary{value=1 repeated Value}; Value{tag=1 string, simple_value=2 float}.
        values = b"".join(
            field_bytes(1, field_bytes(1, tag.encode()) + varint(2 << 3 | 5) + struct.pack("<f", v))
            for tag, v in scalars)
        out += field_bytes(5, values)
    return out


class EventWriter:
    """Appends records to <dir>/events.out.tfevents.<time>.<host>, flushing each one."""

    def __init__(self, directory):
        os.makedirs(directory, exist_ok=True)
        name = "events.out.tfevents.%d.%s" % (int(time.time()), socket.gethostname())
        self.file = open(os.path.join(directory, name), "wb")
        self.add(event(time.time(), file_version="brain.Event:2"))

    def add(self, payload):
        self.file.write(tfrecord(payload))
        self.file.flush()

    def scalars(self, step, **values):
        self.add(event(time.time(), step, scalars=sorted(values.items())))

    def close(self):
        self.file.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--dropout", type=float, required=True)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--epoch-seconds", type=float, default=0.2)
    parser.add_argument("--logdir", default=os.environ.get("VERNIER_METRICS_DIR",
                                                           "/var/log/katib/tfevent"))
    args = parser.parse_args()
    rng = random.Random(f"{args.lr}:{args.dropout}")
    # Best near lr = 0.03, dropout = 0.3.
    gap = (math.log10(args.lr) + 1.5) ** 2 + 2.0 * (args.dropout - 0.3) ** 2
    train = EventWriter(os.path.join(args.logdir, "train"))
    test = EventWriter(os.path.join(args.logdir, "test"))
    for epoch in range(1, args.epochs + 1):
        time.sleep(args.epoch_seconds)
        loss = gap + 1.0 / epoch + rng.uniform(0, 0.02)
        train.scalars(epoch, loss=loss, accuracy=1.0 / (1.0 + loss))
        test_loss = loss + 0.05 + rng.uniform(0, 0.02)
        test.scalars(epoch, loss=test_loss, accuracy=1.0 / (1.0 + test_loss))
        print(f"epoch {epoch}: wrote train and test summaries", flush=True)
    train.close()
    test.close()


if __name__ == "__main__":
    main()
