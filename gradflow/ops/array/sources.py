"""Array sources: placeholders, identities, stop_gradient, ones and ones_like."""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import as_shape
from gradflow.ops.common import apply_op, constructor, same_as_input
from gradflow.ops.primitives import filled, fill, register_foldable, shape


# ------------------------------------------------------------------------- sources
def _infer_placeholder(inputs, attrs):
    return [(attrs["dtype"], attrs["shape"])]


define_op("Placeholder", infer=_infer_placeholder, kernel=None)


NotDifferentiable("Placeholder")


@constructor("Placeholder")
def placeholder(dtype, shape=None, name: Optional[str] = None) -> Tensor:
    """A tensor that must be fed: ``Session.run(..., feed_dict={p: value})``."""
    if dtype is None:
        raise TypeError("Expected DataType for argument 'dtype' not None.")
    dtype = dtypes.as_dtype(dtype)
    graph = get_default_graph()
    op = graph.create_op("Placeholder", (), {"dtype": dtype, "shape": as_shape(shape)},
                         name=name or "Placeholder")
    return op.outputs[0]


def _infer_placeholder_with_default(inputs, attrs):
    default = inputs[0]
    shape = as_shape(attrs["shape"])
    if not shape.is_compatible_with(default.shape):
        raise ValueError(f"The default value of placeholder_with_default has shape "
                         f"{default.shape}, which is incompatible with shape {shape}")
    return [(default.dtype, shape)]


define_op("PlaceholderWithDefault", infer=_infer_placeholder_with_default,
          kernel=lambda x, *, shape: x)


@RegisterGradient("PlaceholderWithDefault")
def _placeholder_with_default_grad(op, grad):
    return grad


@constructor("PlaceholderWithDefault", "input")
def placeholder_with_default(input, shape, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """A tensor that takes ``input``'s value unless it is fed."""
    default = convert_to_tensor(input, name="input")
    return apply_op("PlaceholderWithDefault", [default], name=name or "PlaceholderWithDefault",
                    shape=as_shape(shape))


# ----------------------------------------------------------------- identity & co.
define_op("Identity", infer=same_as_input, kernel=lambda x: x)


register_foldable("Identity")


@RegisterGradient("Identity")
def _identity_grad(op, grad):
    return grad


@constructor("Identity", "input")
def identity(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Returns a tensor with the same value as ``input`` (a new op: useful as a handle)."""
    if isinstance(input, IndexedSlices):
        return IndexedSlices(identity(input.values, name=name), input.indices,
                             input.dense_shape)
    x = convert_to_tensor(input)
    return apply_op("Identity", [x], name=name or "Identity")


define_op("IdentityN", infer=lambda inputs, attrs: [(t.dtype, t.shape) for t in inputs],
          kernel=lambda *xs: xs if len(xs) != 1 else xs[0])


@RegisterGradient("IdentityN")
def _identity_n_grad(op, *grads):
    return list(grads)


@constructor("IdentityN", "input", single_op=False)
def identity_n(input, name: Optional[str] = None) -> list[Tensor]:  # noqa: A002
    """Passes a list of tensors through one op (one dependency point for all of them)."""
    tensors = [convert_to_tensor(t) for t in input]
    if not tensors:
        raise ValueError("identity_n needs at least one tensor")
    result = apply_op("IdentityN", tensors, name=name or "IdentityN")
    return [result] if isinstance(result, Tensor) else list(result)


define_op("StopGradient", infer=same_as_input, kernel=lambda x: x)


NotDifferentiable("StopGradient")


@constructor("StopGradient", "input")
def stop_gradient(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Passes ``input`` through; gradients treat the result as a constant."""
    return apply_op("StopGradient", [convert_to_tensor(input)], name=name or "StopGradient")


define_op("PreventGradient", infer=same_as_input, kernel=lambda x, *, message: x)


@RegisterGradient("PreventGradient")
def _prevent_gradient_grad(op, grad):
    raise LookupError(f"Gradient explicitly disabled. Reason: {op.get_attr('message')} "
                      f"(op '{op.name}')")


@constructor("PreventGradient", "input", "message", single_op=False)
def prevent_gradient(input, message: str = "", name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Passes ``input`` through; asking for a gradient through it raises LookupError."""
    return apply_op("PreventGradient", [convert_to_tensor(input)],
                    name=name or "PreventGradient", message=message)


@constructor("ones", "shape", "dtype", single_op=False)
def ones(shape, dtype=dtypes.float32, name: Optional[str] = None) -> Tensor:
    """A tensor of ``shape`` filled with ones."""
    return filled(shape, 1, dtype, name)


define_op("OnesLike", infer=same_as_input, kernel=np.ones_like)


NotDifferentiable("OnesLike")


@constructor("ones_like", "tensor", "dtype", "optimize", single_op=False)
def ones_like(tensor, dtype=None, name: Optional[str] = None, optimize: bool = True) -> Tensor:
    """Ones shaped like ``tensor`` (of ``dtype``, default ``tensor``'s)."""
    tensor = convert_to_tensor(tensor)
    if dtype is not None and dtypes.as_dtype(dtype) is not tensor.dtype:
        return ones(shape(tensor), dtype=dtype, name=name)
    # TF1's graph: the input's Shape, a Const one and a Fill named as the scope
    return fill(shape(tensor), constant(1, dtype=tensor.dtype, name="Const"), name=name)
