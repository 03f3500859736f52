"""``roll``: elements shifted cyclically along axes (TF1's ``tf.roll`` / ``tf.manip.roll``);
``depth_to_space`` and ``space_to_depth`` (each other's gradient).

The ``Roll`` primitive under TF's type name: ``input`` of rank >= 1, ``shift`` and
``axis`` int32/int64 scalars or vectors of one length; shifts of a repeated axis add up,
a negative axis counts from the end, and an axis out of range fails the run with TF's
``axis 2 is out of range``. Its gradient rolls the incoming gradient back (``-shift``).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.registry import RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import graph_for
from gradflow.ops.math.elementwise import negative

__all__ = ["roll", "depth_to_space", "space_to_depth"]

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


def _infer(inputs, attrs):
    value, shift, axis = (t.shape for t in inputs)
    shapes = f"{value}, {shift}, {axis}"
    if value.ndims is not None and value.ndims < 1:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 for 'Roll' with "
                         f"input shapes: {shapes}.")
    for shape in (shift, axis):
        if shape.ndims is not None and shape.ndims > 1:
            raise ValueError(f"Shape must be at most rank 1 but is rank {shape.ndims} for "
                             f"'Roll' with input shapes: {shapes}.")
    if shift.ndims is not None and axis.ndims is not None:
        if shift.ndims != axis.ndims or (shift.ndims == 1 and None not in (
                shift[0].value, axis[0].value) and shift[0].value != axis[0].value):
            shift_dims, axis_dims = shift.as_list(), axis.as_list()
            raise ValueError(f"Dimension 0 in both shapes must be equal, but are "
                             f"{(shift_dims or [1])[0]} and {(axis_dims or [1])[0]}. Shapes "
                             f"are {_dims(shift_dims)} and {_dims(axis_dims)}. for 'Roll' "
                             f"with input shapes: {shapes}.")
    return [(inputs[0].dtype, value)]


def _dims(dims: list) -> str:
    """A shape as TF's messages print it: ``[2]``, ``[?,3]``."""
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _kernel(value, shift, axis, **_):
    value = np.asarray(value)
    shifts = np.asarray(shift).reshape(-1).astype(np.int64)
    axes = np.asarray(axis).reshape(-1).astype(np.int64)
    if shifts.shape != axes.shape:
        raise errors.InvalidArgumentError(
            None, None, f"shift and axis must have the same size: {shifts.size} vs "
                        f"{axes.size}")
    for a in axes:
        if not -value.ndim <= a < value.ndim:
            raise errors.InvalidArgumentError(None, None, f"axis {a} is out of range")
    if not axes.size:
        return value.copy()
    return np.roll(value, tuple(int(s) for s in shifts), tuple(int(a) for a in axes))


define_op("Roll", infer=_infer, kernel=_kernel)


@RegisterGradient("Roll")
def _roll_grad(op, grad):
    return [roll(grad, negative(op.inputs[1]), op.inputs[2]), None, None]


def roll(input, shift, axis, name: Optional[str] = None):
    """``input`` with its elements shifted by ``shift`` along ``axis`` (cyclically: those
    shifted past the end come back at the start)."""
    graph = graph_for([t for t in (input, shift, axis) if hasattr(t, "graph")])
    with graph.as_default(), graph.atomic(), graph.name_scope(name or "Roll") as scope:
        value = convert_to_tensor(input, name="input")
        shift = convert_to_tensor(shift, name="shift")
        axis = convert_to_tensor(axis, name="axis")
        for arg, tensor in (("shift", shift), ("axis", axis)):
            if tensor.dtype not in _INDEX_TYPES:
                raise TypeError(f"Value passed to parameter '{arg}' has DataType "
                                f"{tensor.dtype.name} not in list of allowed values: "
                                "int32, int64")
        return graph.create_op("Roll", [value, shift, axis],
                               {"T": value.dtype, "Tshift": shift.dtype,
                                "Taxis": axis.dtype}, scope).outputs[0]


# ------------------------------------------------------------ depth_to_space / space_to_depth
def _to_nhwc(x: np.ndarray, data_format: str) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if data_format == "NCHW" else x


def _from_nhwc(x: np.ndarray, data_format: str) -> np.ndarray:
    return x.transpose(0, 3, 1, 2) if data_format == "NCHW" else x


def _depth_to_space_array(x: np.ndarray, block: int, data_format: str) -> np.ndarray:
    x = _to_nhwc(np.asarray(x), data_format)
    b, h, w, c = x.shape
    out = x.reshape(b, h, w, block, block, c // (block * block)).transpose(0, 1, 3, 2, 4, 5)
    return _from_nhwc(out.reshape(b, h * block, w * block, c // (block * block)), data_format)


def _space_to_depth_array(x: np.ndarray, block: int, data_format: str) -> np.ndarray:
    x = _to_nhwc(np.asarray(x), data_format)
    b, h, w, c = x.shape
    out = x.reshape(b, h // block, block, w // block, block, c).transpose(0, 1, 3, 2, 4, 5)
    return _from_nhwc(out.reshape(b, h // block, w // block, block * block * c), data_format)


def _infer_rearrange(op_type: str, to_space: bool):
    def infer(inputs, attrs):
        shape = inputs[0].shape
        if shape.ndims is not None and shape.ndims != 4:
            raise ValueError(f"Shape must be rank 4 but is rank {shape.ndims} for '{op_type}' "
                             f"with input shapes: {shape}.")
        block = attrs["block_size"]
        dims = shape.as_list() if shape.ndims is not None else [None] * 4
        if attrs["data_format"] == "NCHW":
            dims = [dims[0], dims[2], dims[3], dims[1]]
        b, h, w, c = dims
        if to_space:
            if c is not None and c % (block * block):
                raise ValueError(f"Dimension size must be evenly divisible by {block * block} "
                                 f"but is {c} for '{op_type}' with input shapes: {shape}.")
            out = [b, None if h is None else h * block, None if w is None else w * block,
                   None if c is None else c // (block * block)]
        else:
            for size in (h, w):
                if size is not None and size % block:
                    raise ValueError(f"Dimension size must be evenly divisible by {block} but "
                                     f"is {size} for '{op_type}' with input shapes: {shape}.")
            out = [b, None if h is None else h // block, None if w is None else w // block,
                   None if c is None else c * block * block]
        if attrs["data_format"] == "NCHW":
            out = [out[0], out[3], out[1], out[2]]
        return [(inputs[0].dtype, TensorShape(out))]
    return infer


define_op("DepthToSpace", infer=_infer_rearrange("DepthToSpace", True),
          kernel=lambda x, *, block_size, data_format, **_:
          _depth_to_space_array(x, block_size, data_format))
define_op("SpaceToDepth", infer=_infer_rearrange("SpaceToDepth", False),
          kernel=lambda x, *, block_size, data_format, **_:
          _space_to_depth_array(x, block_size, data_format))


@RegisterGradient("DepthToSpace")
def _depth_to_space_grad(op, grad):
    return [space_to_depth(grad, op.get_attr("block_size"),
                           data_format=op.get_attr("data_format"))]


@RegisterGradient("SpaceToDepth")
def _space_to_depth_grad(op, grad):
    return [depth_to_space(grad, op.get_attr("block_size"),
                           data_format=op.get_attr("data_format"))]


def _rearrange(op_type: str, input, block_size: int, name: Optional[str],
               data_format: str):
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{op_type}: data_format must be 'NHWC' or 'NCHW', got "
                         f"{data_format!r}")
    if int(block_size) < 2:
        raise ValueError(f"Attr 'block_size' of '{op_type}' Op passed {int(block_size)} less "
                         "than minimum 2.")
    graph = graph_for([input] if hasattr(input, "graph") else [])
    with graph.as_default(), graph.atomic(), graph.name_scope(name or op_type) as scope:
        value = convert_to_tensor(input, name="input")
        return graph.create_op(op_type, [value], {
            "T": value.dtype, "block_size": int(block_size), "data_format": data_format},
            scope).outputs[0]


def depth_to_space(input, block_size: int, name: Optional[str] = None,
                   data_format: str = "NHWC"):
    """Depth moved into space: each pixel's ``block_size**2`` channel groups become a
    ``block_size x block_size`` patch (the sub-pixel "pixel shuffle")."""
    return _rearrange("DepthToSpace", input, block_size, name, data_format)


def space_to_depth(input, block_size: int, name: Optional[str] = None,
                   data_format: str = "NHWC"):
    """The inverse of ``depth_to_space``: each ``block_size x block_size`` patch becomes
    one pixel's channels."""
    return _rearrange("SpaceToDepth", input, block_size, name, data_format)
