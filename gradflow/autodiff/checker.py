"""Gradient checking: symbolic Jacobians against central finite differences.

``compute_gradient`` follows TF1's ``tf.test.compute_gradient``: both Jacobians are
shaped ``[x_size, y_size]``. Complex tensors count as pairs of reals (real, imaginary),
so their Jacobians have twice the rows/columns, as in TensorFlow.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.autodiff.gradients import gradients
from gradflow.framework.default_session import get_default_session
from gradflow.framework.graph import Tensor
from gradflow.framework.indexed_slices import IndexedSlicesValue
from gradflow.ops import array
from gradflow.runtime.session import Session

__all__ = ["compute_gradient", "compute_gradient_error"]


def _real_size(shape, dtype) -> int:
    size = int(np.prod(shape, dtype=np.int64))
    return 2 * size if dtype.is_complex else size


def _as_reals(value: np.ndarray) -> np.ndarray:
    flat = np.asarray(value).reshape(-1)
    if np.iscomplexobj(flat):
        return np.stack([flat.real, flat.imag], axis=1).reshape(-1)
    return flat.astype(np.float64)


def _from_reals(reals: np.ndarray, shape, dtype) -> np.ndarray:
    if dtype.is_complex:
        pairs = reals.reshape(-1, 2)
        return (pairs[:, 0] + 1j * pairs[:, 1]).reshape(shape).astype(dtype.as_numpy_dtype)
    return reals.reshape(shape).astype(dtype.as_numpy_dtype)


def _dense(value, shape) -> np.ndarray:
    if isinstance(value, IndexedSlicesValue):
        dense = np.zeros(shape, dtype=value.values.dtype)
        np.add.at(dense, value.indices, value.values)
        return dense
    return np.asarray(value)


def _theoretical_jacobian(session, x: Tensor, x_shape, x_value, y: Tensor, y_shape,
                          grad, dy: Tensor, feeds: dict) -> np.ndarray:
    """Row block for x: one backward pass per real component of y."""
    x_size, y_size = _real_size(x_shape, x.dtype), _real_size(y_shape, y.dtype)
    jacobian = np.zeros((x_size, y_size))
    if grad is None:
        return jacobian
    for column in range(y_size):
        seed = np.zeros(y_size)
        seed[column] = 1.0
        value = session.run(grad, {**feeds, x: x_value, dy: _from_reals(seed, y_shape, y.dtype)})
        # Seeding the real or imaginary part of y yields (Re g, Im g) pairs, which is
        # TF's convention for complex gradients (conjugate Wirtinger derivatives).
        jacobian[:, column] = _as_reals(_dense(value, x_shape))
    return jacobian


def _numeric_jacobian(session, x: Tensor, x_shape, x_value, y: Tensor, y_shape, delta: float,
                      feeds: dict) -> np.ndarray:
    x_size, y_size = _real_size(x_shape, x.dtype), _real_size(y_shape, y.dtype)
    jacobian = np.zeros((x_size, y_size))
    base = _as_reals(x_value)
    for row in range(x_size):
        plus, minus = base.copy(), base.copy()
        plus[row] += delta
        minus[row] -= delta
        y_plus = session.run(y, {**feeds, x: _from_reals(plus, x_shape, x.dtype)})
        y_minus = session.run(y, {**feeds, x: _from_reals(minus, x_shape, x.dtype)})
        jacobian[row, :] = (_as_reals(y_plus) - _as_reals(y_minus)) / (2 * delta)
    return jacobian


def compute_gradient(x, x_shape, y, y_shape, x_init_value=None, delta: float = 1e-3,
                     init_targets=None, extra_feed_dict: Optional[dict] = None):
    """The symbolic and the numeric Jacobian of ``y`` with respect to ``x``.

    ``x`` may be a list of tensors (with lists of shapes and initial values); then a list
    of ``(theoretical, numeric)`` pairs is returned. Runs in the default session, or in a
    temporary one on ``y``'s graph.
    """
    many = isinstance(x, (list, tuple))
    xs = list(x) if many else [x]
    shapes = list(x_shape) if many else [x_shape]
    values = list(x_init_value) if many and x_init_value is not None else \
        [x_init_value] * len(xs) if not many else [None] * len(xs)
    if len(shapes) != len(xs) or len(values) != len(xs):
        raise ValueError("x, x_shape and x_init_value must have the same length")
    session = get_default_session()
    owned = session is None or session.graph is not y.graph
    if owned:
        session = Session(graph=y.graph)
    try:
        if init_targets is not None:
            session.run(init_targets)
        feeds = dict(extra_feed_dict or {})
        inits = [_initial_value(xi, shape, value) for xi, shape, value in zip(xs, shapes, values)]
        with y.graph.as_default():
            dy = array.placeholder(y.dtype, shape=y_shape, name="grad_check_dy")
            grads = gradients(y, xs, grad_ys=dy)
        all_feeds = {**feeds, **dict(zip(xs, inits))}
        results = []
        for xi, shape, init, grad in zip(xs, shapes, inits, grads):
            theoretical = _theoretical_jacobian(session, xi, shape, init, y, y_shape, grad, dy,
                                                all_feeds)
            numeric = _numeric_jacobian(session, xi, shape, init, y, y_shape, delta, all_feeds)
            results.append((theoretical, numeric))
    finally:
        if owned:
            session.close()
    return results if many else results[0]


def _initial_value(x: Tensor, shape, value) -> np.ndarray:
    dtype = x.dtype.as_numpy_dtype
    if value is not None:
        return np.asarray(value, dtype=dtype).reshape(shape)
    # Drawn from NumPy's global stream as TF1 draws it, so seeded tests agree with TF.
    data = np.random.random_sample(shape).astype(dtype)
    if x.dtype.is_complex:
        data.imag = np.random.random_sample(shape)
    return data


def compute_gradient_error(x, x_shape, y, y_shape, x_init_value=None, delta: float = 1e-3,
                           init_targets=None, extra_feed_dict: Optional[dict] = None) -> float:
    """The largest absolute difference between the symbolic and numeric Jacobians."""
    result = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets,
                              extra_feed_dict)
    pairs = result if isinstance(result, list) else [result]
    error = 0.0
    for theoretical, numeric in pairs:
        if theoretical.size:
            error = max(error, float(np.max(np.abs(theoretical - numeric))))
    return error
