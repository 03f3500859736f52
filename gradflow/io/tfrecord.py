"""TFRecord files: ``python_io.TFRecordWriter``, ``tf_record_iterator`` and their options.

A TFRecord file is a sequence of records, each framed as TF frames it::

    uint64 length | uint32 masked crc32c(length) | bytes data | uint32 masked crc32c(data)

(little endian; the masked CRC-32C is computed by ``google_crc32c`` or, without it, on
NumPy, the records of a chunk that share a length together). A whole file may
be compressed as one ZLIB or GZIP stream. Importing this module registers the format
with the engine's reader hook (``ops/record_formats.py``), so ``TFRecordDataset`` and
``TFRecordReader`` read the same files.
"""
from __future__ import annotations

import enum
import gzip
import os
import struct
import zlib
from typing import BinaryIO, Iterator, Optional, Union

import numpy as np
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow

from gradflow.framework import errors
from gradflow.io.crc32c import crc32c, crc32c_rows
from gradflow.ops.record_formats import register_record_format
from gradflow.tools.npz_io import open_regular

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter",
           "tf_record_iterator", "read_records", "MAX_RECORD_BYTES"]

try:  # Google's C implementation of CRC-32C: ~1000x faster than the pure-Python one
    import google_crc32c
except ImportError:
    google_crc32c = None

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
# The largest record read (a declared length is checked against it, and against the
# bytes left in an uncompressed file, before anything is allocated).
MAX_RECORD_BYTES = 1 << 30
# Records and compressed input are read in pieces of this size.
_CHUNK = 1 << 20
# Without google_crc32c: records of one length are summed on NumPy together when there
# are this many; one buffer this long or longer is summed on NumPy alone. Spans this
# short (the 8-byte lengths) are summed on NumPy together either way: fewer Python calls.
_NUMPY_CRC_ROWS = 8
_NUMPY_CRC_BYTES = 1 << 14
_NUMPY_CRC_ROW_BYTES = 8


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data`` (``google_crc32c`` when installed, else the
    ``tensorboard`` package's pure-Python function, or NumPy's for long data)."""
    if google_crc32c is None:
        if len(data) >= _NUMPY_CRC_BYTES:
            crc = crc32c(data)
            return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
        return pywrap_tensorflow.masked_crc32c(data)
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _masked_crcs(buffer: bytes, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The masked CRC-32C of ``buffer[start:start + length]`` for each start and length.
    Spans sharing a short length (and without ``google_crc32c``, any length) are summed
    together on NumPy: one step per byte of the length, whatever their number."""
    out = np.zeros(len(starts), np.uint32)
    data = np.frombuffer(buffer, np.uint8)
    for length in np.unique(lengths).tolist():
        members = np.flatnonzero(lengths == length)
        on_numpy = len(members) >= _NUMPY_CRC_ROWS and (
            length <= _NUMPY_CRC_ROW_BYTES or
            google_crc32c is None and length < _NUMPY_CRC_BYTES)
        if on_numpy:
            crcs = crc32c_rows(data[starts[members, None] + np.arange(length)])
        elif google_crc32c is not None:
            crcs = np.array([google_crc32c.value(buffer[start:start + length])
                             for start in starts[members].tolist()], np.uint32)
        else:
            for index in members.tolist():
                start = int(starts[index])
                out[index] = masked_crc32c(buffer[start:start + length])
            continue
        out[members] = ((crcs >> np.uint32(15)) | (crcs << np.uint32(17))) \
            + np.uint32(0xA282EAD8)
    return out


def _stored_crcs(buffer: bytes, starts: np.ndarray) -> np.ndarray:
    """The little-endian uint32 checksums stored at ``starts``."""
    data = np.frombuffer(buffer, np.uint8)
    return np.ascontiguousarray(data[starts[:, None] + np.arange(4)]).view("<u4").reshape(-1)


class TFRecordCompressionType(enum.IntEnum):
    """How a whole TFRecord file is compressed (TF1's ``python_io`` enum)."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_NAMES = {TFRecordCompressionType.NONE: "", TFRecordCompressionType.ZLIB: "ZLIB",
          TFRecordCompressionType.GZIP: "GZIP"}


class TFRecordOptions:
    """Compression of a TFRecord file. ``compression_level`` (0-9) is honoured; the
    buffer sizes are accepted as hints; the other zlib tuning knobs raise."""

    compression_type_map = {name: kind for kind, name in _NAMES.items()}

    def __init__(self, compression_type: Union[str, int, None] = None,
                 flush_mode=None, input_buffer_size: Optional[int] = None,
                 output_buffer_size: Optional[int] = None, window_bits=None,
                 compression_level: Optional[int] = None, compression_method=None,
                 mem_level=None, compression_strategy=None):
        self.compression_type = _compression_name(compression_type)
        for name, value in (("flush_mode", flush_mode), ("window_bits", window_bits),
                            ("compression_method", compression_method),
                            ("mem_level", mem_level),
                            ("compression_strategy", compression_strategy)):
            if value is not None:
                raise ValueError(f"TFRecordOptions: {name} is not supported by gradflow "
                                 "(only compression_type and compression_level are)")
        if compression_level is not None and not 0 <= int(compression_level) <= 9:
            raise ValueError(f"compression_level must be in [0, 9], got {compression_level}")
        self.compression_level = compression_level
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size

    @classmethod
    def get_compression_type_string(cls, options) -> str:
        """``"ZLIB"``, ``"GZIP"`` or ``""`` for options, a type name or an enum value."""
        if isinstance(options, TFRecordOptions):
            return options.compression_type
        return _compression_name(options)


def _compression_name(value) -> str:
    if value is None or isinstance(value, TFRecordOptions):
        return "" if value is None else value.compression_type
    if isinstance(value, str):
        if value.upper() not in ("", "ZLIB", "GZIP", "NONE"):
            raise ValueError(f'compression_type must be one of "", "ZLIB" or "GZIP", got '
                             f"{value!r}")
        return "" if value.upper() == "NONE" else value.upper()
    try:
        return _NAMES[TFRecordCompressionType(value)]
    except ValueError:
        raise ValueError(f"compression_type must be a TFRecordCompressionType, got "
                         f"{value!r}") from None


class _ZlibWriter:
    """A binary file written through one zlib stream (TF's ZLIB record files)."""

    def __init__(self, raw: BinaryIO, level: int):
        self._raw = raw
        self._compressor = zlib.compressobj(level)

    def write(self, data: bytes) -> None:
        self._raw.write(self._compressor.compress(data))

    def flush(self) -> None:
        self._raw.write(self._compressor.flush(zlib.Z_SYNC_FLUSH))
        self._raw.flush()

    def close(self) -> None:
        self._raw.write(self._compressor.flush())
        self._raw.close()


class TFRecordWriter:
    """Writes records to a TFRecord file (``with TFRecordWriter(path) as w: w.write(b)``)."""

    def __init__(self, path: str, options: Union[TFRecordOptions, str, int, None] = None):
        if not isinstance(options, TFRecordOptions):
            options = TFRecordOptions(options)
        level = 6 if options.compression_level is None else int(options.compression_level)
        try:
            if options.compression_type == "GZIP":
                self._file = gzip.open(path, "wb", compresslevel=level)
            elif options.compression_type == "ZLIB":
                self._file = _ZlibWriter(open(path, "wb"), level)
            else:
                self._file = open(path, "wb")
        except OSError as err:
            raise errors.NotFoundError(None, None, f"{path}; {err.strerror}") from None
        self._closed = False

    def write(self, record: bytes) -> None:
        if self._closed:
            raise errors.FailedPreconditionError(None, None, "Writer is closed.")
        if isinstance(record, str):
            record = record.encode()
        header = _LENGTH.pack(len(record))
        self._file.write(header + _CRC.pack(masked_crc32c(header)) + record
                         + _CRC.pack(masked_crc32c(record)))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._file.close()

    def __enter__(self) -> "TFRecordWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _open_for_reading(path: str, compression_type: str) -> BinaryIO:
    """``path`` opened as a stream of record bytes; only a regular file is opened."""
    try:
        os.stat(path)
    except FileNotFoundError as err:
        raise errors.NotFoundError(None, None, f"{path}; {err.strerror}") from None
    except OSError:
        pass  # open_regular names the file and the reason
    raw = open_regular(path, "record file")
    if compression_type in ("GZIP", "ZLIB"):
        return _InflatingReader(raw, gzip=compression_type == "GZIP")
    return raw


class _InflatingReader:
    """A ZLIB or GZIP stream inflated as it is read: never more than the bytes asked for
    (plus one input chunk's worth of output) is held, so a small file that inflates to
    gigabytes costs only what the reader consumes. Concatenated GZIP members are read
    one after the other, as TF does."""

    def __init__(self, raw: BinaryIO, gzip: bool):
        self._raw = raw
        self._wbits = 31 if gzip else 15
        self._inflater = zlib.decompressobj(self._wbits)
        self._input = b""  # compressed bytes read but not yet inflated

    def read(self, size: int) -> bytes:
        parts, wanted = [], size
        while wanted > 0:
            if self._inflater.eof:
                if self._wbits == 15:
                    break  # a ZLIB file is one stream
                rest = self._inflater.unused_data or self._raw.read(_CHUNK)
                if not rest:
                    break
                self._inflater = zlib.decompressobj(self._wbits)
                self._input = rest
            if not self._input:
                self._input = self._raw.read(_CHUNK)
                if not self._input:
                    raise EOFError("the compressed stream ends early")
            out = self._inflater.decompress(self._input, min(wanted, _CHUNK))
            self._input = self._inflater.unconsumed_tail
            parts.append(out)
            wanted -= len(out)
        return b"".join(parts)

    def close(self) -> None:
        self._raw.close()


def _bytes_left(source) -> Optional[int]:
    """Bytes left in an uncompressed file (None for an inflating stream)."""
    if isinstance(source, _InflatingReader):
        return None
    return os.fstat(source.fileno()).st_size - source.tell()


def _refill(source, buffer: bytes, at: int, wanted: int) -> Optional[bytes]:
    """The unread part of ``buffer`` (from ``at``) topped up from ``source``, a chunk at a
    time, to at least ``wanted`` bytes; None where the stream ends first (what arrived is
    never joined, so memory grows only with the bytes that really arrive)."""
    parts, have = [buffer[at:]], len(buffer) - at
    while have < wanted:
        chunk = source.read(_CHUNK)
        if not chunk:
            return None
        parts.append(chunk)
        have += len(chunk)
    return b"".join(parts)


def _whole_frames(buffer: bytes, at: int, left: Optional[int], limit: int) -> list:
    """``(position, length)`` of the records lying wholly in ``buffer`` from ``at``, up to
    the first one that does not (or declares more than ``limit`` or than the ``left``
    bytes of the file): that one is left to the record-by-record checks."""
    frames, pos, end = [], at, len(buffer)
    while end - pos >= 12:
        length = _LENGTH.unpack_from(buffer, pos)[0]
        if length > limit or end - pos < 16 + length or \
                (left is not None and length + 4 > left - (pos - at) - 12):
            break
        frames.append((pos, length))
        pos += 16 + length
    return frames


def _first_corrupt(buffer: bytes, frames: list) -> Optional[tuple]:
    """(index, "length" or "data") of the first frame whose checksum is wrong, or None."""
    starts = np.array([pos for pos, _ in frames], np.int64)
    lengths = np.array([length for _, length in frames], np.int64)
    bad_length = _masked_crcs(buffer, starts, np.full(len(frames), 8)) != \
        _stored_crcs(buffer, starts + 8)
    bad_data = _masked_crcs(buffer, starts + 12, lengths) != \
        _stored_crcs(buffer, starts + 12 + lengths)
    bad = np.flatnonzero(bad_length | bad_data)
    if not len(bad):
        return None
    index = int(bad[0])
    return index, "length" if bad_length[index] else "data"


def _corrupted(path: str, offset: int, part: str) -> errors.DataLossError:
    if part == "length":
        return errors.DataLossError(None, None, f"{path}: corrupted record at {offset} "
                                    "(length checksum mismatch: is this even a TFRecord "
                                    "file?)")
    return errors.DataLossError(None, None, f"{path}: corrupted record at {offset + 12} "
                                "(data checksum mismatch)")


def read_records(path: str, compression_type: str = "",
                 max_record_bytes: int = MAX_RECORD_BYTES) -> Iterator[bytes]:
    """The records of a TFRecord file, framing checked before anything is allocated.

    Raises (TF's types and key texts, with the file named): ``DataLossError``
    "corrupted record at <offset>" for a bad length or data CRC, "truncated record at
    <offset>" when the data ends early or declares more bytes than the file has left,
    and "record at <offset> declares N bytes, more than the limit" beyond
    ``max_record_bytes``; a partial header at the very end ends the file, as in TF.
    ``NotFoundError`` for a missing file, ``ValueError`` for one that is not regular.
    The file is read a chunk at a time; the records lying wholly in a chunk are cut
    and checked together (each is yielded only once those before it proved sound).
    """
    source = _open_for_reading(path, _compression_name(compression_type))
    size = _bytes_left(source)  # None for a compressed stream
    offset, buffer, at = 0, b"", 0
    try:
        while True:
            frames = _whole_frames(buffer, at, None if size is None else size - offset,
                                   max_record_bytes)
            corrupt = _first_corrupt(buffer, frames) if frames else None
            for pos, length in frames[:None if corrupt is None else corrupt[0]]:
                yield buffer[pos + 12:pos + 12 + length]
            if corrupt is not None:
                raise _corrupted(path, offset + frames[corrupt[0]][0] - at, corrupt[1])
            if frames:
                consumed = frames[-1][0] + 16 + frames[-1][1] - at
                offset, at = offset + consumed, at + consumed
            # the next record is not wholly in the buffer: checked step by step
            if len(buffer) - at < 12:
                buffer, at = _refill(source, buffer, at, 12), 0
                if buffer is None:
                    return  # TF ends quietly on an empty or partial header
            length_bytes = buffer[at:at + 8]
            if _CRC.unpack_from(buffer, at + 8)[0] != masked_crc32c(length_bytes):
                raise _corrupted(path, offset, "length")
            length = _LENGTH.unpack(length_bytes)[0]
            left = None if size is None else size - offset - 12
            if left is not None and length + 4 > left:
                raise errors.DataLossError(None, None, f"{path}: truncated record at {offset}"
                                           f" (declares {length} bytes, {left} are left)")
            if length > max_record_bytes:
                raise errors.DataLossError(None, None, f"{path}: record at {offset} declares "
                                           f"{length} bytes, more than the limit of "
                                           f"{max_record_bytes}")
            framed = 16 + length
            if len(buffer) - at < framed:
                buffer, at = _refill(source, buffer, at, framed), 0
                if buffer is None:
                    raise errors.DataLossError(None, None,
                                               f"{path}: truncated record at {offset}")
            record = buffer[at + 12:at + 12 + length]
            if _CRC.unpack_from(buffer, at + 12 + length)[0] != masked_crc32c(record):
                raise _corrupted(path, offset, "data")
            yield record
            at += framed
            offset += framed
    except (OSError, EOFError, zlib.error) as err:
        raise errors.DataLossError(None, None, f"{path}: truncated record at {offset} "
                                   f"({err})") from None
    finally:
        source.close()


def tf_record_iterator(path: str, options: Union[TFRecordOptions, str, int, None] = None
                       ) -> Iterator[bytes]:
    """Yields the records of a TFRecord file (TF1's ``python_io.tf_record_iterator``)."""
    return read_records(path, TFRecordOptions.get_compression_type_string(options))


register_record_format("TFRecord", read_records)
