"""Parsing ops: ``tf.train.Example`` protos into tensors, raw bytes, CSV and strings.

``parse_example``/``parse_single_example`` make one ``ParseExampleV2`` op whose outputs
are, per ``VarLenFeature``, a ``SparseTensor``'s indices, values and dense shape, then
one dense tensor per ``FixedLenFeature``/``FixedLenSequenceFeature``. Protos are
decoded by protobuf (``framework/example_proto.py``). ``decode_png``/``decode_jpeg``
decode with Pillow, an optional extra (``pip install gradflow[image]``).
"""
from __future__ import annotations

import collections
import csv
import io
from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.example_proto import ExampleFeatureBytes, Feature, SequenceExample
from gradflow.framework.graph import get_default_graph, name_scope
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.sparse_tensor import SparseTensor
from gradflow.framework.tensor_shape import TensorShape, as_shape
from gradflow.ops.array import reshape
from gradflow.ops.common import apply_op, graph_for

try:
    from PIL import Image, ImageSequence
except ImportError:  # the optional [image] extra
    Image = ImageSequence = None

__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "VarLenFeature", "parse_example",
           "parse_single_example", "parse_single_sequence_example", "parse_sequence_example",
           "decode_raw", "decode_csv", "string_split", "strings_split", "decode_png", "decode_jpeg",
           "decode_image"]

_KINDS = {dtypes.int64: "int64_list", dtypes.float32: "float_list", dtypes.string: "bytes_list"}
# the field tag (number 1-3, length-delimited) of each list in a Feature's bytes
_TAGS = {dtypes.string: 0x0A, dtypes.float32: 0x12, dtypes.int64: 0x1A}


def _as_bytes(value) -> bytes:
    """A string element as bytes (string tensors hold bytes, or str from constants)."""
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


class FixedLenFeature(collections.namedtuple(
        "FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature of fixed shape: ``shape`` values of ``dtype`` in every example."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """A feature of any number of ``shape``-shaped items, stacked along a new first axis."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature of any length, parsed into a ``SparseTensor``."""


def _checked_dtype(key: str, dtype) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _KINDS:
        raise ValueError(f"Unsupported dtype {dtype.name} for feature {key!r}: a feature is "
                         "int64, float32 or string")
    return dtype


def _values(feature, dtype: dtypes.DType, key: str, name: str) -> np.ndarray:
    """The values of one ``Feature`` proto as an array of ``dtype`` (empty when unset)."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return np.zeros(0, dtype=dtype.as_numpy_dtype)
    if kind != _KINDS[dtype]:
        raise errors.InvalidArgumentError(
            None, None, f"Key: {key}.  Data types don't match. Data type: {kind.split('_')[0]} "
            f"but expected type: {dtype.name}" + name)
    values = getattr(feature, kind).value
    if dtype is dtypes.string:
        array = np.empty(len(values), dtype=object)
        array[:] = list(values)
        return array
    return np.asarray(values, dtype=dtype.as_numpy_dtype)


def _dense(values: np.ndarray, key: str, shape: TensorShape, default, sequence: bool,
           name: str) -> np.ndarray:
    item = shape.as_tuple()
    size = int(np.prod(item)) if item else 1
    if values.size == 0 and not sequence:
        if default is None:
            raise errors.InvalidArgumentError(
                None, None, f"Feature: {key} (data type: {_dtype_name(values)}) is required "
                f"but could not be found.")
        return np.array(default, copy=True)
    if sequence:
        if values.size % size:
            raise errors.InvalidArgumentError(
                None, None, f"Key: {key}, Index: 0.  Number of values != expected.  values "
                f"size: {values.size} but output shape: {list(item)}")
        return values.reshape((values.size // size,) + item)
    if values.size != size:
        raise errors.InvalidArgumentError(
            None, None, f"Key: {key}, Index: 0.  Number of float values != expected.  Values "
            f"size: {values.size} but output shape: {list(item)}" + name)
    return values.reshape(item)


def _dtype_name(values: np.ndarray) -> str:
    """The feature type as TF's messages name it: int64, float or string."""
    return {"float32": "float"}.get(dtypes.as_dtype(values.dtype).name,
                                    dtypes.as_dtype(values.dtype).name)


def _stack_padded(parts: list, default, dtype: dtypes.DType, item: tuple) -> np.ndarray:
    """Sequence features of one batch, padded with ``default`` to the longest."""
    length = max((p.shape[0] for p in parts), default=0)
    fill = default if default is not None else (b"" if dtype is dtypes.string else 0)
    out = np.empty((len(parts), length) + item, dtype=dtype.as_numpy_dtype)
    out[...] = fill
    for i, part in enumerate(parts):
        out[i, :part.shape[0]] = part
    return out


def _sparse(rows: list, dtype: dtypes.DType, batched: bool) -> tuple:
    values = np.concatenate(rows) if rows else np.zeros(0, dtype=dtype.as_numpy_dtype)
    if dtype is dtypes.string:
        values = values.astype(object)
    width = max((len(r) for r in rows), default=0)
    if batched:
        indices = np.array([(b, j) for b, row in enumerate(rows) for j in range(len(row))],
                           dtype=np.int64).reshape(-1, 2)
        shape = np.array([len(rows), width], dtype=np.int64)
    else:
        indices = np.arange(width, dtype=np.int64).reshape(-1, 1)
        shape = np.array([width], dtype=np.int64)
    return indices, values.astype(dtype.as_numpy_dtype), shape


def _fixed_values(feature, dtype: dtypes.DType, key: str, shape: TensorShape, default,
                  where: str):
    """A FixedLenFeature's values: the proto's repeated field itself when it has the right
    count (made an array once per batch), else the default."""
    kind = None if feature is None else feature.WhichOneof("kind")
    values = () if kind is None else getattr(feature, kind).value
    if not values:
        return _dense(np.zeros(0, dtype.as_numpy_dtype), key, shape, default, False, where)
    if kind != _KINDS[dtype]:
        _values(feature, dtype, key, where)  # raises TF's "Data types don't match"
    size = shape.num_elements()
    if len(values) != size:
        raise errors.InvalidArgumentError(
            None, None, f"Key: {key}, Index: 0.  Number of {kind.split('_')[0]} values != "
            f"expected.  Values size: {len(values)} but output shape: {shape.as_list()}"
            + where)
    return values


def _fixed_array(rows: list, dtype: dtypes.DType, shape: TensorShape, batched: bool):
    """The rows of a FixedLenFeature (repeated fields or arrays) as one array."""
    item = shape.as_tuple()
    if dtype is dtypes.string:
        out = np.empty((len(rows),) + item, dtype=object)
        for i, row in enumerate(rows):
            out[i] = np.asarray(list(row) if not isinstance(row, np.ndarray) else row,
                                dtype=object).reshape(item)
    else:
        # NumPy reads protobuf's repeated containers as sequences (no list copies)
        out = np.array([r if not isinstance(r, np.ndarray) else r.reshape(-1) for r in rows],
                       dtype=dtype.as_numpy_dtype).reshape((len(rows),) + item)
    return out if batched else out[0]


def _feature_maps(records: list) -> list:
    """Each record's map of feature key to the bytes of its ``Feature`` message."""
    parse = ExampleFeatureBytes.FromString
    maps = []
    for record in records:
        try:
            maps.append(parse(_as_bytes(record)).features.feature)
        except Exception:  # protobuf's DecodeError and its relatives
            raise errors.InvalidArgumentError(
                None, None, f"Could not parse example input, value: '{record!r}'") from None
    return maps


def _feature_message(raw: Optional[bytes], key: str, where: str):
    """The ``Feature`` message of one feature's bytes (None for an absent feature)."""
    if raw is None:
        return None
    try:
        return Feature.FromString(raw)
    except Exception:  # protobuf's DecodeError and its relatives
        raise errors.InvalidArgumentError(
            None, None, f"Could not parse example input: feature {key!r} is malformed"
            + where) from None


def _varint(data: bytes, pos: int) -> tuple:
    """(value, position after it) of the varint at ``pos``; value None when truncated."""
    if pos < len(data) and data[pos] < 0x80:  # the common one-byte case
        return data[pos], pos + 1
    value, shift = 0, 0
    while pos < len(data) and shift < 70:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
    return None, pos


def _payload_start(raw: bytes, tag: int) -> Optional[int]:
    """Where the values of a ``Feature`` holding one packed list start, when ``raw`` is in
    the form writers give it (list field ``tag``, one packed run of values, nothing
    else); None for anything else (missing, unpacked, repeated or unknown fields)."""
    if len(raw) < 4 or raw[0] != tag:
        return None
    length, pos = _varint(raw, 1)
    if length is None or pos + length != len(raw) or raw[pos] != 0x0A:
        return None
    inner, start = _varint(raw, pos + 1)
    return start if inner is not None and start + inner == len(raw) else None


def _packed_payloads(raws: list, tag: int) -> Optional[tuple]:
    """The packed values of one feature over a batch, as one uint8 array, and each
    record's byte count; None when any record is not in the packed form."""
    start = _payload_start(raws[0], tag)
    if start is None:
        return None
    width = len(raws[0])
    if all(len(raw) == width for raw in raws):
        # the common case: every record's feature has the first's size, so its header is
        # checked for all records at once
        table = np.frombuffer(b"".join(raws), np.uint8).reshape(len(raws), width)
        if (table[:, :start] == table[0, :start]).all():
            return (np.ascontiguousarray(table[:, start:]).reshape(-1),
                    np.full(len(raws), width - start, np.int64))
    starts = [_payload_start(raw, tag) for raw in raws]
    if None in starts:
        return None
    data = b"".join([raw[at:] for raw, at in zip(raws, starts, strict=True)])
    lengths = np.array([len(raw) - at for raw, at in zip(raws, starts, strict=True)], np.int64)
    return np.frombuffer(data, np.uint8).copy(), lengths


def _varints(data: np.ndarray, lengths: np.ndarray) -> Optional[tuple]:
    """The varints packed in ``data`` (int64) and how many each record holds; None when a
    record's bytes end inside a varint or a varint is longer than 10 bytes."""
    if not len(data):
        return np.zeros(0, np.int64), np.zeros(len(lengths), np.int64)
    stops = np.flatnonzero(data < 0x80)
    ends = np.cumsum(lengths)
    per_record = np.diff(np.searchsorted(stops, ends - 1, side="right"), prepend=0)
    firsts = np.concatenate(([0], stops[:-1] + 1)).astype(np.int64)
    sizes = stops - firsts + 1
    if len(sizes) and sizes.max() > 10:
        return None
    # a varint may not run over a record's end: each record's last byte is a stop
    if ((lengths > 0) & (data[np.maximum(ends - 1, 0)] >= 0x80)).any():
        return None
    shifts = 7 * (np.arange(len(data)) - np.repeat(firsts, sizes))
    parts = (data & 0x7F).astype(np.uint64) << shifts.astype(np.uint64)
    values = np.add.reduceat(parts, firsts) if len(firsts) else np.zeros(0, np.uint64)
    return values.view(np.int64), per_record


def _record_values(raw: Optional[bytes], dtype: dtypes.DType) -> Optional[np.ndarray]:
    """One record's numeric feature decoded in Python (cheaper than NumPy for one)."""
    start = None if raw is None else _payload_start(raw, _TAGS[dtype])
    if start is None:
        return None
    if dtype is dtypes.float32:
        if (len(raw) - start) % 4:
            return None
        return np.frombuffer(raw, "<f4", offset=start).astype(np.float32)
    values, pos = [], start
    while pos < len(raw):
        value, pos = _varint(raw, pos)
        if value is None or value >> 64:
            return None
        values.append(value - (1 << 64) if value >> 63 else value)
    return np.array(values, np.int64)


def _bulk_values(raws: list, dtype: dtypes.DType) -> Optional[tuple]:
    """A numeric feature's values over a batch, concatenated, and each record's count;
    None when some record needs the per-message path (absent, other kind, not packed)."""
    if not raws or None in raws or dtype is dtypes.string:
        return None
    if len(raws) == 1:
        values = _record_values(raws[0], dtype)
        return None if values is None else (values, np.array([len(values)]))
    payloads = _packed_payloads(raws, _TAGS[dtype])
    return None if payloads is None else _decode_packed(*payloads, dtype)


def _decode_packed(data: np.ndarray, lengths: np.ndarray, dtype: dtypes.DType
                   ) -> Optional[tuple]:
    """Packed payloads (uint8, ``lengths`` bytes a record) as values and counts."""
    if dtype is dtypes.float32:
        if (lengths % 4).any():
            return None
        return data.view("<f4").astype(np.float32, copy=False), lengths // 4
    return _varints(data, lengths)


def _feature_spans(record: bytes) -> Optional[dict]:
    """``key: (list tag, payload start, payload end)`` for each feature of an ``Example``
    in the layout writers give it (map entries of key then value, each ``Feature`` one
    packed list, nothing else); None for any other layout."""
    if not record:
        return {}
    length, pos = _varint(record, 1) if record[0] == 0x0A else (None, 0)
    if length is None or pos + length != len(record):
        return None
    spans = {}
    while pos < len(record):
        entry, pos = _varint(record, pos + 1) if record[pos] == 0x0A else (None, pos)
        if entry is None or pos + entry > len(record) or record[pos] != 0x0A:
            return None
        end = pos + entry
        key_length, key_at = _varint(record, pos + 1)
        key_end = end if key_length is None else key_at + key_length
        if key_end >= end or record[key_end] != 0x12:
            return None
        value_length, value_at = _varint(record, key_end + 1)
        start = None if value_length is None or value_at + value_length != end else \
            _payload_start(record[value_at:end], record[value_at] if value_length else 0)
        try:
            key = record[key_at:key_end].decode("utf-8")
        except UnicodeDecodeError:
            return None
        if start is None or key in spans:
            return None
        spans[key] = (record[value_at], value_at + start, end)
        pos = end
    return spans


class _Batch:
    """The records of one parse. When they share one layout (same length, same bytes
    outside the values of the features asked for) each feature's values are cut from
    all records at once; else each record's feature bytes are looked up by key."""

    def __init__(self, records: list, keys: list):
        self.records = records
        self.table, self.spans = None, None
        self._maps: Optional[list] = None
        if len(records) > 1 and len(set(map(len, records))) == 1:
            spans = _feature_spans(records[0])
            if spans is not None and all(type(r) is bytes for r in records):
                table = np.frombuffer(b"".join(records), np.uint8).reshape(len(records), -1)
                varying = np.zeros(table.shape[1], bool)
                for key in keys:
                    if key in spans:
                        varying[spans[key][1]:spans[key][2]] = True
                if not ((table != table[0]) & ~varying).any():
                    self.table, self.spans = table, spans

    def raws(self, key: str) -> list:
        """Each record's bytes of feature ``key`` (None where absent)."""
        if self._maps is None:
            self._maps = _feature_maps(self.records)
        return [m.get(key) for m in self._maps]

    def values(self, key: str, dtype: dtypes.DType) -> Optional[tuple]:
        """A numeric feature's values and per-record counts (see ``_bulk_values``)."""
        span = None if self.spans is None else self.spans.get(key)
        if span is None or span[0] != _TAGS[dtype] or dtype is dtypes.string:
            return _bulk_values(self.raws(key), dtype)
        data = np.ascontiguousarray(self.table[:, span[1]:span[2]]).reshape(-1)
        return _decode_packed(data, np.full(len(self.records), span[2] - span[1], np.int64),
                              dtype)


def _bulk_fixed(batch: _Batch, key: str, dtype: dtypes.DType, shape: TensorShape
                ) -> Optional[np.ndarray]:
    """A FixedLenFeature over a batch decoded at once; None to take the per-record path
    (which also raises the errors)."""
    count = shape.num_elements()
    if len(batch.records) == 1:  # one record: decoded in Python, no NumPy bookkeeping
        values = _record_values(batch.raws(key)[0], dtype) \
            if count and dtype is not dtypes.string else None
        return None if values is None or len(values) != count else \
            values.reshape((1,) + shape.as_tuple())
    bulk = batch.values(key, dtype) if count else None
    size = len(batch.records)
    if bulk is None or len(bulk[0]) != count * size or (bulk[1] != count).any():
        return None
    return bulk[0].reshape((size,) + shape.as_tuple())


def _bulk_sparse(batch: _Batch, key: str, dtype: dtypes.DType, batched: bool
                 ) -> Optional[tuple]:
    """A VarLenFeature over a batch as (indices, values, dense shape), decoded at once."""
    bulk = batch.values(key, dtype)
    if bulk is None:
        return None
    values, counts = bulk
    rows = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    columns = np.arange(len(values), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts,
                                                                  counts)
    width = int(counts.max()) if len(counts) else 0
    if batched:
        return (np.stack([rows, columns], axis=1), values,
                np.array([len(counts), width], np.int64))
    return columns.reshape(-1, 1), values, np.array([width], np.int64)


def _parse_kernel(serialized, *, sparse_keys, sparse_types, dense_keys, dense_types,
                  dense_shapes, dense_defaults, dense_sequence):
    batched = np.ndim(serialized) == 1
    records = list(serialized) if batched else [np.asarray(serialized, dtype=object).item()]
    batch = _Batch(records, list(sparse_keys) + list(dense_keys))
    wheres = [f" (example {i})" for i in range(len(records))] if batched else [""]
    outputs = []
    for key, dtype in zip(sparse_keys, sparse_types, strict=True):
        bulk = _bulk_sparse(batch, key, dtype, batched)
        if bulk is None:
            raws, rows = batch.raws(key), []
            for raw, where in zip(raws, wheres, strict=True):
                feature = _feature_message(raw, key, where)
                rows.append(np.zeros(0, dtype.as_numpy_dtype) if feature is None
                            else _values(feature, dtype, key, where))
            bulk = _sparse(rows, dtype, batched)
        outputs.extend(bulk)
    for key, dtype, shape, default, sequence in zip(dense_keys, dense_types, dense_shapes,
                                                    dense_defaults, dense_sequence, strict=True):
        dense = None if sequence else _bulk_fixed(batch, key, dtype, shape)
        if dense is not None:
            outputs.append(dense if batched else dense[0])
            continue
        raws, parts = batch.raws(key), []
        for raw, where in zip(raws, wheres, strict=True):
            feature = _feature_message(raw, key, where)
            if not sequence:
                parts.append(_fixed_values(feature, dtype, key, shape, default, where))
                continue
            values = np.zeros(0, dtype.as_numpy_dtype) if feature is None \
                else _values(feature, dtype, key, where)
            parts.append(_dense(values, key, shape, default, True, where))
        if not sequence:
            outputs.append(_fixed_array(parts, dtype, shape, batched))
        elif batched:
            outputs.append(_stack_padded(parts, default, dtype, shape.as_tuple()))
        else:
            outputs.append(parts[0].astype(dtype.as_numpy_dtype))
    return tuple(outputs) if len(outputs) != 1 else outputs[0]


def _infer_parse(inputs, attrs):
    batch = inputs[0].shape.as_list()[:1] if inputs[0].shape.ndims == 1 else []
    sparse_rank = 2 if batch or inputs[0].shape.ndims is None else 1
    out = []
    for dtype in attrs["sparse_types"]:
        out += [(dtypes.int64, TensorShape([None, sparse_rank])), (dtype, TensorShape([None])),
                (dtypes.int64, TensorShape([sparse_rank]))]
    for dtype, shape, sequence in zip(attrs["dense_types"], attrs["dense_shapes"],
                                      attrs["dense_sequence"], strict=True):
        out.append((dtype, TensorShape(batch + ([None] if sequence else []) + shape.as_list())))
    return out


define_op("ParseExampleV2", infer=_infer_parse, kernel=_parse_kernel)
NotDifferentiable("ParseExampleV2")


def _feature_attrs(features: dict, batched: bool) -> dict:
    if not isinstance(features, dict) or not features:
        raise ValueError("Missing: features was empty; features must be a non-empty dict of "
                         "feature keys to FixedLenFeature, FixedLenSequenceFeature or "
                         "VarLenFeature")
    attrs = {name: [] for name in ("sparse_keys", "sparse_types", "dense_keys", "dense_types",
                                   "dense_shapes", "dense_defaults", "dense_sequence")}
    for key in sorted(features):
        spec = features[key]
        if isinstance(spec, VarLenFeature):
            attrs["sparse_keys"].append(key)
            attrs["sparse_types"].append(_checked_dtype(key, spec.dtype))
            continue
        if not isinstance(spec, (FixedLenFeature, FixedLenSequenceFeature)):
            raise ValueError(f"Unsupported feature type for {key!r}: {type(spec).__name__}; "
                             "expected FixedLenFeature, FixedLenSequenceFeature or "
                             "VarLenFeature")
        dtype = _checked_dtype(key, spec.dtype)
        shape = as_shape(spec.shape)
        if not shape.is_fully_defined():
            raise ValueError(f"All dimensions of shape for feature {key} need to be known but "
                             f"received {shape}.")
        sequence = isinstance(spec, FixedLenSequenceFeature)
        if sequence and not spec.allow_missing:
            raise ValueError(f"Unsupported: FixedLenSequenceFeature requires allow_missing to "
                             f"be True (feature {key!r}).")
        default = _default_array(spec.default_value, dtype)
        if default is not None:
            if not sequence:
                try:
                    default = np.broadcast_to(default, shape.as_tuple()).copy()
                except ValueError:
                    raise ValueError(f"Shapes {default.shape} and {shape} are incompatible: "
                                     f"default_value of feature {key!r}") from None
        attrs["dense_keys"].append(key)
        attrs["dense_types"].append(dtype)
        attrs["dense_shapes"].append(shape)
        attrs["dense_defaults"].append(default)
        attrs["dense_sequence"].append(sequence)
    if not batched and any(attrs["dense_sequence"]):
        raise ValueError("FixedLenSequenceFeature is for parse_example (a batch) and "
                         "parse_single_sequence_example; parse_single_example takes "
                         "FixedLenFeature and VarLenFeature")
    return attrs


def _default_array(value, dtype: dtypes.DType) -> Optional[np.ndarray]:
    """A feature's default value as an array of its dtype (strings as bytes)."""
    if value is None:
        return None
    if dtype is dtypes.string:
        array = np.asarray(value, dtype=object)
        return np.vectorize(_as_bytes, otypes=[object])(array) if array.size else array
    return np.asarray(value, dtype=dtype.as_numpy_dtype)


def _parse(serialized, features: dict, name: Optional[str], batched: bool,
           example_names) -> dict:
    if example_names is not None:
        raise ValueError("example_names is not supported by gradflow (error messages name "
                         "the example's index instead)")
    attrs = _feature_attrs(features, batched)
    with name_scope(name, "ParseExample" if batched else "ParseSingleExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        rank = serialized.shape.ndims
        if rank is not None and rank != (1 if batched else 0):
            raise ValueError(f"Input serialized must be a {'vector' if batched else 'scalar'}, "
                             f"got shape {serialized.shape}")
        graph = graph_for([serialized])
        with graph.atomic():
            outputs = apply_op("ParseExampleV2", [serialized], name="ParseExampleV2", **attrs)
            outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
            result = {}
            for i, key in enumerate(attrs["sparse_keys"]):
                result[key] = SparseTensor(*outputs[3 * i:3 * i + 3])
            offset = 3 * len(attrs["sparse_keys"])
            for i, key in enumerate(attrs["dense_keys"]):
                result[key] = outputs[offset + i]
    return result


def parse_example(serialized, features: dict, name: Optional[str] = None,
                  example_names=None) -> dict:
    """Parses a batch (vector) of serialized ``Example``s into a dict of tensors."""
    return _parse(serialized, features, name, True, example_names)


def parse_single_example(serialized, features: dict, name: Optional[str] = None,
                         example_names=None) -> dict:
    """Parses one serialized ``Example`` (a scalar string) into a dict of tensors."""
    return _parse(serialized, features, name, False, example_names)


def _sequence_kernel(serialized, *, context, sequence):
    proto = SequenceExample()
    try:
        proto.ParseFromString(_as_bytes(np.asarray(serialized, dtype=object).item()))
    except Exception:  # protobuf's DecodeError and its relatives
        raise errors.InvalidArgumentError(
            None, None, "Could not parse example input as a SequenceExample") from None
    outputs = []
    for key, spec in context:
        feature = proto.context.feature.get(key)
        dtype = dtypes.as_dtype(spec[1])
        values = np.zeros(0, dtype.as_numpy_dtype) if feature is None \
            else _values(feature, dtype, key, "")
        if spec[0] == "sparse":
            outputs.extend(_sparse([values], dtype, False))
        else:
            outputs.append(_dense(values, key, spec[2], spec[3], False, "").astype(
                dtype.as_numpy_dtype))
    for key, spec in sequence:
        dtype = dtypes.as_dtype(spec[1])
        feature_list = proto.feature_lists.feature_list.get(key)
        steps = [] if feature_list is None else [_values(f, dtype, key, "")
                                                 for f in feature_list.feature]
        if feature_list is None and spec[0] == "dense" and not spec[4]:
            raise errors.InvalidArgumentError(
                None, None, f"Name: <unknown>, Feature list '{key}' is required but could not "
                "be found.  Did you mean to include it in feature_list_dense_missing_assumed"
                "_empty or feature_list_dense_defaults?")
        if spec[0] == "sparse":
            indices = np.array([(t, j) for t, row in enumerate(steps) for j in range(len(row))],
                               dtype=np.int64).reshape(-1, 2)
            values = np.concatenate(steps) if steps else np.zeros(0, dtype.as_numpy_dtype)
            width = max((len(r) for r in steps), default=0)
            outputs += [indices, values.astype(dtype.as_numpy_dtype),
                        np.array([len(steps), width], dtype=np.int64)]
        else:
            item = spec[2].as_tuple()
            parts = [_dense(v, key, spec[2], None, False, "") for v in steps]
            outputs.append(np.stack(parts).astype(dtype.as_numpy_dtype) if parts
                           else np.zeros((0,) + item, dtype.as_numpy_dtype))
    return tuple(outputs) if len(outputs) != 1 else outputs[0]


def _infer_sequence(inputs, attrs):
    out = []
    for _, spec in attrs["context"]:
        dtype = dtypes.as_dtype(spec[1])
        if spec[0] == "sparse":
            out += [(dtypes.int64, TensorShape([None, 1])), (dtype, TensorShape([None])),
                    (dtypes.int64, TensorShape([1]))]
        else:
            out.append((dtype, spec[2]))
    for _, spec in attrs["sequence"]:
        dtype = dtypes.as_dtype(spec[1])
        if spec[0] == "sparse":
            out += [(dtypes.int64, TensorShape([None, 2])), (dtype, TensorShape([None])),
                    (dtypes.int64, TensorShape([2]))]
        else:
            out.append((dtype, TensorShape([None] + spec[2].as_list())))
    return out


define_op("ParseSingleSequenceExample", infer=_infer_sequence, kernel=_sequence_kernel)
NotDifferentiable("ParseSingleSequenceExample")


def _sequence_specs(features: Optional[dict], what: str, sequence: bool) -> list:
    specs = []
    for key in sorted(features or {}):
        spec = features[key]
        if isinstance(spec, VarLenFeature):
            specs.append((key, ("sparse", _checked_dtype(key, spec.dtype))))
            continue
        kind = FixedLenSequenceFeature if sequence else FixedLenFeature
        if not isinstance(spec, kind):
            raise ValueError(f"Unsupported feature type for {what} {key!r}: "
                             f"{type(spec).__name__}; expected {kind.__name__} or VarLenFeature")
        if sequence and spec.default_value is not None:
            raise ValueError(f"default_value of FixedLenSequenceFeature {key!r} is not "
                             "supported by gradflow in parse_single_sequence_example")
        dtype = _checked_dtype(key, spec.dtype)
        shape = as_shape(spec.shape)
        default = None if sequence or spec.default_value is None else \
            np.broadcast_to(_default_array(spec.default_value, dtype), shape.as_tuple()).copy()
        specs.append((key, ("dense", dtype, shape, default,
                            bool(sequence and spec.allow_missing))))
    return specs


def _sequence_outputs(outputs, context: list, sequence: list) -> tuple[dict, dict, list]:
    """A sequence parse op's outputs as the context and sequence feature dicts (a sparse
    feature takes three outputs, a SparseTensor's parts), and the outputs after them."""
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    results: tuple[dict, dict] = ({}, {})
    position = 0
    for target, specs in zip(results, (context, sequence), strict=True):
        for key, spec in specs:
            if spec[0] == "sparse":
                target[key] = SparseTensor(*outputs[position:position + 3])
                position += 3
            else:
                target[key] = outputs[position]
                position += 1
    return results[0], results[1], outputs[position:]


def parse_single_sequence_example(serialized, context_features: Optional[dict] = None,
                                  sequence_features: Optional[dict] = None,
                                  example_name=None, name: Optional[str] = None
                                  ) -> tuple[dict, dict]:
    """Parses one serialized ``SequenceExample``: (context dict, sequence dict)."""
    if example_name is not None:
        raise ValueError("example_name is not supported by gradflow")
    if not context_features and not sequence_features:
        raise ValueError("Missing features.")
    context = _sequence_specs(context_features, "context feature", False)
    sequence = _sequence_specs(sequence_features, "sequence feature", True)
    with name_scope(name, "ParseSingleSequenceExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        graph = graph_for([serialized])
        with graph.atomic():
            outputs = apply_op("ParseSingleSequenceExample", [serialized],
                               name="ParseSingleSequenceExample", context=context,
                               sequence=sequence)
            context_out, sequence_out, _ = _sequence_outputs(outputs, context, sequence)
    return context_out, sequence_out


def _sequence_batch_kernel(serialized, *, context, sequence):
    """``ParseSequenceExampleV2``: each record parsed as one ``SequenceExample``, then
    batched: dense context stacked, sparse parts given a batch index, dense feature lists
    padded to the longest (with zeros or b'') and their lengths."""
    records = np.asarray(serialized, dtype=object).reshape(-1)
    parsed = []
    for record in records:
        one = _sequence_kernel(np.asarray(record, dtype=object), context=context,
                               sequence=sequence)
        parsed.append(list(one) if isinstance(one, tuple) else [one])
    outputs, lengths, position = [], [], 0
    groups = [(False, spec) for _, spec in context] + [(True, spec) for _, spec in sequence]
    for is_list, spec in groups:
        dtype = np.dtype(dtypes.as_dtype(spec[1]).as_numpy_dtype)
        if spec[0] == "sparse":
            parts = [row[position:position + 3] for row in parsed]
            outputs += _batch_sparse(parts, dtype, len(records))
            position += 3
            continue
        column = [row[position] for row in parsed]
        position += 1
        if not is_list:
            outputs.append(np.stack(column).astype(dtype) if column else
                           np.zeros((0,) + spec[2].as_tuple(), dtype))
            continue
        steps = max((len(c) for c in column), default=0)
        padded = np.full((len(column), steps) + spec[2].as_tuple(),
                         b"" if dtype.kind == "O" else 0, dtype=dtype)
        for i, c in enumerate(column):
            padded[i, :len(c)] = c
        outputs.append(padded)
        lengths.append(np.array([len(c) for c in column], np.int64))
    return tuple(outputs + lengths)


def _batch_sparse(parts: list, dtype: np.dtype, batch: int) -> list:
    indices = [np.concatenate([np.full((len(i), 1), row, np.int64), i], axis=1)
               for row, (i, _, _) in enumerate(parts)]
    rank = parts[0][2].size if parts else 1
    shape = np.max(np.stack([p[2] for p in parts]), axis=0) if parts else np.zeros(rank)
    return [np.concatenate(indices).astype(np.int64) if indices else
            np.zeros((0, rank + 1), np.int64),
            np.concatenate([p[1] for p in parts]).astype(dtype) if parts else
            np.zeros(0, dtype),
            np.concatenate([[batch], shape]).astype(np.int64)]


def _infer_sequence_batch(inputs, attrs):
    batch = inputs[0].shape[0] if inputs[0].shape.ndims == 1 else None
    out, lengths = [], []
    for group, specs in (("context", attrs["context"]), ("sequence", attrs["sequence"])):
        for _, spec in specs:
            dtype = dtypes.as_dtype(spec[1])
            rank = 3 if group == "sequence" else 2
            if spec[0] == "sparse":
                out += [(dtypes.int64, TensorShape([None, rank])), (dtype, TensorShape([None])),
                        (dtypes.int64, TensorShape([rank]))]
            elif group == "context":
                out.append((dtype, TensorShape([batch] + spec[2].as_list())))
            else:
                out.append((dtype, TensorShape([batch, None] + spec[2].as_list())))
                lengths.append((dtypes.int64, TensorShape([batch])))
    return out + lengths


define_op("ParseSequenceExampleV2", infer=_infer_sequence_batch, kernel=_sequence_batch_kernel)
NotDifferentiable("ParseSequenceExampleV2")


def parse_sequence_example(serialized, context_features: Optional[dict] = None,
                           sequence_features: Optional[dict] = None, example_names=None,
                           name: Optional[str] = None) -> tuple[dict, dict, dict]:
    """Parses a vector of serialized ``SequenceExample``s: (context dict, feature-list dict,
    lengths dict of the dense feature lists), dense feature lists padded to the longest."""
    if example_names is not None:
        raise ValueError("example_names is not supported by gradflow")
    if not context_features and not sequence_features:
        raise ValueError("Missing features.")
    context = _sequence_specs(context_features, "context feature", False)
    sequence = _sequence_specs(sequence_features, "sequence feature", True)
    graph = graph_for([serialized])
    with graph.as_default(), graph.atomic(), \
            name_scope(name, "ParseSequenceExample", [serialized]), \
            name_scope(None, "ParseSequenceExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        if serialized.shape.ndims not in (None, 1):
            raise ValueError(f"serialized must be a vector, got shape {serialized.shape}")
        outputs = apply_op("ParseSequenceExampleV2", [serialized],
                           name="ParseSequenceExampleV2", context=context, sequence=sequence)
        context_out, sequence_out, rest = _sequence_outputs(outputs, context, sequence)
        lengths = dict(zip([key for key, spec in sequence if spec[0] == "dense"], rest,
                           strict=True))
    return context_out, sequence_out, lengths


def _decode_raw_kernel(data, *, out_type, little_endian):
    data = np.asarray(data, dtype=object)
    dtype = np.dtype(out_type.as_numpy_dtype).newbyteorder("<" if little_endian else ">")
    items = [_as_bytes(item) for item in data.reshape(-1)]
    if not items:
        return np.zeros(data.shape + (0,), out_type.as_numpy_dtype)
    lengths = {len(item) for item in items}
    if len(lengths) != 1:
        raise errors.InvalidArgumentError(
            None, None, f"DecodeRaw requires input strings to all be the same size, but "
                        f"element 0 has size {len(items[0])} != {sorted(lengths)[-1]}")
    width = lengths.pop()
    if width % dtype.itemsize:
        raise errors.InvalidArgumentError(
            None, None, f"Input to DecodeRaw has length {width} that is not a multiple of "
                        f"{dtype.itemsize}, the size of {out_type.name}")
    flat = np.frombuffer(b"".join(items), dtype=dtype)
    return flat.astype(out_type.as_numpy_dtype).reshape(data.shape + (width // dtype.itemsize,))


define_op("DecodeRaw", kernel=_decode_raw_kernel, infer=lambda inputs, attrs: [
    (attrs["out_type"], TensorShape(inputs[0].shape.as_list() + [None])
     if inputs[0].shape.ndims is not None else TensorShape(None))])
NotDifferentiable("DecodeRaw")


def decode_raw(input_bytes=None, out_type=None, little_endian: bool = True,
               name: Optional[str] = None, bytes=None):  # noqa: A002 - TF1's alias
    """Reinterprets the bytes of each string as a vector of ``out_type`` numbers."""
    if input_bytes is None:
        input_bytes = bytes
    if input_bytes is None or out_type is None:
        raise ValueError("decode_raw needs input_bytes and out_type")
    out_type = dtypes.as_dtype(out_type)
    if out_type in (dtypes.string, dtypes.bool, dtypes.resource, dtypes.variant):
        raise TypeError(f"Value passed to parameter 'out_type' has DataType {out_type.name} "
                        "not in list of allowed values: numeric types")
    data = convert_to_tensor(input_bytes, dtype=dtypes.string, name="bytes")
    with graph_for([data]).atomic():
        return apply_op("DecodeRaw", [data], name=name or "DecodeRaw", out_type=out_type,
                        little_endian=bool(little_endian))


def _decode_csv_kernel(records, *defaults, field_delim, use_quote_delim, na_value, select_cols,
                       out_types):
    records = np.asarray(records, dtype=object)
    columns = [np.empty(records.shape, dtype=t.as_numpy_dtype) for t in out_types]
    for index, record in enumerate(records.reshape(-1)):
        text = _as_bytes(record).decode("utf-8")
        reader = csv.reader(io.StringIO(text), delimiter=field_delim,
                            quoting=csv.QUOTE_MINIMAL if use_quote_delim else csv.QUOTE_NONE)
        fields = next(reader, [""])
        if select_cols is not None:
            fields = [fields[c] if c < len(fields) else None for c in select_cols]
        if len(fields) != len(out_types):
            raise errors.InvalidArgumentError(
                None, None, f"Expect {len(out_types)} fields but have {len(fields)} in record "
                f"{index}")
        for column, field, default, dtype in zip(columns, fields, defaults, out_types,
                                                 strict=True):
            position = np.unravel_index(index, records.shape) if records.ndim else ()
            if field is None or field == "" or field == na_value:
                if default.size == 0:
                    raise errors.InvalidArgumentError(
                        None, None, f"Field {columns.index(column)} is required but missing in "
                        f"record {index}!")
                column[position] = default.reshape(-1)[0]
            elif dtype is dtypes.string:
                column[position] = field.encode("utf-8")
            else:
                try:
                    column[position] = (int(field) if dtype.is_integer else float(field))
                except ValueError:
                    raise errors.InvalidArgumentError(
                        None, None, f"Field {columns.index(column)} in record {index} is not a "
                        f"valid {dtype.name}: {field}") from None
    return tuple(columns) if len(columns) != 1 else columns[0]


define_op("DecodeCSV", kernel=_decode_csv_kernel, infer=lambda inputs, attrs: [
    (t, inputs[0].shape) for t in attrs["out_types"]])
NotDifferentiable("DecodeCSV")


def decode_csv(records, record_defaults, field_delim: str = ",", use_quote_delim: bool = True,
               name: Optional[str] = None, na_value: str = "", select_cols=None) -> list:
    """Splits CSV lines into columns typed (and defaulted) by ``record_defaults``."""
    if len(field_delim) != 1:
        raise ValueError(f"field_delim must be one character, got {field_delim!r}")
    with name_scope(name, "DecodeCSV", [records]):
        records = convert_to_tensor(records, dtype=dtypes.string, name="records")
        defaults = []
        for i, default in enumerate(record_defaults):
            tensor = convert_to_tensor(default, name=f"record_defaults_{i}")
            if tensor.dtype not in (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64,
                                    dtypes.string):
                raise TypeError(f"record_defaults[{i}] has dtype {tensor.dtype.name}; expected "
                                "int32, int64, float32, float64 or string")
            defaults.append(tensor)
        cols = None if select_cols is None else [int(c) for c in select_cols]
        if cols is not None and (sorted(set(cols)) != cols or len(cols) != len(defaults)):
            raise ValueError("select_cols must be strictly increasing and as long as "
                             "record_defaults")
        with graph_for([records]).atomic():
            out = apply_op("DecodeCSV", [records] + defaults, name="DecodeCSV",
                           field_delim=field_delim, use_quote_delim=bool(use_quote_delim),
                           na_value=na_value, select_cols=cols,
                           out_types=[d.dtype for d in defaults])
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _split_rows(source: np.ndarray, split) -> tuple:
    """A SparseTensor's parts from ``split(item) -> pieces`` of each string of ``source``
    (indices: the item's position in ``source``, then the piece's)."""
    rows = [split(_as_bytes(item)) for item in source.reshape(-1)]
    width = max((len(r) for r in rows), default=0)
    counts = np.array([len(r) for r in rows], np.int64)
    positions = np.stack(np.unravel_index(np.repeat(np.arange(len(rows)), counts),
                                          source.shape), axis=1) if source.ndim else \
        np.zeros((int(counts.sum()), 0), np.int64)
    columns = np.concatenate([np.arange(n) for n in counts]) if len(rows) else np.zeros(0)
    indices = np.concatenate([positions.reshape(-1, source.ndim),
                              columns.reshape(-1, 1)], axis=1).astype(np.int64)
    values = np.empty(len(indices), dtype=object)
    values[:] = [p for row in rows for p in row]
    return indices, values, np.array(list(source.shape) + [width], dtype=np.int64)


def _string_split_kernel(source, delimiter, *, skip_empty):
    separators = _as_bytes(np.asarray(delimiter, dtype=object).item())

    def split(item: bytes) -> list:
        if not item:  # an empty string has no pieces, even kept empty ones
            return []
        parts = _split_any(item, separators) if separators else \
            [item[i:i + 1] for i in range(len(item))]
        return [p for p in parts if p or not skip_empty]
    return _split_rows(np.asarray(source, dtype=object), split)


def _split_any(item: bytes, separators: bytes) -> list:
    """Splits at any of the separator bytes (TF1's ``string_split`` delimiter set)."""
    parts, start = [], 0
    for position, byte in enumerate(item):
        if byte in separators:
            parts.append(item[start:position])
            start = position + 1
    parts.append(item[start:])
    return parts


_WHITESPACE = b" \t\n\r\x0b\x0c"


def _split_whitespace(item: bytes, maxsplit: int) -> list:
    """Splits at runs of whitespace; with ``maxsplit`` splits made, the rest (even
    empty) is the last piece, as TF's ``StringSplitV2`` does."""
    parts, pos, end = [], 0, len(item)
    while pos < end and item[pos] in _WHITESPACE:
        pos += 1
    while pos < end:
        if len(parts) == maxsplit:
            break
        stop = pos
        while stop < end and item[stop] not in _WHITESPACE:
            stop += 1
        parts.append(item[pos:stop])
        pos = stop
        while pos < end and item[pos] in _WHITESPACE:
            pos += 1
    if len(parts) == maxsplit and (parts or pos < end):
        parts.append(item[pos:])
    return parts


def _string_split_v2_kernel(source, sep, *, maxsplit):
    separator = _as_bytes(np.asarray(sep, dtype=object).item())

    def split(item: bytes) -> list:
        if not separator:
            return _split_whitespace(item, maxsplit)
        return item.split(separator, maxsplit)
    return _split_rows(np.asarray(source, dtype=object), split)


def _infer_split(inputs, attrs):
    rank = inputs[0].shape.ndims
    return [(dtypes.int64, TensorShape([None, None if rank is None else rank + 1])),
            (dtypes.string, TensorShape([None])),
            (dtypes.int64, TensorShape([None if rank is None else rank + 1]))]


define_op("StringSplit", kernel=_string_split_kernel, infer=_infer_split)
NotDifferentiable("StringSplit")
define_op("StringSplitV2", kernel=_string_split_v2_kernel, infer=_infer_split)
NotDifferentiable("StringSplitV2")


def _sparse_result(result_type: str) -> None:
    if result_type == "RaggedTensor":
        raise ValueError("result_type='RaggedTensor' is not supported by gradflow: it has no "
                         "RaggedTensor; use result_type='SparseTensor'")
    if result_type != "SparseTensor":
        raise ValueError("result_type must be 'RaggedTensor' or 'SparseTensor'.")


def string_split(source, sep=None, skip_empty: bool = True, delimiter=None,
                 result_type: str = "SparseTensor", name: Optional[str] = None
                 ) -> SparseTensor:
    """Splits each string of a vector at any byte of ``sep`` (default ``" "``; ``""``:
    into bytes): a ``SparseTensor`` (TF1's ``string_split``; ``delimiter`` is the older
    name of ``sep``)."""
    if sep is not None and delimiter is not None:
        raise ValueError("Cannot specify both 'delimiter' and 'sep'.")
    _sparse_result(result_type)
    separators = " " if sep is None and delimiter is None else \
        (sep if sep is not None else delimiter)
    with get_default_graph().atomic(), name_scope(name, "StringSplit", [source]):
        source = convert_to_tensor(source, dtype=dtypes.string, name="source")
        if source.shape.ndims not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {source.shape.ndims} for "
                             f"'StringSplit' (input shape {source.shape})")
        separators = convert_to_tensor(separators, dtype=dtypes.string, name="delimiter")
        parts = apply_op("StringSplit", [source, separators], name="StringSplit",
                         skip_empty=bool(skip_empty))
        return SparseTensor(*parts)


def strings_split(input=None, sep=None, maxsplit: int = -1,
                  result_type: str = "SparseTensor", source=None,
                  name: Optional[str] = None) -> SparseTensor:
    """TF1's ``strings.split``: splits each string at ``sep`` (a whole string; None: at
    runs of whitespace), at most ``maxsplit`` times; a ``SparseTensor`` one rank above
    the input (a scalar counts as a vector of one)."""
    if input is not None and source is not None:
        raise ValueError("Cannot specify both 'source' and 'input'.")
    if input is None and source is None:
        raise ValueError("strings.split: input is required")
    _sparse_result(result_type)
    value = input if input is not None else source
    with get_default_graph().atomic(), name_scope(name, "StringSplit", [value]):
        value = convert_to_tensor(value, dtype=dtypes.string, name="input")
        if value.shape.ndims == 0:
            value = reshape(value, [1])
        separator = convert_to_tensor("" if sep is None else sep, dtype=dtypes.string,
                                      name="sep")
        parts = apply_op("StringSplitV2", [value, separator], name="StringSplitV2",
                         maxsplit=int(maxsplit))
        return SparseTensor(*parts)


def _decode_image_kernel(contents, *, channels, dtype, kind, animations=False):
    if Image is None:
        raise errors.UnimplementedError(
            None, None, f"decode_{kind} needs Pillow: install the image extra "
                        "(pip install 'gradflow[image]')")
    try:
        image = Image.open(io.BytesIO(_as_bytes(np.asarray(contents, dtype=object).item())))
        image.load()
    except Exception as err:  # Pillow's UnidentifiedImageError, OSError on truncation
        raise errors.InvalidArgumentError(None, None, f"Invalid {kind.upper()} data: {err}") \
            from None
    mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}.get(channels)
    if mode is None:
        mode = image.mode if image.mode in ("L", "LA", "RGB", "RGBA") else "RGB"
    wide = dtype is dtypes.uint16 and image.mode in ("I;16", "I")
    if animations and image.format == "GIF":  # every frame: [frames, height, width, c]
        return np.stack([_pixels(frame, mode, False, dtype)
                         for frame in ImageSequence.Iterator(image)])
    return _pixels(image, mode, wide, dtype)


def _pixels(image, mode: str, wide: bool, dtype: dtypes.DType) -> np.ndarray:
    array = np.asarray(image if wide else image.convert(mode))
    if array.ndim == 2:
        array = array[:, :, None]
    return array.astype(dtype.as_numpy_dtype)


def _infer_image(inputs, attrs):
    if attrs.get("animations"):  # a GIF's frames make a 4-D result, any other image 3-D
        return [(attrs["dtype"], TensorShape(None))]
    return [(attrs["dtype"], TensorShape([None, None, attrs["channels"] or None]))]


define_op("DecodeImage", kernel=_decode_image_kernel, infer=_infer_image)
NotDifferentiable("DecodeImage")


def _decode(kind: str, contents, channels: int, dtype, name: Optional[str],
            animations: bool = False, **unsupported):
    for arg, (value, default) in unsupported.items():
        if value != default:
            raise ValueError(f"decode_{kind}: {arg} is not supported by gradflow")
    if channels not in (0, 1, 2, 3, 4):
        raise ValueError(f"channels must be 0, 1, 2, 3 or 4, got {channels}")
    dtype = dtypes.as_dtype(dtype)
    if dtype not in (dtypes.uint8, dtypes.uint16):
        raise TypeError(f"dtype must be uint8 or uint16, got {dtype.name}")
    contents = convert_to_tensor(contents, dtype=dtypes.string, name="contents")
    with graph_for([contents]).atomic():
        return apply_op("DecodeImage", [contents], name=name or f"Decode{kind.title()}",
                        channels=int(channels), dtype=dtype, kind=kind,
                        animations=bool(animations))


def decode_png(contents, channels: int = 0, dtype=dtypes.uint8, name: Optional[str] = None):
    """Decodes a PNG image into a ``[height, width, channels]`` tensor (Pillow)."""
    return _decode("png", contents, channels, dtype, name)


def decode_jpeg(contents, channels: int = 0, ratio: int = 1, fancy_upscaling: bool = True,
                try_recover_truncated: bool = False, acceptable_fraction: float = 1,
                dct_method: str = "", name: Optional[str] = None):
    """Decodes a JPEG image into a ``[height, width, channels]`` uint8 tensor (Pillow).
    ``dct_method`` is a hint, as in TF: Pillow's decoder uses the accurate integer DCT
    (TF's "INTEGER_ACCURATE"; TF's default is "INTEGER_FAST")."""
    if dct_method not in ("", "INTEGER_FAST", "INTEGER_ACCURATE"):
        raise ValueError(f"decode_jpeg: dct_method must be '', 'INTEGER_FAST' or "
                         f"'INTEGER_ACCURATE', got {dct_method!r}")
    return _decode("jpeg", contents, channels, dtypes.uint8, name, ratio=(ratio, 1),
                   fancy_upscaling=(bool(fancy_upscaling), True),
                   try_recover_truncated=(try_recover_truncated, False),
                   acceptable_fraction=(acceptable_fraction, 1))


def decode_image(contents, channels=None, dtype=dtypes.uint8, name: Optional[str] = None,
                 expand_animations: bool = True):
    """Decodes a PNG, JPEG, GIF or BMP image: ``[height, width, channels]``, or for a GIF
    with ``expand_animations`` all its frames, ``[frames, height, width, channels]``."""
    return _decode("image", contents, channels or 0, dtype, name,
                   animations=bool(expand_animations))
