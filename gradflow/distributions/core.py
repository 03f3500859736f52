"""TF1's ``tf.distributions``: ``Normal``, ``Categorical``, ``Bernoulli``, ``Uniform`` and
``kl_divergence``, built from public engine ops.

Each distribution opens its name scope once (``Normal/``) and every method opens a
scope of its own inside it (``Normal/log_prob/``, ``Normal/log_prob_1/``), as TF's do;
the ops inside are gradflow's, so only the scopes match TF's names. Samples are random
(a seeded run repeats itself, but draws differ from TF's); ``Normal`` samples are
reparameterized, so gradients reach ``loc`` and ``scale``.
"""
from __future__ import annotations

import contextlib
import math
from typing import Callable, Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.array import concat, identity, ones_like, reshape, shape, transpose
from gradflow.ops.candidate_sampling import multinomial
from gradflow.ops.common import static_ints
from gradflow.ops.math import (argmax, cast, clip_by_value, erfc, exp, expm1, greater,
                               greater_equal, less, log, logical_or, ndtri, reduce_prod,
                               reduce_sum, sigmoid, softplus, sqrt, square, where_v2)
from gradflow.ops.nn import (log_softmax, sigmoid_cross_entropy_with_logits, softmax,
                             sparse_softmax_cross_entropy_with_logits)
from gradflow.ops.random import random_normal, random_uniform

__all__ = ["Distribution", "ReparameterizationType", "FULLY_REPARAMETERIZED",
           "NOT_REPARAMETERIZED", "Normal", "Categorical", "Bernoulli", "Uniform",
           "kl_divergence", "RegisterKL"]


class ReparameterizationType:
    """Whether samples are a differentiable function of the parameters."""

    def __init__(self, rep_type: str):
        self._rep_type = rep_type

    def __repr__(self) -> str:
        return f"<Reparameterization Type: {self._rep_type}>"


FULLY_REPARAMETERIZED = ReparameterizationType("FULLY_REPARAMETERIZED")
NOT_REPARAMETERIZED = ReparameterizationType("NOT_REPARAMETERIZED")

_HALF_LOG_TWO_PI = 0.5 * math.log(2.0 * math.pi)


def _static_batch(*tensors: Tensor) -> TensorShape:
    """The broadcast static shape of ``tensors``."""
    result = TensorShape([])
    for t in tensors:
        result = _broadcast(result, t.shape)
    return result


def _broadcast(a: TensorShape, b: TensorShape) -> TensorShape:
    if a.ndims is None or b.ndims is None:
        return TensorShape(None)
    dims_a, dims_b = a.as_list(), b.as_list()
    width = max(len(dims_a), len(dims_b))
    dims_a = [1] * (width - len(dims_a)) + dims_a
    dims_b = [1] * (width - len(dims_b)) + dims_b
    out = []
    for x, y in zip(dims_a, dims_b, strict=True):
        if x == 1:
            out.append(y)
        elif y == 1 or y is None:
            out.append(x if y == 1 or x is not None else None)
        elif x is None:
            out.append(y)
        elif x != y:
            raise ValueError(f"Incompatible shapes for broadcasting: {a} and {b}")
        else:
            out.append(x)
    return TensorShape(out)


def _refuse_validation(cls: type, validate_args: bool) -> None:
    if validate_args:
        raise ValueError(f"{cls.__name__}: validate_args=True is not supported by gradflow "
                         "(no argument assertions are added)")


class Distribution:
    """The common interface: shapes, parameters, and each method under its own scope."""

    def __init__(self, dtype, reparameterization_type: ReparameterizationType,
                 validate_args: bool, allow_nan_stats: bool, parameters: dict, name: str):
        self._dtype = dtypes.as_dtype(dtype)
        self._reparameterization_type = reparameterization_type
        self._validate_args = validate_args
        self._allow_nan_stats = allow_nan_stats
        self._parameters = dict(parameters)
        self._name = name

    # ------------------------------------------------------------ properties
    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def parameters(self) -> dict:
        return dict(self._parameters)

    @property
    def reparameterization_type(self) -> ReparameterizationType:
        return self._reparameterization_type

    @property
    def allow_nan_stats(self) -> bool:
        return self._allow_nan_stats

    @property
    def validate_args(self) -> bool:
        return self._validate_args

    @property
    def batch_shape(self) -> TensorShape:
        return self._batch_shape()

    @property
    def event_shape(self) -> TensorShape:
        return TensorShape([])

    def batch_shape_tensor(self, name: str = "batch_shape_tensor") -> Tensor:
        with self._scope(name):
            static = self.batch_shape
            if static.is_fully_defined():
                return convert_to_tensor(static.as_list(), dtype=dtypes.int32, name="batch_shape")
            return shape(self._batch_reference())

    def event_shape_tensor(self, name: str = "event_shape_tensor") -> Tensor:
        with self._scope(name):
            return convert_to_tensor([], dtype=dtypes.int32, name="event_shape")

    def is_scalar_batch(self, name: str = "is_scalar_batch") -> bool:
        return self.batch_shape.ndims == 0

    def is_scalar_event(self, name: str = "is_scalar_event") -> bool:
        return True

    # ------------------------------------------------------------ methods
    @contextlib.contextmanager
    def _scope(self, name: str):
        graph = get_default_graph()
        with graph.name_scope(self._name), graph.name_scope(name) as scope:
            yield scope

    def _call(self, name: str, fn: Callable, *args):
        with self._scope(name):
            return fn(*args)

    def sample(self, sample_shape=(), seed: Optional[int] = None, name: str = "sample"):
        """Draws of shape ``sample_shape + batch_shape + event_shape``."""
        with self._scope(name):
            sample_shape = convert_to_tensor(sample_shape, dtype=dtypes.int32,
                                             name="sample_shape")
            flat = reshape(sample_shape, [-1])
            draws = self._sample_n(reduce_prod(flat), seed)
            result = reshape(draws, concat([flat, shape(draws)[1:]], 0))
            known = static_ints(flat)
            leading = TensorShape(known) if known is not None else TensorShape(
                [None] * flat.shape.as_list()[0] if flat.shape.is_fully_defined() else None)
            result.set_shape(leading.concatenate(self.batch_shape))
            return result

    def log_prob(self, value, name: str = "log_prob"):
        return self._call(name, lambda v: self._log_prob(self._value(v)), value)

    def prob(self, value, name: str = "prob"):
        return self._call(name, lambda v: exp(self._log_prob(self._value(v))), value)

    def cdf(self, value, name: str = "cdf"):
        return self._call(name, lambda v: self._cdf(self._value(v)), value)

    def log_cdf(self, value, name: str = "log_cdf"):
        return self._call(name, lambda v: log(self._cdf(self._value(v))), value)

    def survival_function(self, value, name: str = "survival_function"):
        return self._call(name, lambda v: 1.0 - self._cdf(self._value(v)), value)

    def log_survival_function(self, value, name: str = "log_survival_function"):
        return self._call(name, lambda v: log(1.0 - self._cdf(self._value(v))), value)

    def entropy(self, name: str = "entropy"):
        return self._call(name, self._entropy)

    def mean(self, name: str = "mean"):
        return self._call(name, self._mean)

    def mode(self, name: str = "mode"):
        return self._call(name, self._mode)

    def variance(self, name: str = "variance"):
        return self._call(name, self._variance)

    def stddev(self, name: str = "stddev"):
        return self._call(name, lambda: sqrt(self._variance()))

    def quantile(self, value, name: str = "quantile"):
        return self._call(name, lambda v: self._quantile(self._value(v)), value)

    def kl_divergence(self, other: "Distribution", name: str = "kl_divergence"):
        with self._scope(name):
            return kl_divergence(self, other)

    def cross_entropy(self, other: "Distribution", name: str = "cross_entropy"):
        """``entropy(self) + KL(self || other)``."""
        with self._scope(name):
            return self._entropy() + kl_divergence(self, other)

    def _value(self, value) -> Tensor:
        return convert_to_tensor(value, dtype=self._dtype, name="value")

    def _unsupported(self, what: str):
        raise ValueError(f"{type(self).__name__}.{what} is not supported by gradflow")

    def _cdf(self, value):
        self._unsupported("cdf")

    def _quantile(self, value):
        self._unsupported("quantile")

    def __repr__(self) -> str:
        return (f"<gf.distributions.{type(self).__name__} '{self._name.rstrip('/')}' "
                f"batch_shape={self.batch_shape} event_shape={self.event_shape} "
                f"dtype={self._dtype.name}>")


# ------------------------------------------------------------------ Normal
class Normal(Distribution):
    """The normal distribution of mean ``loc`` and standard deviation ``scale``."""

    def __init__(self, loc, scale, validate_args: bool = False, allow_nan_stats: bool = True,
                 name: str = "Normal"):
        _refuse_validation(type(self), validate_args)
        parameters = {"loc": loc, "scale": scale, "validate_args": validate_args,
                      "allow_nan_stats": allow_nan_stats, "name": name}
        graph = get_default_graph()
        with graph.atomic(), graph.name_scope(name) as scope:
            loc = identity(loc, name="loc")
            scale = identity(scale, name="scale")
            if loc.dtype is not scale.dtype:
                raise ValueError(f"{scale.name}, type=<dtype: '{scale.dtype.name}'>, must be of "
                                 f"the same type (<dtype: '{loc.dtype.name}'>) as {loc.name}.")
            _static_batch(loc, scale)
        self._loc, self._scale = loc, scale
        super().__init__(loc.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats,
                         parameters, scope)

    @property
    def loc(self) -> Tensor:
        return self._loc

    @property
    def scale(self) -> Tensor:
        return self._scale

    def _batch_shape(self) -> TensorShape:
        return _static_batch(self._loc, self._scale)

    def _batch_reference(self) -> Tensor:
        return self._loc * ones_like(self._scale)

    def _z(self, x: Tensor) -> Tensor:
        return (x - self._loc) / self._scale

    def _sample_n(self, n: Tensor, seed):
        batch = shape(self._batch_reference())
        noise = random_normal(concat([reshape(n, [1]), batch], 0), dtype=self._dtype, seed=seed)
        return noise * self._scale + self._loc

    def _log_prob(self, x: Tensor) -> Tensor:
        return -0.5 * square(self._z(x)) - (_HALF_LOG_TWO_PI + log(self._scale))

    def _cdf(self, x: Tensor) -> Tensor:
        return 0.5 * erfc(-self._z(x) / math.sqrt(2.0))

    def _entropy(self) -> Tensor:
        return (0.5 + _HALF_LOG_TWO_PI) + log(self._scale) * ones_like(self._loc)

    def _mean(self) -> Tensor:
        return self._loc * ones_like(self._scale)

    _mode = _mean

    def _variance(self) -> Tensor:
        return square(self._scale * ones_like(self._loc))

    def _quantile(self, p: Tensor) -> Tensor:
        return self._loc + self._scale * ndtri(p)


# ------------------------------------------------------------------ Categorical
def _logits_and_probs(logits, probs, binary: bool, dtype=None) -> tuple[Tensor, Tensor]:
    """Both parameterisations from the one given (named ``logits`` and ``probs``)."""
    if (logits is None) == (probs is None):
        raise ValueError("Must pass probs or logits, but not both.")
    if logits is not None:
        logits = convert_to_tensor(logits, dtype=dtype, name="logits")
        probs = sigmoid(logits, name="probs") if binary else softmax(logits, name="probs")
    else:
        probs = convert_to_tensor(probs, dtype=dtype, name="probs")
        graph = get_default_graph()
        with graph.name_scope("logits"):
            logits = log(probs) - log(1.0 - probs) if binary else log(probs)
    return logits, probs


class Categorical(Distribution):
    """A distribution over ``0..K-1`` by ``logits`` or ``probs`` ``[..., K]``."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args: bool = False,
                 allow_nan_stats: bool = True, name: str = "Categorical"):
        _refuse_validation(type(self), validate_args)
        parameters = {"logits": logits, "probs": probs, "dtype": dtype,
                      "validate_args": validate_args, "allow_nan_stats": allow_nan_stats,
                      "name": name}
        graph = get_default_graph()
        with graph.atomic(), graph.name_scope(name) as scope:
            self._logits, self._probs = _logits_and_probs(logits, probs, binary=False)
            self._event_size = shape(self._logits)[-1]
        super().__init__(dtype, NOT_REPARAMETERIZED, validate_args, allow_nan_stats,
                         parameters, scope)

    @property
    def logits(self) -> Tensor:
        return self._logits

    @property
    def probs(self) -> Tensor:
        return self._probs

    @property
    def event_size(self) -> Tensor:
        return self._event_size

    def _batch_shape(self) -> TensorShape:
        return self._logits.shape[:-1] if self._logits.shape.ndims is not None \
            else TensorShape(None)

    def _batch_reference(self) -> Tensor:
        return self._logits[..., 0]

    def _value(self, value) -> Tensor:
        return convert_to_tensor(value, name="value")

    def _sample_n(self, n: Tensor, seed):
        flat = reshape(self._logits, [-1, self._event_size])
        draws = transpose(multinomial(flat, n, seed=seed))
        return cast(reshape(draws, concat([reshape(n, [1]), shape(self._logits)[:-1]], 0)),
                    self._dtype)

    def _log_prob(self, k: Tensor) -> Tensor:
        k = cast(k, dtypes.int32)
        logits = self._logits
        if k.shape.is_fully_defined() and logits.shape[:-1].is_fully_defined() and \
                k.shape == logits.shape[:-1]:
            return -sparse_softmax_cross_entropy_with_logits(labels=k, logits=logits)
        # Broadcast the classes against the batch first, as TF does.
        logits = logits * ones_like(cast(k, logits.dtype))[..., None]
        k = k * cast(ones_like(logits[..., 0]), dtypes.int32)
        return -sparse_softmax_cross_entropy_with_logits(labels=k, logits=logits)

    def _entropy(self) -> Tensor:
        return -reduce_sum(softmax(self._logits) * log_softmax(self._logits), axis=-1)

    def _mode(self) -> Tensor:
        return cast(argmax(self._logits, axis=-1), self._dtype)

    def _mean(self):
        self._unsupported("mean")

    def _variance(self):
        self._unsupported("variance")


# ------------------------------------------------------------------ Bernoulli
class Bernoulli(Distribution):
    """A 0/1 distribution by ``logits`` or ``probs`` (the probability of 1)."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args: bool = False,
                 allow_nan_stats: bool = True, name: str = "Bernoulli"):
        _refuse_validation(type(self), validate_args)
        parameters = {"logits": logits, "probs": probs, "dtype": dtype,
                      "validate_args": validate_args, "allow_nan_stats": allow_nan_stats,
                      "name": name}
        graph = get_default_graph()
        with graph.atomic(), graph.name_scope(name) as scope:
            self._logits, self._probs = _logits_and_probs(logits, probs, binary=True)
        super().__init__(dtype, NOT_REPARAMETERIZED, validate_args, allow_nan_stats,
                         parameters, scope)

    @property
    def logits(self) -> Tensor:
        return self._logits

    @property
    def probs(self) -> Tensor:
        return self._probs

    def _batch_shape(self) -> TensorShape:
        return self._logits.shape

    def _batch_reference(self) -> Tensor:
        return self._logits

    def _value(self, value) -> Tensor:
        return convert_to_tensor(value, name="value")

    def _sample_n(self, n: Tensor, seed):
        size = concat([reshape(n, [1]), shape(self._probs)], 0)
        uniform = random_uniform(size, dtype=self._probs.dtype, seed=seed)
        return cast(less(uniform, self._probs), self._dtype)

    def _log_prob(self, x: Tensor) -> Tensor:
        x = cast(x, self._logits.dtype)
        logits = self._logits * ones_like(x)
        return -sigmoid_cross_entropy_with_logits(labels=x * ones_like(logits), logits=logits)

    def _entropy(self) -> Tensor:
        return sigmoid_cross_entropy_with_logits(labels=self._probs, logits=self._logits)

    def _mean(self) -> Tensor:
        return identity(self._probs)

    def _mode(self) -> Tensor:
        return cast(greater(self._probs, 0.5), self._dtype)

    def _variance(self) -> Tensor:
        return self._probs * (1.0 - self._probs)


# ------------------------------------------------------------------ Uniform
class Uniform(Distribution):
    """The uniform distribution on ``[low, high)``."""

    def __init__(self, low=0.0, high=1.0, validate_args: bool = False,
                 allow_nan_stats: bool = True, name: str = "Uniform"):
        _refuse_validation(type(self), validate_args)
        parameters = {"low": low, "high": high, "validate_args": validate_args,
                      "allow_nan_stats": allow_nan_stats, "name": name}
        graph = get_default_graph()
        with graph.atomic(), graph.name_scope(name) as scope:
            low = identity(low, name="low")
            high = identity(convert_to_tensor(high, dtype=low.dtype), name="high")
            _static_batch(low, high)
        self._low, self._high = low, high
        super().__init__(low.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats,
                         parameters, scope)

    @property
    def low(self) -> Tensor:
        return self._low

    @property
    def high(self) -> Tensor:
        return self._high

    def range(self, name: str = "range") -> Tensor:
        return self._call(name, lambda: self._high - self._low)

    def _batch_shape(self) -> TensorShape:
        return _static_batch(self._low, self._high)

    def _batch_reference(self) -> Tensor:
        return self._low + 0.0 * self._high

    def _sample_n(self, n: Tensor, seed):
        size = concat([reshape(n, [1]), shape(self._batch_reference())], 0)
        return self._low + (self._high - self._low) * random_uniform(size, dtype=self._dtype,
                                                                     seed=seed)

    def _log_prob(self, x: Tensor) -> Tensor:
        return log(self._prob(x))

    def _prob(self, x: Tensor) -> Tensor:
        density = ones_like(x) / (self._high - self._low)
        outside = logical_or(less(x, self._low), greater_equal(x, self._high))
        return where_v2(outside, 0.0 * density, density)

    def prob(self, value, name: str = "prob"):
        return self._call(name, lambda v: self._prob(self._value(v)), value)

    def _cdf(self, x: Tensor) -> Tensor:
        return clip_by_value((x - self._low) / (self._high - self._low), 0.0, 1.0)

    def _entropy(self) -> Tensor:
        return log(self._high - self._low)

    def _mean(self) -> Tensor:
        return (self._low + self._high) / 2.0

    def _mode(self):
        self._unsupported("mode")

    def _variance(self) -> Tensor:
        return square(self._high - self._low) / 12.0


# ------------------------------------------------------------------ KL divergence
_KL_REGISTRY: dict = {}


class RegisterKL:
    """Decorator registering ``fn(a, b, name=None)`` as KL(a || b) for two classes."""

    def __init__(self, dist_cls_a: type, dist_cls_b: type):
        self._key = (dist_cls_a, dist_cls_b)

    def __call__(self, kl_fn: Callable) -> Callable:
        if not callable(kl_fn):
            raise TypeError(f"kl_fn must be callable, received: {kl_fn}")
        if self._key in _KL_REGISTRY:
            raise ValueError(f"KL({self._key[0].__name__} || {self._key[1].__name__}) has "
                             "already been registered to: "
                             f"{_KL_REGISTRY[self._key]}")
        _KL_REGISTRY[self._key] = kl_fn
        return kl_fn


def _registered_kl(type_a: type, type_b: type) -> Optional[Callable]:
    """The KL function of the closest registered pair of base classes."""
    best, best_distance = None, None
    for depth_a, base_a in enumerate(type_a.__mro__):
        for depth_b, base_b in enumerate(type_b.__mro__):
            fn = _KL_REGISTRY.get((base_a, base_b))
            if fn is not None and (best_distance is None or depth_a + depth_b < best_distance):
                best, best_distance = fn, depth_a + depth_b
    return best


def kl_divergence(distribution_a: Distribution, distribution_b: Distribution,
                  allow_nan_stats: bool = True, name: Optional[str] = None) -> Tensor:
    """KL(a || b) by the function registered for the pair of distribution types."""
    fn = _registered_kl(type(distribution_a), type(distribution_b))
    if fn is None:
        raise NotImplementedError(
            f"No KL(distribution_a || distribution_b) registered for distribution_a type "
            f"{type(distribution_a).__name__} and distribution_b type "
            f"{type(distribution_b).__name__}")
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope("KullbackLeibler"):
        return fn(distribution_a, distribution_b, name=name)


@RegisterKL(Normal, Normal)
def _kl_normal_normal(a: Normal, b: Normal, name: Optional[str] = None) -> Tensor:
    with get_default_graph().name_scope(name or "kl_normal_normal"):
        diff_log_scale = log(a.scale) - log(b.scale)
        return (0.5 * square(a.loc / b.scale - b.loc / b.scale)
                + 0.5 * expm1(2.0 * diff_log_scale) - diff_log_scale)


@RegisterKL(Categorical, Categorical)
def _kl_categorical_categorical(a: Categorical, b: Categorical,
                                name: Optional[str] = None) -> Tensor:
    with get_default_graph().name_scope(name or "kl_categorical_categorical"):
        return reduce_sum(softmax(a.logits) * (log_softmax(a.logits) - log_softmax(b.logits)),
                          axis=-1)


@RegisterKL(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(a: Bernoulli, b: Bernoulli, name: Optional[str] = None) -> Tensor:
    with get_default_graph().name_scope(name or "kl_bernoulli_bernoulli"):
        delta_probs0 = softplus(-b.logits) - softplus(-a.logits)
        delta_probs1 = softplus(b.logits) - softplus(a.logits)
        return sigmoid(a.logits) * delta_probs0 + sigmoid(-a.logits) * delta_probs1
