"""Sums and products of tensors (add_n, accumulate_n, matmul) and ``Tensor``'s Python
operators (``+``, ``*``, ``@``, comparisons, ``-x``...) with ``IndexedSlices``' unary
minus, installed on import.
"""
from __future__ import annotations

import functools
from typing import Callable, Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.array.sources import identity
from gradflow.ops.common import (NUMERIC, apply_op, binary_operands, broadcast_shape,
                                 check_dtype_in, constructor)
from gradflow.ops.math.elementwise import (abs, floormod, greater, less, logical_and, logical_not,
                                           logical_or, logical_xor, negative, pow, truediv)
from gradflow.ops.primitives import (add, conj, floordiv, greater_equal, less_equal, multiply,
                                     reduce_to_shape_of, subtract)


# ------------------------------------------------------------------------- add_n
def _infer_add_n(inputs, attrs):
    first = inputs[0]
    shape = first.shape
    for t in inputs[1:]:
        if t.dtype is not first.dtype:
            raise TypeError(f"All inputs of AddN must have one dtype, got "
                            f"{[x.dtype.name for x in inputs]}")
        if not shape.is_compatible_with(t.shape):
            raise ValueError(f"Shapes must be equal for AddN: {shape} vs {t.shape} "
                             f"({first.name}, {t.name})")
        shape = shape.merge_with(t.shape)
    return [(first.dtype, shape)]


def _add_n_kernel(*xs, **_):
    if len(xs) == 1:
        return xs[0]
    total = np.asarray(xs[0] + xs[1])  # a fresh array: safe to accumulate into in place
    for x in xs[2:]:
        np.add(total, x, out=total)
    return total


define_op("AddN", infer=_infer_add_n, kernel=_add_n_kernel)


define_op("AccumulateNV2", infer=_infer_add_n, kernel=_add_n_kernel)


@RegisterGradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


RegisterGradient("AccumulateNV2")(_add_n_grad)


def _sum_inputs(inputs, what: str) -> list[Tensor]:
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError(f"inputs to {what} must be a non-empty list of Tensors, got "
                         f"{inputs!r}")
    tensors = [convert_to_tensor(t) for t in inputs]
    return tensors


def add_n(inputs, name: Optional[str] = None) -> Tensor:
    """Sums a list of same-shaped tensors in one op (one unnamed tensor: itself)."""
    if name is None and isinstance(inputs, (list, tuple)) and len(inputs) == 1 \
            and isinstance(inputs[0], Tensor):
        return inputs[0]
    return _add_n(inputs, name=name)


@constructor("AddN", "inputs", single_op=False)
def _add_n(inputs, name: Optional[str] = None) -> Tensor:
    tensors = _sum_inputs(inputs, "add_n")
    if len(tensors) == 1:
        return identity(tensors[0], name=name)
    return apply_op("AddN", tensors, name=name)


@constructor("AccumulateNV2", "inputs", "shape", "tensor_dtype", single_op=False)
def accumulate_n(inputs, shape=None, tensor_dtype=None, name: Optional[str] = None) -> Tensor:
    """Like ``add_n``; the terms may be summed in any order, as soon as each is ready."""
    tensors = _sum_inputs(inputs, "accumulate_n")
    if tensor_dtype is not None and any(t.dtype is not dtypes.as_dtype(tensor_dtype)
                                        for t in tensors):
        raise TypeError(f"accumulate_n: inputs must all be {dtypes.as_dtype(tensor_dtype).name}")
    if len(tensors) == 1:
        return tensors[0]
    result = apply_op("AccumulateNV2", tensors, name=name or "AccumulateNV2",
                      shape=TensorShape(shape))
    if shape is not None:
        result.set_shape(shape)
    return result


# ------------------------------------------------------------------------ matmul
def _infer_matmul(inputs, attrs):
    a, b = inputs
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    if a.dtype is not b.dtype:
        raise TypeError(f"Input 'b' of 'MatMul' Op has type {b.dtype.name} that does not match "
                        f"type {a.dtype.name} of argument 'a'. ({a.name}, {b.name})")
    sa, sb = a.shape.with_rank(2).as_tuple(), b.shape.with_rank(2).as_tuple()
    rows, inner_a = (sa[1], sa[0]) if ta else sa
    inner_b, cols = (sb[1], sb[0]) if tb else sb
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise errors.InvalidShapeError(
            f"Dimensions must be equal, but are {inner_a} and {inner_b}",
            f" (MatMul of {a.name} with shape {a.shape} and {b.name} with shape "
            f"{b.shape}, transpose_a={ta}, transpose_b={tb})")
    return [(a.dtype, TensorShape([rows, cols]))]


def _matmul_kernel(a, b, *, transpose_a, transpose_b):
    try:
        return np.matmul(a.T if transpose_a else a, b.T if transpose_b else b)
    except ValueError:
        dims = [",".join(map(str, np.shape(t))) for t in (a, b)]
        raise errors.InvalidArgumentError(
            None, None, f"Matrix size-incompatible: In[0]: [{dims[0]}], In[1]: [{dims[1]}] "
            f"{int(transpose_a)} {int(transpose_b)}") from None


define_op("MatMul", infer=_infer_matmul, kernel=_matmul_kernel)


def _infer_batch_matmul(inputs, attrs):
    a, b = inputs
    if a.dtype is not b.dtype:
        raise TypeError(f"Input 'y' of 'BatchMatMulV2' Op has type {b.dtype.name} that does not "
                        f"match type {a.dtype.name} of argument 'x'. ({a.name}, {b.name})")
    sa, sb = a.shape.as_tuple(), b.shape.as_tuple()
    if sa is None or sb is None:
        return [(a.dtype, TensorShape(None))]
    if len(sa) < 2 or len(sb) < 2:
        raise ValueError(f"BatchMatMul operands must have rank >= 2, got {a.shape} and "
                         f"{b.shape}")
    rows, inner_a = (sa[-1], sa[-2]) if attrs["adj_x"] else sa[-2:]
    inner_b, cols = (sb[-1], sb[-2]) if attrs["adj_y"] else sb[-2:]
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise errors.InvalidShapeError(
            f"Dimensions must be equal, but are {inner_a} and {inner_b}",
            f" (BatchMatMulV2 of {a.name} with shape {a.shape} and {b.name} with shape "
            f"{b.shape})")
    batch = broadcast_shape(TensorShape(sa[:-2]), TensorShape(sb[:-2]), "batch dimensions")
    return [(a.dtype, batch.concatenate([rows, cols]))]


def _adjoint(x: np.ndarray) -> np.ndarray:
    swapped = np.swapaxes(x, -1, -2)
    return np.conj(swapped) if x.dtype.kind == "c" else swapped


def _batch_matmul_kernel(a, b, *, adj_x, adj_y):
    try:
        return np.matmul(_adjoint(a) if adj_x else a, _adjoint(b) if adj_y else b)
    except ValueError:
        dims = [",".join(map(str, np.shape(t))) for t in (a, b)]
        if np.ndim(a) == np.ndim(b) == 2:  # TF1 makes a MatMul of these: its words
            message = f"Matrix size-incompatible: In[0]: [{dims[0]}], In[1]: [{dims[1]}]"
        else:
            message = f"In[0] and In[1] shapes must match: [{dims[0]}] [{dims[1]}]"
        raise errors.InvalidArgumentError(
            None, None, f"{message} {int(adj_x)} {int(adj_y)}") from None


define_op("BatchMatMulV2", infer=_infer_batch_matmul, kernel=_batch_matmul_kernel)


def _matmul_grads(op, grad, a: Tensor, b: Tensor, flip_a: bool, flip_b: bool,
                  product: Callable):
    """Gradients of ``C = f(a) @ g(b)`` where f, g flip (transpose/adjoint) or not.

    da = grad @ g(b)^H, or its flip; db = f(a)^H @ grad, or its flip: two products.
    """
    da = db = None
    if gradient_needed(op.inputs[0]):
        da = product(b, grad, flip_b, True) if flip_a else product(grad, b, False, not flip_b)
    if gradient_needed(op.inputs[1]):
        # TF1 builds both products, db second: it is ``MatMul_1`` also when da is skipped
        with_name = functools.partial(product, name="MatMul_1")
        db = with_name(grad, a, True, flip_a) if flip_b else with_name(a, grad, not flip_a, False)
    return da, db


@RegisterGradient("MatMul")
def _matmul_grad(op, grad):
    """MatMul only transposes, so complex operands are conjugated explicitly."""
    def product(x, y, tx, ty, name="MatMul"):
        return apply_op("MatMul", [x, y], name=name, transpose_a=tx, transpose_b=ty)
    a, b = op.inputs
    return _matmul_grads(op, grad, conj(a), conj(b), op.get_attr("transpose_a"),
                         op.get_attr("transpose_b"), product)


@RegisterGradient("BatchMatMulV2")
def _batch_matmul_grad(op, grad):
    def product(x, y, adj_x, adj_y, name="MatMul"):
        return apply_op("BatchMatMulV2", [x, y], name=name, adj_x=adj_x, adj_y=adj_y)
    a, b = op.inputs
    da, db = _matmul_grads(op, grad, a, b, op.get_attr("adj_x"), op.get_attr("adj_y"), product)
    return (None if da is None else reduce_to_shape_of(da, a),
            None if db is None else reduce_to_shape_of(db, b))


@constructor("MatMul", "a", "b", "transpose_a", "transpose_b", "adjoint_a", "adjoint_b",
             "a_is_sparse", "b_is_sparse", single_op=False)
def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False, adjoint_a: bool = False,
           adjoint_b: bool = False, a_is_sparse: bool = False, b_is_sparse: bool = False,
           name: Optional[str] = None) -> Tensor:
    """Matrix product ``a @ b``, batched (with broadcasting) when either has rank > 2."""
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    a, b = binary_operands(a, b, "MatMul", ("a", "b"))
    check_dtype_in(a, NUMERIC, "MatMul", "a")
    ra, rb = a.shape.ndims, b.shape.ndims
    if ra == 2 and rb == 2:
        if adjoint_a:
            a = conj(a)
        if adjoint_b:
            b = conj(b)
        return apply_op("MatMul", [a, b], name=name or "MatMul",
                        transpose_a=transpose_a or adjoint_a, transpose_b=transpose_b or adjoint_b)
    if transpose_a and a.dtype.is_complex:
        a = conj(a)
    if transpose_b and b.dtype.is_complex:
        b = conj(b)
    return apply_op("BatchMatMulV2", [a, b], name=name or "MatMul",
                    adj_x=transpose_a or adjoint_a, adj_y=transpose_b or adjoint_b)


# -------------------------------------------------------------- Tensor operators
def _reverse(fn: Callable) -> Callable:
    return lambda self, other: fn(other, self)


def _install_operators() -> None:
    def truediv_op(x, y):
        return truediv(x, y, name="truediv")

    binary_ops = {
        "add": lambda x, y: add(x, y, name="add"),
        "sub": lambda x, y: subtract(x, y, name="sub"),
        "mul": lambda x, y: multiply(x, y, name="mul"),
        "truediv": truediv_op,
        "floordiv": lambda x, y: floordiv(x, y, name="floordiv"),
        "mod": lambda x, y: floormod(x, y, name="mod"),
        "pow": lambda x, y: pow(x, y, name="pow"),
        "matmul": lambda x, y: matmul(x, y, name="matmul"),
        "and": lambda x, y: logical_and(x, y, name="and"),
        "or": lambda x, y: logical_or(x, y, name="or"),
        "xor": lambda x, y: logical_xor(x, y, name="xor"),
    }
    for name, fn in binary_ops.items():
        setattr(Tensor, f"__{name}__", fn)
        setattr(Tensor, f"__r{name}__", _reverse(fn))
    Tensor.__lt__ = lambda x, y: less(x, y)
    Tensor.__le__ = lambda x, y: less_equal(x, y)
    Tensor.__gt__ = lambda x, y: greater(x, y)
    Tensor.__ge__ = lambda x, y: greater_equal(x, y)
    Tensor.__neg__ = lambda x: negative(x, name="Neg")
    IndexedSlices.__neg__ = lambda x: IndexedSlices(negative(x.values), x.indices,
                                                    x.dense_shape)
    Tensor.__abs__ = lambda x: abs(x, name="Abs")
    Tensor.__invert__ = lambda x: logical_not(x, name="invert")
    Tensor.__pos__ = lambda x: x


_install_operators()
