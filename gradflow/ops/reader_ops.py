"""Readers of TF1's queue pipelines: ``WholeFileReader``, ``TFRecordReader``,
``TextLineReader``, ``FixedLengthRecordReader`` (ops ``WholeFileReaderV2``,
``TFRecordReaderV2``, ``TextLineReaderV2``, ``FixedLengthRecordReaderV2``, ``ReaderReadV2``,
``ReaderReadUpToV2``, ``ReaderNumRecordsProducedV2``, ``ReaderResetV2``).

A reader is a session resource that takes file names from a queue of strings (a
``string_input_producer``) and yields ``(key, value)`` records, key ``"<file>:<n>"``.
"""
from __future__ import annotations

import collections
import glob
import itertools
import threading
import zlib
from typing import Iterator, Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Operation, Tensor, get_default_graph
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import apply_op
from gradflow.ops.data_flow_ops import QueueBase
from gradflow.ops.record_formats import open_records

__all__ = ["ReaderBase", "WholeFileReader", "TFRecordReader", "TextLineReader",
           "FixedLengthRecordReader", "matching_files"]

_keys = itertools.count()
# What ``read``/``read_up_to`` return, as TF's generated op wrappers name them.
ReaderReadV2 = collections.namedtuple("ReaderReadV2", ["key", "value"])
ReaderReadUpToV2 = collections.namedtuple("ReaderReadUpToV2", ["keys", "values"])


def _text(value) -> str:
    value = value.item() if isinstance(value, np.ndarray) else value
    return value.decode() if isinstance(value, bytes) else str(value)


class ReaderResource:
    """A session's reader: the records of the file it is in, then the queue's next file."""

    def __init__(self, kind: str, compression_type: str = "", skip_header_lines: int = 0,
                 layout: tuple = (0, 0, 0, 0)):
        self.kind = kind
        self.compression_type = compression_type
        self.skip_header_lines = skip_header_lines
        self.layout = layout  # a fixed-length reader's header, record, footer, hop bytes
        self.produced = 0
        self._records: Optional[Iterator[tuple]] = None
        self._lock = threading.Lock()

    def _open(self, name: str) -> Iterator[tuple]:
        if self.kind == "WholeFileReader":
            try:
                with open(name, "rb") as source:
                    yield name, source.read()
            except OSError as err:
                raise errors.NotFoundError(None, None, f"{name}; {err.strerror}") from None
        elif self.kind == "TFRecordReader":
            for index, record in enumerate(open_records("TFRecord", name,
                                                        self.compression_type)):
                yield f"{name}:{index}", record
        elif self.kind == "FixedLengthRecordReader":
            yield from self._fixed_length(name)
        else:
            try:
                with open(name, "rb") as source:
                    lines = source.read().split(b"\n")
            except OSError as err:
                raise errors.NotFoundError(None, None, f"{name}; {err.strerror}") from None
            if lines and lines[-1] == b"":
                lines.pop()
            for number, line in enumerate(lines, start=1):
                if number > self.skip_header_lines:
                    yield f"{name}:{number}", line[:-1] if line.endswith(b"\r") else line

    def _fixed_length(self, name: str) -> Iterator[tuple]:
        """Records of ``record`` bytes starting every ``hop`` bytes (default: one after
        the other) between the header and the footer; a last partial record is dropped."""
        header, record, footer, hop = self.layout
        try:
            with open(name, "rb") as source:
                data = source.read()
        except OSError as err:
            raise errors.NotFoundError(None, None, f"{name}; {err.strerror}") from None
        if self.compression_type:
            try:
                data = zlib.decompress(data, 31 if self.compression_type == "GZIP" else 15)
            except zlib.error as err:
                raise errors.DataLossError(None, None, f"{name}: {err}") from None
        body = data[header:len(data) - footer]
        starts = range(0, len(body) - record + 1, hop or record)
        for index, start in enumerate(starts):
            yield f"{name}:{index}", body[start:start + record]

    def read(self, queue) -> tuple:
        with self._lock:
            while True:
                if self._records is None:
                    name = queue.dequeue(None)[0][0]
                    self._records = self._open(_text(name))
                record = next(self._records, None)
                if record is not None:
                    self.produced += 1
                    key, value = record
                    return key.encode(), value
                self._records = None

    def reset(self) -> None:
        with self._lock:
            self._records = None
            self.produced = 0

    def close(self) -> None:
        self._records = None

    def join(self) -> None:
        """Nothing runs on a reader's own thread."""


_READERS = {"WholeFileReaderV2": "WholeFileReader", "TFRecordReaderV2": "TFRecordReader",
            "TextLineReaderV2": "TextLineReader",
            "FixedLengthRecordReaderV2": "FixedLengthRecordReader"}


def _reader_kernel(op_type: str):
    def kernel(ctx, *, shared_name, container, compression_type="", skip_header_lines=0,
               header_bytes=0, record_bytes=0, footer_bytes=0, hop_bytes=0, encoding=""):
        layout = (header_bytes, record_bytes, footer_bytes, hop_bytes)
        return ctx.session.resource(("reader", shared_name), lambda: ReaderResource(
            _READERS[op_type], compression_type or encoding, skip_header_lines, layout))
    return kernel


def _read_up_to_kernel(reader, queue, num_records):
    pairs = []
    for _ in range(int(np.asarray(num_records))):
        try:
            pairs.append(reader.read(queue))
        except errors.OutOfRangeError:
            if not pairs:
                raise
            break
    keys = np.empty(len(pairs), dtype=object)
    values = np.empty(len(pairs), dtype=object)
    keys[:] = [k for k, _ in pairs]
    values[:] = [v for _, v in pairs]
    return keys, values


for _type in _READERS:
    define_op(_type, infer=lambda inputs, attrs: [(dtypes.resource, TensorShape([]))],
              kernel=_reader_kernel(_type), stateful=True, needs_context=True,
              locks_itself=True)
define_op("ReaderReadV2", infer=lambda inputs, attrs: [(dtypes.string, TensorShape([]))] * 2,
          kernel=lambda reader, queue: reader.read(queue), stateful=True)
define_op("ReaderReadUpToV2", infer=lambda inputs, attrs: [
    (dtypes.string, TensorShape([None]))] * 2, kernel=_read_up_to_kernel, stateful=True)
define_op("ReaderNumRecordsProducedV2", infer=lambda inputs, attrs: [
    (dtypes.int64, TensorShape([]))], kernel=lambda reader: np.int64(reader.produced),
    stateful=True)
define_op("ReaderResetV2", infer=lambda inputs, attrs: [],
          kernel=lambda reader: reader.reset() or (), stateful=True)
for _type in tuple(_READERS) + ("ReaderReadV2", "ReaderReadUpToV2",
                                "ReaderNumRecordsProducedV2", "ReaderResetV2"):
    NotDifferentiable(_type)


def _queue_ref(queue) -> Tensor:
    return queue.queue_ref if isinstance(queue, QueueBase) else convert_to_tensor(queue)


class ReaderBase:
    """Reads records from the files named by a queue of file names."""

    _op_type = "WholeFileReaderV2"

    def __init__(self, name: Optional[str], default_name: str, **attrs):
        with get_default_graph().atomic():
            self._reader_ref = apply_op(self._op_type, [], name=name or default_name,
                                        shared_name=f"reader_{next(_keys)}", container="",
                                        **attrs)

    @property
    def reader_ref(self) -> Tensor:
        return self._reader_ref

    @property
    def supports_serialize(self) -> bool:
        return False

    def read(self, queue, name: Optional[str] = None) -> ReaderReadV2:
        """The next (key, value) record, taking a new file from ``queue`` when needed."""
        with get_default_graph().atomic():
            key, value = apply_op("ReaderReadV2", [self._reader_ref, _queue_ref(queue)],
                                  name=name or "ReaderReadV2")
        return ReaderReadV2(key, value)

    def read_up_to(self, queue, num_records, name: Optional[str] = None
                   ) -> ReaderReadUpToV2:
        """Up to ``num_records`` records (fewer only at the end of the input)."""
        with get_default_graph().atomic():
            count = convert_to_tensor(num_records, dtype=dtypes.int64, name="num_records")
            keys, values = apply_op("ReaderReadUpToV2",
                                    [self._reader_ref, _queue_ref(queue), count],
                                    name=name or "ReaderReadUpToV2")
        return ReaderReadUpToV2(keys, values)

    def num_records_produced(self, name: Optional[str] = None) -> Tensor:
        with get_default_graph().atomic():
            return apply_op("ReaderNumRecordsProducedV2", [self._reader_ref],
                            name=name or "ReaderNumRecordsProducedV2")

    def reset(self, name: Optional[str] = None) -> Operation:
        with get_default_graph().atomic():
            return apply_op("ReaderResetV2", [self._reader_ref], name=name or "ReaderResetV2")


class WholeFileReader(ReaderBase):
    """Each file is one record: key the file name, value its bytes."""

    _op_type = "WholeFileReaderV2"

    def __init__(self, name: Optional[str] = None):
        super().__init__(name, "WholeFileReaderV2")


class TFRecordReader(ReaderBase):
    """The records of TFRecord files (``options``: their compression)."""

    _op_type = "TFRecordReaderV2"

    def __init__(self, name: Optional[str] = None, options=None):
        compression = getattr(options, "compression_type", options) or ""
        if compression not in ("", "ZLIB", "GZIP"):
            raise ValueError(f"TFRecordReader options: unknown compression {compression!r}")
        super().__init__(name, "TFRecordReaderV2", compression_type=compression)


class TextLineReader(ReaderBase):
    """The lines of text files, after ``skip_header_lines`` of each."""

    _op_type = "TextLineReaderV2"

    def __init__(self, skip_header_lines: Optional[int] = None, name: Optional[str] = None):
        super().__init__(name, "TextLineReaderV2", skip_header_lines=int(skip_header_lines or 0))


class FixedLengthRecordReader(ReaderBase):
    """Records of ``record_bytes`` bytes after ``header_bytes`` of each file and before its
    ``footer_bytes``, one every ``hop_bytes`` (default: ``record_bytes``); ``encoding``
    "ZLIB" or "GZIP" for compressed files."""

    _op_type = "FixedLengthRecordReaderV2"

    def __init__(self, record_bytes: int, header_bytes: Optional[int] = None,
                 footer_bytes: Optional[int] = None, hop_bytes: Optional[int] = None,
                 name: Optional[str] = None, encoding: Optional[str] = None):
        sizes = {"record_bytes": record_bytes, "header_bytes": header_bytes or 0,
                 "footer_bytes": footer_bytes or 0, "hop_bytes": hop_bytes or 0}
        for arg, value in sizes.items():
            if not isinstance(value, (int, np.integer)) or value < 0 or \
                    arg == "record_bytes" and value == 0:
                raise ValueError(f"FixedLengthRecordReader: {arg} must be a "
                                 f"{'positive' if arg == 'record_bytes' else 'non-negative'} "
                                 f"int, got {value!r}")
        if (encoding or "") not in ("", "ZLIB", "GZIP"):
            raise ValueError(f"FixedLengthRecordReader: encoding must be '', 'ZLIB' or "
                             f"'GZIP', got {encoding!r}")
        super().__init__(name, "FixedLengthRecordReaderV2", encoding=encoding or "",
                         **{k: int(v) for k, v in sizes.items()})


def _matching_files_kernel(pattern):
    patterns = [_text(p) for p in np.asarray(pattern, dtype=object).reshape(-1)]
    names = sorted({name for p in patterns for name in glob.glob(p)})
    out = np.empty(len(names), dtype=object)
    out[:] = [n.encode() for n in names]
    return out


define_op("MatchingFiles", infer=lambda inputs, attrs: [(dtypes.string, TensorShape([None]))],
          kernel=_matching_files_kernel, stateful=True)
NotDifferentiable("MatchingFiles")


def matching_files(pattern, name: Optional[str] = None) -> Tensor:
    """The sorted names of the files matching glob ``pattern`` (a string or a vector)."""
    with get_default_graph().atomic():
        pattern = convert_to_tensor(pattern, dtype=dtypes.string, name="pattern")
        return apply_op("MatchingFiles", [pattern], name=name or "MatchingFiles")
