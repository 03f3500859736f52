"""``tf.layers`` pooling: MaxPooling1D/2D/3D and AveragePooling1D/2D/3D (class and
function forms)."""
from __future__ import annotations

from typing import Callable, Optional

from gradflow.framework.graph import Tensor
from gradflow.layers.base import InputSpec, Layer
from gradflow.layers.convolutional import normalize_padding, normalize_tuple
from gradflow.layers.core import normalize_data_format
from gradflow.ops import array, nn_more
from gradflow.ops import nn as nn_ops

__all__ = ["MaxPooling1D", "max_pooling1d", "MaxPooling2D", "max_pooling2d", "MaxPooling3D",
           "max_pooling3d", "AveragePooling1D", "average_pooling1d", "AveragePooling2D",
           "average_pooling2d", "AveragePooling3D", "average_pooling3d", "MaxPool1D",
           "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D"]

_FORMATS = {("channels_last", 2): "NHWC", ("channels_first", 2): "NCHW",
            ("channels_last", 3): "NDHWC", ("channels_first", 3): "NCDHW"}


class _Pooling(Layer):
    """Pooling over ``rank`` spatial axes with ``pool_size`` windows every ``strides``."""

    def __init__(self, rank: int, pool: Callable, pool_size, strides, padding="valid",
                 data_format="channels_last", name: Optional[str] = None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rank = rank
        self._pool = pool
        self.pool_size = normalize_tuple(pool_size, rank, "pool_size")
        self.strides = self.pool_size if strides is None else \
            normalize_tuple(strides, rank, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=rank + 2)

    def _window(self, values: tuple) -> list[int]:
        return [1, *values, 1] if self.data_format == "channels_last" else [1, 1, *values]

    def call(self, inputs):
        if self.rank == 1:
            # as TF builds it: height 1, a 2-D pooling, squeeze
            axis = 1 if self.data_format == "channels_last" else 2
            x = array.expand_dims(inputs, axis, name="ExpandDims")
            pooled = self._pool(x, self._window((1, *self.pool_size)),
                                self._window((1, *self.strides)), self.padding.upper(),
                                data_format=_FORMATS[self.data_format, 2])
            return array.squeeze(pooled, [axis], name="Squeeze")
        return self._pool(inputs, self._window(self.pool_size), self._window(self.strides),
                          self.padding.upper(), data_format=_FORMATS[self.data_format, self.rank])


def _pooling_class(rank: int, pool: Callable, class_name: str, what: str):
    class PoolingND(_Pooling):
        def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                     name: Optional[str] = None, **kwargs):
            super().__init__(rank, pool, pool_size, strides, padding=padding,
                             data_format=data_format, name=name, **kwargs)
    PoolingND.__name__ = PoolingND.__qualname__ = class_name
    PoolingND.__doc__ = f"{what} pooling layer over {rank} spatial axes."
    return PoolingND


def _pooling_function(cls, function_name: str):
    def function(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                 name: Optional[str] = None) -> Tensor:
        return cls(pool_size, strides, padding=padding, data_format=data_format,
                   name=name).apply(inputs)
    function.__name__ = function.__qualname__ = function_name
    function.__doc__ = f"Functional form of ``{cls.__name__}``."
    return function


MaxPooling1D = _pooling_class(1, nn_ops.max_pool, "MaxPooling1D", "Max")
MaxPooling2D = _pooling_class(2, nn_ops.max_pool, "MaxPooling2D", "Max")
MaxPooling3D = _pooling_class(3, nn_more.max_pool3d, "MaxPooling3D", "Max")
AveragePooling1D = _pooling_class(1, nn_ops.avg_pool, "AveragePooling1D", "Average")
AveragePooling2D = _pooling_class(2, nn_ops.avg_pool, "AveragePooling2D", "Average")
AveragePooling3D = _pooling_class(3, nn_more.avg_pool3d, "AveragePooling3D", "Average")

max_pooling1d = _pooling_function(MaxPooling1D, "max_pooling1d")
max_pooling2d = _pooling_function(MaxPooling2D, "max_pooling2d")
max_pooling3d = _pooling_function(MaxPooling3D, "max_pooling3d")
average_pooling1d = _pooling_function(AveragePooling1D, "average_pooling1d")
average_pooling2d = _pooling_function(AveragePooling2D, "average_pooling2d")
average_pooling3d = _pooling_function(AveragePooling3D, "average_pooling3d")

MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
