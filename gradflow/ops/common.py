"""Small helpers every op family uses: adding an op, and common shape/dtype inference."""
from __future__ import annotations

import functools
import inspect
from typing import Callable, Optional, Sequence, Union

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant_value, convert_to_tensor, make_ndarray
from gradflow.framework.graph import (Operation, Tensor, get_default_graph, graph_of,
                                      op_scope)
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.tensor_shape import TensorShape

__all__ = ["constructor", "outer_scope", "apply_op", "graph_for", "as_tensor", "binary_operands",
           "broadcast_shape", "same_as_input", "static_ints", "static_axes", "STATIC_LIST_LIMIT",
           "check_same_dtype", "check_dtype_in", "check_python_operand", "FLOATING", "NUMERIC",
           "REAL_NUMERIC", "TRAINABLE"]

FLOATING = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
TRAINABLE = FLOATING + (dtypes.complex64, dtypes.complex128)
REAL_NUMERIC = FLOATING + (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64,
                           dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64)
NUMERIC = REAL_NUMERIC + (dtypes.complex64, dtypes.complex128)


def constructor(default_name: str, *inputs: str, single_op: bool = True) -> Callable:
    """Makes a function a public op constructor: its body runs inside ``op_scope``.

    ``default_name`` is TF1's default op name; ``inputs`` name the parameters that are
    op inputs (tensors or Python values converted to constants). The wrapped function
    gets ``name`` = the scope's exact name ('Reshape/', 'y/'): it converts its Python
    arguments inside, named after the argument (``convert_to_tensor(shape,
    name="shape")`` makes ``Reshape/shape``), and passes ``name`` on to its result op.
    A failing call leaves the graph untouched (see ``op_scope``).

    Hot path: when ``single_op`` (the body creates one op from its inputs and nothing
    else) and every input is already a Tensor, the body runs without the scope, with
    ``name`` as given: the op gets the same name (``create_op`` uniquifies as the scope
    would) and is either created or not, so there is nothing to undo.
    """
    def decorate(fn: Callable) -> Callable:
        params = list(inspect.signature(fn).parameters)
        name_at = params.index("name")
        slots = tuple((params.index(arg), arg) for arg in inputs)

        def in_scope(*args, **kwargs):
            count = len(args)
            values = [args[at] if at < count else kwargs.get(arg) for at, arg in slots]
            name = args[name_at] if name_at < count else kwargs.get("name")
            with op_scope(name, default_name, values) as scope:
                if name_at < count:
                    args = args[:name_at] + (scope,) + args[name_at + 1:]
                else:
                    kwargs["name"] = scope
                return fn(*args, **kwargs)

        # The hot path, spelled out for the common shapes (inputs first, passed by
        # position): a type test per input, nothing else.
        if not single_op:
            build = in_scope
        elif len(slots) == 1 and slots[0][0] == 0:
            def build(*args, **kwargs):
                if args and type(args[0]) is Tensor:
                    return fn(*args, **kwargs)
                return in_scope(*args, **kwargs)
        elif len(slots) == 2 and slots[0][0] == 0 and slots[1][0] == 1:
            def build(*args, **kwargs):
                if len(args) > 1 and type(args[0]) is Tensor and type(args[1]) is Tensor:
                    return fn(*args, **kwargs)
                return in_scope(*args, **kwargs)
        else:
            def build(*args, **kwargs):
                count = len(args)
                for at, arg in slots:
                    if type(args[at] if at < count else kwargs.get(arg)) is not Tensor:
                        return in_scope(*args, **kwargs)
                return fn(*args, **kwargs)

        functools.update_wrapper(build, fn)

        build.default_name = default_name
        build.inputs = inputs
        return build

    return decorate


def outer_scope(scope: str) -> str:
    """The name scope enclosing ``scope`` (a constructor's 'a/Mean/' gives 'a/'), for
    the few constants TF1 makes outside its op's scope (a reduction's default axes)."""
    return scope[:scope.rstrip("/").rfind("/") + 1]


# The graph new ops on ``values`` belong to: ``graph_of`` itself (every op pays this call).
graph_for = graph_of


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
    default = get_default_graph()
    graph = default if type(like) is Tensor and like._op._graph is default else graph_for([like])
    if graph is default:
        return convert_to_tensor(value, dtype=dtype, name=name)
    with graph.as_default():
        return convert_to_tensor(value, dtype=dtype, name=name)


def binary_operands(x, y, op_name: str, names: tuple[str, str] = ("x", "y")
                    ) -> tuple[Tensor, Tensor]:
    """Converts the operands of a binary op; a non-tensor takes the tensor's dtype.
    Constants are named after the argument (``names``), as TF1 names them."""
    if isinstance(x, Tensor) or not isinstance(y, Tensor):
        x = as_tensor(x, name=names[0])
        y = as_tensor(y, dtype=None if isinstance(y, Tensor) else x.dtype, name=names[1],
                      like=x)
    else:
        y = as_tensor(y, name=names[1])
        x = as_tensor(x, dtype=y.dtype, name=names[0], like=y)
    check_same_dtype(x, y, op_name, names)
    return x, y


def check_same_dtype(x: Tensor, y: Tensor, op_name: str,
                     names: tuple[str, str] = ("x", "y")) -> None:
    """TF's TypeError when the operands (arguments ``names``) differ in dtype."""
    if x.dtype is not y.dtype:
        first, second = names
        raise TypeError(f"Input '{second}' of '{op_name}' Op has type {y.dtype.name} that "
                        f"does not match type {x.dtype.name} of argument '{first}'. "
                        f"({first}: {x.name}, {second}: {y.name}; cast one with tf.cast)")


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
            raise errors.InvalidShapeError(
                f"Dimensions must be equal, but are {p} and {q}",
                f" (Incompatible shapes: {a} and {b} cannot be broadcast"
                f"{' in ' + where if where else ''})")
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
