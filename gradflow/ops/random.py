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
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.common import (FLOATING, apply_op, as_tensor, check_dtype_in, constructor,
                                 static_ints)
from gradflow.ops.broadcasting import broadcast_dynamic_shape
from gradflow.ops.primitives import shape_tensor
from gradflow.ops.special_math import igamma_grad_a, log_gamma_density

__all__ = ["random_uniform", "random_normal", "truncated_normal", "random_shuffle",
           "set_random_seed", "get_seed", "random_gamma", "random_poisson",
           "stateless_random_uniform", "stateless_random_normal",
           "stateless_truncated_normal", "stateless_categorical"]

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


def _normal(op_type: str, shape, mean, stddev, dtype: dtypes.DType, seed, scope: str,
            stateless_seed=None) -> Tensor:
    """A normal sample ``op_type`` * stddev + mean, built in TF1's order: the shape,
    ``mean`` and ``stddev`` constants first, then the sample, ``mul`` and the sum. A
    stateless op takes ``stateless_seed`` (a shape-[2] tensor) as its second input."""
    shape_t = _shape_tensor(shape)
    mean_t = as_tensor(mean, dtype=dtype, name="mean")
    stddev_t = as_tensor(stddev, dtype=dtype, name="stddev")
    if stateless_seed is None:
        sample = apply_op(op_type, [shape_t], name=op_type, dtype=dtype, **_seed_attrs(seed))
    else:
        sample = apply_op(op_type, [shape_t, _seed_tensor(stateless_seed)], name=op_type,
                          dtype=dtype)
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


# ------------------------------------------------------------ gamma and Poisson
def _infer_with_parameter(inputs, attrs):
    """``shape`` samples of each parameter: shape + the parameter's shape."""
    sizes, parameter = inputs
    dtype = attrs.get("dtype", parameter.dtype)
    return [(dtype, _static_shape(sizes).concatenate(parameter.shape))]


def _gamma_kernel(ctx, shape, alpha, *, seed, seed2, stream):
    size = tuple(int(d) for d in shape) + alpha.shape
    return _draw(ctx, seed, seed2, stream,
                 lambda gen: gen.standard_gamma(alpha, size=size).astype(alpha.dtype))


def _poisson_kernel(ctx, shape, rate, *, dtype, seed, seed2, stream):
    size = tuple(int(d) for d in shape) + rate.shape
    return _draw(ctx, seed, seed2, stream,
                 lambda gen: gen.poisson(rate, size=size).astype(dtype.as_numpy_dtype))


define_op("RandomGamma", infer=_infer_with_parameter, kernel=_gamma_kernel, stateful=True,
          needs_context=True, state_key=_stream_key)
_define_random("RandomPoissonV2", _infer_with_parameter, _poisson_kernel)


def _gamma_sample_grad(alpha: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """d sample / d alpha of a standard gamma sample at fixed CDF value (implicit
    reparameterization): -(dP/dalpha) / (dP/dx)."""
    with np.errstate(all="ignore"):
        grad = -igamma_grad_a(alpha, sample) / np.exp(log_gamma_density(alpha, sample))
    return grad.astype(sample.dtype)


define_op("RandomGammaGrad", infer=lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)],
          kernel=_gamma_sample_grad)
NotDifferentiable("RandomGammaGrad")


@RegisterGradient("RandomGamma")
def _random_gamma_grad(op, grad):
    """The samples move with ``alpha`` (implicit reparameterization, as TF)."""
    sizes, alpha = op.inputs
    leading = _static_shape(sizes).ndims
    if leading is None or alpha.shape.ndims is None:
        raise ValueError("the gradient of random_gamma needs samples of known rank")
    wide = array.reshape(alpha, [1] * leading + [-1 if d is None else d
                                                 for d in alpha.shape.as_list()]) \
        if leading else alpha
    partial = apply_op("RandomGammaGrad", [wide, op.outputs[0]], name="RandomGammaGrad")
    return None, math_ops.reduce_sum(grad * partial, list(range(leading)))


@constructor("random_gamma", "shape", "alpha", "beta", "dtype", "seed", single_op=False)
def random_gamma(shape, alpha, beta=None, dtype=dtypes.float32, seed: Optional[int] = None,
                 name: Optional[str] = None) -> Tensor:
    """``shape`` samples from each Gamma(``alpha``, rate ``beta``) distribution (output
    shape: shape + broadcast shape of alpha and beta), at least the smallest normal."""
    dtype = _sample_dtype(dtype, "random_gamma")
    with name_scope(name, "random_gamma", [shape, alpha, beta]):
        sizes = _shape_tensor(shape)
        alpha = as_tensor(alpha, dtype=dtype, name="alpha")
        beta = as_tensor(1.0 if beta is None else beta, dtype=dtype, name="beta")
        broadcast = array.broadcast_to(alpha, broadcast_dynamic_shape(
            array.shape(alpha), array.shape(beta)))
        sample = apply_op("RandomGamma", [sizes, broadcast], name="RandomGamma",
                          **_seed_attrs(seed))
        tiny = np.finfo(dtype.as_numpy_dtype).tiny
        return math_ops.maximum(as_tensor(tiny, dtype=dtype), sample / beta)


@constructor("random_poisson", "lam", "shape", "dtype", "seed", single_op=False)
def random_poisson(lam, shape, dtype=dtypes.float32, seed: Optional[int] = None,
                   name: Optional[str] = None) -> Tensor:
    """``shape`` samples from each Poisson(``lam``) distribution (shape + lam's shape)."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in FLOATING + _INT_TYPES:
        raise ValueError(f"Invalid dtype {dtype!r} for random_poisson")
    with name_scope(name, "random_poisson", [lam, shape]):
        sizes = _shape_tensor(shape)
        rate = as_tensor(lam, name="lam", dtype=None if isinstance(lam, Tensor)
                         else dtypes.float32)
        check_dtype_in(rate, FLOATING + _INT_TYPES, "RandomPoissonV2", "rate")
        return apply_op("RandomPoissonV2", [sizes, rate], name="RandomPoissonV2", dtype=dtype,
                        **_seed_attrs(seed))


# ------------------------------------------------------------ stateless random
# A stateless op's samples are a pure function of (shape, seed): the same seed gives the
# same numbers in every run and session. The streams are gradflow's own (PCG64 keyed by
# the two seed words), not TF's Philox: compare them statistically.
def _seeded(seed) -> np.random.Generator:
    words = [int(w) & 0xFFFFFFFFFFFFFFFF for w in np.reshape(seed, -1)]
    return np.random.Generator(np.random.PCG64(words))


def _stateless_kernel(sample: Callable) -> Callable:
    def kernel(shape, seed, *, dtype, **_):
        size = tuple(int(d) for d in shape)
        return sample(_seeded(seed), size, dtype.as_numpy_dtype)
    return kernel


def _infer_stateless(inputs, attrs):
    shape, seed = inputs[0], inputs[1]
    check_dtype_in(seed, _INT_TYPES, "stateless random op", "seed")
    if seed.shape.ndims is not None and seed.shape.as_list() not in ([2], [None]):
        raise ValueError(f"seed must have shape [2], not {seed.shape.as_list()}")
    return [(attrs["dtype"], _static_shape(shape))]


def _stateless_int_kernel(shape, seed, minval, maxval, *, dtype):
    if minval >= maxval:
        raise errors.InvalidArgumentError(None, None,
                                          f"Need minval < maxval: {minval} >= {maxval}")
    size = tuple(int(d) for d in shape)
    return _seeded(seed).integers(minval, maxval, size=size, dtype=minval.dtype)


def _multinomial_kernel(logits, num_samples, seed, *, output_dtype):
    gen = _seeded(seed)
    wide = logits.astype(np.float64)
    top = np.max(wide, axis=1, keepdims=True)
    probs = np.exp(wide - top)
    probs /= probs.sum(axis=1, keepdims=True)
    draws = [gen.choice(probs.shape[1], size=int(num_samples), p=row) for row in probs]
    return np.asarray(draws, dtype=output_dtype.as_numpy_dtype).reshape(
        logits.shape[0], int(num_samples))


for _op_type, _sample in (
        ("StatelessRandomUniform", _unit_uniform),
        ("StatelessRandomNormal",
         lambda gen, shape, dtype: gen.standard_normal(shape).astype(dtype)),
        ("StatelessTruncatedNormal",
         lambda gen, shape, dtype: _truncated(gen, shape).astype(dtype))):
    define_op(_op_type, infer=_infer_stateless, kernel=_stateless_kernel(_sample))
    NotDifferentiable(_op_type)
define_op("StatelessRandomUniformInt", infer=_infer_stateless, kernel=_stateless_int_kernel)
define_op("StatelessMultinomial", infer=lambda inputs, attrs: [
    (attrs["output_dtype"], TensorShape([inputs[0].shape.as_list()[0]
                                         if inputs[0].shape.ndims == 2 else None,
                                         (static_ints(inputs[1]) or [None])[0]]))],
    kernel=_multinomial_kernel)
NotDifferentiable("StatelessRandomUniformInt")
NotDifferentiable("StatelessMultinomial")


def _seed_tensor(seed) -> Tensor:
    seed_t = as_tensor(seed, name="seed", dtype=None if isinstance(seed, Tensor)
                       else dtypes.int64)
    check_dtype_in(seed_t, _INT_TYPES, "stateless random op", "seed")
    return seed_t


@constructor("stateless_random_uniform", "shape", "seed", "minval", "maxval",
             single_op=False)
def stateless_random_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32,
                             name: Optional[str] = None, alg: str = "auto_select") -> Tensor:
    """Uniform samples on [minval, maxval) determined by ``seed`` (a shape-[2] integer
    tensor): the same seed always gives the same values."""
    dtype = dtypes.as_dtype(dtype)
    if alg not in ("auto_select", "philox", "threefry"):
        raise ValueError(f"alg: unsupported algorithm {alg!r}")
    with name_scope(name, "stateless_random_uniform", [shape, seed, minval, maxval]) \
            as scope:
        sizes = _shape_tensor(shape)
        seed_t = _seed_tensor(seed)
        if dtype.is_integer:
            if maxval is None:
                raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
            bounds = [as_tensor(minval, dtype=dtype, name="min"),
                      as_tensor(maxval, dtype=dtype, name="max")]
            return apply_op("StatelessRandomUniformInt", [sizes, seed_t] + bounds,
                            name=scope, dtype=dtype)
        _sample_dtype(dtype, "stateless_random_uniform")
        low = as_tensor(minval, dtype=dtype, name="min")
        high = as_tensor(1 if maxval is None else maxval, dtype=dtype, name="max")
        unit = apply_op("StatelessRandomUniform", [sizes, seed_t],
                        name="StatelessRandomUniform", dtype=dtype)
        return math_ops.add(unit * (high - low), low, name=scope)


@constructor("stateless_random_normal", "shape", "seed", "mean", "stddev", single_op=False)
def stateless_random_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                            name: Optional[str] = None, alg: str = "auto_select") -> Tensor:
    """Normal samples determined by ``seed`` (a shape-[2] integer tensor)."""
    dtype = _sample_dtype(dtype, "stateless_random_normal")
    with name_scope(name, "stateless_random_normal", [shape, seed, mean, stddev]) as scope:
        return _normal("StatelessRandomNormal", shape, mean, stddev, dtype, None, scope,
                       stateless_seed=seed)


@constructor("stateless_truncated_normal", "shape", "seed", "mean", "stddev",
             single_op=False)
def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                               name: Optional[str] = None,
                               alg: str = "auto_select") -> Tensor:
    """Normal samples within two stddevs of the mean, determined by ``seed``."""
    dtype = _sample_dtype(dtype, "stateless_truncated_normal")
    with name_scope(name, "stateless_truncated_normal", [shape, seed, mean, stddev]) \
            as scope:
        return _normal("StatelessTruncatedNormal", shape, mean, stddev, dtype, None, scope,
                       stateless_seed=seed)


@constructor("stateless_categorical", "logits", "num_samples", "seed", single_op=False)
def stateless_categorical(logits, num_samples, seed, dtype=dtypes.int64,
                          name: Optional[str] = None) -> Tensor:
    """``num_samples`` class ids per row of ``logits`` determined by ``seed``."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _INT_TYPES:
        raise ValueError(f"dtype must be int32 or int64, got {dtype!r}")
    with name_scope(name, "stateless_categorical", [logits, seed]):
        logits_t = as_tensor(logits, name="logits")
        check_dtype_in(logits_t, FLOATING, "StatelessMultinomial", "logits")
        count = as_tensor(num_samples, name="num_samples", dtype=dtypes.int32)
        return apply_op("StatelessMultinomial", [logits_t, count, _seed_tensor(seed)],
                        name="StatelessMultinomial", output_dtype=dtype)
