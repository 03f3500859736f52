"""TFRecord files: ``python_io.TFRecordWriter``, ``tf_record_iterator`` and their options.

A TFRecord file is a sequence of records, each framed as TF frames it::

    uint64 length | uint32 masked crc32c(length) | bytes data | uint32 masked crc32c(data)

(little endian; the masked CRC-32C is computed by ``google_crc32c`` or, without it, by
the ``tensorboard`` package's pure-Python function). A whole file may
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

from tensorboard.compat.tensorflow_stub import pywrap_tensorflow

from gradflow.framework import errors
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


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data`` (the ``tensorboard`` package's function, or
    the same sum from ``google_crc32c`` when that is installed)."""
    if google_crc32c is None:
        return pywrap_tensorflow.masked_crc32c(data)
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


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


def _read_exactly(source, length: int) -> Optional[bytes]:
    """``length`` bytes, or None where the stream ends first; read in chunks, so memory
    grows only with the bytes that really arrive (and a short read is never joined)."""
    if length <= _CHUNK:
        data = source.read(length)
        return data if len(data) == length else None
    parts, wanted = [], length
    while wanted > 0:
        chunk = source.read(min(wanted, _CHUNK))
        if not chunk:
            return None
        parts.append(chunk)
        wanted -= len(chunk)
    return b"".join(parts)


def read_records(path: str, compression_type: str = "",
                 max_record_bytes: int = MAX_RECORD_BYTES) -> Iterator[bytes]:
    """The records of a TFRecord file, framing checked before anything is allocated.

    Raises (TF's types and key texts, with the file named): ``DataLossError``
    "corrupted record at <offset>" for a bad length or data CRC, "truncated record at
    <offset>" when the data ends early or declares more bytes than the file has left,
    and "record at <offset> declares N bytes, more than the limit" beyond
    ``max_record_bytes``; a partial header at the very end ends the file, as in TF.
    ``NotFoundError`` for a missing file, ``ValueError`` for one that is not regular.
    """
    source = _open_for_reading(path, _compression_name(compression_type))
    offset = 0
    try:
        while True:
            header = source.read(12)
            if len(header) < 12:
                return  # TF ends quietly on an empty or partial header
            length_bytes = header[:8]
            if _CRC.unpack(header[8:])[0] != masked_crc32c(length_bytes):
                raise errors.DataLossError(None, None, f"{path}: corrupted record at {offset} "
                                           "(length checksum mismatch: is this even a "
                                           "TFRecord file?)")
            length = _LENGTH.unpack(length_bytes)[0]
            left = _bytes_left(source)
            if left is not None and length + 4 > left:
                raise errors.DataLossError(None, None, f"{path}: truncated record at {offset}"
                                           f" (declares {length} bytes, {left} are left)")
            if length > max_record_bytes:
                raise errors.DataLossError(None, None, f"{path}: record at {offset} declares "
                                           f"{length} bytes, more than the limit of "
                                           f"{max_record_bytes}")
            data = _read_exactly(source, length + 4)
            if data is None:
                raise errors.DataLossError(None, None, f"{path}: truncated record at {offset}")
            record = data[:length]
            if _CRC.unpack(data[length:])[0] != masked_crc32c(record):
                raise errors.DataLossError(None, None, f"{path}: corrupted record at "
                                           f"{offset + 12} (data checksum mismatch)")
            yield record
            offset += 16 + length
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
