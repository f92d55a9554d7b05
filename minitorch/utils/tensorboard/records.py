"""TensorBoard's event files from the standard library: protobuf wire encoding (varints,
fixed-width and length-delimited fields), CRC32C, TFRecord framing, and the event file."""

from __future__ import annotations

import itertools
import math
import os
import socket
import struct
import time
import weakref

# --- protobuf wire format: a field is a key (number << 3 | wire type), then its payload ---------

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5


def varint(n: int) -> bytes:
    """Base-128, low group first; negative int32/int64 go as 64-bit two's complement (10 bytes)."""
    n &= 0xFFFF_FFFF_FFFF_FFFF
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def integer(field: int, n: int) -> bytes:
    """int32, int64, enum and bool fields."""
    return _key(field, _VARINT) + varint(int(n))


def double(field: int, x: float) -> bytes:
    return _key(field, _FIXED64) + struct.pack("<d", x)


def float32_bytes(x: float) -> bytes:
    """x rounded to float32, as protobuf's C cast: beyond float32's range it is +-inf."""
    try:
        return struct.pack("<f", x)
    except OverflowError:  # struct refuses what the C cast turns into an infinity
        return struct.pack("<f", math.copysign(math.inf, x))


def float32(field: int, x: float) -> bytes:
    return _key(field, _FIXED32) + float32_bytes(x)


def message(field: int, payload: bytes) -> bytes:
    """A length-delimited field: a submessage, bytes, or a packed repeated field."""
    return _key(field, _LEN) + varint(len(payload)) + payload


def string(field: int, s: str) -> bytes:
    return message(field, s.encode("utf-8"))


def packed_doubles(field: int, xs) -> bytes:
    xs = list(xs)
    return message(field, struct.pack(f"<{len(xs)}d", *xs)) if xs else b""


# --- CRC32C (Castagnoli, reflected polynomial 0x82F63B78), one table lookup per byte ------------

def _crc_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        c = byte
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return tuple(table)


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TFRecord stores the CRC rotated right by 15 bits plus a constant (a CRC of data that
    holds CRCs is then less likely to collide)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(data: bytes) -> bytes:
    """length (u64 LE), masked CRC of the length, the data, masked CRC of the data."""
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked_crc32c(header)) + data
            + struct.pack("<I", masked_crc32c(data)))


# --- tensorboard.Event -----------------------------------------------------------------------

def event(wall_time: float, step: int = 0, *, summary: bytes | None = None,
          file_version: str | None = None, session_log_start: bool = False,
          writer: str | None = None) -> bytes:
    """An Event message; proto3 leaves a zero step out, the oneof members are written if set."""
    out = double(1, wall_time) if wall_time else b""
    if step:
        out += integer(2, step)
    if file_version is not None:
        out += string(3, file_version)
    if summary is not None:
        out += message(5, summary)
    if session_log_start:
        out += message(7, integer(1, 1))  # SessionLog{status: START}
    if writer is not None:
        out += message(10, string(1, writer))  # SourceMetadata{writer}
    return out


_uid = itertools.count()  # numbers the files of this process, as tensorboard's writers do


def _drain(file, pending: list[bytes]) -> None:
    if not file.closed:
        file.write(b"".join(pending))
        pending.clear()
        file.close()


class EventFile:
    """One events.out.tfevents.<time>.<host>.<pid>.<n> file. Records are buffered and written
    when max_queue are pending or flush_secs have passed (checked at each add; no thread)."""

    def __init__(self, logdir: str, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str = ""):
        self.logdir = logdir
        os.makedirs(logdir, exist_ok=True)
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}"
                f".{os.getpid()}.{next(_uid)}{filename_suffix}")
        self.path = os.path.join(logdir, name)
        self._file = open(self.path, "wb")
        self._max_queue, self._flush_secs = max_queue, flush_secs
        self._pending: list[bytes] = []
        self._last_flush = time.monotonic()
        # a writer never closed (a script that just ends) still writes what it buffered
        self._finalize = weakref.finalize(self, _drain, self._file, self._pending)
        self.add(event(time.time(), file_version="brain.Event:2",
                       writer="minitorch.utils.tensorboard"))
        self.flush()

    def add(self, record: bytes) -> None:
        self._pending.append(tfrecord(record))
        if (len(self._pending) >= self._max_queue
                or time.monotonic() - self._last_flush >= self._flush_secs):
            self.flush()

    def flush(self) -> None:
        if self._file.closed:
            return
        self._file.write(b"".join(self._pending))
        self._pending.clear()
        self._file.flush()
        self._last_flush = time.monotonic()

    def close(self) -> None:
        self._finalize()
