"""Neural-network ops (``gf.nn``): activations, losses, normalisation, convolution, pooling.

Ops whose kernels need care for stability or speed (softmax, the cross entropies,
convolutions, pooling) are primitives with their own kernel; their backward steps are
ops too (``ReluGrad``, ``Conv2DBackpropInput``, ``MaxPoolGrad`` ...) whose gradients are
defined in turn, so second derivatives work. Thin conveniences (``moments``,
``l2_normalize``, ``dropout``, ``conv1d``...) are composed from public ops.

A convolution is one matrix product: every output position's receptive field becomes a
row (im2col) that multiplies the filter; its input gradient is a convolution too.
Pooling folds the few filter taps; loops run over taps, never over pixels.

The ops live in this package's modules
(``activations``, ``losses``, ``normalization``, ``convolution``, ``convolution_3d``,
``pooling``, ``lookup``; ``windows`` holds the geometry shared by convolution and
pooling); this module re-exports the 2-D ops' public names (``gradflow.ops.nn_more``
the 3-D, 1-D and separable ones).
"""
# The nn ops. ``__all__`` stays empty: ``gradflow.nn`` names what it hands on.
from gradflow.ops.nn.activations import (bias_add as bias_add, elu as elu, gelu as gelu,
                                         leaky_relu as leaky_relu, log_softmax as log_softmax,
                                         relu as relu, relu6 as relu6, selu as selu, silu as silu,
                                         softmax as softmax, swish as swish, xw_plus_b as xw_plus_b)
from gradflow.ops.nn.convolution import (conv1d as conv1d, conv2d as conv2d,
                                         conv2d_backprop_filter as conv2d_backprop_filter,
                                         conv2d_backprop_input as conv2d_backprop_input,
                                         conv2d_transpose as conv2d_transpose,
                                         depthwise_conv2d as depthwise_conv2d)
from gradflow.ops.nn.lookup import (TopKV2 as TopKV2, embedding_lookup as embedding_lookup,
                                    top_k as top_k)
from gradflow.ops.nn.losses import (
    l2_loss as l2_loss,
    sigmoid_cross_entropy_with_logits as sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits as softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2 as softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits as sparse_softmax_cross_entropy_with_logits,
    weighted_cross_entropy_with_logits as weighted_cross_entropy_with_logits,
)
from gradflow.ops.nn.normalization import (batch_normalization as batch_normalization,
                                           dropout as dropout, fused_batch_norm as fused_batch_norm,
                                           l2_normalize as l2_normalize, moments as moments)
from gradflow.ops.nn.pooling import (avg_pool as avg_pool, avg_pool2d as avg_pool2d,
                                     max_pool as max_pool, max_pool2d as max_pool2d)


__all__: list[str] = []
