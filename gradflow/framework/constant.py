"""Constants and ``convert_to_tensor``: how Python and NumPy values enter the graph.

TF1 rules: Python floats become float32, ints int32 (int64 when too large), NumPy
arrays keep their dtype, and a requested dtype must hold the value exactly.
"""
from __future__ import annotations

import numbers
from typing import Callable, Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape

__all__ = ["constant", "convert_to_tensor", "convert_n_to_tensor", "constant_value",
           "register_tensor_conversion_function", "register_static_value", "is_tensor",
           "make_ndarray", "string_array", "FOLD_LIMIT", "foldable"]

_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1
_INT64_MIN, _UINT64_END = -(2 ** 63), 2 ** 64


def _infer_const(inputs, attrs):
    value, dtype = attrs["value"], attrs["dtype"]
    if not isinstance(value, np.ndarray):
        raise TypeError(f"A Const op's value must be a NumPy array, got {type(value).__name__}")
    if dtype is not dtypes.string and value.dtype != np.dtype(dtype.as_numpy_dtype):
        raise TypeError(f"A Const op of dtype {dtype.name} cannot hold a value of dtype "
                        f"{value.dtype}")
    return [(dtype, TensorShape.from_tuple(value.shape))]


def _const_kernel(*, value, dtype):
    return value


define_op("Const", infer=_infer_const, kernel=_const_kernel)
NotDifferentiable("Const")


def _python_value_dtype(value, strict: bool = True) -> dtypes.DType:
    """The TF1 default dtype for a (nested) Python value.

    Integers take the narrowest of int32, int64 and (beyond int64, alone) uint64, as TF
    infers; one no 64-bit type holds is a TypeError when ``strict`` (no dtype was asked
    for), else it counts as int64 and the requested dtype decides.
    """
    kinds = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, (bool, np.bool_)):
            kinds.add("bool")
        elif isinstance(item, numbers.Integral):
            kinds.add(_int_kind(int(item), value, strict))
        elif isinstance(item, numbers.Real):
            kinds.add("float")
        elif isinstance(item, numbers.Complex):
            kinds.add("complex")
        elif isinstance(item, (str, bytes)):
            kinds.add("string")
        elif isinstance(item, np.ndarray):
            return dtypes.as_dtype(item.dtype)
        elif isinstance(item, Tensor):
            raise TypeError("Cannot make a constant from a nested structure containing the "
                            f"symbolic Tensor {item.name}; use gf.stack instead.")
        elif item is None and item is value:
            raise ValueError("None values not supported.")
        else:
            raise TypeError(f"Failed to convert elements of {value!r} to Tensor. Consider "
                            "casting elements to a supported type. See "
                            "https://www.tensorflow.org/api_docs/python/tf/dtypes for "
                            "supported TF dtypes.")
    if "uint64" in kinds and kinds & {"int64", "int32", "bool"}:
        kinds.add("float")  # TF: a uint64-only value beside other integers is float32
    for kind, dtype in (("string", dtypes.string), ("complex", dtypes.complex128),
                        ("float", dtypes.float32), ("uint64", dtypes.uint64),
                        ("int64", dtypes.int64), ("int32", dtypes.int32),
                        ("bool", dtypes.bool)):
        if kind in kinds:
            return dtype
    return dtypes.float32  # an empty list


def _int_kind(number: int, value, strict: bool) -> str:
    if _INT32_MIN <= number <= _INT32_MAX:
        return "int32"
    if _INT64_MIN <= number < -_INT64_MIN:
        return "int64"
    if -_INT64_MIN <= number < _UINT64_END:
        return "uint64"
    if not strict:
        return "int64"
    raise TypeError(f"Failed to convert elements of {value!r} to Tensor. Consider casting "
                    f"elements to a supported type: {number} is beyond every 64-bit "
                    "integer dtype.")


def _first_inexact(value, target: dtypes.DType):
    """The first scalar of a (nested) Python ``value`` that ``target`` cannot hold."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
            continue
        try:
            with np.errstate(invalid="ignore", over="ignore"):
                converted = np.asarray(item, dtype=target.as_numpy_dtype)
            if bool(np.all(converted == np.asarray(item))):
                continue
        except (OverflowError, TypeError, ValueError):
            pass
        return item
    return value


def make_ndarray(value, dtype: Optional[dtypes.DType] = None) -> np.ndarray:
    """``value`` as a NumPy array of ``dtype`` (TF1 default if None), refusing lossy casts."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        source_dtype = dtypes.as_dtype(value.dtype)
    else:
        source_dtype = _python_value_dtype(value, strict=dtype is None)
    target = source_dtype if dtype is None else dtypes.as_dtype(dtype)
    if target is dtypes.string:
        return string_array(value)
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            array = np.asarray(value, dtype=target.as_numpy_dtype)
    except (OverflowError, TypeError, ValueError) as err:
        raise _not_representable(value, target) from err
    if target is not source_dtype and not is_exact_conversion(value, array, source_dtype, target):
        raise _not_representable(value, target)
    return array


def _as_bytes_item(item):
    if isinstance(item, bytes):
        return bytes(item)  # np.bytes_ to plain bytes
    if isinstance(item, str):
        return item.encode("utf-8")
    raise TypeError(f"Expected string, but got {item!r} of type '{type(item).__name__}'.")


_ENCODE = np.frompyfunc(_as_bytes_item, 1, 1)


def string_array(value) -> np.ndarray:
    """``value`` (str, bytes, nested lists of them, a NumPy ``<U``/``<S``/object array) as
    TF holds a string tensor: an object array of ``bytes``, ``str`` encoded as UTF-8.

    Anything else (a number, None) is TF's TypeError: ``Expected string, but got ...``
    for Python values, ``Expected binary or unicode string, got ...`` for NumPy arrays.
    """
    array = np.asarray(value, dtype=object)
    try:
        if array.ndim == 0:
            result = np.empty((), dtype=object)
            result[()] = _as_bytes_item(array.item())
            return result
        return _ENCODE(array).astype(object, copy=False) if array.size else array.copy()
    except TypeError:
        if not isinstance(value, np.ndarray):
            raise
        bad = next(item for item in array.reshape(-1) if not isinstance(item, (str, bytes)))
        raise TypeError(f"Expected binary or unicode string, got {bad!r}") from None


def _not_representable(value, target: dtypes.DType) -> TypeError:
    """TF's error for a value ``target`` cannot hold, naming the offending element."""
    if not isinstance(value, (np.ndarray, np.generic)):
        value = _first_inexact(value, target)
    return TypeError(f"Expected {target.name}, but got {value!r} of type "
                     f"'{type(value).__name__}'.")


def is_exact_conversion(value, array: np.ndarray, source: dtypes.DType,
                        target: dtypes.DType) -> bool:
    """Whether casting ``value`` to ``target`` keeps it (float->int must be integral)."""
    if source.is_complex and not target.is_complex:
        return False
    if (source.is_floating or source.is_complex) and (target.is_integer or target.is_bool):
        with np.errstate(invalid="ignore"):
            original = np.asarray(value)
            return bool(np.all(original == array))
    if source.is_integer and target.is_integer:
        return bool(np.all(np.asarray(value) == array))
    return True


def constant(value, dtype=None, shape=None, name: str = "Const",
             verify_shape: bool = False) -> Tensor:
    """A tensor holding ``value`` (broadcast or reshaped to ``shape`` when given)."""
    array = make_ndarray(value, dtype)
    if shape is not None:
        shape = tuple(TensorShape(shape).as_list())
        if array.shape != shape:
            if verify_shape:
                raise TypeError(f"Expected Tensor's shape: {shape}, got {array.shape}.")
            size = int(np.prod(shape))
            if array.size == 1:
                array = np.full(shape, array.reshape(()), dtype=array.dtype)
            elif array.size > size:
                raise ValueError(f"Too many elements provided. Takes at most {size}, but got "
                                 f"{array.size}.")
            else:  # TF1's graph-mode rule: too few values are padded with the last one
                flat = array.reshape(-1)
                pad = flat[-1:] if flat.size else np.zeros(1, array.dtype)
                flat = np.concatenate([flat, np.repeat(pad, size - flat.size)])
                array = flat.reshape(shape)
    array.setflags(write=False)
    graph = get_default_graph()
    op = graph.create_op("Const", (), {"value": array, "dtype": dtypes.as_dtype(array.dtype)
                                       if dtype is None else dtypes.as_dtype(dtype)}, name=name)
    return op._outputs[0]


_CONVERSIONS: list[tuple[type, Callable]] = []


def register_tensor_conversion_function(base_type, conversion_func: Callable,
                                        priority: int = 100) -> None:
    """Teaches ``convert_to_tensor`` a new type: ``fn(value, dtype, name, as_ref)``; a
    function returning ``NotImplemented`` passes the value on (as TF's registry)."""
    _CONVERSIONS.append((base_type, conversion_func))


def is_tensor(value) -> bool:
    return isinstance(value, Tensor)


def convert_to_tensor(value, dtype=None, name: Optional[str] = None, preferred_dtype=None,
                      dtype_hint=None, as_ref: bool = False) -> Tensor:
    """Converts a Tensor, Variable, IndexedSlices, NumPy or Python value to a Tensor."""
    if isinstance(value, Tensor):
        if dtype is not None and dtypes.as_dtype(dtype) is not value._dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} "
                             f"for Tensor with dtype {value._dtype.name}: {value!r}")
        return value
    for base_type, fn in _CONVERSIONS:
        if isinstance(value, base_type):
            result = fn(value, dtype=dtype, name=name, as_ref=as_ref)
            if result is NotImplemented:
                continue
            if dtype is not None and result.dtype is not dtypes.as_dtype(dtype):
                raise ValueError(f"Tensor conversion requested dtype "
                                 f"{dtypes.as_dtype(dtype).name} for {type(value).__name__} "
                                 f"with dtype {result.dtype.name}: {value!r}")
            return result
    if dtype is None and (preferred_dtype or dtype_hint) is not None:
        try:
            return constant(value, dtype=preferred_dtype or dtype_hint, name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name or "Const")


def convert_n_to_tensor(values, dtype=None, name: Optional[str] = None) -> list[Tensor]:
    return [convert_to_tensor(v, dtype=dtype, name=None if name is None else f"{name}_{i}")
            for i, v in enumerate(values)]


_STATIC_VALUE_FNS: dict[str, Callable] = {}

# Build-time evaluation is for shape arithmetic: outputs larger than this are not folded,
# so no graph (nor a loaded file) can make graph construction allocate much.
FOLD_LIMIT = 1024


def foldable(op) -> bool:
    """Whether ``op``'s first output is statically small enough to compute at build time."""
    count = op._outputs[0].shape.num_elements()
    return count is not None and count <= FOLD_LIMIT


def register_static_value(op_type: str):
    """Decorator: ``fn(op) -> ndarray | None`` computes an op's output at build time."""
    def decorate(fn: Callable) -> Callable:
        _STATIC_VALUE_FNS[op_type] = fn
        return fn
    return decorate


def _const_static_value(op):
    return op._attrs["value"]


_STATIC_VALUE_FNS["Const"] = _const_static_value


def constant_value(tensor) -> Optional[np.ndarray]:
    """The value of ``tensor`` if it is known while building the graph, else None."""
    if not isinstance(tensor, Tensor):
        try:
            return np.asarray(tensor)
        except Exception:  # noqa: BLE001 - anything unconvertible has no static value
            return None
    fn = _STATIC_VALUE_FNS.get(tensor._op._type)
    if fn is None or tensor._value_index != 0:
        return None
    return fn(tensor._op)
