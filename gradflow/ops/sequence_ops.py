"""Sequence ops: ``reverse_sequence`` reverses each batch entry's first ``seq_lengths[i]``
steps, leaving the padding after them in place (bidirectional RNNs use it)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.registry import RegisterGradient, define_op
from gradflow.ops.common import apply_op, as_tensor, check_dtype_in, graph_for

__all__ = ["reverse_sequence"]

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


def _infer_reverse_sequence(inputs, attrs):
    x, lengths = inputs
    check_dtype_in(lengths, _INDEX_TYPES, "ReverseSequence", "seq_lengths")
    seq_axis, batch_axis = attrs["seq_dim"], attrs["batch_dim"]
    if lengths.shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {lengths.shape.ndims} for "
                         f"'ReverseSequence' (seq_lengths: {lengths.name} with shape "
                         f"{lengths.shape})")
    rank = x.shape.ndims
    if rank is not None:
        if not 0 <= batch_axis < rank:
            raise ValueError(f"batch_dim must be < input rank: {batch_axis} vs. {rank} "
                             f"(reverse_sequence of {x.name})")
        if not 0 <= seq_axis < rank:
            raise ValueError(f"seq_dim must be < input rank: {seq_axis} vs. {rank} "
                             f"(reverse_sequence of {x.name})")
        if seq_axis == batch_axis:
            raise ValueError(f"seq_dim and batch_dim must not be equal, both are {seq_axis} "
                             f"(reverse_sequence of {x.name})")
        batch = x.shape.as_tuple()[batch_axis]
        count = lengths.shape.as_tuple()[0] if lengths.shape.ndims == 1 else None
        if batch is not None and count is not None and batch != count:
            raise ValueError(f"Dimensions must be equal, but are {batch} and {count} for "
                             f"'ReverseSequence': input.dims({batch_axis}) = {batch} but "
                             f"seq_lengths has {count} entries ({x.name}, {lengths.name})")
    return [(x.dtype, x.shape)]


def _reverse_sequence_kernel(x, lengths, *, seq_dim, batch_dim):
    if lengths.shape[0] != x.shape[batch_dim]:
        raise errors.InvalidArgumentError(
            None, None, f"Length of seq_lengths != input.dims({batch_dim}), ({lengths.shape[0]}"
            f" vs. {x.shape[batch_dim]})")
    steps = x.shape[seq_dim]
    for i, length in enumerate(lengths):
        if not 0 <= length <= steps:
            raise errors.InvalidArgumentError(
                None, None, f"seq_lens({i}) > input.dims({seq_dim}) ({int(length)} vs. {steps})"
                if length > steps else f"seq_lens({i}) < 0 ({int(length)})")
    # Position t of entry b reads t' = length_b - 1 - t inside the sequence, t past it.
    time = np.arange(steps)
    shape = [1] * x.ndim
    shape[seq_dim] = steps
    lengths_b = np.asarray(lengths, dtype=np.int64)
    length_shape = [1] * x.ndim
    length_shape[batch_dim] = len(lengths_b)
    source = np.where(time.reshape(shape) < lengths_b.reshape(length_shape),
                      lengths_b.reshape(length_shape) - 1 - time.reshape(shape),
                      time.reshape(shape))
    source = np.broadcast_to(source, x.shape)
    return np.take_along_axis(x, source, axis=seq_dim)


define_op("ReverseSequence", infer=_infer_reverse_sequence, kernel=_reverse_sequence_kernel)


@RegisterGradient("ReverseSequence")
def _reverse_sequence_grad(op, grad):
    """Reversing is its own inverse: the gradient is reversed the same way."""
    return (apply_op("ReverseSequence", [grad, op.inputs[1]], seq_dim=op.get_attr("seq_dim"),
                     batch_dim=op.get_attr("batch_dim")), None)


def reverse_sequence(input, seq_lengths, seq_axis: Optional[int] = None,  # noqa: A002
                     batch_axis: Optional[int] = None, name: Optional[str] = None,
                     seq_dim: Optional[int] = None, batch_dim: Optional[int] = None):
    """Reverses ``input[b]``'s first ``seq_lengths[b]`` entries along ``seq_axis``, for each
    ``b`` along ``batch_axis`` (default 0); entries past each length stay where they are."""
    seq_axis = _deprecated_alias(seq_axis, seq_dim, "seq_axis", "seq_dim")
    batch_axis = _deprecated_alias(batch_axis, batch_dim, "batch_axis", "batch_dim")
    if seq_axis is None:
        raise ValueError("reverse_sequence needs seq_axis (the time axis to reverse along)")
    batch_axis = 0 if batch_axis is None else batch_axis
    graph = graph_for([input, seq_lengths])
    with graph.as_default(), graph.atomic(), graph.name_scope(name or "ReverseSequence") as scope:
        x = convert_to_tensor(input, name="input")
        lengths = as_tensor(seq_lengths, name="seq_lengths", like=x)
        rank = x.shape.ndims
        seq, batch = int(seq_axis), int(batch_axis)
        if rank is not None:
            seq, batch = (seq + rank if seq < 0 else seq), (batch + rank if batch < 0 else batch)
        return apply_op("ReverseSequence", [x, lengths], name=scope, seq_dim=seq,
                        batch_dim=batch)


def _deprecated_alias(value, alias, name: str, alias_name: str):
    if value is not None and alias is not None and value != alias:
        raise ValueError(f"Cannot specify both '{name}' and '{alias_name}'")
    return value if value is not None else alias
