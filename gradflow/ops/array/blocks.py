"""Block rearrangements: ``space_to_depth``/``depth_to_space`` and
``space_to_batch_nd``/``batch_to_space_nd`` (TF1's ``space_to_batch``/``batch_to_space``
are the 2-D cases with a square block).

Each pair is linear and adjoint, so each op's gradient is the other op: ``SpaceToDepth``
and ``DepthToSpace``; ``SpaceToBatchND`` (paddings) and ``BatchToSpaceND`` (crops). The
kernels are one reshape-transpose-reshape of the (padded) input.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor
from gradflow.framework.registry import RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import apply_op, check_dtype_in, constructor, static_ints

__all__ = ["space_to_depth", "depth_to_space", "space_to_batch_nd", "batch_to_space_nd",
           "space_to_batch", "batch_to_space"]

_INDEX = (dtypes.int32, dtypes.int64)


def _dims(shape: TensorShape) -> str:
    return "?" if shape.ndims is None else \
        "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


# ------------------------------------------------------- space_to_depth family
def _channels_last(x: np.ndarray, data_format: str) -> np.ndarray:
    return x if data_format == "NHWC" else np.moveaxis(x, 1, -1)


def _layout(x: np.ndarray, data_format: str) -> np.ndarray:
    return np.ascontiguousarray(x if data_format == "NHWC" else np.moveaxis(x, -1, 1))


def _space_to_depth_kernel(x, *, block_size, data_format):
    x = _channels_last(x, data_format)
    n, h, w, c = x.shape
    b = block_size
    blocks = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return _layout(blocks.reshape(n, h // b, w // b, b * b * c), data_format)


def _depth_to_space_kernel(x, *, block_size, data_format):
    x = _channels_last(x, data_format)
    n, h, w, c = x.shape
    b = block_size
    blocks = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    return _layout(blocks.reshape(n, h * b, w * b, c // (b * b)), data_format)


def _infer_blocks(op_type: str, to_depth: bool):
    def infer(inputs, attrs):
        x = inputs[0]
        b, data_format = attrs["block_size"], attrs["data_format"]
        if x.shape.ndims is not None and x.shape.ndims != 4:
            raise ValueError(f"Shape must be rank 4 but is rank {x.shape.ndims} for "
                             f"'{op_type}' with input shapes: {_dims(x.shape)}.")
        dims = [None] * 4 if x.shape.ndims is None else x.shape.as_list()
        if data_format == "NCHW":
            dims = [dims[0], dims[2], dims[3], dims[1]]
        n, h, w, c = dims
        if to_depth:
            for size in (h, w):
                if size is not None and size % b:
                    raise ValueError(f"Dimension size must be evenly divisible by {b} but is "
                                     f"{size} for '{op_type}' with input shapes: "
                                     f"{_dims(x.shape)}.")
            out = [n, None if h is None else h // b, None if w is None else w // b,
                   None if c is None else c * b * b]
        else:
            if c is not None and c % (b * b):
                raise ValueError(f"Dimension size must be evenly divisible by {b * b} but is "
                                 f"{c} for '{op_type}' with input shapes: {_dims(x.shape)}.")
            out = [n, None if h is None else h * b, None if w is None else w * b,
                   None if c is None else c // (b * b)]
        if data_format == "NCHW":
            out = [out[0], out[3], out[1], out[2]]
        return [(x.dtype, TensorShape(out))]
    return infer


define_op("SpaceToDepth", infer=_infer_blocks("SpaceToDepth", True),
          kernel=_space_to_depth_kernel)
define_op("DepthToSpace", infer=_infer_blocks("DepthToSpace", False),
          kernel=_depth_to_space_kernel)


@RegisterGradient("SpaceToDepth")
def _space_to_depth_grad(op, grad):
    """Rearranging is a permutation of the elements: its adjoint is the inverse one."""
    return depth_to_space(grad, op.get_attr("block_size"),
                          data_format=op.get_attr("data_format"))


@RegisterGradient("DepthToSpace")
def _depth_to_space_grad(op, grad):
    return space_to_depth(grad, op.get_attr("block_size"),
                          data_format=op.get_attr("data_format"))


def _block_attrs(op_type: str, block_size, data_format: str) -> dict:
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise TypeError(f"Expected int for argument 'block_size' not {block_size!r}.")
    if block_size < 2:
        raise ValueError(f"Attr 'block_size' of '{op_type}' Op passed {block_size} less than "
                         "minimum 2.")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    return {"block_size": int(block_size), "data_format": data_format}


@constructor("SpaceToDepth", "input")
def space_to_depth(input, block_size: int, name: Optional[str] = None,
                   data_format: str = "NHWC") -> Tensor:
    """Moves each ``block_size`` x ``block_size`` spatial block into the channels."""
    attrs = _block_attrs("SpaceToDepth", block_size, data_format)
    x = convert_to_tensor(input, name="input")
    return apply_op("SpaceToDepth", [x], name=name or "SpaceToDepth", **attrs)


@constructor("DepthToSpace", "input")
def depth_to_space(input, block_size: int, name: Optional[str] = None,
                   data_format: str = "NHWC") -> Tensor:
    """Moves channel groups into ``block_size`` x ``block_size`` spatial blocks."""
    attrs = _block_attrs("DepthToSpace", block_size, data_format)
    x = convert_to_tensor(input, name="input")
    return apply_op("DepthToSpace", [x], name=name or "DepthToSpace", **attrs)


# ---------------------------------------------------- space_to_batch family
def _space_to_batch_kernel(x, block_shape, paddings):
    block = [int(b) for b in block_shape]
    m = len(block)
    pads = [(int(p[0]), int(p[1])) for p in np.asarray(paddings).reshape(m, 2)]
    padded = np.pad(x, [(0, 0), *pads] + [(0, 0)] * (x.ndim - 1 - m))
    batch, rest = padded.shape[0], padded.shape[1 + m:]
    split = [batch]
    for size, b in zip(padded.shape[1:1 + m], block, strict=True):
        split += [size // b, b]
    blocks = padded.reshape(*split, *rest)
    # [B, s1/b1, b1, ..., sM/bM, bM, rest] -> [b1, ..., bM, B, s1/b1, ..., sM/bM, rest]
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + \
        list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    moved = blocks.transpose(order)
    return np.ascontiguousarray(moved.reshape(batch * int(np.prod(block)),
                                              *moved.shape[m + 1:2 * m + 1], *rest))


def _batch_to_space_kernel(x, block_shape, crops):
    block = [int(b) for b in block_shape]
    m = len(block)
    cuts = [(int(c[0]), int(c[1])) for c in np.asarray(crops).reshape(m, 2)]
    batch = x.shape[0] // int(np.prod(block))
    spatial, rest = x.shape[1:1 + m], x.shape[1 + m:]
    blocks = x.reshape(*block, batch, *spatial, *rest)
    # [b1..bM, B, s1..sM, rest] -> [B, s1, b1, ..., sM, bM, rest]
    order = [m]
    for i in range(m):
        order += [m + 1 + i, i]
    order += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    full = blocks.transpose(order).reshape(
        batch, *(s * b for s, b in zip(spatial, block, strict=True)), *rest)
    window = tuple(slice(before, full.shape[1 + i] - after)
                   for i, (before, after) in enumerate(cuts))
    return np.ascontiguousarray(full[(slice(None),) + window])


def _infer_batch_space(op_type: str, to_batch: bool):
    pads_name = "paddings" if to_batch else "crops"

    def infer(inputs, attrs):
        x, block_shape, pads = inputs
        for t, arg in ((block_shape, "block_shape"), (pads, pads_name)):
            check_dtype_in(t, _INDEX, op_type, arg)
        if block_shape.shape.ndims not in (None, 1):
            raise ValueError(f"block_shape must have rank 1. for '{op_type}' with input "
                             f"shapes: {_dims(x.shape)}, {_dims(block_shape.shape)}, "
                             f"{_dims(pads.shape)}.")
        block = static_ints(block_shape)
        amounts = static_ints(pads)
        m = len(block) if block is not None else None
        if m is not None and pads.shape.ndims is not None and \
                not pads.shape.is_compatible_with([m, 2]):
            raise ValueError(f"{pads_name} must have shape [{m}, 2], got "
                             f"{_dims(pads.shape)} for '{op_type}'.")
        if block is not None and any(b < 1 for b in block):
            raise ValueError(f"All values in block_shape must be positive, got {block} for "
                             f"'{op_type}'.")
        if amounts is not None and any(a < 0 for a in amounts):
            raise ValueError(f"All values in {pads_name} must be non-negative, got "
                             f"{amounts} for '{op_type}'.")
        if m is None or x.shape.ndims is None:
            return [(x.dtype, TensorShape(None))]
        if x.shape.ndims < m + 1:
            raise ValueError(f"input rank should be >= {m + 1} instead of {x.shape.ndims} "
                             f"for '{op_type}' with input shapes: {_dims(x.shape)}.")
        dims = x.shape.as_list()
        prod = int(np.prod(block))
        out = list(dims)
        if to_batch:
            out[0] = None if dims[0] is None else dims[0] * prod
        elif dims[0] is not None:
            if dims[0] % prod:
                raise ValueError(f"Dimension size must be evenly divisible by {prod} but is "
                                 f"{dims[0]} for '{op_type}' with input shapes: "
                                 f"{_dims(x.shape)}.")
            out[0] = dims[0] // prod
        for i, b in enumerate(block):
            size = dims[1 + i]
            if size is None or amounts is None:
                out[1 + i] = None
                continue
            before, after = amounts[2 * i], amounts[2 * i + 1]
            if to_batch:
                if (size + before + after) % b:
                    raise ValueError(f"Dimension size must be evenly divisible by {b} but is "
                                     f"{size + before + after} for '{op_type}' with input "
                                     f"shapes: {_dims(x.shape)}.")
                out[1 + i] = (size + before + after) // b
            else:
                if before + after > size * b:
                    raise ValueError(f"crops {before} and {after} are larger than the "
                                     f"{size * b} elements of dimension {1 + i} for "
                                     f"'{op_type}'.")
                out[1 + i] = size * b - before - after
        return [(x.dtype, TensorShape(out))]
    return infer


define_op("SpaceToBatchND", infer=_infer_batch_space("SpaceToBatchND", True),
          kernel=_space_to_batch_kernel)
define_op("BatchToSpaceND", infer=_infer_batch_space("BatchToSpaceND", False),
          kernel=_batch_to_space_kernel)


@RegisterGradient("SpaceToBatchND")
def _space_to_batch_grad(op, grad):
    """The adjoint of padding and regrouping: regroup back and crop the padding."""
    _, block_shape, paddings = op.inputs
    return batch_to_space_nd(grad, block_shape, paddings), None, None


@RegisterGradient("BatchToSpaceND")
def _batch_to_space_grad(op, grad):
    _, block_shape, crops = op.inputs
    return space_to_batch_nd(grad, block_shape, crops), None, None


def _index_tensor(value, name: str, dtype=dtypes.int32) -> Tensor:
    if isinstance(value, Tensor):
        return value
    return convert_to_tensor(np.asarray(value, dtype=dtype.as_numpy_dtype), name=name)


@constructor("SpaceToBatchND", "input", "block_shape", "paddings")
def space_to_batch_nd(input, block_shape, paddings,
                      name: Optional[str] = None) -> Tensor:
    """Zero-pads the ``M`` spatial dims after the batch by ``paddings`` and moves each
    ``block_shape`` block's positions into the batch."""
    x = convert_to_tensor(input, name="input")
    return apply_op("SpaceToBatchND", [x, _index_tensor(block_shape, "block_shape"),
                                       _index_tensor(paddings, "paddings")],
                    name=name or "SpaceToBatchND")


@constructor("BatchToSpaceND", "input", "block_shape", "crops")
def batch_to_space_nd(input, block_shape, crops,
                      name: Optional[str] = None) -> Tensor:
    """The inverse of ``space_to_batch_nd``: batch groups back into ``block_shape``
    blocks, then ``crops`` cut from each spatial dim."""
    x = convert_to_tensor(input, name="input")
    return apply_op("BatchToSpaceND", [x, _index_tensor(block_shape, "block_shape"),
                                       _index_tensor(crops, "crops")],
                    name=name or "BatchToSpaceND")


def _square_block(block_size, block_shape) -> np.ndarray:
    if block_size is not None and block_shape is not None and block_shape != block_size:
        raise ValueError("Cannot specify both 'block_size' and 'block_shape'.")
    size = block_size if block_size is not None else block_shape
    if size is None:
        raise ValueError("block_size must be provided.")
    return np.array([size, size], dtype=np.int64)


def space_to_batch(input, paddings, block_size=None,
                   name: Optional[str] = None, block_shape=None) -> Tensor:
    """TF1's 2-D ``space_to_batch``: ``space_to_batch_nd`` with a square block."""
    block = _square_block(block_size, block_shape)
    return space_to_batch_nd(input, block, paddings, name=name)


def batch_to_space(input, crops, block_size, name: Optional[str] = None,
                   block_shape=None) -> Tensor:
    """TF1's 2-D ``batch_to_space``: ``batch_to_space_nd`` with a square block."""
    block = _square_block(block_size, block_shape)
    return batch_to_space_nd(input, block, crops, name=name)

