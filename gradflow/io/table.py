"""The sorted string table (LevelDB's file format) under TF's checkpoint ``.index`` files.

A table maps byte-string keys, in increasing order, to byte-string values::

    [data block]...  [metaindex block]  [index block]  [footer: 48 bytes]

A *block* holds entries then a restart array and a 5-byte trailer::

    entry:    varint shared | varint unshared | varint value_len | key[shared:] | value
    restarts: uint32 offset ... | uint32 count      (entries at a restart share nothing)
    trailer:  byte compression (0: none) | uint32 masked CRC-32C of block + that byte

Each key is stored as the bytes it does not share with the previous key. The index block
has one entry per data block: a short key between the block's last key and the
next block's first, and the block's *handle*
(varint offset, varint size). The footer holds the metaindex and index handles, zero
padding to 40 bytes, then the magic number 0xdb4775248b80fb57 (little-endian). TF writes
uncompressed blocks and an empty metaindex; a compressed block (snappy) is refused.

Every size and offset is checked against the file before it is used, so a corrupt or
hostile file raises ``ValueError`` naming the file and never allocates more than it holds.
"""
from __future__ import annotations

import os
import struct
from typing import Iterator

from gradflow.io.crc32c import crc32c, mask

__all__ = ["TableWriter", "read_table", "MAGIC"]

MAGIC = 0xDB4775248B80FB57
_FOOTER = 48
_TRAILER = 5
_BLOCK_SIZE = 256 * 1024  # a data block is closed once it is this large
_RESTART_INTERVAL = 16


def varint(value: int) -> bytes:
    """``value`` as a protobuf/LevelDB base-128 varint."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(data: bytes, pos: int, end: int, what: str) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError(f"bad varint in {what}")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


class _BlockBuilder:
    def __init__(self, restart_interval: int):
        self._interval = restart_interval
        self._buffer = bytearray()
        self._restarts = [0]
        self._count = 0
        self._last = b""

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self._count < self._interval:
            limit = min(len(key), len(self._last))
            while shared < limit and key[shared] == self._last[shared]:
                shared += 1
        else:
            self._restarts.append(len(self._buffer))
            self._count = 0
        self._buffer += varint(shared) + varint(len(key) - shared) + varint(len(value))
        self._buffer += key[shared:] + value
        self._last = key
        self._count += 1

    def size(self) -> int:
        return len(self._buffer) + 4 * len(self._restarts) + 4

    def empty(self) -> bool:
        return not self._buffer

    def finish(self) -> bytes:
        restarts = struct.pack(f"<{len(self._restarts)}I", *self._restarts)
        return bytes(self._buffer) + restarts + struct.pack("<I", len(self._restarts))


def _separator(start: bytes, limit: bytes) -> bytes:
    """A short key in ``[start, limit)``, as LevelDB puts in the index (bytes-exact files)."""
    common = 0
    while common < min(len(start), len(limit)) and start[common] == limit[common]:
        common += 1
    if common < min(len(start), len(limit)) and start[common] < 0xFF \
            and start[common] + 1 < limit[common]:
        return start[:common] + bytes([start[common] + 1])
    return start


def _successor(key: bytes) -> bytes:
    """A short key >= ``key`` (the index key of the last block)."""
    for i, byte in enumerate(key):
        if byte != 0xFF:
            return key[:i] + bytes([byte + 1])
    return key


class TableWriter:
    """Writes a table to an open binary file; ``add`` keys in increasing order."""

    def __init__(self, file):
        self._file = file
        self._offset = 0
        self._block = _BlockBuilder(_RESTART_INTERVAL)
        self._index = _BlockBuilder(1)
        self._last_key: bytes | None = None
        self._pending: bytes | None = None  # handle of the block waiting for its index key

    def add(self, key: bytes, value: bytes) -> None:
        if self._last_key is not None and key <= self._last_key:
            raise ValueError(f"table keys must increase: {key!r} after {self._last_key!r}")
        if self._pending is not None:
            self._index.add(_separator(self._last_key, key), self._pending)
            self._pending = None
        self._block.add(key, value)
        self._last_key = key
        if self._block.size() >= _BLOCK_SIZE:
            self._pending = self._write_block(self._block.finish())
            self._block = _BlockBuilder(_RESTART_INTERVAL)

    def _write_block(self, contents: bytes) -> bytes:
        """Writes one uncompressed block; returns its handle."""
        handle = varint(self._offset) + varint(len(contents))
        trailer = b"\x00" + struct.pack("<I", mask(crc32c(contents + b"\x00")))
        self._file.write(contents + trailer)
        self._offset += len(contents) + _TRAILER
        return handle

    def finish(self) -> None:
        """Writes the last data block, the (empty) metaindex, the index and the footer."""
        if not self._block.empty():
            self._pending = self._write_block(self._block.finish())
        if self._pending is not None:
            self._index.add(_successor(self._last_key), self._pending)
        metaindex = self._write_block(_BlockBuilder(_RESTART_INTERVAL).finish())
        index = self._write_block(self._index.finish())
        footer = (metaindex + index).ljust(_FOOTER - 8, b"\x00") + struct.pack("<Q", MAGIC)
        self._file.write(footer)


def _handle(data: bytes, pos: int, end: int, what: str) -> tuple[int, int, int]:
    offset, pos = _read_varint(data, pos, end, what)
    size, pos = _read_varint(data, pos, end, what)
    return offset, size, pos


def _block(data: bytes, offset: int, size: int, path: str) -> tuple[int, int]:
    """Checks the block at ``offset``; returns the span of its entries."""
    if offset + size + _TRAILER > len(data) - _FOOTER or size < 4:
        raise ValueError(f"{path}: block at {offset} (size {size}) lies outside the file")
    compression = data[offset + size]
    stored, = struct.unpack_from("<I", data, offset + size + 1)
    if mask(crc32c(data[offset:offset + size + 1])) != stored:
        raise ValueError(f"{path}: block at {offset} fails its checksum")
    if compression != 0:
        raise ValueError(f"{path}: block at {offset} is compressed (type {compression}); "
                         "only uncompressed tables are supported")
    count, = struct.unpack_from("<I", data, offset + size - 4)
    if count == 0 or 4 * (count + 1) > size:
        raise ValueError(f"{path}: block at {offset} has a bad restart count {count}")
    return offset, offset + size - 4 * (count + 1)


def _entries(data: bytes, start: int, end: int, path: str) -> Iterator[tuple[bytes, bytes]]:
    key = b""
    pos = start
    what = f"{path} (block at {start})"
    while pos < end:
        shared, pos = _read_varint(data, pos, end, what)
        unshared, pos = _read_varint(data, pos, end, what)
        length, pos = _read_varint(data, pos, end, what)
        if shared > len(key) or pos + unshared + length > end:
            raise ValueError(f"{path}: entry at {pos} overruns its block")
        key = key[:shared] + data[pos:pos + unshared]
        pos += unshared
        yield key, data[pos:pos + length]
        pos += length


def read_table(path: str, max_bytes: int) -> Iterator[tuple[bytes, bytes]]:
    """The ``(key, value)`` pairs of the table file ``path``, in order.

    Raises ValueError naming ``path`` when it is not a regular file, is larger than
    ``max_bytes`` or is not a well-formed table.
    """
    if not os.path.isfile(path):
        raise ValueError(f"{path}: not a regular file")
    size = os.path.getsize(path)
    if size > max_bytes:
        raise ValueError(f"{path}: {size} bytes, more than the limit of {max_bytes}")
    if size < _FOOTER:
        raise ValueError(f"{path}: {size} bytes, too short for a table")
    with open(path, "rb") as f:
        data = f.read(size + 1)
    if len(data) != size:
        raise ValueError(f"{path}: changed size while being read")
    magic, = struct.unpack_from("<Q", data, size - 8)
    if magic != MAGIC:
        raise ValueError(f"{path}: not a table (bad magic number)")
    footer = size - _FOOTER
    _, _, pos = _handle(data, footer, size - 8, f"{path} (footer)")
    index_offset, index_size, _ = _handle(data, pos, size - 8, f"{path} (footer)")
    start, end = _block(data, index_offset, index_size, path)
    previous = b""
    for _, handle in _entries(data, start, end, path):
        offset, block_size, _ = _handle(handle, 0, len(handle), f"{path} (index)")
        block_start, block_end = _block(data, offset, block_size, path)
        for key, value in _entries(data, block_start, block_end, path):
            if key < previous:
                raise ValueError(f"{path}: keys out of order at {key!r}")
            previous = key
            yield key, value
