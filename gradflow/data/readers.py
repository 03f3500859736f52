"""File datasets: ``TFRecordDataset``, ``TextLineDataset``, ``FixedLengthRecordDataset``."""
from __future__ import annotations

from typing import Callable, Optional

from gradflow.data.dataset import Dataset, _Spec
from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import get_default_graph
from gradflow.ops import dataset_ops

__all__ = ["TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset"]


def _filenames(filenames):
    tensor = convert_to_tensor(filenames, dtype=dtypes.string, name="filenames")
    if tensor.shape.ndims not in (None, 0, 1):
        raise TypeError(f"`filenames` must be a `tf.Tensor` of dtype `tf.string` and shape "
                        f"rank 0 or 1; got shape {tensor.shape}")
    return tensor


def _compression(compression_type: Optional[str]):
    value = "" if compression_type is None else compression_type
    if value.upper() not in ("", "ZLIB", "GZIP"):
        raise ValueError(f"compression_type must be None, '', 'ZLIB' or 'GZIP', got "
                         f"{compression_type!r}")
    return convert_to_tensor(value, dtype=dtypes.string, name="compression_type")


def _buffer(buffer_size: Optional[int]):
    return convert_to_tensor(-1 if buffer_size is None else buffer_size, dtype=dtypes.int64,
                             name="buffer_size")


def _records(variant) -> Dataset:
    spec = _Spec(dtypes.string, [])
    return Dataset(variant, spec, [spec])


def _read_in_parallel(names, read_one: Callable, num_parallel_reads) -> Dataset:
    """The files' records, ``num_parallel_reads`` files read at once on threads and their
    records interleaved one at a time (TF's order)."""
    files = Dataset.from_tensor_slices(names) if names.shape.ndims != 0 else \
        Dataset.from_tensors(names)
    return files.interleave(read_one, cycle_length=num_parallel_reads, block_length=1,
                            num_parallel_calls=num_parallel_reads)


def TFRecordDataset(filenames, compression_type: Optional[str] = None,  # noqa: N802
                    buffer_size: Optional[int] = None,
                    num_parallel_reads: Optional[int] = None,
                    name: Optional[str] = None) -> Dataset:
    """The records of TFRecord files (several read at once, interleaved, with
    ``num_parallel_reads``)."""
    graph = get_default_graph()
    with graph.atomic():
        names = _filenames(filenames)
        compression, buffer = _compression(compression_type), _buffer(buffer_size)
        if num_parallel_reads is None:
            return _records(dataset_ops.make_dataset("TFRecordDataset",
                                                     [names, compression, buffer],
                                                     metadata=name))
        return _read_in_parallel(names, lambda one: TFRecordDataset(
            one, compression_type, buffer_size, name=name), num_parallel_reads)


def TextLineDataset(filenames, compression_type: Optional[str] = None,  # noqa: N802
                    buffer_size: Optional[int] = None,
                    num_parallel_reads: Optional[int] = None,
                    name: Optional[str] = None) -> Dataset:
    """The lines of text files, without their line endings (several files read at once,
    interleaved, with ``num_parallel_reads``)."""
    with get_default_graph().atomic():
        names = _filenames(filenames)
        if num_parallel_reads is not None:
            return _read_in_parallel(names, lambda one: TextLineDataset(
                one, compression_type, buffer_size, name=name), num_parallel_reads)
        inputs = [names, _compression(compression_type), _buffer(buffer_size)]
        return _records(dataset_ops.make_dataset("TextLineDataset", inputs, metadata=name))


def FixedLengthRecordDataset(filenames, record_bytes: int,  # noqa: N802
                             header_bytes: Optional[int] = None,
                             footer_bytes: Optional[int] = None,
                             buffer_size: Optional[int] = None,
                             compression_type: Optional[str] = None,
                             num_parallel_reads: Optional[int] = None,
                             name: Optional[str] = None) -> Dataset:
    """Records of ``record_bytes`` bytes each, after a header and before a footer
    (several files read at once, interleaved, with ``num_parallel_reads``)."""
    with get_default_graph().atomic():
        names = _filenames(filenames)
        if num_parallel_reads is not None:
            return _read_in_parallel(names, lambda one: FixedLengthRecordDataset(
                one, record_bytes, header_bytes, footer_bytes, buffer_size, compression_type,
                name=name), num_parallel_reads)
        ints = [convert_to_tensor(v, dtype=dtypes.int64, name=n) for n, v in (
            ("header_bytes", header_bytes or 0), ("record_bytes", record_bytes),
            ("footer_bytes", footer_bytes or 0))]
        inputs = [names] + ints + [_buffer(buffer_size), _compression(compression_type)]
        return _records(dataset_ops.make_dataset("FixedLengthRecordDataset", inputs,
                                                 metadata=name))

