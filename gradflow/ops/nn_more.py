"""The 3-D convolution and pooling, 1-D pooling, separable convolution and ``nn.pool``
constructors under their historical import path; they live in the ``gradflow.ops.nn``
package's family modules (``convolution``, ``convolution_3d``, ``pooling``)."""
from gradflow.ops.nn.convolution import separable_conv2d
from gradflow.ops.nn.convolution_3d import conv3d, conv3d_backprop_filter_v2, conv3d_transpose
from gradflow.ops.nn.pooling import avg_pool1d, avg_pool3d, max_pool1d, max_pool3d, pool

__all__ = ["conv3d", "conv3d_backprop_filter_v2", "conv3d_transpose", "max_pool3d",
           "avg_pool3d", "max_pool1d", "avg_pool1d", "separable_conv2d", "pool"]
