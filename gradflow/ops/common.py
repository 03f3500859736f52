"""Small helpers every op family uses: adding an op, and common shape/dtype inference."""
from __future__ import annotations

from typing import Callable, Optional, Sequence, Union

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant_value, convert_to_tensor, make_ndarray
from gradflow.framework.graph import Graph, Operation, Tensor, get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.tensor_shape import TensorShape

__all__ = ["apply_op", "graph_for", "as_tensor", "binary_operands", "broadcast_shape",
           "same_as_input", "static_ints", "static_axes", "STATIC_LIST_LIMIT", "check_same_dtype",
           "check_dtype_in", "check_python_operand", "FLOATING", "NUMERIC", "REAL_NUMERIC",
           "TRAINABLE"]

FLOATING = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
TRAINABLE = FLOATING + (dtypes.complex64, dtypes.complex128)
REAL_NUMERIC = FLOATING + (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64,
                           dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64)
NUMERIC = REAL_NUMERIC + (dtypes.complex64, dtypes.complex128)


def graph_for(values: Sequence) -> Graph:
    """The graph new ops on ``values`` belong to.

    The default graph, unless it is a plain graph and the tensors live in another one
    (TF1 builds ops in their inputs' graph). Function graphs capture foreign tensors.
    """
    graph = get_default_graph()
    if graph.outer_graph is None:
        for value in values:
            if isinstance(value, Tensor) and value._op._graph is not graph:
                return value._op._graph
    return graph


def apply_op(op_type: str, inputs: Sequence[Tensor], name: Optional[str] = None, **attrs):
    """Adds an op; returns its only output, the list of outputs, or the op if it has none.

    An IndexedSlices input (a sparse gradient reaching a dense gradient rule) is densified,
    as TF1's op constructors do.
    """
    inputs = [convert_to_tensor(t) if isinstance(t, IndexedSlices) else t for t in inputs]
    op = graph_for(inputs).create_op(op_type, inputs, attrs, name)
    outputs = op._outputs
    if len(outputs) == 1:
        return outputs[0]
    return outputs if outputs else op


def as_tensor(value, dtype=None, name: Optional[str] = None, like: Optional[Tensor] = None):
    """``convert_to_tensor``, building constants in ``like``'s graph when given."""
    if isinstance(value, Tensor) or like is None:
        return convert_to_tensor(value, dtype=dtype, name=name)
    graph = graph_for([like])
    if graph is get_default_graph():
        return convert_to_tensor(value, dtype=dtype, name=name)
    with graph.as_default():
        return convert_to_tensor(value, dtype=dtype, name=name)


def binary_operands(x, y, op_name: str) -> tuple[Tensor, Tensor]:
    """Converts the operands of a binary op; a non-tensor takes the tensor's dtype."""
    if isinstance(x, Tensor) or not isinstance(y, Tensor):
        x = as_tensor(x, name="x")
        y = as_tensor(y, dtype=None if isinstance(y, Tensor) else x.dtype, name="y", like=x)
    else:
        y = as_tensor(y, name="y")
        x = as_tensor(x, dtype=y.dtype, name="x", like=y)
    check_same_dtype(x, y, op_name)
    return x, y


def check_same_dtype(x: Tensor, y: Tensor, op_name: str) -> None:
    if x.dtype is not y.dtype:
        raise TypeError(f"Input 'y' of '{op_name}' Op has type {y.dtype.name} that does not "
                        f"match type {x.dtype.name} of argument 'x'. (x: {x.name}, "
                        f"y: {y.name}; cast one with gf.cast)")


def check_python_operand(value, dtype: dtypes.DType, arg: str, op_type: str) -> None:
    """TF's TypeError naming ``arg`` when a Python number given for it does not fit
    ``dtype`` (checked before anything is built; tensors are checked by inference)."""
    if not isinstance(value, (int, float, complex, np.number)):
        return
    try:
        make_ndarray(value, dtype)
    except TypeError as err:
        raise TypeError(f"Expected {dtype.name} passed to parameter '{arg}' of op '{op_type}', "
                        f"got {value!r} of type '{type(value).__name__}' instead. Error: {err}"
                        ) from None


def check_dtype_in(t: Tensor, allowed: Sequence[dtypes.DType], op_name: str,
                   arg: str = "x") -> None:
    if t.dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise TypeError(f"Value passed to parameter '{arg}' of '{op_name}' ({t.name}) has "
                        f"DataType {t.dtype.name} not in list of allowed values: {names}")


def broadcast_shape(a: TensorShape, b: TensorShape,
                    context: Union[str, Callable[[], str]] = "") -> TensorShape:
    """NumPy broadcasting of two static shapes; ValueError if they cannot broadcast.
    ``context`` (or what it returns, on hot paths: only an error needs it) says where."""
    da, db = a.as_tuple(), b.as_tuple()
    if da is None or db is None:
        return TensorShape(None)
    if da == db:
        return a
    n = max(len(da), len(db))
    da = (1,) * (n - len(da)) + da
    db = (1,) * (n - len(db)) + db
    result = []
    for p, q in zip(da, db):
        if p == 1:
            result.append(q)
        elif q == 1 or p == q:
            result.append(p)
        elif p is None:
            result.append(q)
        elif q is None:
            result.append(p)
        else:
            where = context() if callable(context) else context
            raise ValueError(f"Incompatible shapes: {a} and {b} cannot be broadcast"
                             f"{' in ' + where if where else ''}")
    return TensorShape.from_tuple(tuple(result))


def same_as_input(inputs, attrs):
    """Infer function of elementwise unary ops: output like input 0."""
    x = inputs[0]
    return [(x._dtype, x._shape)]


# The longest int vector (a shape, axes) that build-time inference spells out in Python.
STATIC_LIST_LIMIT = 1 << 16


def static_ints(t: Tensor) -> Optional[list[int]]:
    """The build-time value of an integer tensor as a flat list of ints, if known.

    Only small values (shapes, axes, sizes) are worth a list of Python ints; a large
    constant counts as unknown rather than costing many times its size.
    """
    value = constant_value(t)
    if value is None or np.size(value) > STATIC_LIST_LIMIT:
        return None
    return [int(v) for v in np.asarray(value).reshape(-1)]


def static_axes(axis: Optional[Tensor], ndims: Optional[int],
                input_name: str = "input") -> Optional[list[int]]:
    """Normalised (non-negative, sorted, unique) reduction axes, if known statically."""
    if axis is None:
        return None if ndims is None else list(range(ndims))
    values = static_ints(axis)
    if values is None or ndims is None:
        return None
    for a in values:
        if not -ndims <= a < max(ndims, 1):
            raise ValueError(f"Invalid reduction dimension {a} for {input_name} with {ndims} "
                             "dimensions.")
    return sorted({a % ndims if ndims else 0 for a in values})


def op_input_shapes(op: Operation) -> list[TensorShape]:
    return [t.shape for t in op.inputs]
