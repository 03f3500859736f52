"""Random ops: uniform, normal and truncated normal samples, seeded as in TF1.

``set_random_seed`` fixes the graph-level seed. An op's sequence is determined by the
pair (graph seed, op seed); an op without a seed of its own under a graph seed takes
its creation index instead, so rebuilding the same graph replays the same numbers.
With neither seed, each session draws fresh entropy.

Random ops are stateful: each keeps its generator in the Session (beside the
variables), so successive runs give new samples, a new session starts the sequence
over, and a run that fails consumes nothing.
"""
from __future__ import annotations

import itertools
from typing import Callable, Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.graph import Tensor, get_default_graph, name_scope
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import math as math_ops
from gradflow.ops.common import (FLOATING, apply_op, as_tensor, check_dtype_in, constructor,
                                 static_ints)
from gradflow.ops.primitives import shape_tensor

__all__ = ["random_uniform", "random_normal", "truncated_normal", "random_shuffle",
           "set_random_seed", "get_seed"]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2 ** 31 - 1
_INT_TYPES = (dtypes.int32, dtypes.int64)
# Names each random op's generator in a session; unique for the life of the process.
_streams = itertools.count()


# --------------------------------------------------------------------------- seeds
def set_random_seed(seed: Optional[int]) -> None:
    """Sets the default graph's seed (None clears it)."""
    get_default_graph().seed = None if seed is None else int(seed)


def get_seed(op_seed: Optional[int]) -> tuple[Optional[int], Optional[int]]:
    """The (graph seed, op seed) pair an op created now would use, by TF1's rules."""
    graph = get_default_graph()
    graph_seed = getattr(graph, "seed", None)
    if graph_seed is not None:
        own = graph.version if op_seed is None else op_seed
        seeds = (graph_seed % _MAXINT32, own % _MAXINT32)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, op_seed % _MAXINT32)
    else:
        return None, None
    # (0, 0) means "nondeterministic" to the kernels, so a deliberate (0, 0) moves off it.
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


def _seed_attrs(op_seed: Optional[int]) -> dict:
    seed, seed2 = get_seed(op_seed)
    return {"seed": seed or 0, "seed2": seed2 or 0, "stream": next(_streams)}


# ------------------------------------------------------------------------ kernels
def _draw(ctx, seed: int, seed2: int, stream: int,
          sample: Callable[[np.random.Generator], np.ndarray]) -> np.ndarray:
    """Runs ``sample`` on this op's generator in the session, then saves its new state."""
    key = _stream_key({"stream": stream})
    if ctx.is_initialized(key):
        bits = np.random.PCG64()
        bits.state = ctx.read_variable(key, "random_stream")
    else:
        bits = np.random.PCG64([seed, seed2] if seed or seed2 else None)
    value = sample(np.random.Generator(bits))
    ctx.write_variable(key, bits.state)
    return value


def _unit_uniform(gen: np.random.Generator, shape: tuple, dtype) -> np.ndarray:
    """Uniform on [0, 1), exactly representable in ``dtype`` (so never rounded up to 1)."""
    bits = np.finfo(dtype).nmant + 1
    return (gen.integers(0, 2 ** bits, size=shape) * 2.0 ** -bits).astype(dtype)


def _truncated(gen: np.random.Generator, shape: tuple) -> np.ndarray:
    """Standard normal samples, redrawing any beyond two standard deviations."""
    values = gen.standard_normal(shape)
    outside = np.abs(values) > 2
    while outside.any():
        values[outside] = gen.standard_normal(int(outside.sum()))
        outside = np.abs(values) > 2
    return values


def _shaped_kernel(sample: Callable) -> Callable:
    """A kernel for ops that draw ``shape``-shaped ``dtype`` samples."""
    def kernel(ctx, shape, *, dtype, seed, seed2, stream):
        size = tuple(int(d) for d in shape)
        numpy_type = dtype.as_numpy_dtype
        return _draw(ctx, seed, seed2, stream, lambda gen: sample(gen, size, numpy_type))
    return kernel


def _uniform_int_kernel(ctx, shape, minval, maxval, *, seed, seed2, stream):
    if minval >= maxval:
        raise errors.InvalidArgumentError(None, None,
                                          f"Need minval < maxval: {minval} >= {maxval}")
    size = tuple(int(d) for d in shape)
    return _draw(ctx, seed, seed2, stream,
                 lambda gen: gen.integers(minval, maxval, size=size, dtype=minval.dtype))


def _shuffle_kernel(ctx, value, *, seed, seed2, stream):
    if value.ndim == 0:
        return value
    return _draw(ctx, seed, seed2, stream, lambda gen: gen.permutation(value))


# ---------------------------------------------------------------------- inference
def _static_shape(shape: Tensor) -> TensorShape:
    """What is known at build time of the shape ``shape`` holds (per entry when stacked)."""
    values = static_ints(shape)
    if values is not None:
        return TensorShape(values)
    if shape.op.type == "Pack":
        return TensorShape([(static_ints(d) or [None])[0] for d in shape.op.inputs])
    length = shape.shape.as_tuple()[0] if shape.shape.ndims == 1 else None
    return TensorShape(None if length is None else [None] * length)


def _infer_sampled(inputs, attrs):
    return [(attrs["dtype"], _static_shape(inputs[0]))]


def _infer_uniform_int(inputs, attrs):
    shape, minval, maxval = inputs
    for bound, arg in ((minval, "minval"), (maxval, "maxval")):
        if bound.shape.ndims not in (None, 0):
            raise ValueError(f"{arg} of random_uniform must be a scalar, got {bound.name} "
                             f"with shape {bound.shape}")
    return [(minval.dtype, _static_shape(shape))]


def _stream_key(attrs: dict) -> tuple:
    """The session-state entry holding a random op's generator state."""
    return ("random_stream", attrs["stream"])


def _define_random(op_type: str, infer: Callable, kernel: Callable) -> None:
    define_op(op_type, infer=infer, kernel=kernel, stateful=True, needs_context=True,
              state_key=_stream_key)
    NotDifferentiable(op_type)


_define_random("RandomUniform", _infer_sampled, _shaped_kernel(_unit_uniform))
_define_random("RandomStandardNormal", _infer_sampled, _shaped_kernel(
    lambda gen, shape, dtype: gen.standard_normal(shape).astype(dtype)))
_define_random("TruncatedNormal", _infer_sampled, _shaped_kernel(
    lambda gen, shape, dtype: _truncated(gen, shape).astype(dtype)))
_define_random("RandomUniformInt", _infer_uniform_int, _uniform_int_kernel)
_define_random("RandomShuffle", lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)],
               _shuffle_kernel)


# ------------------------------------------------------------------ constructors
def _shape_tensor(shape) -> Tensor:
    """A 1-D int32 shape tensor from a tensor, TensorShape or list (of ints or tensors)."""
    if isinstance(shape, Tensor):
        check_dtype_in(shape, _INT_TYPES, "random op", "shape")
        return shape
    dims = shape.as_list() if isinstance(shape, TensorShape) else list(shape)
    if any(isinstance(d, Tensor) for d in dims):
        return shape_tensor(dims, name="shape")  # autopacked: ``shape/1`` and Pack ``shape``
    if any(d is None or d < 0 for d in dims):
        raise ValueError(f"The shape of a random tensor must be fully defined, got {shape}")
    return shape_tensor(dims, name="shape")  # int64 when a dimension needs it, as TF


def _sample_dtype(dtype, what: str) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if dtype not in FLOATING:
        names = ", ".join(d.name for d in FLOATING)
        raise ValueError(f"Invalid dtype {dtype!r} for {what}: must be one of {names}")
    return dtype


def _normal(op_type: str, shape, mean, stddev, dtype: dtypes.DType, seed, scope: str
            ) -> Tensor:
    """A normal sample ``op_type`` * stddev + mean, built in TF1's order: the shape,
    ``mean`` and ``stddev`` constants first, then the sample, ``mul`` and the sum."""
    shape_t = _shape_tensor(shape)
    mean_t = as_tensor(mean, dtype=dtype, name="mean")
    stddev_t = as_tensor(stddev, dtype=dtype, name="stddev")
    sample = apply_op(op_type, [shape_t], name=op_type, dtype=dtype, **_seed_attrs(seed))
    return math_ops.add(sample * stddev_t, mean_t, name=scope)


@constructor("random_uniform", "shape", "minval", "maxval", "dtype", "seed", single_op=False)
def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32,
                   seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """Samples uniform on [minval, maxval) (default [0, 1)); integer dtypes need maxval."""
    dtype = dtypes.as_dtype(dtype)
    if dtype.is_integer:
        if maxval is None:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        if dtype not in _INT_TYPES:
            raise ValueError(f"Invalid dtype {dtype!r} for random_uniform: integer samples "
                             "must be int32 or int64")
    else:
        _sample_dtype(dtype, "random_uniform")
    with name_scope(name, "random_uniform", [shape, minval, maxval]) as scope:
        shape_t = _shape_tensor(shape)
        if dtype.is_integer:
            bounds = [as_tensor(minval, dtype=dtype, name="min"),
                      as_tensor(maxval, dtype=dtype, name="max")]
            return apply_op("RandomUniformInt", [shape_t] + bounds, name=scope,
                            **_seed_attrs(seed))
        maxval = 1 if maxval is None else maxval
        if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)) \
                and minval == 0 and maxval == 1:
            return apply_op("RandomUniform", [shape_t], name="RandomUniform", dtype=dtype,
                            **_seed_attrs(seed))
        # TF1's order: the bounds, then the sample, ``sub``, ``mul`` and the sum
        low = as_tensor(minval, dtype=dtype, name="min")
        high = as_tensor(maxval, dtype=dtype, name="max")
        unit = apply_op("RandomUniform", [shape_t], name="RandomUniform", dtype=dtype,
                        **_seed_attrs(seed))
        return math_ops.add(unit * (high - low), low, name=scope)


@constructor("random_normal", "shape", "mean", "stddev", "dtype", "seed", single_op=False)
def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                  seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """Samples from a normal distribution."""
    dtype = _sample_dtype(dtype, "random_normal")
    with name_scope(name, "random_normal", [shape, mean, stddev]) as scope:
        return _normal("RandomStandardNormal", shape, mean, stddev, dtype, seed, scope)


@constructor("truncated_normal", "shape", "mean", "stddev", "dtype", "seed", single_op=False)
def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                     seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """Samples from a normal distribution, redrawing those beyond two stddevs of the mean."""
    dtype = _sample_dtype(dtype, "truncated_normal")
    with name_scope(name, "truncated_normal", [shape, mean, stddev]) as scope:
        return _normal("TruncatedNormal", shape, mean, stddev, dtype, seed, scope)


@constructor("RandomShuffle", "value", "seed", single_op=False)
def random_shuffle(value, seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """``value`` with its first dimension randomly permuted."""
    x = as_tensor(value, name="value")
    return apply_op("RandomShuffle", [x], name=name or "RandomShuffle", **_seed_attrs(seed))
