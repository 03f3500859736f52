"""TF1's initializers (``tf.zeros_initializer`` ... ``tf.orthogonal_initializer``).

An initializer is an object called as ``init(shape, dtype=None, partition_info=None)``
that builds the ops of a tensor of that shape, plus ``get_config``/``from_config``.
``dtype`` defaults to the one given to the constructor (float32). Random initializers
draw through ``gradflow.ops.random`` with their ``seed`` as the op seed, so the graph
seed (``set_random_seed``) and op seeds make their values repeatable.
"""
from __future__ import annotations

import abc
import math
from typing import Callable, Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.ops import array, linalg, random
from gradflow.ops import math as math_ops

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform",
           "TruncatedNormal", "UniformUnitScaling", "VarianceScaling", "GlorotUniform",
           "GlorotNormal", "Orthogonal", "Identity", "zeros_initializer", "ones_initializer",
           "constant_initializer", "random_normal_initializer", "random_uniform_initializer",
           "truncated_normal_initializer", "uniform_unit_scaling_initializer",
           "variance_scaling_initializer", "glorot_uniform_initializer",
           "glorot_normal_initializer", "orthogonal_initializer", "he_normal", "he_uniform",
           "lecun_normal", "lecun_uniform"]

# Standard deviation of the standard normal truncated to [-2, 2]: a truncated normal
# with stddev s has spread s * this, so variance scaling divides it out.
_TRUNCATED_STDDEV = 0.87962566103423978
# A constant this small is one Const op; larger ones are Fill (TF1's graph-size rule).
_SMALL_CONSTANT = 1000


def _float_dtype(dtype) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Argument `dtype` is expected to be floating point. Received: "
                         f"<dtype: '{dtype.name}'>.")
    return dtype


def _dims(shape) -> list:
    """``shape`` as a list of ints (a TensorShape, list or tuple)."""
    return list(shape.as_list()) if hasattr(shape, "as_list") else list(shape)


def compute_fans(shape) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of ``shape``, convolution kernels included.

    A kernel ``[*spatial, in, out]`` has fans ``in * receptive field`` and
    ``out * receptive field``; a vector's fans are both its length; a scalar's are 1.
    """
    dims = [int(d) for d in _dims(shape)]
    if not dims:
        return 1, 1
    if len(dims) == 1:
        return dims[0], dims[0]
    receptive_field = int(np.prod(dims[:-2], dtype=np.int64)) if len(dims) > 2 else 1
    return dims[-2] * receptive_field, dims[-1] * receptive_field


def _filled(value, shape, dtype: dtypes.DType, name: str) -> Tensor:
    """``shape`` filled with ``value``: one Const when small, else ``name/...`` Fill ops."""
    dims = _dims(shape)
    if int(np.prod(dims, dtype=np.int64)) < _SMALL_CONSTANT:
        return constant(value, dtype=dtype, shape=dims, name=name)
    with get_default_graph().name_scope(name) as scope:
        dims_t = constant(np.asarray(dims, dtype=np.int32).reshape(-1), name="shape_as_tensor")
        return array.fill(dims_t, constant(value, dtype=dtype, name="Const"), name=scope)


class Initializer(abc.ABC):
    """The base of TF1's initializer classes: ``__call__``, ``get_config``, ``from_config``."""

    @abc.abstractmethod
    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        """The ops of a ``shape``-shaped tensor of ``dtype`` (None: the constructor's)."""

    def get_config(self) -> dict:
        """The constructor arguments that rebuild this initializer."""
        return {}

    @classmethod
    def from_config(cls, config: dict) -> "Initializer":
        """The initializer ``get_config`` describes."""
        return cls(**config)


class Zeros(Initializer):
    """Zeros of any dtype (TF1 ``tf.zeros_initializer``)."""

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = self.dtype if dtype is None else dtypes.as_dtype(dtype)
        return _filled("" if dtype is dtypes.string else 0, shape, dtype, "zeros")

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    """Ones (TF1 ``tf.ones_initializer``)."""

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = self.dtype if dtype is None else dtypes.as_dtype(dtype)
        if dtype is dtypes.string:
            raise TypeError("Expected string, but got 1 of type 'int'.")
        return _filled(1, shape, dtype, "ones")

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Constant(Initializer):
    """A fixed value: a scalar fills the shape; a shorter list is padded with its last
    element; ``verify_shape=True`` requires the value to have exactly the shape."""

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape: bool = False):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError(f"Invalid type for initial value={value} of type: "
                            f"{type(value).__name__}. Expected Python scalar, list or tuple "
                            "of values, or numpy.ndarray.")
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None) -> Tensor:
        dtype = self.dtype if dtype is None else dtypes.as_dtype(dtype)
        verify_shape = self._verify_shape if verify_shape is None else verify_shape
        dims = tuple(_dims(shape))
        _check_python_values(self.value, dtype)
        values = np.asarray(self.value, dtype=dtype.as_numpy_dtype)
        if verify_shape and values.shape != dims:
            raise TypeError(f"Expected Tensor's shape: {dims}, but got {values.shape}.")
        size = int(np.prod(dims, dtype=np.int64))
        if values.size > size:
            raise ValueError(f"Too many elements provided. Takes at most {size}, but got "
                             f"{values.size}.")
        if 1 < values.size < size:  # TF1 pads a short value with its last element
            values = np.concatenate([values.reshape(-1),
                                     np.repeat(values.reshape(-1)[-1:], size - values.size)])
        return constant(values, dtype=dtype, shape=dims, name="Const")

    def get_config(self) -> dict:
        return {"value": self.value, "dtype": self.dtype.name}


def _check_python_values(value, dtype: dtypes.DType) -> None:
    """TF1 never turns a Python float into an integer or bool tensor, even a whole one."""
    if not (dtype.is_integer or dtype.is_bool) or isinstance(value, np.ndarray):
        return
    for item in np.asarray(value, dtype=object).reshape(-1):
        if isinstance(item, float):
            raise TypeError(f"Expected {dtype.name}, but got {item} of type 'float'.")


class _NormalInitializer(Initializer):
    """Samples of ``mean`` and ``stddev`` from the subclass's ``_sampler`` (its random op),
    shared by the normal and truncated-normal initializers."""

    _sampler: Callable[..., Tensor]

    def __init__(self, mean=0.0, stddev=1.0, seed: Optional[int] = None,
                 dtype=dtypes.float32):
        self.mean = mean
        self.stddev = stddev
        self.seed = seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = self.dtype if dtype is None else _sample_dtype(dtype, self.mean)
        return self._sampler(_dims(shape), self.mean, self.stddev, dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed,
                "dtype": self.dtype.name}


class RandomNormal(_NormalInitializer):
    """Normal samples of ``mean`` and ``stddev``."""

    _sampler = staticmethod(random.random_normal)


class RandomUniform(Initializer):
    """Uniform samples on [minval, maxval) (maxval None: 1 for floats; integer dtypes
    need it)."""

    def __init__(self, minval=0.0, maxval=None, seed: Optional[int] = None,
                 dtype=dtypes.float32):
        self.minval = minval
        self.maxval = maxval
        self.seed = seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = self.dtype if dtype is None else dtypes.as_dtype(dtype)
        if dtype.is_integer and self.maxval is not None:
            _sample_dtype(dtype, self.minval)
        return random.random_uniform(_dims(shape), self.minval, self.maxval, dtype,
                                     seed=self.seed)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed,
                "dtype": self.dtype.name}


class TruncatedNormal(_NormalInitializer):
    """Normal samples of ``mean`` and ``stddev``, redrawn beyond two stddevs."""

    _sampler = staticmethod(random.truncated_normal)


def _sample_dtype(dtype, first_value) -> dtypes.DType:
    """A call-time dtype: TF1 converts the float parameters to it, so integers raise."""
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating and isinstance(first_value, float):
        raise TypeError(f"Expected {dtype.name}, but got {first_value} of type 'float'.")
    return dtype


class UniformUnitScaling(Initializer):
    """Uniform on ±sqrt(3 / input size) * factor, keeping a linear layer's output scale
    (input size: the product of all dimensions but the last)."""

    def __init__(self, factor=1.0, seed: Optional[int] = None, dtype=dtypes.float32):
        self.factor = factor
        self.seed = seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = self.dtype if dtype is None else dtypes.as_dtype(dtype)
        dims = _dims(partition_info.full_shape if partition_info is not None else shape)
        input_size = max(float(np.prod([float(d) for d in dims[:-1]])), 1.0)
        limit = math.sqrt(3 / input_size) * self.factor
        return random.random_uniform(_dims(shape), -limit, limit, dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("normal", "uniform", "truncated_normal", "untruncated_normal")


class VarianceScaling(Initializer):
    """Samples of variance ``scale / n``, n the fan in, fan out or their mean (``mode``).

    ``distribution``: "truncated_normal" (or its old name "normal"), "untruncated_normal"
    or "uniform" (on ±sqrt(3 * scale / n)). Convolution kernels count the receptive
    field in their fans (see ``compute_fans``).
    """

    def __init__(self, scale=1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: Optional[int] = None,
                 dtype=dtypes.float32):
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be a positive float. Received: {scale}")
        if mode not in _MODES:
            raise ValueError(f"Argument `mode` should be one of ('fan_in', 'fan_out', "
                             f"'fan_avg'). Received: {mode}")
        distribution = distribution.lower()
        if distribution not in _DISTRIBUTIONS:
            raise ValueError("Argument `distribution` should be one of ('normal', uniform', "
                             f"'truncated_normal', 'untruncated_normal'). Received: "
                             f"{distribution}")
        self.scale = scale
        self.mode = mode
        self.distribution = distribution
        self.seed = seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = self.dtype if dtype is None else dtypes.as_dtype(dtype)
        fan_in, fan_out = compute_fans(partition_info.full_shape
                                       if partition_info is not None else shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out,
               "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, fan)
        dims = _dims(shape)
        if self.distribution in ("normal", "truncated_normal"):
            return random.truncated_normal(dims, 0.0, math.sqrt(scale) / _TRUNCATED_STDDEV,
                                           dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random.random_normal(dims, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random.random_uniform(dims, -limit, limit, dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """Uniform on ±sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio; Xavier uniform)."""

    def __init__(self, seed: Optional[int] = None, dtype=dtypes.float32):
        super().__init__(scale=1.0, mode="fan_avg", distribution="uniform", seed=seed)
        self.dtype = dtypes.as_dtype(dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Truncated normal of stddev sqrt(2 / (fan_in + fan_out)) (Xavier normal)."""

    def __init__(self, seed: Optional[int] = None, dtype=dtypes.float32):
        super().__init__(scale=1.0, mode="fan_avg", distribution="truncated_normal",
                         seed=seed)
        self.dtype = dtypes.as_dtype(dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


class Orthogonal(Initializer):
    """A (scaled) random orthogonal matrix: the Q of a Gaussian matrix's QR, its columns'
    signs fixed by R's diagonal; shapes past 2-D are flattened to [prod(rest), last]."""

    def __init__(self, gain=1.0, seed: Optional[int] = None, dtype=dtypes.float32):
        self.gain = gain
        self.seed = seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = self.dtype if dtype is None else _float_dtype(dtype)
        dims = [int(d) for d in _dims(shape)]
        if len(dims) < 2:
            raise ValueError("The tensor to initialize, specified by argument `shape` must "
                             f"be at least two-dimensional. Received shape={dims}")
        rows, cols = int(np.prod(dims[:-1], dtype=np.int64)), dims[-1]
        flat = (cols, rows) if rows < cols else (rows, cols)
        sample = random.random_normal(list(flat), dtype=dtype, seed=self.seed)
        q, r = linalg.qr(sample, full_matrices=False)
        q = math_ops.multiply(q, math_ops.sign(array.diag_part(r)), name="mul")
        graph = get_default_graph()
        if rows < cols:  # TF1's op names: matrix_transpose/transpose with its perm
            with graph.name_scope("matrix_transpose"), graph.name_scope("transpose") as scope:
                q = array.transpose(q, perm=constant([1, 0], name="perm"), name=scope)
        with graph.name_scope("Reshape") as scope:
            q = array.reshape(q, constant(np.asarray(dims, dtype=np.int32), name="shape"),
                              name=scope)
        return _times_gain(self.gain, q)

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


class Identity(Initializer):
    """``gain`` times the identity matrix (2-D shapes only)."""

    def __init__(self, gain=1.0, dtype=dtypes.float32):
        self.gain = gain
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = self.dtype if dtype is None else _float_dtype(dtype)
        dims = [int(d) for d in _dims(partition_info.full_shape
                                      if partition_info is not None else shape)]
        if len(dims) != 2:
            raise ValueError("The tensor to initialize, specified by argument `shape` must "
                             f"be at least two-dimensional. Received shape={dims}")
        with get_default_graph().name_scope("eye"):
            diagonal = constant(1, dtype=dtype, shape=[min(dims)], name="ones")
            zeros = constant(0, dtype=dtype, shape=dims, name="zeros")
            with get_default_graph().name_scope("set_diag") as scope:
                eye = array.matrix_set_diag(zeros, diagonal, k=constant(0, name="k"),
                                            name=scope)
        return _times_gain(self.gain, eye)

    def get_config(self) -> dict:
        return {"gain": self.gain, "dtype": self.dtype.name}


def _times_gain(gain, value: Tensor) -> Tensor:
    """``gain * value`` named as TF1 names it (``mul`` with the constant ``mul/x``)."""
    with get_default_graph().name_scope("mul") as scope:
        factor = constant(gain, dtype=value.dtype, name="x")
        return math_ops.multiply(factor, value, name=scope)


# TF1's lower-case class aliases.
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_normal_initializer = RandomNormal
random_uniform_initializer = RandomUniform
truncated_normal_initializer = TruncatedNormal
uniform_unit_scaling_initializer = UniformUnitScaling
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
orthogonal_initializer = Orthogonal


def he_normal(seed: Optional[int] = None) -> VarianceScaling:
    """Truncated normal of stddev sqrt(2 / fan_in) (He et al.)."""
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="truncated_normal",
                           seed=seed)


def he_uniform(seed: Optional[int] = None) -> VarianceScaling:
    """Uniform on ±sqrt(6 / fan_in) (He et al.)."""
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="uniform", seed=seed)


def lecun_normal(seed: Optional[int] = None) -> VarianceScaling:
    """Truncated normal of stddev sqrt(1 / fan_in) (LeCun)."""
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="truncated_normal",
                           seed=seed)


def lecun_uniform(seed: Optional[int] = None) -> VarianceScaling:
    """Uniform on ±sqrt(3 / fan_in) (LeCun)."""
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="uniform", seed=seed)
