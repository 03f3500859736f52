"""``gf.layers``: TF1's ``tf.layers`` (function and class forms), on the variable store."""
from gradflow.layers.base import InputSpec, Layer
from gradflow.layers.convolutional import (
    Conv1D, Conv2D, Conv2DTranspose, Conv3D, Conv3DTranspose, Convolution1D, Convolution2D,
    Convolution2DTranspose, Convolution3D, Convolution3DTranspose, SeparableConv1D,
    SeparableConv2D, conv1d, conv2d, conv2d_transpose, conv3d, conv3d_transpose,
    separable_conv1d, separable_conv2d)
from gradflow.layers.core import Dense, Dropout, Flatten, dense, dropout, flatten
from gradflow.layers.normalization import BatchNormalization, BatchNorm, batch_normalization
from gradflow.layers.pooling import (
    AveragePooling1D, AveragePooling2D, AveragePooling3D, AvgPool1D, AvgPool2D, AvgPool3D,
    MaxPool1D, MaxPool2D, MaxPool3D, MaxPooling1D, MaxPooling2D, MaxPooling3D,
    average_pooling1d, average_pooling2d, average_pooling3d, max_pooling1d, max_pooling2d,
    max_pooling3d)

__all__ = [
    "InputSpec", "Layer", "Dense", "dense", "Dropout", "dropout", "Flatten", "flatten",
    "Conv1D", "conv1d", "Conv2D", "conv2d", "Conv3D", "conv3d", "Conv2DTranspose",
    "conv2d_transpose", "Conv3DTranspose", "conv3d_transpose", "SeparableConv1D",
    "separable_conv1d", "SeparableConv2D", "separable_conv2d", "Convolution1D",
    "Convolution2D", "Convolution3D", "Convolution2DTranspose", "Convolution3DTranspose",
    "MaxPooling1D", "max_pooling1d", "MaxPooling2D", "max_pooling2d", "MaxPooling3D",
    "max_pooling3d", "AveragePooling1D", "average_pooling1d", "AveragePooling2D",
    "average_pooling2d", "AveragePooling3D", "average_pooling3d", "MaxPool1D", "MaxPool2D",
    "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "BatchNormalization", "BatchNorm",
    "batch_normalization",
]
