"""Lowerings of gathers, scatters, segment reductions and scans (see ``lowerings.py``).

Indices that the NumPy kernels reject (out of range, unsorted segment ids) keep the
kernels' errors through ``L.check``: the run raises the kernel's own
InvalidArgumentError, naming the node, before any variable changes. Sorted and sparse
segment ops lower when their output has a static number of rows.
"""
from __future__ import annotations

import numpy as np

from gradflow.backends.xla.lowerings import register

__all__ = ["SEGMENT_REDUCTIONS"]


def _nd_index(L, indices, shape: tuple):
    """``indices`` (last axis: a position in ``shape``'s leading dims) as a gather tuple,
    and whether any is out of range."""
    depth = indices.shape[-1]
    limits = L.jnp.asarray(shape[:depth], indices.dtype)
    bad = (indices < 0) | (indices >= limits)
    return tuple(L.jnp.moveaxis(indices, -1, 0)), bad


@register("GatherNd", checks=True)
def _gather_nd(L, op, params, indices):
    if indices.shape[-1] == 0:
        return L.jnp.broadcast_to(params, indices.shape[:-1] + params.shape)
    index, bad = _nd_index(L, indices, params.shape)
    L.check(op, bad, (params, indices))
    return L.jnp.asarray(params)[index]


@register("ScatterNd", static=(2,), checks=True)
def _scatter_nd(L, op, indices, updates, shape):
    out_shape = tuple(int(d) for d in shape)
    index, bad = _nd_index(L, indices, out_shape)
    L.check(op, bad, (indices, updates, shape))
    return L.jnp.zeros(out_shape, updates.dtype).at[index].add(updates)


SEGMENT_REDUCTIONS = {"Sum": "segment_sum", "Prod": "segment_prod", "Max": "segment_max",
                "Min": "segment_min"}


def _unsorted(reduction: str):
    def lower(L, op, data, ids, num):
        count = int(num)
        L.check(op, ids >= count, (data, ids, num))
        flat = L.jnp.reshape(ids, (-1,))
        rows = L.jnp.reshape(data, (flat.shape[0],) + data.shape[ids.ndim:])
        # negative ids are dropped, as the kernel does: send them past the last segment
        flat = L.jnp.where(flat < 0, count, flat)
        fn = getattr(L.jax.ops, SEGMENT_REDUCTIONS[reduction])
        out = fn(rows, flat, num_segments=count)
        if reduction in ("Max", "Min") and L.jnp.issubdtype(out.dtype, L.jnp.floating):
            # an empty segment holds the dtype's lowest (highest) finite value, as TF's
            info = np.finfo(out.dtype)
            empty = L.jnp.isinf(out) & (out < 0 if reduction == "Max" else out > 0)
            out = L.jnp.where(empty, info.min if reduction == "Max" else info.max, out)
        return out
    return lower


for _reduction in SEGMENT_REDUCTIONS:
    register(f"UnsortedSegment{_reduction}", static=(2,), checks=True)(_unsorted(_reduction))


def _check_sorted(L, op, ids, inputs: tuple) -> None:
    bad = ids < 0
    if ids.shape[0] > 1:
        bad = bad | L.jnp.concatenate([L.jnp.zeros((1,), bool), ids[1:] < ids[:-1]])
    L.check(op, bad, inputs)


def _sorted(reduction: str):
    def lower(L, op, data, ids):
        _check_sorted(L, op, ids, (data, ids))
        count = op._outputs[0].shape.as_list()[0]
        fn = getattr(L.jax.ops, SEGMENT_REDUCTIONS.get(reduction, "segment_sum"))  # Mean: sums
        out = fn(data, ids, num_segments=count, indices_are_sorted=True)
        if reduction in ("Max", "Min"):  # empty segments give 0, as TF's sorted kernels
            sizes = L.jax.ops.segment_sum(L.jnp.ones_like(ids), ids, num_segments=count)
            out = L.jnp.where(_rows(L, sizes > 0, out), out, L.jnp.zeros_like(out))
        if reduction == "Mean":
            out = _divided(L, out, ids, count, lambda n: n)
        return out
    return lower


def _rows(L, per_row, like):
    return L.jnp.reshape(per_row, per_row.shape + (1,) * (like.ndim - 1))


def _divided(L, sums, ids, count: int, scale):
    """Each segment's row of ``sums`` divided by ``scale`` of its size (empty: stays 0)."""
    sizes = L.jax.ops.segment_sum(L.jnp.ones(ids.shape, sums.dtype), ids, num_segments=count)
    return sums / _rows(L, scale(L.jnp.maximum(sizes, 1)), sums)


for _reduction in ("Sum", "Prod", "Max", "Min", "Mean"):
    register(f"Segment{_reduction}", checks=True)(_sorted(_reduction))


def _sparse_segment(scale_name):
    def lower(L, op, data, indices, ids, *num_segments):
        inputs = (data, indices, ids) + num_segments
        L.check(op, (indices < 0) | (indices >= data.shape[0]), inputs)
        _check_sorted(L, op, ids, inputs)
        count = op._outputs[0].shape.as_list()[0]
        L.check(op, ids >= count, inputs)
        rows = L.jnp.take(data, indices, axis=0, mode="clip")
        out = L.jax.ops.segment_sum(rows, ids, num_segments=count, indices_are_sorted=True)
        if scale_name is None:
            return out
        return _divided(L, out, ids, count, getattr(L.jnp, scale_name))
    return lower


for _reduction, _scale in (("Sum", None), ("Mean", "asarray"), ("SqrtN", "sqrt")):
    register(f"SparseSegment{_reduction}", static=(3,), checks=True)(_sparse_segment(_scale))


# ------------------------------------------------------------------- variables
def _scatter_update(L, op, key, indices, updates):
    current = L.read(key)
    L.check(op, (indices < 0) | (indices >= current.shape[0]), (current, updates, indices))
    at = current.at[indices]
    combine = {"ScatterAdd": at.add, "ScatterMul": at.multiply,
               "ScatterSub": lambda u: at.add(-u), "ScatterDiv": at.divide}
    updates = L.jnp.broadcast_to(updates, indices.shape + current.shape[1:])
    return L.write(key, combine[op._type](updates))


# ScatterUpdate and ScatterNdUpdate stay on NumPy: with repeated indices the kernel's
# last update wins, an order XLA does not promise
register(("ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv"), refs=(0,), writes=True,
         checks=True)(_scatter_update)


# ----------------------------------------------------------------------- scans
def _scan(name: str):
    def lower(L, op, x, axis):
        axis = int(axis) % x.ndim
        if op._attrs.get("reverse"):
            x = L.jnp.flip(x, axis)
        out = getattr(L.jnp, name)(x, axis=axis)
        if op._attrs.get("exclusive"):
            identity = 0 if name == "cumsum" else 1
            pad = [(0, 0)] * x.ndim
            pad[axis] = (1, 0)
            out = L.lax.slice_in_dim(L.jnp.pad(out, pad, constant_values=identity), 0,
                                     x.shape[axis], axis=axis)
        return L.jnp.flip(out, axis) if op._attrs.get("reverse") else out
    return lower


register("Cumsum", static=(1,))(_scan("cumsum"))
register("Cumprod", static=(1,))(_scan("cumprod"))


@register("SplitV", static=(1, 2))
def _split_v(L, op, value, size_splits, axis):
    axis = int(axis) % value.ndim
    sizes = [t.shape.as_list()[axis] for t in op._outputs]
    bounds = np.cumsum(sizes)[:-1].tolist()
    return tuple(L.jnp.split(value, bounds, axis=axis))


@register("PadV2", static=(1,))
def _pad_v2(L, op, x, paddings, constant_values):
    return L.jnp.pad(x, [tuple(int(p) for p in row) for row in np.reshape(paddings, (-1, 2))],
                     constant_values=constant_values)


@register("SequenceMask", static=(1,))
def _sequence_mask(L, op, lengths, maxlen):
    steps = L.jnp.arange(int(maxlen), dtype=lengths.dtype)
    return (steps < lengths[..., None]).astype(op._attrs["dtype"].as_numpy_dtype)


@register("ReverseSequence")
def _reverse_sequence(L, op, x, lengths):
    seq, batch = op._attrs["seq_dim"] % x.ndim, op._attrs["batch_dim"] % x.ndim
    steps = L.jnp.arange(x.shape[seq])
    shape = [1] * x.ndim
    shape[seq] = x.shape[seq]
    steps = L.jnp.reshape(steps, shape)
    limits = L.jnp.reshape(lengths, [x.shape[batch] if d == batch else 1
                                     for d in range(x.ndim)]).astype(steps.dtype)
    source = L.jnp.where(steps < limits, limits - 1 - steps, steps)
    return L.jnp.take_along_axis(x, L.jnp.broadcast_to(source, x.shape), axis=seq)
