"""Second derivatives built from two backward passes: Hessian-vector products, Hessians.

``hessians`` builds one Hessian-vector-product graph and vectorises it over all unit
vectors at once (see ``vectorize.py``): no loop over elements, at graph-build or run
time. Where some op cannot be vectorised it falls back to TensorFlow's construction,
a ``while_loop`` computing one row per iteration.
"""
from __future__ import annotations

import numpy as np

from gradflow.autodiff.gradients import check_one_graph, gradients
from gradflow.autodiff.vectorize import NotVectorizable, vectorize
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.ops import array, math
from gradflow.ops.common import graph_for
from gradflow.ops.functional import while_loop
from gradflow.ops.tensor_array import TensorArray

__all__ = ["hessian_vector_product", "hessians", "hessians_v2", "stacked_rows"]


def hessian_vector_product(ys, xs, v) -> list:
    """The product of the Hessian of ``sum(ys)`` with respect to ``xs`` and the vectors ``v``.

    Costs two backward passes, never the full Hessian: ``grad(sum(grad(y) * v))``.
    """
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    if len(v) != len(xs):
        raise ValueError("xs and v must have the same length.")
    first = gradients(ys, xs)
    products = [math.multiply(g, array.stop_gradient(convert_to_tensor(vec)))
                for g, vec in zip(first, v) if g is not None]
    return gradients(products, xs)


def stacked_rows(y: Tensor, x: Tensor, disconnected_error: bool = False,
                 **gradient_kwargs) -> Tensor:
    """``d y / d x`` as ``[size(y)] + x.shape``: row j is the gradient of ``y[j]``.

    Vectorised over j when every op allows it, else a graph ``while_loop``. Rows of a
    ``y`` that does not depend on ``x`` are zeros, or with ``disconnected_error`` a
    ValueError (TF1's ``hessians`` of a function linear in x).
    """
    graph = get_default_graph()
    count = y.shape.num_elements()
    if count is not None and x.shape.is_fully_defined():
        try:
            with graph.atomic():
                seed = array.placeholder(y.dtype, shape=y.shape, name="row_seed")
                (template,) = gradients(y, x, grad_ys=seed, **gradient_kwargs)
                if template is None:
                    _check_connected(disconnected_error)
                    return array.zeros([count] + x.shape.as_list(), dtype=x.dtype)
                seeds = constant(np.eye(count, dtype=y.dtype.as_numpy_dtype)
                                 .reshape([count] + y.shape.as_list()), name="unit_seeds")
                return vectorize([convert_to_tensor(template)], seed, seeds, count,
                                 seed_is_identity=True)[0]
        except NotVectorizable:
            pass
    return _rows_by_while_loop(y, x, disconnected_error, **gradient_kwargs)


def _check_connected(disconnected_error: bool) -> None:
    if disconnected_error:
        raise ValueError("None values not supported.")


def _rows_by_while_loop(y: Tensor, x: Tensor, disconnected_error: bool,
                        **gradient_kwargs) -> Tensor:
    """TensorFlow's construction: one backward pass per element of y, in a graph loop."""
    flat = array.reshape(y, [-1])
    count = array.size(y)

    def row(j):
        grad = gradients(flat[j], x, **gradient_kwargs)[0]
        if grad is None:
            _check_connected(disconnected_error)
            return array.zeros_like(x)
        return convert_to_tensor(grad)

    _, rows = while_loop(lambda j, _: math.less(j, count),
                         lambda j, acc: (j + 1, acc.write(j, row(j))),
                         [constant(0), TensorArray(x.dtype, size=count)])
    return rows.stack()


def hessians(ys, xs, name: str = "hessians", colocate_gradients_with_ops: bool = False,
             gate_gradients: bool = False, aggregation_method=None) -> list:
    """The Hessian of ``sum(ys)`` for each x in ``xs``, shaped ``x.shape + x.shape``.

    As in TF1, a gradient that does not depend on x (``sum(ys)`` linear in x, as in
    ``hessians(x, x)``) raises ``ValueError("None values not supported.")``.
    """
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    ys_list = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    check_one_graph(graph_for(ys_list + xs), {"ys": ys_list, "xs": xs})
    kwargs = dict(colocate_gradients_with_ops=colocate_gradients_with_ops,
                  gate_gradients=gate_gradients, aggregation_method=aggregation_method)
    graph = get_default_graph()
    result = []
    with graph.atomic(), graph.name_scope(name):
        first = gradients(ys, xs, **kwargs)
        for x, grad in zip(xs, first):
            if grad is None:
                result.append(None)
                continue
            x = convert_to_tensor(x)
            rows = stacked_rows(convert_to_tensor(grad), x, disconnected_error=True, **kwargs)
            shape = array.shape(x)
            hessian = array.reshape(rows, array.concat([shape, shape], 0))
            hessian.set_shape(x.shape.concatenate(x.shape))
            result.append(hessian)
    return result


def hessians_v2(ys, xs, gate_gradients: bool = False, aggregation_method=None,
                name: str = "hessians") -> list:
    """``hessians`` with gradient ops colocated with their forward ops."""
    return hessians(ys, xs, name=name, colocate_gradients_with_ops=True,
                    gate_gradients=gate_gradients, aggregation_method=aggregation_method)
