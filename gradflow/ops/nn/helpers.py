"""Helpers shared by the neural-network ops: rank and dtype checks, attribute copies."""
from __future__ import annotations

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Operation, Tensor
from gradflow.ops.common import FLOATING, check_dtype_in


INDEX_TYPES = (dtypes.int32, dtypes.int64)


# --------------------------------------------------------------------------- helpers
_SAME_SIZE_INTS = {2: np.int16, 4: np.int32, 8: np.int64}


def where_else_zero(mask: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.where(mask, values, 0)``; for floats a bit mask, several times faster and
    exact (``values``' bits or +0.0)."""
    bits = _SAME_SIZE_INTS.get(values.dtype.itemsize) if values.dtype.kind == "f" else None
    if bits is None:
        return np.where(mask, values, 0).astype(values.dtype, copy=False)
    keep = np.asarray(mask).view(np.int8).astype(bits)
    np.negative(keep, out=keep)  # all ones where kept
    return np.bitwise_and(values.view(bits), keep, out=keep).view(values.dtype)


def public_attrs(op: Operation) -> dict:
    """The attrs a kernel sees, to copy onto a related op (internal ``_`` attrs stay)."""
    return {k: v for k, v in op.attrs.items() if not k.startswith("_")}


def check_rank(t: Tensor, rank: int, op_type: str, arg: str, at_least: bool = False) -> None:
    ndims = t.shape.ndims
    if ndims is None or ndims == rank or (at_least and ndims > rank):
        return
    bound = "at least rank" if at_least else "rank"
    raise ValueError(f"Shape must be {bound} {rank} but is rank {ndims} for '{op_type}' "
                     f"input '{arg}' ({t.name} with shape {t.shape})")


def check_matching_dtype(t: Tensor, reference: Tensor, op_type: str, arg: str,
                      ref_arg: str) -> None:
    if t.dtype is not reference.dtype:
        raise TypeError(f"Input '{arg}' of '{op_type}' Op has type {t.dtype.name} that does "
                        f"not match type {reference.dtype.name} of argument '{ref_arg}'. "
                        f"({arg}: {t.name}, {ref_arg}: {reference.name})")


def scalar(value: float, like: Tensor) -> Tensor:
    return constant(value, dtype=like.dtype)


def axis_alias(axis, dim, default=None):
    """TF1's deprecated ``dim`` spelling of ``axis``."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    if axis is None and dim is None:
        return default
    return axis if axis is not None else dim


def floating_tensor(value, op_type: str, arg: str) -> Tensor:
    t = convert_to_tensor(value, name=arg)
    check_dtype_in(t, FLOATING, op_type, arg)
    return t
