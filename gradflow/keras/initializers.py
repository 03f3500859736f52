"""``tf.keras.initializers``: the variable store's initializers under keras's names
(``'glorot_uniform'``, ``Constant(0.1)``...), found by ``get``."""
from __future__ import annotations

import inspect
from typing import Callable

from gradflow.framework import dtypes
from gradflow.variables.init_ops import (
    Constant, GlorotNormal, GlorotUniform, Identity, Initializer, Ones, Orthogonal,
    RandomNormal as _RandomNormal, RandomUniform as _RandomUniform,
    TruncatedNormal as _TruncatedNormal, VarianceScaling, Zeros, he_normal,
    he_uniform, lecun_normal, lecun_uniform)

__all__ = ["get", "serialize", "Initializer", "Zeros", "Ones", "Constant", "RandomNormal",
           "RandomUniform", "TruncatedNormal", "VarianceScaling", "GlorotUniform",
           "GlorotNormal", "Orthogonal", "Identity", "he_normal", "he_uniform",
           "lecun_normal", "lecun_uniform", "zeros", "ones", "constant", "random_normal",
           "random_uniform", "truncated_normal", "glorot_uniform", "glorot_normal",
           "orthogonal", "identity", "variance_scaling"]



class RandomUniform(_RandomUniform):
    """Uniform on [minval, maxval): keras's defaults are -0.05 and 0.05."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None, dtype=dtypes.float32):
        super().__init__(minval=minval, maxval=maxval, seed=seed, dtype=dtype)


class RandomNormal(_RandomNormal):
    """Normal with keras's default standard deviation 0.05."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=dtypes.float32):
        super().__init__(mean=mean, stddev=stddev, seed=seed, dtype=dtype)


class TruncatedNormal(_TruncatedNormal):
    """Truncated normal with keras's default standard deviation 0.05."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=dtypes.float32):
        super().__init__(mean=mean, stddev=stddev, seed=seed, dtype=dtype)


zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
glorot_uniform, glorot_normal = GlorotUniform, GlorotNormal
orthogonal, identity, variance_scaling = Orthogonal, Identity, VarianceScaling

_BY_NAME = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
    "random_uniform": RandomUniform, "truncated_normal": TruncatedNormal,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
    "orthogonal": Orthogonal, "identity": Identity, "variance_scaling": VarianceScaling,
    "he_normal": he_normal, "he_uniform": he_uniform, "lecun_normal": lecun_normal,
    "lecun_uniform": lecun_uniform, "uniform": RandomUniform, "normal": RandomNormal,
}
_BY_NAME.update({cls.__name__: cls for cls in (
    Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal, GlorotUniform,
    GlorotNormal, Orthogonal, Identity, VarianceScaling)})


def get(identifier) -> Callable:
    """An initializer from its name, a config dict, a class or itself (None stays None)."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        name = identifier.get("class_name")
        if name not in _BY_NAME:
            raise ValueError(f"Unknown initializer: {name}")
        return _BY_NAME[name](**identifier.get("config", {}))
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Unknown initializer: {identifier}. Please ensure you are using "
                             "a `keras.utils.custom_object_scope` and that this object is "
                             "included in the scope.")
        return _BY_NAME[identifier]()
    if inspect.isclass(identifier):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier}")


def serialize(initializer) -> dict:
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}
