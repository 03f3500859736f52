"""Learning-rate schedules of a global step (TF1's ``tf.train.*_decay``).

Each schedule returns a scalar tensor of the learning rate's dtype, computed from the
global step at run time; the ops sit under a name scope (``ExponentialDecay``,
``PolynomialDecay``, ...) and the result carries TF1's tensor name. ``global_step`` is
required (TF1's "global_step is required for <name>." ValueError).
"""
from __future__ import annotations

import contextlib
import math as _math
from typing import Iterator, Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor
from gradflow.ops.common import graph_for
from gradflow.ops.math import (add, cast, ceil, cos, divide, equal, exp, floor, greater,
                               less_equal, log, logical_and, minimum, multiply, negative, pow,
                               sqrt, where)
from gradflow.ops.random import random_normal

__all__ = ["exponential_decay", "inverse_time_decay", "natural_exp_decay", "polynomial_decay",
           "piecewise_constant", "piecewise_constant_decay", "cosine_decay",
           "cosine_decay_restarts", "linear_cosine_decay", "noisy_linear_cosine_decay"]


def _required_step(global_step, schedule: str) -> None:
    if global_step is None:
        raise ValueError(f"global_step is required for {schedule}.")


@contextlib.contextmanager
def _scope(values, name: Optional[str], default_name: str) -> Iterator[str]:
    """The graph of ``values`` made default, atomic, with the schedule's name scope open."""
    graph = graph_for([v for v in values if isinstance(v, Tensor)])
    with graph.as_default(), graph.atomic(), graph.name_scope(name or default_name) as scope:
        yield scope


def _learning_rate(learning_rate) -> Tensor:
    return convert_to_tensor(learning_rate, name="initial_learning_rate")


def _decay_terms(learning_rate, global_step, decay_steps, decay_rate,
                 staircase: bool) -> tuple[Tensor, Tensor, Tensor]:
    """The learning rate, the decay rate in its dtype and the progress
    ``global_step / decay_steps`` (floored for ``staircase``) of the step-rate decays."""
    lr = _learning_rate(learning_rate)
    dtype = lr.dtype
    steps = cast(decay_steps, dtype)
    rate = cast(decay_rate, dtype)
    p = divide(cast(global_step, dtype), steps)
    if staircase:
        p = floor(p)
    return lr, rate, p


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate,
                      staircase: bool = False, name: Optional[str] = None) -> Tensor:
    """``learning_rate * decay_rate ** (global_step / decay_steps)``; ``staircase`` floors
    the exponent so the rate drops every ``decay_steps`` steps."""
    _required_step(global_step, "exponential_decay")
    return _exponential(learning_rate, global_step, decay_steps, decay_rate, staircase, name)


def _exponential(learning_rate, global_step, decay_steps, decay_rate, staircase: bool,
                 name: Optional[str]) -> Tensor:
    with _scope([learning_rate, global_step, decay_steps, decay_rate], name,
                "ExponentialDecay") as scope:
        lr, rate, p = _decay_terms(learning_rate, global_step, decay_steps, decay_rate,
                                   staircase)
        return multiply(lr, pow(rate, p), name=scope)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate,
                      staircase: bool = False, name: Optional[str] = None) -> Tensor:
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)`` (an exponential
    decay with rate ``exp(-decay_rate)``, built under TF1's ``ExponentialDecay`` scope)."""
    _required_step(global_step, "natural_exp_decay")
    graph = graph_for([v for v in (learning_rate, global_step, decay_rate)
                       if isinstance(v, Tensor)])
    with graph.as_default(), graph.atomic():
        rate = exp(negative(decay_rate))
        return _exponential(learning_rate, global_step, decay_steps, rate, staircase, name)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate,
                       staircase: bool = False, name: Optional[str] = None) -> Tensor:
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)``; ``staircase``
    floors ``global_step / decay_steps``."""
    _required_step(global_step, "inverse_time_decay")
    with _scope([learning_rate, global_step, decay_steps, decay_rate], name,
                "InverseTimeDecay") as scope:
        lr, rate, p = _decay_terms(learning_rate, global_step, decay_steps, decay_rate,
                                   staircase)
        denominator = add(constant(1, dtype=lr.dtype), multiply(rate, p))
        return divide(lr, denominator, name=scope)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle: bool = False, name: Optional[str] = None) -> Tensor:
    """``(lr - end) * (1 - step / decay_steps) ** power + end``, the step capped at
    ``decay_steps``; ``cycle`` instead stretches ``decay_steps`` to the next multiple
    above the step."""
    _required_step(global_step, "polynomial_decay")
    with _scope([learning_rate, global_step, decay_steps, end_learning_rate, power], name,
                "PolynomialDecay") as scope:
        lr = _learning_rate(learning_rate)
        dtype = lr.dtype
        end_lr = cast(end_learning_rate, dtype)
        power_t = cast(power, dtype)
        step = cast(global_step, dtype)
        steps = cast(decay_steps, dtype)
        if cycle:
            multiplier = where(equal(step, 0), constant(1.0, dtype=dtype),
                               ceil(divide(step, steps)))
            steps = multiply(steps, multiplier)
        else:
            step = minimum(step, steps)
        p = divide(step, steps)
        return add(multiply(lr - end_lr, pow(1 - p, power_t)), end_lr, name=scope)


def piecewise_constant(x, boundaries, values, name: Optional[str] = None) -> Tensor:
    """``values[0]`` while ``x <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < x <= boundaries[i]``, ``values[-1]`` beyond the last boundary."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of "
                         "values")
    _required_step(x, "piecewise_constant")
    with _scope([x, *boundaries, *values], name, "PiecewiseConstant"):
        x = convert_to_tensor(x, name="x")
        values = [convert_to_tensor(v) for v in values]
        for v in values[1:]:
            if v.dtype is not values[0].dtype:
                raise ValueError(f"Values must have elements all with the same dtype "
                                 f"(<dtype: '{values[0].dtype.name}'> vs "
                                 f"<dtype: '{v.dtype.name}'>).")
        bounds = [_boundary(b, x) for b in boundaries]
        result = values[0]
        for low, high, value in zip(bounds, bounds[1:] + [None], values[1:], strict=True):
            inside = greater(x, low) if high is None else \
                logical_and(greater(x, low), less_equal(x, high))
            result = where(inside, value, result)
        return result


def _boundary(boundary, x: Tensor) -> Tensor:
    """A boundary in ``x``'s dtype (integer boundaries may meet an int32/int64 step)."""
    b = convert_to_tensor(boundary)
    if b.dtype is x.dtype:
        return b
    if b.dtype.is_integer and x.dtype.is_integer or x.dtype.is_floating:
        return cast(b, x.dtype)
    raise ValueError(f"Boundaries ({b.dtype!r}) must have the same dtype as x "
                     f"({x.dtype!r}).")


piecewise_constant_decay = piecewise_constant


def _cosine_factor(fraction: Tensor, dtype: dtypes.DType) -> Tensor:
    """``0.5 * (1 + cos(pi * fraction))``."""
    pi = constant(_math.pi, dtype=dtype)
    return multiply(0.5, 1.0 + cos(multiply(pi, fraction)))


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0,
                 name: Optional[str] = None) -> Tensor:
    """``lr * ((1 - alpha) * 0.5 * (1 + cos(pi * step / decay_steps)) + alpha)``, the step
    capped at ``decay_steps`` (Loshchilov & Hutter's SGDR without restarts)."""
    _required_step(global_step, "cosine_decay")
    with _scope([learning_rate, global_step, decay_steps, alpha], name, "CosineDecay"):
        lr = _learning_rate(learning_rate)
        dtype = lr.dtype
        steps = cast(decay_steps, dtype)
        step = minimum(cast(global_step, dtype), steps)
        decayed = multiply(1 - alpha, _cosine_factor(divide(step, steps), dtype)) + alpha
        return multiply(lr, decayed)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0,
                          m_mul=1.0, alpha=0.0, name: Optional[str] = None) -> Tensor:
    """Cosine decay restarted after ``first_decay_steps``, each period ``t_mul`` times
    longer than the last and its peak ``m_mul`` times lower (SGDR)."""
    _required_step(global_step, "cosine_decay_restarts")
    with _scope([learning_rate, global_step, first_decay_steps, t_mul, m_mul, alpha], name,
                "SGDRDecay") as scope:
        lr = _learning_rate(learning_rate)
        dtype = lr.dtype
        first_steps = cast(first_decay_steps, dtype)
        alpha_t = cast(alpha, dtype)
        t_mul_t = cast(t_mul, dtype)
        m_mul_t = cast(m_mul, dtype)
        fraction = divide(cast(global_step, dtype), first_steps)
        # Periods of equal length (t_mul == 1) restart at every whole fraction; growing
        # periods restart where the geometric sum of their lengths passes the fraction.
        restart_equal = floor(fraction)
        restart_geometric = floor(log(1.0 - fraction * (1.0 - t_mul_t)) / log(t_mul_t))
        sum_r = (1.0 - pow(t_mul_t, restart_geometric)) / (1.0 - t_mul_t)
        fraction_geometric = (fraction - sum_r) / pow(t_mul_t, restart_geometric)
        equal_periods = equal(t_mul_t, 1.0)
        i_restart = where(equal_periods, restart_equal, restart_geometric)
        fraction = where(equal_periods, fraction - restart_equal, fraction_geometric)
        m_fac = pow(m_mul_t, i_restart)
        cosine = m_fac * _cosine_factor(fraction, dtype)
        decayed = (1 - alpha_t) * cosine + alpha_t
        return multiply(lr, decayed, name=scope)


def _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                   name: Optional[str], default_name: str, noise=None) -> Tensor:
    with _scope([learning_rate, global_step, decay_steps, num_periods, alpha, beta], name,
                default_name) as scope:
        lr = _learning_rate(learning_rate)
        dtype = lr.dtype
        steps = cast(decay_steps, dtype)
        num_periods_t = cast(num_periods, dtype)
        alpha_t = cast(alpha, dtype)
        beta_t = cast(beta, dtype)
        step = minimum(cast(global_step, dtype), steps)
        linear = divide(steps - step, steps)
        if noise is not None:
            linear = linear + noise(step, dtype)
        fraction = 2.0 * num_periods_t * divide(step, steps)
        cosine = 0.5 * (1.0 + cos(constant(_math.pi, dtype=dtype) * fraction))
        return multiply(lr, (alpha_t + linear) * cosine + beta_t, name=scope)


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0,
                        beta=0.001, name: Optional[str] = None) -> Tensor:
    """``lr * ((alpha + linear) * cosine + beta)``: a linear ramp to zero times a cosine of
    ``num_periods`` periods over ``decay_steps`` (Bello et al., 2017)."""
    _required_step(global_step, "linear_cosine_decay")
    return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                          name, "LinearCosineDecay")


def noisy_linear_cosine_decay(learning_rate, global_step, decay_steps, initial_variance=1.0,
                              variance_decay=0.55, num_periods=0.5, alpha=0.0, beta=0.001,
                              name: Optional[str] = None) -> Tensor:
    """:func:`linear_cosine_decay` with Gaussian noise of variance
    ``initial_variance / (1 + step) ** variance_decay`` added to the linear part (a new
    draw every run)."""
    _required_step(global_step, "noisy_linear_cosine_decay")

    def noise(step: Tensor, dtype: dtypes.DType) -> Tensor:
        variance = divide(cast(initial_variance, dtype),
                          pow(1.0 + step, cast(variance_decay, dtype)))
        return random_normal([], stddev=sqrt(variance), dtype=dtype)
    return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                          name, "NoisyLinearCosineDecay", noise)

