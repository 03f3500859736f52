"""Clipping by norm: ``clip_by_norm``, ``clip_by_global_norm``, ``clip_by_average_norm``
and ``global_norm`` (TF1 names, op names and semantics), composed of public ops.

Lists may hold None (passed through) and ``IndexedSlices`` (their values are clipped,
indices and dense shape kept). A global norm that is infinite or NaN makes every
clipped tensor NaN, as in TF1, so a diverging step shows up instead of being scaled
to zero silently.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.ops.array import identity, ones_like, rank, size, stack
from gradflow.ops.common import constructor, graph_for
from gradflow.ops.math import (cast, divide, greater, maximum, minimum, multiply,
                               reduce_sum, rsqrt, sqrt, where)
from gradflow.ops.math import range as range_op
from gradflow.ops.nn import l2_loss

__all__ = ["clip_by_norm", "clip_by_global_norm", "clip_by_average_norm", "global_norm"]


def _values_of(t, name: str) -> Optional[Tensor]:
    """The dense tensor to measure: ``t`` itself, or the values of IndexedSlices."""
    if t is None:
        return None
    return convert_to_tensor(t.values if isinstance(t, IndexedSlices) else t, name=name)


def _like(t, clipped: Tensor):
    """``clipped`` in ``t``'s form: IndexedSlices keep their indices and dense shape."""
    if isinstance(t, IndexedSlices):
        return IndexedSlices(clipped, t.indices, t.dense_shape)
    return clipped


def _tensors_in(values) -> list:
    found = []
    for v in values:
        if isinstance(v, IndexedSlices):
            found += [v.values, v.indices]
        elif isinstance(v, Tensor):
            found.append(v)
    return found


def _check_sequence(t_list) -> list:
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError(f"`t_list` should be a sequence of tensors. Received "
                        f"{type(t_list)}.")
    return list(t_list)


@constructor("clip_by_norm", "t", "clip_norm", single_op=False)
def clip_by_norm(t, clip_norm, axes=None, name: Optional[str] = None):
    """``t * clip_norm / max(l2norm(t, axes), clip_norm)``: rescales ``t`` (or each slice
    along ``axes``) whose L2 norm exceeds ``clip_norm`` down to that norm.

    Works on IndexedSlices (clips their values). The gradient at ``t = 0`` is finite.
    """
    graph = graph_for(_tensors_in([t, clip_norm]))
    with graph.as_default(), graph.atomic(), \
            graph.name_scope(name or "clip_by_norm") as scope:
        values = _values_of(t, "t")
        squares = reduce_sum(values * values, axes, keepdims=True)
        positive = greater(squares, 0)
        # Two selects keep sqrt away from zero, so the gradient stays finite there.
        safe_squares = where(positive, squares, ones_like(squares))
        norm = where(positive, sqrt(safe_squares), squares)
        scaled = values * clip_norm
        if not values.shape.is_compatible_with(scaled.shape):
            raise ValueError(f"Shapes {values.shape} and {scaled.shape} are incompatible: "
                             f"clip_norm would broadcast t ({values.name}) in clip_by_norm")
        clipped = identity(scaled / maximum(norm, clip_norm), name=scope)
        return _like(t, clipped)


@constructor("global_norm", "t_list", single_op=False)
def global_norm(t_list, name: Optional[str] = None) -> Tensor:
    """``sqrt(sum(l2norm(t)**2 for t in t_list))``, skipping None entries."""
    t_list = _check_sequence(t_list)
    graph = graph_for(_tensors_in(t_list))
    with graph.as_default(), graph.atomic(), \
            graph.name_scope(name or "global_norm"):
        return _global_norm(t_list)


def _global_norm(t_list: list) -> Tensor:
    values = [_values_of(t, f"t_{i}") for i, t in enumerate(t_list)]
    graph = graph_for(_tensors_in(t_list))
    half_squares = []
    for v in values:
        if v is not None:
            with graph.colocate_with(v.op):
                half_squares.append(l2_loss(v))
    if not half_squares:
        raise ValueError("global_norm needs at least one tensor in t_list; got only None")
    dtypes_seen = {h.dtype for h in half_squares}
    if len(dtypes_seen) > 1:
        raise TypeError(f"global_norm: the tensors in t_list must share one dtype, got "
                        f"{sorted(d.name for d in dtypes_seen)}")
    half_squared_norm = reduce_sum(stack(half_squares))
    two = constant(2.0, dtype=half_squared_norm.dtype)
    return sqrt(half_squared_norm * two, name="global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name: Optional[str] = None):
    """Scales every tensor of ``t_list`` by ``clip_norm / max(global_norm, clip_norm)``;
    returns ``(clipped_list, global_norm)``.

    ``use_norm`` supplies the global norm (else it is computed). None entries stay None;
    an infinite or NaN norm makes every clipped tensor NaN. As in TF1 the norm gets its
    own ``global_norm`` scope beside the clipping's; one transaction covers both.
    """
    t_list = _check_sequence(t_list)
    graph = graph_for(_tensors_in(t_list + [clip_norm, use_norm]))
    with graph.as_default(), graph.atomic():
        if use_norm is None:
            use_norm = global_norm(t_list, name)
        return _clip_to_norm(t_list, clip_norm, use_norm, name=name)


@constructor("clip_by_global_norm", "t_list", "clip_norm", "use_norm", single_op=False)
def _clip_to_norm(t_list: list, clip_norm, use_norm, name: str):
    """The clipping half of ``clip_by_global_norm``, given the global norm."""
    graph = get_default_graph()
    use_norm = convert_to_tensor(use_norm, name="use_norm")
    with graph.name_scope(name) as scope:
        one = constant(1.0, dtype=use_norm.dtype)
        scale_for_finite = clip_norm * minimum(1.0 / use_norm, one / clip_norm)
        # use_norm - use_norm is 0 for a finite norm and NaN otherwise.
        scale = scale_for_finite + (use_norm - use_norm)
        values = [_values_of(t, f"t_{i}") for i, t in enumerate(t_list)]
        clipped = []
        for i, v in enumerate(values):
            if v is None:
                clipped.append(None)
                continue
            with graph.colocate_with(v.op):
                clipped.append(identity(v * cast(scale, v.dtype), name=f"{scope}_{i}"))
    return [None if c is None else _like(t, c)
            for t, c in zip(t_list, clipped, strict=True)], use_norm


@constructor("clip_by_average_norm", "t", "clip_norm", single_op=False)
def clip_by_average_norm(t, clip_norm, name: Optional[str] = None) -> Tensor:
    """``t * clip_norm / max(l2norm(t) / size(t), clip_norm)``: clips the per-element
    average L2 norm (TF1, deprecated there in favour of ``clip_by_norm``)."""
    graph = graph_for(_tensors_in([t, clip_norm]))
    with graph.as_default(), graph.atomic(), \
            graph.name_scope(name or "clip_by_average_norm") as scope:
        t = convert_to_tensor(t, name="t")
        n_element = cast(size(t), t.dtype)
        inverse_norm = rsqrt(reduce_sum(t * t, range_op(rank(t))))
        factor = minimum(inverse_norm * n_element, divide(constant(1.0, dtype=t.dtype),
                                                          clip_norm))
        return identity(multiply(t * clip_norm, factor), name=scope)
