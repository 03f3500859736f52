"""String ops: TF1's ``as_string``, ``string_join``, ``substr``, ``reduce_join``, regexes,
hash buckets and ``tf.strings.*``.

String tensors hold ``bytes`` (object arrays), as TF's do; every kernel here returns
bytes. Regexes are RE2 patterns in TF; gradflow runs them with Python's ``re``, which
agrees on the common syntax (RE2's ``\\0`` in a rewrite is the whole match). None of
these ops is differentiable, as in TF.
"""
from __future__ import annotations

import re
import struct
from typing import Optional, Sequence

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant, constant_value, convert_to_tensor
from gradflow.framework.graph import Tensor, op_scope
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape, equal_shapes_message
from gradflow.ops.common import apply_op, broadcast_shape, same_as_input
from gradflow.ops.logging_ops import format_value
from gradflow.ops.string_hash import fingerprint64, murmur64, siphash24

__all__ = ["as_string", "string_join", "string_strip", "string_to_number",
           "string_to_hash_bucket", "string_to_hash_bucket_fast",
           "string_to_hash_bucket_strong", "substr", "reduce_join", "regex_replace",
           "regex_full_match", "string_length", "string_lower", "string_upper",
           "string_format", "unsorted_segment_join", "fingerprint"]


def map_strings(fn, array: np.ndarray, otype=object) -> np.ndarray:
    """``fn`` applied to every string of ``array``, shape kept."""
    flat = np.asarray(array, dtype=object).reshape(-1)
    out = np.empty(flat.shape, dtype=otype)
    for i, item in enumerate(flat):
        out[i] = fn(item)
    return out.reshape(np.shape(array))


def _string_input(value, name: str, op_type: str) -> Tensor:
    """``value`` as a string tensor named ``name``; TF's TypeError for another dtype."""
    tensor = convert_to_tensor(value, name=name)
    if tensor.dtype is not dtypes.string:
        raise TypeError(f"Input '{name}' of '{op_type}' Op has type {tensor.dtype.name} that "
                        "does not match expected type of string.")
    return tensor


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# ---- AsString ------------------------------------------------------------------------

def _as_string_kernel(x, *, precision, scientific, shortest, width, fill):
    if len(fill) > 1:
        raise _invalid("Fill string must be one or fewer characters")
    if fill and fill not in _PRINTF_FLAGS:
        raise _invalid(f"Fill argument not supported: \"{fill}\"")
    if scientific and shortest:
        raise _invalid("Cannot select both scientific and shortest notation")
    kind = np.asarray(x).dtype.kind
    if precision > -1 and kind not in "fc":
        raise _invalid(f"precision not supported for datatype {dtypes.as_dtype(x.dtype).name}")
    if kind == "b":
        return map_strings(lambda v: b"true" if v else b"false", x)
    if kind == "O":  # strings pass through, as TF's kernel does
        return np.asarray(x, dtype=object).copy()
    # TF builds a printf format: the fill is a printf flag ('0', '-', '+', ' ', '#')
    spec = "%" + fill + (str(width) if width > -1 else "")
    if kind in "fc":
        spec += (f".{precision}" if precision > -1 else "") + \
            ("e" if scientific else "g" if shortest else "f")
        if kind == "c":
            return map_strings(lambda v: f"({spec % v.real},{spec % v.imag})".encode(), x)
        return map_strings(lambda v: (spec % float(v)).encode(), x)
    return map_strings(lambda v: ((spec + "d") % int(v)).encode(), x)


_PRINTF_FLAGS = "-+ 0#"


def _infer_as_string(inputs, attrs):
    return [(dtypes.string, inputs[0].shape)]


define_op("AsString", infer=_infer_as_string, kernel=_as_string_kernel)
NotDifferentiable("AsString")

_AS_STRING_TYPES = (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16,
                    dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8,
                    dtypes.uint16, dtypes.uint32, dtypes.uint64, dtypes.complex64,
                    dtypes.complex128, dtypes.bool, dtypes.string)


def as_string(input, precision: int = -1, scientific: bool = False,  # noqa: A002
              shortest: bool = False, width: int = -1, fill: str = "",
              name: Optional[str] = None) -> Tensor:
    """Each element as text (``%f``, ``%e`` with ``scientific``, ``%g`` with
    ``shortest``; ``width`` padded with ``fill``): TF1's ``tf.as_string``."""
    with op_scope(name, "AsString", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        if x.dtype not in _AS_STRING_TYPES:
            raise TypeError(f"Value passed to parameter 'input' has DataType {x.dtype.name} "
                            "not in list of allowed values")
        return apply_op("AsString", [x], name=scope, precision=int(precision),
                        scientific=bool(scientific), shortest=bool(shortest),
                        width=int(width), fill=str(fill))


# ---- StringJoin, StringStrip, case, length ---------------------------------------------

def _string_join_kernel(*inputs, separator):
    shape = np.broadcast_shapes(*(np.shape(x) for x in inputs))
    sep = separator.encode("utf-8")
    columns = [np.broadcast_to(np.asarray(x, dtype=object), shape).reshape(-1)
               for x in inputs]
    out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=object)
    for i in range(out.size):
        out[i] = sep.join(column[i] for column in columns)
    return out.reshape(shape)


def _infer_string_join(inputs, attrs):
    shape = TensorShape([])
    for x in inputs:
        if x.shape.ndims == 0:
            continue
        if shape.ndims == 0:
            shape = x.shape
            continue
        if not shape.is_compatible_with(x.shape):
            raise ValueError(equal_shapes_message(shape, x.shape) + " for 'StringJoin'")
        shape = shape.merge_with(x.shape)
    return [(dtypes.string, shape)]


define_op("StringJoin", infer=_infer_string_join, kernel=_string_join_kernel)
NotDifferentiable("StringJoin")


def string_join(inputs: Sequence, separator: str = "", name: Optional[str] = None) -> Tensor:
    """Joins the strings of ``inputs`` elementwise (scalars broadcast): ``string_join``."""
    with op_scope(name, "StringJoin", list(inputs)) as scope:
        tensors = [_string_input(x, f"inputs_{i}", "StringJoin")
                   for i, x in enumerate(inputs)]
        if not tensors:
            raise ValueError("string_join: inputs must hold at least one tensor")
        return apply_op("StringJoin", tensors, name=scope, separator=str(separator))


_ASCII_SPACE = b" \t\n\v\f\r"

define_op("StringStrip", kernel=lambda x: map_strings(lambda s: s.strip(_ASCII_SPACE), x),
          infer=lambda inputs, attrs: [(dtypes.string, inputs[0].shape)])
NotDifferentiable("StringStrip")


def string_strip(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Each string without its leading and trailing ASCII whitespace."""
    with op_scope(name, "StringStrip", [input]) as scope:
        x = _string_input(input, "input", "StringStrip")
        return apply_op("StringStrip", [x], name=scope)


def _recase(lower: bool):
    def kernel(x, *, encoding):
        if encoding == "":  # ASCII letters only, as TF without an encoding
            return map_strings(lambda s: s.lower() if lower else s.upper(), x)

        def utf8(s: bytes) -> bytes:
            text = s.decode("utf-8", "surrogateescape")
            return (text.lower() if lower else text.upper()).encode("utf-8", "surrogateescape")
        return map_strings(utf8, x)
    return kernel


for _type, _lower in (("StringLower", True), ("StringUpper", False)):
    define_op(_type, infer=lambda inputs, attrs: [(dtypes.string, inputs[0].shape)],
              kernel=_recase(_lower))
    NotDifferentiable(_type)


def _check_encoding(encoding: str) -> str:
    encoding = encoding or ""
    if encoding.lower().replace("-", "") not in ("", "utf8"):
        raise ValueError(f"encoding must be '' or 'utf-8', got {encoding!r}")
    return "utf-8" if encoding else ""


def string_lower(input, encoding: str = "", name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Lower case: ASCII letters only, or every letter with ``encoding='utf-8'``."""
    with op_scope(name, "StringLower", [input]) as scope:
        x = _string_input(input, "input", "StringLower")
        return apply_op("StringLower", [x], name=scope,
                        encoding=_check_encoding(encoding))


def string_upper(input, encoding: str = "", name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Upper case: ASCII letters only, or every letter with ``encoding='utf-8'``."""
    with op_scope(name, "StringUpper", [input]) as scope:
        x = _string_input(input, "input", "StringUpper")
        return apply_op("StringUpper", [x], name=scope,
                        encoding=_check_encoding(encoding))


def _utf8_starts(s: bytes) -> list:
    """Byte offsets where a UTF-8 character starts (any byte but a continuation byte)."""
    return [i for i, b in enumerate(s) if b & 0xC0 != 0x80]


def _string_length_kernel(x, *, unit):
    if unit == "BYTE":
        return map_strings(len, x, np.int32)
    return map_strings(lambda s: len(_utf8_starts(s)), x, np.int32)


define_op("StringLength", kernel=_string_length_kernel,
          infer=lambda inputs, attrs: [(dtypes.int32, inputs[0].shape)])
NotDifferentiable("StringLength")


def _check_unit(unit: str) -> str:
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"unit must be one of ['BYTE', 'UTF8_CHAR'], got {unit!r}")
    return unit


def string_length(input, name: Optional[str] = None, unit: str = "BYTE") -> Tensor:  # noqa: A002
    """The length of each string, in bytes or (``unit='UTF8_CHAR'``) characters."""
    with op_scope(name, "StringLength", [input]) as scope:
        x = _string_input(input, "input", "StringLength")
        return apply_op("StringLength", [x], name=scope,
                        unit=_check_unit(unit))


# ---- StringToNumber ---------------------------------------------------------------------

_INT_TEXT = re.compile(rb"[+-]?[0-9]+")
_HEX_TEXT = re.compile(rb"[+-]?0[xX][0-9a-fA-F]+(\.[0-9a-fA-F]*)?([pP][+-]?[0-9]+)?")
_NUMBER_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.uint32,
                 dtypes.uint64)


def _parse_number(text: bytes, dtype: dtypes.DType):
    stripped = text.strip(_ASCII_SPACE)
    if dtype.is_integer:
        if _INT_TEXT.fullmatch(stripped):
            value = int(stripped)
            info = np.iinfo(dtype.as_numpy_dtype)
            if info.min <= value <= info.max:
                return value
        return None
    if b"_" in stripped or stripped.lower() in (b"infinity", b"+infinity", b"-infinity"):
        return None
    try:
        return float(stripped)
    except ValueError:
        if _HEX_TEXT.fullmatch(stripped):
            return float.fromhex(stripped.decode())
        return None


def _string_to_number_kernel(x, *, out_type):
    flat = np.asarray(x, dtype=object).reshape(-1)
    out = np.empty(flat.shape, dtype=out_type.as_numpy_dtype)
    with np.errstate(over="ignore"):
        for i, item in enumerate(flat):
            value = _parse_number(item, out_type)
            if value is None:
                raise _invalid("StringToNumberOp could not correctly convert string: "
                               f"{item.decode('utf-8', 'replace')}")
            out[i] = value
    return out.reshape(np.shape(x))


define_op("StringToNumber", kernel=_string_to_number_kernel,
          infer=lambda inputs, attrs: [(attrs["out_type"], inputs[0].shape)])
NotDifferentiable("StringToNumber")


def _one_of(string_tensor, input, fn: str):  # noqa: A002
    """TF's deprecated ``input`` spelling of ``string_tensor``: one of the two."""
    if (string_tensor is None) == (input is None):
        raise ValueError(f"{fn}: give exactly one of 'string_tensor' and 'input'")
    return input if string_tensor is None else string_tensor


def string_to_number(string_tensor=None, out_type=dtypes.float32, name: Optional[str] = None,
                     input=None) -> Tensor:  # noqa: A002
    """Parses each string as a number of ``out_type`` (TF's ``InvalidArgumentError`` for
    text that is not one)."""
    string_tensor = _one_of(string_tensor, input, "string_to_number")
    out_type = dtypes.as_dtype(out_type)
    if out_type not in _NUMBER_TYPES:
        raise TypeError(f"Value passed to parameter 'out_type' has DataType {out_type.name} "
                        "not in list of allowed values: float32, float64, int32, int64, "
                        "uint32, uint64")
    with op_scope(name, "StringToNumber", [string_tensor]) as scope:
        x = _string_input(string_tensor, "string_tensor", "StringToNumber")
        return apply_op("StringToNumber", [x], name=scope, out_type=out_type)


# ---- hash buckets -----------------------------------------------------------------------

def _bucket_kernel(hash_fn):
    def kernel(x, *, num_buckets, **key):
        if "key" in key:
            if len(key["key"]) != 2:
                raise _invalid("Key must have 2 elements")
            key0, key1 = key["key"]
            return map_strings(lambda s: siphash24(key0, key1, s) % num_buckets, x, np.int64)
        return map_strings(lambda s: hash_fn(s) % num_buckets, x, np.int64)
    return kernel


for _type, _hash in (("StringToHashBucket", murmur64),
                     ("StringToHashBucketFast", fingerprint64),
                     ("StringToHashBucketStrong", None)):
    define_op(_type, kernel=_bucket_kernel(_hash),
              infer=lambda inputs, attrs: [(dtypes.int64, inputs[0].shape)])
    NotDifferentiable(_type)


def _check_buckets(num_buckets) -> int:
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, (int, np.integer)) or \
            num_buckets < 1:
        raise ValueError(f"num_buckets must be an integer >= 1, got {num_buckets!r}")
    return int(num_buckets)


def string_to_hash_bucket(string_tensor=None, num_buckets: Optional[int] = None,
                          name: Optional[str] = None, input=None) -> Tensor:  # noqa: A002
    """Each string's bucket in ``[0, num_buckets)`` by TF's older hash (MurmurHash64A)."""
    string_tensor = _one_of(string_tensor, input, "string_to_hash_bucket")
    with op_scope(name, "StringToHashBucket", [string_tensor]) as scope:
        x = _string_input(string_tensor, "string_tensor", "StringToHashBucket")
        return apply_op("StringToHashBucket", [x], name=scope,
                        num_buckets=_check_buckets(num_buckets))


def string_to_hash_bucket_fast(input, num_buckets: int,  # noqa: A002
                               name: Optional[str] = None) -> Tensor:
    """Each string's bucket in ``[0, num_buckets)``: FarmHash Fingerprint64 modulo."""
    with op_scope(name, "StringToHashBucketFast", [input]) as scope:
        x = _string_input(input, "input", "StringToHashBucketFast")
        return apply_op("StringToHashBucketFast", [x],
                        name=scope, num_buckets=_check_buckets(num_buckets))


def string_to_hash_bucket_strong(input, num_buckets: int, key,  # noqa: A002
                                 name: Optional[str] = None) -> Tensor:
    """Each string's bucket by SipHash-2-4 under ``key`` (two integers)."""
    key = list(key)
    if not all(isinstance(k, (int, np.integer)) for k in key):
        raise TypeError(f"key must be a list of integers, got {key!r}")
    with op_scope(name, "StringToHashBucketStrong", [input]) as scope:
        x = _string_input(input, "input", "StringToHashBucketStrong")
        return apply_op("StringToHashBucketStrong", [x],
                        name=scope, num_buckets=_check_buckets(num_buckets),
                        key=tuple(int(k) & ((1 << 64) - 1) for k in key))


# ---- Fingerprint --------------------------------------------------------------------------

def _fingerprint_kernel(data, method):
    if np.asarray(method).item() != b"farmhash64":
        raise _invalid(f"Unsupported fingerprint method: {np.asarray(method).item()!r}")
    data = np.asarray(data)
    rows = data.reshape(data.shape[0], -1)
    out = np.empty((len(rows), 8), np.uint8)
    for i, row in enumerate(rows):
        if data.dtype == object:  # strings: each one's fingerprint, combined when several
            prints = [fingerprint64(s) for s in row]
            value = prints[0] if len(prints) == 1 else \
                fingerprint64(b"".join(struct.pack("<Q", p) for p in prints))
        else:
            value = fingerprint64(np.ascontiguousarray(row).astype(
                row.dtype.newbyteorder("<")).tobytes())
        out[i] = np.frombuffer(struct.pack("<Q", value), np.uint8)
    return out


def _infer_fingerprint(inputs, attrs):
    data = inputs[0]
    if data.shape.ndims == 0:
        raise ValueError("Shape must be at least rank 1 but is rank 0 for 'Fingerprint'")
    rows = data.shape[0] if data.shape.ndims else None
    return [(dtypes.uint8, TensorShape([rows, 8]))]


define_op("Fingerprint", infer=_infer_fingerprint, kernel=_fingerprint_kernel)
NotDifferentiable("Fingerprint")


def fingerprint(data, method: str = "farmhash64", name: Optional[str] = None) -> Tensor:
    """An 8-byte FarmHash Fingerprint64 (uint8, little-endian) of each row of ``data``."""
    with op_scope(name, "Fingerprint", [data]) as scope:
        x = convert_to_tensor(data, name="data")
        if x.dtype in (dtypes.resource, dtypes.variant):
            raise TypeError(f"fingerprint: data of dtype {x.dtype.name} has no bytes")
        method_t = convert_to_tensor(method, dtype=dtypes.string, name="method")
        return apply_op("Fingerprint", [x, method_t], name=scope)


# ---- Substr -----------------------------------------------------------------------------

def _substr_kernel(x, pos, length, *, unit):
    shape = np.broadcast_shapes(np.shape(x), np.shape(pos), np.shape(length))
    strings = np.broadcast_to(np.asarray(x, dtype=object), shape).reshape(-1)
    starts = np.broadcast_to(pos, shape).reshape(-1)
    lengths = np.broadcast_to(length, shape).reshape(-1)
    out = np.empty(strings.shape, dtype=object)
    for i, (s, p, n) in enumerate(zip(strings, starts, lengths, strict=True)):
        bounds = _utf8_starts(s) + [len(s)] if unit == "UTF8_CHAR" else None
        size = len(bounds) - 1 if bounds else len(s)
        p, n = int(p), int(n)
        start = p + size if p < 0 else p
        if not 0 <= start <= size:
            raise _invalid(f"pos {p} out of range for string b'{s.decode('latin-1')}' at "
                           f"index {i}")
        stop = min(size, start + max(n, 0))
        out[i] = s[bounds[start]:bounds[stop]] if bounds else s[start:stop]
    return out.reshape(shape)


def _infer_substr(inputs, attrs):
    x, pos, length = inputs
    if not pos.shape.is_compatible_with(length.shape):
        raise ValueError(f"Shapes of pos {pos.shape} and len {length.shape} must match "
                         "for 'Substr'")
    return [(dtypes.string, broadcast_shape(x.shape, pos.shape, "Substr"))]


define_op("Substr", infer=_infer_substr, kernel=_substr_kernel)
NotDifferentiable("Substr")


def substr(input, pos, len, name: Optional[str] = None,  # noqa: A002
           unit: str = "BYTE") -> Tensor:
    """The substring of ``len`` bytes (or UTF-8 characters) from ``pos`` of each string
    (a negative ``pos`` counts from the end); ``pos`` past the end is an error."""
    with op_scope(name, "Substr", [input, pos, len]) as scope:
        x = _string_input(input, "input", "Substr")
        start = convert_to_tensor(pos, name="pos")
        size = convert_to_tensor(len, name="len")
        if start.dtype not in (dtypes.int32, dtypes.int64) or start.dtype is not size.dtype:
            raise TypeError(f"pos and len must both be int32 or int64, got "
                            f"{start.dtype.name} and {size.dtype.name}")
        return apply_op("Substr", [x, start, size], name=scope, unit=_check_unit(unit))


# ---- ReduceJoin, UnsortedSegmentJoin ------------------------------------------------------

def _reduce_join_kernel(x, axes, *, keep_dims, separator):
    x = np.asarray(x, dtype=object)
    rank = x.ndim
    order = []
    for axis in np.asarray(axes).reshape(-1).tolist():
        if not -rank <= axis < rank:
            raise _invalid(f"Invalid reduction dimension {axis} for input with {rank} "
                           "dimensions.")
        if axis % rank not in order:
            order.append(axis % rank)
    kept = [d for d in range(rank) if d not in order]
    # the first axis named varies fastest, as in TF's kernel
    kept_shape = [x.shape[d] for d in kept]
    width = int(np.prod([x.shape[d] for d in order], dtype=np.int64))
    rows = np.transpose(x, kept + order[::-1]).reshape(
        (int(np.prod(kept_shape, dtype=np.int64)), width))
    sep = separator.encode("utf-8")
    out = np.empty(rows.shape[0], dtype=object)
    for i, row in enumerate(rows):
        out[i] = sep.join(row)
    out = out.reshape([x.shape[d] for d in kept])
    if keep_dims:
        out = out.reshape([1 if d in order else x.shape[d] for d in range(rank)])
    return out


def _infer_reduce_join(inputs, attrs):
    x, axes = inputs
    values = constant_value(axes)
    if x.shape.ndims is None or values is None:
        return [(dtypes.string, TensorShape(None))]
    rank = x.shape.ndims
    reduced = set()
    for axis in np.asarray(values).reshape(-1).tolist():
        if not -rank <= axis < rank:
            raise ValueError(f"Invalid reduction dimension {axis} for input with {rank} "
                             "dimensions.")
        reduced.add(axis % rank)
    dims = x.shape.as_list()
    if attrs["keep_dims"]:
        return [(dtypes.string, TensorShape([1 if d in reduced else dims[d]
                                             for d in range(rank)]))]
    return [(dtypes.string, TensorShape([dims[d] for d in range(rank) if d not in reduced]))]


define_op("ReduceJoin", infer=_infer_reduce_join, kernel=_reduce_join_kernel)
NotDifferentiable("ReduceJoin")


def reduce_join(inputs, axis=None, keep_dims: Optional[bool] = None, separator: str = "",
                name: Optional[str] = None, reduction_indices=None,
                keepdims: Optional[bool] = None) -> Tensor:
    """Joins the strings of ``inputs`` along ``axis`` (all axes when None) with
    ``separator``: TF1's ``reduce_join``."""
    if axis is not None and reduction_indices is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_indices'.")
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'.")
    axis = reduction_indices if axis is None else axis
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with op_scope(name, "ReduceJoin", [inputs, axis]):
        x = _string_input(inputs, "Const", "ReduceJoin")
        if axis is None:
            if x.shape.ndims is None:
                raise ValueError("reduce_join: axis=None needs an input of known rank")
            axis = list(range(x.shape.ndims - 1, -1, -1))
            axes = constant(axis, dtype=dtypes.int32)
        else:
            axes = axis
        with op_scope(None, "ReduceJoin", [x, axes]) as scope:
            axes = convert_to_tensor(axes, name="reduction_indices")
            return apply_op("ReduceJoin", [x, axes], name=scope, keep_dims=keep,
                            separator=str(separator))


def _segment_join_kernel(x, ids, num_segments, *, separator):
    x = np.asarray(x, dtype=object)
    ids = np.asarray(ids)
    count = int(num_segments)
    rest = x.shape[ids.ndim:]
    pieces = [[] for _ in range(count)]
    for position, segment in enumerate(ids.reshape(-1).tolist()):
        if not 0 <= segment < count:
            raise _invalid("segment_ids are not allowed to exceed num_segments or to have "
                           "negative values.")
        pieces[segment].append(x.reshape((-1,) + rest)[position])
    sep = separator.encode("utf-8")
    out = np.empty((count,) + rest, dtype=object)
    for segment, parts in enumerate(pieces):
        if not parts:
            out[segment] = b""
            continue
        stacked = np.stack(parts)
        out[segment] = map_strings(sep.join, _columns(stacked)) if rest else sep.join(parts)
    return out


def _columns(stacked: np.ndarray) -> np.ndarray:
    """An object array over ``stacked[0]``'s shape whose items list the rows' strings."""
    flat = stacked.reshape(stacked.shape[0], -1)
    out = np.empty(flat.shape[1], dtype=object)
    for j in range(flat.shape[1]):
        out[j] = list(flat[:, j])
    return out.reshape(stacked.shape[1:])


def _infer_segment_join(inputs, attrs):
    x, ids, num = inputs
    count = constant_value(num)
    rest = x.shape[ids.shape.ndims:] if x.shape.ndims is not None and \
        ids.shape.ndims is not None else TensorShape(None)
    lead = TensorShape([None if count is None else int(count)])
    return [(dtypes.string, lead.concatenate(rest))]


define_op("UnsortedSegmentJoin", infer=_infer_segment_join, kernel=_segment_join_kernel)
NotDifferentiable("UnsortedSegmentJoin")


def unsorted_segment_join(inputs, segment_ids, num_segments, separator: str = "",
                          name: Optional[str] = None) -> Tensor:
    """Joins the strings of each segment (an empty segment gives ``b''``)."""
    with op_scope(name, "UnsortedSegmentJoin", [inputs, segment_ids, num_segments]) as scope:
        x = _string_input(inputs, "inputs", "UnsortedSegmentJoin")
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        num = convert_to_tensor(num_segments, name="num_segments")
        if not ids.dtype.is_integer or not num.dtype.is_integer:
            raise TypeError("segment_ids and num_segments must be integer tensors")
        return apply_op("UnsortedSegmentJoin", [x, ids, num], name=scope,
                        separator=str(separator))


# ---- regexes ------------------------------------------------------------------------------

def _compile(pattern) -> "re.Pattern":
    text = pattern if isinstance(pattern, bytes) else str(pattern).encode("utf-8")
    try:
        return re.compile(text)
    except re.error as err:
        raise _invalid(f"Invalid pattern: {text.decode('utf-8', 'replace')}, error: "
                       f"{err.msg}") from None


def _rewrite(rewrite: bytes) -> bytes:
    """An RE2 rewrite (``\\0``..``\\9``) in Python's spelling (``\\g<0>``...)."""
    return re.sub(rb"\\([0-9])", rb"\\g<\1>", rewrite)


def _replace(strings, pattern, rewrite, replace_global: bool):
    compiled = _compile(pattern)
    target = _rewrite(rewrite if isinstance(rewrite, bytes) else rewrite.encode("utf-8"))
    count = 0 if replace_global else 1
    return map_strings(lambda s: compiled.sub(target, s, count=count), strings)


define_op("StaticRegexReplace", infer=same_as_input,
          kernel=lambda x, *, pattern, rewrite, replace_global:
          _replace(x, pattern, rewrite, replace_global))
NotDifferentiable("StaticRegexReplace")
define_op("RegexReplace", infer=same_as_input,
          kernel=lambda x, pattern, rewrite, *, replace_global:
          _replace(x, np.asarray(pattern).item(), np.asarray(rewrite).item(), replace_global))
NotDifferentiable("RegexReplace")


def _full_match(strings, pattern):
    compiled = _compile(pattern)
    return map_strings(lambda s: compiled.fullmatch(s) is not None, strings, bool)


define_op("StaticRegexFullMatch", kernel=lambda x, *, pattern: _full_match(x, pattern),
          infer=lambda inputs, attrs: [(dtypes.bool, inputs[0].shape)])
NotDifferentiable("StaticRegexFullMatch")
define_op("RegexFullMatch", kernel=lambda x, pattern: _full_match(x, np.asarray(pattern).item()),
          infer=lambda inputs, attrs: [(dtypes.bool, inputs[0].shape)])
NotDifferentiable("RegexFullMatch")


def _static_text(value) -> Optional[str]:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return value if isinstance(value, str) else None


def regex_replace(input, pattern, rewrite, replace_global: bool = True,  # noqa: A002
                  name: Optional[str] = None) -> Tensor:
    """Replaces the matches of the RE2 ``pattern`` with ``rewrite`` (``\\1`` a group);
    a ``StaticRegexReplace`` op when both are Python strings, as TF builds."""
    static = _static_text(pattern) is not None and _static_text(rewrite) is not None
    default = "StaticRegexReplace" if static else "RegexReplace"
    with op_scope(name, default, [input, pattern, rewrite]) as scope:
        x = _string_input(input, "input", default)
        if static:
            return apply_op("StaticRegexReplace", [x], name=scope,
                            pattern=_static_text(pattern), rewrite=_static_text(rewrite),
                            replace_global=bool(replace_global))
        return apply_op("RegexReplace", [x, _string_input(pattern, "pattern", default),
                                         _string_input(rewrite, "rewrite", default)],
                        name=scope, replace_global=bool(replace_global))


def regex_full_match(input, pattern, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Whether each string matches the RE2 ``pattern`` as a whole."""
    static = _static_text(pattern) is not None
    default = "StaticRegexFullMatch" if static else "RegexFullMatch"
    with op_scope(name, default, [input, pattern]) as scope:
        x = _string_input(input, "input", default)
        if static:
            return apply_op("StaticRegexFullMatch", [x], name=scope,
                            pattern=_static_text(pattern))
        return apply_op("RegexFullMatch", [x, _string_input(pattern, "pattern", default)],
                        name=scope)


# ---- StringFormat -------------------------------------------------------------------------

def _quoted(array: np.ndarray) -> np.ndarray:
    """String elements as ``tf.strings.format`` shows them: in double quotes."""
    array = np.asarray(array)
    if array.dtype != object:
        return array
    return map_strings(lambda s: '"' + s.decode("utf-8", "replace") + '"', array)


def _string_format_kernel(*values, template, placeholder, summarize):
    pieces = template.split(placeholder)
    out = [pieces[0]]
    for value, piece in zip(values, pieces[1:], strict=True):
        out.append(format_value(_quoted(value), summarize))
        out.append(piece)
    result = np.empty((), dtype=object)
    result[()] = "".join(out).encode("utf-8")
    return result


define_op("StringFormat", kernel=_string_format_kernel,
          infer=lambda inputs, attrs: [(dtypes.string, TensorShape([]))])
NotDifferentiable("StringFormat")


def string_format(template: str, inputs, placeholder: str = "{}", summarize: int = 3,
                  name: Optional[str] = None) -> Tensor:
    """A scalar string: ``template`` with each ``placeholder`` replaced by a tensor as
    ``tf.print`` shows it (strings quoted; ``summarize`` entries of each end)."""
    values = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    needed = template.count(placeholder)
    if needed != len(values):
        raise ValueError(f"The template expects {needed} tensors, but the inputs only has "
                         f"{len(values)}. Please ensure the number of placeholders in "
                         "template matches inputs length.")
    with op_scope(name, "StringFormat", values) as scope:
        tensors = [convert_to_tensor(v) for v in values]
        return apply_op("StringFormat", tensors, name=scope, template=str(template),
                        placeholder=str(placeholder), summarize=int(summarize))
