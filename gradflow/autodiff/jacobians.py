"""Full Jacobians and forward-mode products, built from reverse-mode ``gradients``.

- ``jacobian(y, x)``: one backward pass per element of ``y``, vectorised into a few
  array operations where the graph allows (else run by a graph ``while_loop``);
  shaped ``y.shape + x.shape``.
- ``batch_jacobian(y, x)``: for ``y[i]`` depending on ``x[i]`` only; one backward pass
  per element of ``y[0]`` serves the whole batch.
- ``jvp(ys, xs, tangents)``: ``J v`` without forming ``J``. The backward pass ``J^T u``
  is linear in ``u``; differentiating it with respect to ``u`` along ``v`` gives ``J v``.
"""
from __future__ import annotations

from gradflow.autodiff.gradients import check_one_graph, gradients
from gradflow.autodiff.higher_order import stacked_rows
from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.ops import array, math
from gradflow.ops.common import graph_for

__all__ = ["jacobian", "batch_jacobian", "jvp"]


def _as_list(values) -> list:
    return list(values) if isinstance(values, (list, tuple)) else [values]


def jacobian(y, x, name: str = "jacobian"):
    """d y / d x shaped ``y.shape + x.shape`` (a list of them if ``x`` is a list)."""
    check_one_graph(graph_for([y] + _as_list(x)), {"y": [y], "x": _as_list(x)})
    y = convert_to_tensor(y)
    graph = get_default_graph()
    results = []
    with graph.name_scope(name):
        for target in _as_list(x):
            target = convert_to_tensor(target)
            rows = stacked_rows(y, target)
            result = array.reshape(rows, array.concat([array.shape(y), array.shape(target)], 0))
            result.set_shape(y.shape.concatenate(target.shape))
            results.append(result)
    return results if isinstance(x, (list, tuple)) else results[0]


def batch_jacobian(y, x, name: str = "batch_jacobian") -> Tensor:
    """Per-example Jacobians: ``[b] + y.shape[1:] + x.shape[1:]`` for ``y[i] = f(x[i])``.

    One backward pass per element of an example serves the whole batch; the passes
    are vectorised when the graph allows, else run by a graph loop.
    """
    check_one_graph(graph_for([y, x]), {"y": [y], "x": [x]})
    y, x = convert_to_tensor(y), convert_to_tensor(x)
    if not y.shape.ndims or not x.shape.ndims:
        raise ValueError(f"batch_jacobian needs a batch dimension: y {y.name} has shape "
                         f"{y.shape}, x {x.name} has shape {x.shape}")
    graph = get_default_graph()
    with graph.name_scope(name):
        batch = array.shape(y)[0]
        per_example = array.reshape(y, array.stack([batch, constant(-1, dtype=dtypes.int32)]))
        # y[i] depends on x[i] only, so the gradient of sum_i y[i, j] holds, in example
        # i's slot, d y[i, j] / d x[i]: one row per element j serves the whole batch.
        rows = stacked_rows(math.reduce_sum(per_example, axis=0), x)  # [m, b, *x[1:]]
        rank = x.shape.ndims
        by_example = array.transpose(rows, [1, 0] + list(range(2, rank + 1)))
        shape = array.concat([array.shape(y), array.shape(x)[1:]], 0)
        result = array.reshape(by_example, shape)
        result.set_shape(y.shape.concatenate(x.shape[1:]))
        return result


def jvp(ys, xs, tangents, name: str = "jvp") -> list:
    """Directional derivatives ``sum_j (d ys[i] / d xs[j]) tangents[j]`` for each y.

    Returns one tensor per y (zeros where y does not depend on the xs).
    """
    ys_list, xs_list, tangent_list = _as_list(ys), _as_list(xs), _as_list(tangents)
    if len(xs_list) != len(tangent_list):
        raise ValueError(f"jvp needs one tangent per x: got {len(xs_list)} xs and "
                         f"{len(tangent_list)} tangents")
    graph = get_default_graph()
    with graph.name_scope(name):
        ys_list = [convert_to_tensor(y) for y in ys_list]
        tangent_list = [convert_to_tensor(t, dtype=convert_to_tensor(x).dtype)
                        for t, x in zip(tangent_list, xs_list)]
        dummies = [array.zeros_like(y, name="u") for y in ys_list]
        transposed = gradients(ys_list, xs_list, grad_ys=dummies)
        pairs = [(g, t) for g, t in zip(transposed, tangent_list) if g is not None]
        if not pairs:
            return [array.zeros_like(y) for y in ys_list]
        products = gradients([convert_to_tensor(g) for g, _ in pairs], dummies,
                             grad_ys=[t for _, t in pairs])
        return [array.zeros_like(y) if p is None else convert_to_tensor(p)
                for y, p in zip(ys_list, products)]

