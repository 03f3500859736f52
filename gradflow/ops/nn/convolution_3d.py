"""3-D convolutions: ``Conv3D`` with ``Conv3DBackpropInputV2``/``Conv3DBackpropFilterV2``
(each differentiable), ``conv3d``, ``conv3d_backprop_filter_v2``, ``conv3d_transpose``.

The kernels are ``convolution``'s, which work for any number of spatial axes: one im2col
product per pass, the forward pass's patch matrix reused by the filter gradient.
"""
from __future__ import annotations

from typing import Optional

from gradflow.framework.graph import Tensor, name_scope
from gradflow.ops.common import apply_op, constructor
from gradflow.ops.nn.convolution import (CONV, ConvFamily, conv_operands, define_conv_family,
                                         sizes_tensor)
from gradflow.ops.nn.windows import FORMATS, alias, window_list

define_conv_family(ConvFamily("Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", 3),
                   CONV)


def window_attrs_3d(strides, padding, data_format: str, op_type: str) -> dict:
    """The ``strides``, ``padding`` and ``data_format`` attrs of a 3-D op, checked."""
    if strides is None:
        raise ValueError(f"strides of '{op_type}' must be provided.")
    if data_format not in FORMATS[3]:
        raise ValueError(f"data_format of '{op_type}' must be 'NDHWC' or 'NCDHW', got "
                         f"{data_format!r}")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"Attr 'padding' of '{op_type}' Op passed string '{padding}' not "
                         "in: \"SAME\", \"VALID\".")
    return {"strides": window_list(strides, "strides", data_format), "padding": padding,
            "data_format": data_format}


def _conv3d_attrs(strides, padding, data_format: str, dilations, op_type: str) -> dict:
    return {**window_attrs_3d(strides, padding, data_format, op_type),
            "dilations": window_list(1 if dilations is None else dilations, "dilations",
                                     data_format)}


@constructor("Conv3D", "input", "filter")
def conv3d(input, filter=None, strides=None, padding=None,  # noqa: A002 - TF's names
           data_format: str = "NDHWC", dilations=None, name: Optional[str] = None,
           filters=None) -> Tensor:
    """3-D convolution (cross-correlation) of ``input`` with ``filter``
    [kd, kh, kw, in, out]; ``strides``/``dilations`` are 5 per-dimension values."""
    filter = alias("filter", filter, "filters", filters)
    x, w = conv_operands(input, filter, "Conv3D", "input")
    return apply_op("Conv3D", [x, w], name=name or "Conv3D",
                    **_conv3d_attrs(strides, padding, data_format, dilations, "Conv3D"))


@constructor("Conv3DBackpropFilterV2", "input", "filter_sizes", "out_backprop")
def conv3d_backprop_filter_v2(input, filter_sizes, out_backprop, strides,  # noqa: A002
                              padding, data_format: str = "NDHWC", dilations=None,
                              name: Optional[str] = None) -> Tensor:
    """The gradient of ``conv3d`` with respect to its filter, of shape ``filter_sizes``."""
    x, dy = conv_operands(input, out_backprop, "Conv3DBackpropFilterV2", "input")
    return apply_op("Conv3DBackpropFilterV2", [x, sizes_tensor(filter_sizes, x), dy],
                    name=name or "Conv3DBackpropFilterV2",
                    **_conv3d_attrs(strides, padding, data_format, dilations,
                                    "Conv3DBackpropFilterV2"))


@constructor("conv3d_transpose", "value", "filter", "output_shape", single_op=False)
def conv3d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding: str = "SAME", data_format: str = "NDHWC",
                     name: Optional[str] = None, input=None, filters=None,  # noqa: A002
                     dilations=None) -> Tensor:
    """The transpose of ``conv3d``: ``filter`` is [kd, kh, kw, out, in]."""
    value = alias("value", value, "input", input)
    filter = alias("filter", filter, "filters", filters)
    if output_shape is None:
        raise ValueError("output_shape of conv3d_transpose must be provided.")
    with name_scope(name, "conv3d_transpose", [value, filter, output_shape]) as scope:
        dy, w = conv_operands(value, filter, "Conv3DBackpropInputV2", "value")
        return apply_op("Conv3DBackpropInputV2", [sizes_tensor(output_shape, dy), w, dy],
                        name=scope,
                        **_conv3d_attrs(strides, padding, data_format, dilations,
                                        "Conv3DBackpropInputV2"))


