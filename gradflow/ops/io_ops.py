"""File and byte-format ops of TF1's ``tf.io``: ``read_file``, ``write_file``, web-safe
base64, ``serialize_tensor``/``parse_tensor``, ``decode_compressed``,
``decode_json_example`` and the sparse serializations.

Serialized tensors are ``TensorProto`` bytes (``framework/tensor_proto.py``), so they
read back in TF and the other way round. None of these ops is differentiable.
"""
from __future__ import annotations

import base64
import binascii
import gzip
import os
import zlib
from typing import Optional

import numpy as np
from google.protobuf import json_format

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor, string_array
from gradflow.framework.example_proto import Example
from gradflow.framework.graph import Tensor, op_scope
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.sparse_tensor import SparseTensor
from gradflow.framework.tensor_proto import make_ndarray, make_tensor_proto
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import apply_op
from gradflow.ops.string_ops import map_strings

__all__ = ["read_file", "write_file", "encode_base64", "decode_base64",
           "serialize_tensor", "parse_tensor", "decode_compressed", "decode_json_example",
           "serialize_sparse", "serialize_many_sparse", "deserialize_many_sparse"]


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _text(value) -> str:
    item = np.asarray(value, dtype=object).item()
    return item.decode("utf-8") if isinstance(item, bytes) else str(item)


def _scalar(data: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = data
    return out


def _string(value, name: str) -> Tensor:
    tensor = convert_to_tensor(value, name=name)
    if tensor.dtype is not dtypes.string:
        raise TypeError(f"Input '{name}' must be a string tensor, got {tensor.dtype.name}")
    return tensor


def _scalar_string(value, name: str) -> Tensor:
    tensor = _string(value, name)
    if tensor.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {tensor.shape.ndims} for "
                         f"'{name}'")
    return tensor


# ---- files -------------------------------------------------------------------------------

def _read_file_kernel(filename):
    path = _text(filename)
    try:
        with open(path, "rb") as handle:
            return _scalar(handle.read())
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None


def _write_file_kernel(filename, contents):
    path = _text(filename)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)  # TF creates missing folders too
    with open(path, "wb") as handle:
        handle.write(np.asarray(contents, dtype=object).item())
    return ()


define_op("ReadFile", kernel=_read_file_kernel, stateful=True,
          infer=lambda inputs, attrs: [(dtypes.string, TensorShape([]))])
define_op("WriteFile", kernel=_write_file_kernel, stateful=True,
          infer=lambda inputs, attrs: [])
for _type in ("ReadFile", "WriteFile"):
    NotDifferentiable(_type)


def read_file(filename, name: Optional[str] = None) -> Tensor:
    """The bytes of the file ``filename`` (a scalar string) when run."""
    with op_scope(name, "ReadFile", [filename]) as scope:
        return apply_op("ReadFile", [_scalar_string(filename, "filename")], name=scope)


def write_file(filename, contents, name: Optional[str] = None):
    """An op writing the scalar string ``contents`` to ``filename`` when run."""
    with op_scope(name, "WriteFile", [filename, contents]) as scope:
        return apply_op("WriteFile", [_scalar_string(filename, "filename"),
                                      _scalar_string(contents, "contents")], name=scope)


# ---- base64, compression, JSON -----------------------------------------------------------

def _encode_base64_kernel(x, *, pad):
    def encode(data: bytes) -> bytes:
        text = base64.urlsafe_b64encode(data)
        return text if pad else text.rstrip(b"=")
    return map_strings(encode, x)


def _decode_base64_kernel(x):
    def decode(text: bytes) -> bytes:
        try:
            return base64.urlsafe_b64decode(text.rstrip(b"=") + b"=" * (-len(text.rstrip(b"="))
                                                                      % 4))
        except (binascii.Error, ValueError):
            raise _invalid("Invalid character found in base64.") from None
    return map_strings(decode, x)


def _decode_compressed_kernel(x, *, compression_type):
    def decode(data: bytes) -> bytes:
        try:
            if compression_type == "ZLIB":
                return zlib.decompress(data)
            if compression_type == "GZIP":
                return gzip.decompress(data)
        except (OSError, zlib.error, EOFError) as err:
            raise errors.DataLossError(None, None, f"{compression_type} data: {err}") \
                from None
        return data
    return map_strings(decode, x)


def _decode_json_example_kernel(x):
    def decode(text: bytes) -> bytes:
        try:
            return json_format.Parse(text.decode("utf-8"), Example()).SerializeToString()
        except json_format.ParseError as err:
            raise _invalid(f"Error while parsing JSON: {err}") from None
    return map_strings(decode, x)


for _type, _kernel in (("EncodeBase64", _encode_base64_kernel),
                       ("DecodeBase64", _decode_base64_kernel),
                       ("DecodeCompressed", _decode_compressed_kernel),
                       ("DecodeJSONExample", _decode_json_example_kernel)):
    define_op(_type, kernel=_kernel,
              infer=lambda inputs, attrs: [(dtypes.string, inputs[0].shape)])
    NotDifferentiable(_type)


def encode_base64(input, pad: bool = False, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Web-safe base64 (``-`` and ``_``) of each string, ``=`` padded only with ``pad``."""
    with op_scope(name, "EncodeBase64", [input]) as scope:
        return apply_op("EncodeBase64", [_string(input, "input")], name=scope, pad=bool(pad))


def decode_base64(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """The bytes of each web-safe base64 string (padded or not)."""
    with op_scope(name, "DecodeBase64", [input]) as scope:
        return apply_op("DecodeBase64", [_string(input, "input")], name=scope)


def decode_compressed(bytes, compression_type: str = "",  # noqa: A002 - TF's name
                      name: Optional[str] = None) -> Tensor:
    """Each string decompressed: ``compression_type`` is ``''`` (as is), ZLIB or GZIP."""
    if compression_type not in ("", "ZLIB", "GZIP"):
        raise ValueError(f"compression_type must be '', 'ZLIB' or 'GZIP', got "
                         f"{compression_type!r}")
    with op_scope(name, "DecodeCompressed", [bytes]) as scope:
        return apply_op("DecodeCompressed", [_string(bytes, "bytes")], name=scope,
                        compression_type=compression_type)


def decode_json_example(json_examples, name: Optional[str] = None) -> Tensor:
    """Each ``tf.train.Example`` in protobuf's JSON form as its binary form."""
    with op_scope(name, "DecodeJSONExample", [json_examples]) as scope:
        return apply_op("DecodeJSONExample", [_string(json_examples, "json_examples")],
                        name=scope)


# ---- tensors as TensorProto bytes ----------------------------------------------------------

def _serialize_tensor_kernel(x, *, T):  # noqa: N803 - TF's attr name
    return _scalar(make_tensor_proto(np.asarray(x), dtype=T).SerializeToString())


def _parse_tensor_kernel(serialized, *, out_type):
    proto = make_tensor_proto(np.zeros(0, np.float32))
    try:
        proto.ParseFromString(np.asarray(serialized, dtype=object).item())
        array = make_ndarray(proto)
    except Exception:  # protobuf's DecodeError or an unknown dtype: not a TensorProto
        raise _invalid("Could not parse `serialized` as TensorProto") from None
    found = dtypes.as_dtype(array.dtype) if array.dtype != object else dtypes.string
    if found is not out_type:
        raise _invalid(f"Type mismatch between parsed tensor ({_tf_type_name(found)}) and "
                       f"dtype ({_tf_type_name(out_type)})")
    return array


def _tf_type_name(dtype: dtypes.DType) -> str:
    """A dtype as TF's messages spell it (C++'s DataTypeString: float, double...)."""
    return {"float32": "float", "float64": "double"}.get(dtype.name, dtype.name)


define_op("SerializeTensor", kernel=_serialize_tensor_kernel,
          infer=lambda inputs, attrs: [(dtypes.string, TensorShape([]))])
define_op("ParseTensor", kernel=_parse_tensor_kernel,
          infer=lambda inputs, attrs: [(attrs["out_type"], TensorShape(None))])
NotDifferentiable("SerializeTensor")
NotDifferentiable("ParseTensor")


def serialize_tensor(tensor, name: Optional[str] = None) -> Tensor:
    """``tensor`` as the bytes of a ``TensorProto`` (a scalar string)."""
    with op_scope(name, "SerializeTensor", [tensor]) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        return apply_op("SerializeTensor", [x], name=scope, T=x.dtype)


def parse_tensor(serialized, out_type, name: Optional[str] = None) -> Tensor:
    """The tensor a serialized ``TensorProto`` holds; its dtype must be ``out_type``."""
    with op_scope(name, "ParseTensor", [serialized]) as scope:
        return apply_op("ParseTensor", [_scalar_string(serialized, "serialized")], name=scope,
                        out_type=dtypes.as_dtype(out_type))


def _serialize_parts(indices, values, shape, dtype) -> list:
    return [make_tensor_proto(np.asarray(indices, np.int64)).SerializeToString(),
            make_tensor_proto(np.asarray(values), dtype=dtype).SerializeToString(),
            make_tensor_proto(np.asarray(shape, np.int64)).SerializeToString()]


def _serialize_sparse_kernel(indices, values, shape, *, T):  # noqa: N803
    return string_array(_serialize_parts(indices, values, shape, T))


def _serialize_many_sparse_kernel(indices, values, shape, *, T):  # noqa: N803
    indices, values, shape = np.asarray(indices), np.asarray(values), np.asarray(shape)
    if shape.size < 2:
        raise _invalid(f"Input SparseTensor must have rank at least 2, but got rank "
                       f"{shape.size}")
    rows = []
    for row in range(int(shape[0])):
        mask = indices[:, 0] == row
        rows.append(_serialize_parts(indices[mask][:, 1:], values[mask], shape[1:], T))
    out = np.empty((len(rows), 3), dtype=object)
    for i, parts in enumerate(rows):
        out[i] = parts
    return out


def _deserialize_many_sparse_kernel(serialized, *, dtype):
    serialized = np.asarray(serialized, dtype=object)
    all_indices, all_values, shapes = [], [], []
    proto = make_tensor_proto(np.zeros(0, np.float32))
    for row, parts in enumerate(serialized.reshape(-1, 3)):
        arrays = []
        for part in parts:
            proto.ParseFromString(part)
            arrays.append(make_ndarray(proto))
        indices, values, shape = arrays
        if values.dtype != np.dtype(dtype.as_numpy_dtype):
            raise _invalid(f"Requested SparseTensor of type {dtype.name} but "
                           f"SparseTensor[{row}].values.dtype() == "
                           f"{dtypes.as_dtype(values.dtype).name}")
        all_indices.append(np.concatenate(
            [np.full((len(indices), 1), row, np.int64), indices.reshape(len(indices), len(shape))],
            axis=1))
        all_values.append(values)
        shapes.append(shape)
    rank = len(shapes[0]) if shapes else 0
    dense = np.max(np.stack(shapes), axis=0) if shapes else np.zeros(0, np.int64)
    indices = np.concatenate(all_indices) if all_indices else np.zeros((0, rank + 1), np.int64)
    values = np.concatenate(all_values) if all_values else \
        np.zeros(0, dtype.as_numpy_dtype)
    order = np.lexsort(indices.T[::-1]) if len(indices) else np.zeros(0, np.int64)
    return (indices[order].astype(np.int64), values[order].astype(dtype.as_numpy_dtype),
            np.concatenate([[len(shapes)], dense]).astype(np.int64))


define_op("SerializeSparse", kernel=_serialize_sparse_kernel,
          infer=lambda inputs, attrs: [(dtypes.string, TensorShape([3]))])
define_op("SerializeManySparse", kernel=_serialize_many_sparse_kernel,
          infer=lambda inputs, attrs: [(dtypes.string, TensorShape([None, 3]))])
define_op("DeserializeManySparse", kernel=_deserialize_many_sparse_kernel,
          infer=lambda inputs, attrs: [(dtypes.int64, TensorShape([None, None])),
                                       (attrs["dtype"], TensorShape([None])),
                                       (dtypes.int64, TensorShape([None]))])
for _type in ("SerializeSparse", "SerializeManySparse", "DeserializeManySparse"):
    NotDifferentiable(_type)


def _sparse_parts(sp_input, out_type) -> list:
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"sp_input must be a SparseTensor, got {type(sp_input).__name__}")
    if dtypes.as_dtype(out_type) is not dtypes.string:
        raise ValueError("out_type must be tf.string: gradflow has no variant serialization")
    return [sp_input.indices, sp_input.values, sp_input.dense_shape]


def serialize_sparse(sp_input, name: Optional[str] = None, out_type=dtypes.string) -> Tensor:
    """A ``SparseTensor`` as 3 strings: its indices, values and shape as TensorProtos."""
    parts = _sparse_parts(sp_input, out_type)
    with op_scope(name, "SerializeSparse", parts) as scope:
        return apply_op("SerializeSparse", parts, name=scope, T=parts[1].dtype)


def serialize_many_sparse(sp_input, name: Optional[str] = None,
                          out_type=dtypes.string) -> Tensor:
    """A ``SparseTensor`` of rank >= 2 as one serialized ``SparseTensor`` per row
    (a ``[rows, 3]`` string tensor)."""
    parts = _sparse_parts(sp_input, out_type)
    with op_scope(name, "SerializeManySparse", parts) as scope:
        return apply_op("SerializeManySparse", parts, name=scope, T=parts[1].dtype)


def deserialize_many_sparse(serialized_sparse, dtype, rank: Optional[int] = None,
                            name: Optional[str] = None) -> SparseTensor:
    """The rows of ``serialize_many_sparse`` as one ``SparseTensor`` (the dense shape
    is the largest of the rows' shapes)."""
    with op_scope(name, "DeserializeManySparse", [serialized_sparse]) as scope:
        serialized = _string(serialized_sparse, "serialized_sparse")
        indices, values, shape = apply_op("DeserializeManySparse", [serialized], name=scope,
                                          dtype=dtypes.as_dtype(dtype))
        if rank is not None:
            indices.set_shape([None, rank])
            shape.set_shape([rank])
        return SparseTensor(indices, values, shape)
