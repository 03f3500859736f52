"""Tensor element types, named and behaving as in TensorFlow 1.x."""
from __future__ import annotations

import builtins

import numpy as np

__all__ = [
    "DType", "as_dtype", "float16", "bfloat16", "float32", "float64", "half", "double",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
    "complex64", "complex128", "string", "resource", "variant",
    "qint8", "quint8", "qint16", "quint16", "qint32", "QUANTIZED_DTYPES",
]


class DType:
    """An element type: a TF name, a NumPy type and the predicates TF1 code asks of it."""

    __slots__ = ("name", "_numpy", "is_floating", "is_integer", "is_complex", "is_bool",
                 "is_unsigned", "is_quantized", "size")

    def __init__(self, name: str, numpy_type, kind: str, size: int):
        self.name = name
        self._numpy = numpy_type
        self.is_floating = kind == "float"
        self.is_integer = kind in ("int", "uint")
        self.is_unsigned = kind == "uint"
        self.is_complex = kind == "complex"
        self.is_bool = kind == "bool"
        self.is_quantized = kind == "quantized"
        self.size = size

    @property
    def as_numpy_dtype(self):
        return self._numpy

    @property
    def base_dtype(self) -> "DType":
        return self

    @property
    def real_dtype(self) -> "DType":
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    @property
    def is_numeric(self) -> bool:
        return self.is_floating or self.is_integer or self.is_complex

    @property
    def is_trainable(self) -> bool:
        """Whether gradients flow through tensors of this type (floating or complex)."""
        return self.is_floating or self.is_complex

    @property
    def min(self):
        if self.is_quantized:
            raise TypeError(f"Cannot find minimum value of {self.name} with quantized type "
                            f"{self.name}.")
        if self.is_floating:
            return np.finfo(self._numpy).min
        if self.is_integer:
            return np.iinfo(self._numpy).min
        raise TypeError(f"Cannot find minimum value of {self.name}.")

    @property
    def max(self):
        if self.is_quantized:
            raise TypeError(f"Cannot find maximum value of {self.name} with quantized type "
                            f"{self.name}.")
        if self.is_floating:
            return np.finfo(self._numpy).max
        if self.is_integer:
            return np.iinfo(self._numpy).max
        raise TypeError(f"Cannot find maximum value of {self.name}.")

    def is_compatible_with(self, other) -> bool:
        return self is as_dtype(other)

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __str__(self) -> str:
        return f"<dtype: '{self.name}'>"

    def __reduce__(self):
        return as_dtype, (self.name,)


def _bfloat16_numpy_type():
    try:  # ml_dtypes provides a real bfloat16; without it we store bfloat16 as float32.
        import ml_dtypes
        return ml_dtypes.bfloat16
    except ImportError:
        return np.float32


float16 = DType("float16", np.float16, "float", 2)
bfloat16 = DType("bfloat16", _bfloat16_numpy_type(), "float", 2)
float32 = DType("float32", np.float32, "float", 4)
float64 = DType("float64", np.float64, "float", 8)
int8 = DType("int8", np.int8, "int", 1)
int16 = DType("int16", np.int16, "int", 2)
int32 = DType("int32", np.int32, "int", 4)
int64 = DType("int64", np.int64, "int", 8)
uint8 = DType("uint8", np.uint8, "uint", 1)
uint16 = DType("uint16", np.uint16, "uint", 2)
uint32 = DType("uint32", np.uint32, "uint", 4)
uint64 = DType("uint64", np.uint64, "uint", 8)
bool = DType("bool", np.bool_, "bool", 1)  # noqa: A001 - TF's public name
complex64 = DType("complex64", np.complex64, "complex", 8)
complex128 = DType("complex128", np.complex128, "complex", 16)
string = DType("string", np.object_, "string", 0)
resource = DType("resource", np.object_, "handle", 0)
variant = DType("variant", np.object_, "handle", 0)
# Quantized types: names (and NumPy record types) for TF1 code that mentions them; no
# op computes with them.
qint8 = DType("qint8", np.dtype([("qint8", np.int8)]), "quantized", 1)
quint8 = DType("quint8", np.dtype([("quint8", np.uint8)]), "quantized", 1)
qint16 = DType("qint16", np.dtype([("qint16", np.int16)]), "quantized", 2)
quint16 = DType("quint16", np.dtype([("quint16", np.uint16)]), "quantized", 2)
qint32 = DType("qint32", np.dtype([("qint32", np.int32)]), "quantized", 4)
half = float16
double = float64
QUANTIZED_DTYPES = frozenset((qint8, quint8, qint16, quint16, qint32))

_ALL = (float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, uint16,
        uint32, uint64, bool, complex64, complex128, string, resource, variant,
        qint8, quint8, qint16, quint16, qint32)
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update({"half": float16, "double": float64, "float": float32})
_BY_NUMPY = {np.dtype(d._numpy): d for d in reversed(_ALL) if d._numpy is not np.object_}
_BY_NUMPY[np.dtype(np.float32)] = float32
_BY_NUMPY[np.dtype(np.object_)] = string
_BY_NUMPY[np.dtype(np.str_)] = string
_BY_NUMPY[np.dtype(np.bytes_)] = string


def as_dtype(type_value) -> DType:
    """Converts a DType, name, NumPy type or Python type to a DType (TypeError if unknown)."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        found = _BY_NAME.get(type_value)
        if found is not None:
            return found
    elif type_value is float:
        return float64
    elif type_value is int:
        return int64
    elif type_value is builtins.bool:
        return bool
    elif type_value is not None:  # NumPy would read None as float64; TF refuses it
        try:
            np_dtype = np.dtype(type_value)
        except TypeError:
            np_dtype = None
        if np_dtype is not None:
            if np_dtype.kind in "SUO":
                return string
            found = _BY_NUMPY.get(np_dtype)
            if found is not None:
                return found
    raise TypeError(f"Cannot convert the argument `type_value`: {type_value!r} to a gradflow "
                    "DType.")
