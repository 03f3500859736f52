"""Summary ops: each outputs a serialized ``Summary`` protocol buffer (a string scalar).

Op types, inputs and outputs are TF1's: ``ScalarSummary(tags, values)``,
``HistogramSummary(tag, values)`` (TF's exponential buckets), ``ImageSummary(tag, tensor)``
(PNG, TF's float-to-uint8 scaling), ``AudioSummaryV2(tag, tensor, sample_rate)`` (16-bit
WAV), ``TensorSummaryV2(tag, tensor, serialized_summary_metadata)`` and
``MergeSummary(inputs)``. The protos are TF's own classes from the ``tensorboard``
package. The TF1 API (``gf.summary.scalar``...) lives in ``gradflow/summary``.
"""
from __future__ import annotations

import io
import struct
import zlib
from typing import Sequence

import numpy as np
from tensorboard.compat.proto import summary_pb2

from gradflow.framework import dtypes, errors
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_proto import make_tensor_proto
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import REAL_NUMERIC, apply_op, check_dtype_in

__all__ = ["scalar_summary_op", "histogram_summary_op", "image_summary_op",
           "audio_summary_op", "tensor_summary_op", "merge_summary_op", "histogram_proto",
           "encode_png", "encode_wav"]

_STRING_SCALAR = [(dtypes.string, TensorShape([]))]


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _check_tag(tag, op_type: str) -> None:
    if tag.dtype is not dtypes.string:
        raise TypeError(f"{op_type}: tag must be a string tensor, got {tag.dtype.name}")
    if not tag.shape.is_compatible_with(TensorShape([])):
        raise ValueError(f"{op_type}: tag must be a scalar, got shape {tag.shape}")


# ScalarSummary ---------------------------------------------------------------------------

def _infer_scalar(inputs, attrs):
    tags, values = inputs
    check_dtype_in(values, REAL_NUMERIC, "ScalarSummary", "values")
    if tags.dtype is not dtypes.string:
        raise TypeError(f"ScalarSummary: tags must be a string tensor, got {tags.dtype.name}")
    if not tags.shape.is_compatible_with(values.shape):
        raise ValueError(f"Shapes must be equal rank, but are {tags.shape.ndims} and "
                         f"{values.shape.ndims} for 'ScalarSummary' (tags shape {tags.shape}, "
                         f"values shape {values.shape})")
    return _STRING_SCALAR


def _scalar_kernel(tags, values):
    tags, values = np.asarray(tags), np.asarray(values)
    if tags.shape != values.shape:
        raise errors.InvalidArgumentError(
            None, None, f"tags and values are not the same shape: {list(tags.shape)} != "
            f"{list(values.shape)}")
    summary = summary_pb2.Summary()
    for tag, value in zip(tags.reshape(-1), values.reshape(-1), strict=True):
        summary.value.add(tag=_text(tag), simple_value=float(value))
    return np.array(summary.SerializeToString(), dtype=object)


define_op("ScalarSummary", infer=_infer_scalar, kernel=_scalar_kernel)
NotDifferentiable("ScalarSummary")


def scalar_summary_op(tags, values, name: str):
    return apply_op("ScalarSummary", [tags, values], name=name)


# HistogramSummary ------------------------------------------------------------------------

def _bucket_limits() -> np.ndarray:
    """TF's default histogram limits: ±1e-12·1.1^k up to 1e20, 0, and ±DBL_MAX."""
    positive = []
    value = 1.0e-12
    while value < 1.0e20:
        positive.append(value)
        value *= 1.1
    positive.append(np.finfo(np.float64).max)
    return np.array([-v for v in reversed(positive)] + [0.0] + positive)


_LIMITS = _bucket_limits()


def histogram_proto(values: np.ndarray) -> summary_pb2.HistogramProto:
    """TF's histogram of ``values``: min, max, num, sum, sum of squares and its buckets,
    each run of empty buckets collapsed into one (as TF encodes it)."""
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    counts = np.bincount(np.searchsorted(_LIMITS, flat, side="right"),
                         minlength=len(_LIMITS))[:len(_LIMITS)].astype(np.float64)
    big = np.finfo(np.float64).max
    proto = summary_pb2.HistogramProto(
        min=float(flat.min()) if flat.size else big,
        max=float(flat.max()) if flat.size else -big,
        num=float(flat.size), sum=float(flat.sum()), sum_squares=float(np.dot(flat, flat)))
    i = 0
    while i < len(counts):
        end, count = _LIMITS[i], counts[i]
        i += 1
        if count <= 0.0:
            while i < len(counts) and counts[i] <= 0.0:
                end, count = _LIMITS[i], counts[i]
                i += 1
        proto.bucket_limit.append(float(end))
        proto.bucket.append(float(count))
    return proto


def _infer_histogram(inputs, attrs):
    tag, values = inputs
    _check_tag(tag, "HistogramSummary")
    check_dtype_in(values, REAL_NUMERIC, "HistogramSummary", "values")
    return _STRING_SCALAR


def _histogram_kernel(tag, values):
    values = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        kind = "Nan" if np.isnan(values).any() else "Infinity"
        raise errors.InvalidArgumentError(
            None, None, f"{kind} in summary histogram for: {_text(tag[()])}")
    summary = summary_pb2.Summary()
    summary.value.add(tag=_text(tag[()]), histo=histogram_proto(values))
    return np.array(summary.SerializeToString(), dtype=object)


define_op("HistogramSummary", infer=_infer_histogram, kernel=_histogram_kernel)
NotDifferentiable("HistogramSummary")


def histogram_summary_op(tag, values, name: str):
    return apply_op("HistogramSummary", [tag, values], name=name)


# ImageSummary ----------------------------------------------------------------------------

def encode_png(image: np.ndarray) -> bytes:
    """An [h, w, c] uint8 image (c = 1, 3 or 4) as PNG bytes (zlib's deflate and CRC)."""
    height, width, channels = image.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    rows = b"".join(b"\x00" + row.tobytes() for row in np.ascontiguousarray(image))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + \
        chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _to_uint8(image: np.ndarray, bad_color: np.ndarray) -> np.ndarray:
    """TF's float scaling: all >= 0: largest value to 255; else 0 to 128, the largest
    magnitude to ±127. Non-finite pixels take ``bad_color``."""
    if image.dtype == np.uint8:
        return image
    image = image.astype(np.float32)
    finite = np.isfinite(image).all(axis=-1)
    values = image[finite] if finite.any() else np.zeros(1, np.float32)
    low, high = float(values.min()), float(values.max())
    if low < 0:
        top = max(abs(low), abs(high))
        scale, offset = (0.0 if top < 1e-6 else 127.0 / top), 128.0
    else:
        scale, offset = (0.0 if high < 1e-6 else 255.0 / high), 0.0
    scaled = np.where(finite[..., None], image, 0.0) * np.float32(scale) + np.float32(offset)
    result = scaled.astype(np.uint8)
    result[~finite] = bad_color[:image.shape[-1]]
    return result


def _infer_image(inputs, attrs):
    tag, tensor = inputs
    _check_tag(tag, "ImageSummary")
    check_dtype_in(tensor, (dtypes.uint8, dtypes.float16, dtypes.float32, dtypes.float64),
                   "ImageSummary", "tensor")
    if tensor.shape.ndims is not None:
        if tensor.shape.ndims != 4:
            raise ValueError(f"Tensor must be 4-D with last dim 1, 3, or 4, not "
                             f"{tensor.shape}")
        channels = tensor.shape.as_list()[-1]
        if channels is not None and channels not in (1, 3, 4):
            raise ValueError(f"Tensor must be 4-D with last dim 1, 3, or 4, not "
                             f"{tensor.shape}")
    if attrs["max_images"] < 1:
        raise ValueError(f"max_images must be at least 1, got {attrs['max_images']}")
    return _STRING_SCALAR


def _image_kernel(tag, tensor, *, max_images, bad_color):
    if tensor.ndim != 4 or tensor.shape[-1] not in (1, 3, 4):
        raise errors.InvalidArgumentError(
            None, None, f"Tensor must be 4-D with last dim 1, 3, or 4, not "
            f"[{','.join(map(str, tensor.shape))}]")
    count = min(max_images, tensor.shape[0])
    summary = summary_pb2.Summary()
    for i in range(count):
        pixels = _to_uint8(tensor[i], np.asarray(bad_color, np.uint8))
        name = f"{_text(tag[()])}/image" if max_images == 1 else f"{_text(tag[()])}/image/{i}"
        summary.value.add(tag=name, image=summary_pb2.Summary.Image(
            height=pixels.shape[0], width=pixels.shape[1], colorspace=pixels.shape[2],
            encoded_image_string=encode_png(pixels)))
    return np.array(summary.SerializeToString(), dtype=object)


define_op("ImageSummary", infer=_infer_image, kernel=_image_kernel)
NotDifferentiable("ImageSummary")


def image_summary_op(tag, tensor, max_images: int, name: str):
    return apply_op("ImageSummary", [tag, tensor], name=name, max_images=int(max_images),
                    bad_color=[255, 0, 0, 255])


# AudioSummaryV2 --------------------------------------------------------------------------

def encode_wav(samples: np.ndarray, sample_rate: int) -> bytes:
    """[frames, channels] float samples in [-1, 1] as a 16-bit PCM WAV file (TF scales by
    32768 and clips to the int16 range)."""
    frames, channels = samples.shape
    pcm = np.clip(np.round(samples * 32768.0), -32768, 32767).astype("<i2")
    buffer = io.BytesIO()
    data = pcm.tobytes()
    buffer.write(b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE")
    buffer.write(b"fmt " + struct.pack("<IHHIIHH", 16, 1, channels, sample_rate,
                                       sample_rate * channels * 2, channels * 2, 16))
    buffer.write(b"data" + struct.pack("<I", len(data)) + data)
    return buffer.getvalue()


def _infer_audio(inputs, attrs):
    tag, tensor, rate = inputs
    _check_tag(tag, "AudioSummaryV2")
    check_dtype_in(tensor, (dtypes.float32,), "AudioSummaryV2", "tensor")
    if tensor.shape.ndims is not None and tensor.shape.ndims not in (2, 3):
        raise ValueError(f"Tensor must be 3-D or 2-D, got: {tensor.shape}")
    if attrs["max_outputs"] < 1:
        raise ValueError(f"max_outputs must be at least 1, got {attrs['max_outputs']}")
    return _STRING_SCALAR


def _audio_kernel(tag, tensor, sample_rate, *, max_outputs):
    if tensor.ndim == 2:
        tensor = tensor[:, :, None]
    rate = float(sample_rate)
    summary = summary_pb2.Summary()
    for i in range(min(max_outputs, tensor.shape[0])):
        name = f"{_text(tag[()])}/audio" if max_outputs == 1 else f"{_text(tag[()])}/audio/{i}"
        summary.value.add(tag=name, audio=summary_pb2.Summary.Audio(
            sample_rate=rate, num_channels=tensor.shape[2], length_frames=tensor.shape[1],
            content_type="audio/wav", encoded_audio_string=encode_wav(tensor[i], int(rate))))
    return np.array(summary.SerializeToString(), dtype=object)


define_op("AudioSummaryV2", infer=_infer_audio, kernel=_audio_kernel)
NotDifferentiable("AudioSummaryV2")


def audio_summary_op(tag, tensor, sample_rate, max_outputs: int, name: str):
    return apply_op("AudioSummaryV2", [tag, tensor, sample_rate], name=name,
                    max_outputs=int(max_outputs))


# TensorSummaryV2 -------------------------------------------------------------------------

def _infer_tensor_summary(inputs, attrs):
    tag, _, metadata = inputs
    _check_tag(tag, "TensorSummaryV2")
    _check_tag(metadata, "TensorSummaryV2")
    return _STRING_SCALAR


def _tensor_summary_kernel(tag, tensor, serialized_summary_metadata):
    metadata = summary_pb2.SummaryMetadata.FromString(
        serialized_summary_metadata[()] if isinstance(serialized_summary_metadata[()], bytes)
        else str(serialized_summary_metadata[()]).encode("latin-1"))
    summary = summary_pb2.Summary()
    value = summary.value.add(tag=_text(tag[()]), metadata=metadata)
    value.tensor.CopyFrom(make_tensor_proto(tensor))
    return np.array(summary.SerializeToString(), dtype=object)


define_op("TensorSummaryV2", infer=_infer_tensor_summary, kernel=_tensor_summary_kernel)
NotDifferentiable("TensorSummaryV2")


def tensor_summary_op(tag, tensor, metadata, name: str):
    return apply_op("TensorSummaryV2", [tag, tensor, metadata], name=name)


# MergeSummary ----------------------------------------------------------------------------

def _infer_merge(inputs, attrs):
    if not inputs:
        raise ValueError("MergeSummary needs at least one input")
    for t in inputs:
        if t.dtype is not dtypes.string:
            raise TypeError(f"MergeSummary: inputs must be string tensors, got "
                            f"{t.dtype.name} ({t.name})")
    return _STRING_SCALAR


def _merge_kernel(*inputs):
    merged = summary_pb2.Summary()
    seen: set = set()
    for serialized in inputs:
        for item in np.asarray(serialized).reshape(-1):
            part = summary_pb2.Summary.FromString(item)
            for value in part.value:
                if value.tag in seen:
                    raise errors.InvalidArgumentError(
                        None, None, f"Duplicate tag {value.tag} found in summary inputs ")
                seen.add(value.tag)
                merged.value.add().CopyFrom(value)
    return np.array(merged.SerializeToString(), dtype=object)


define_op("MergeSummary", infer=_infer_merge, kernel=_merge_kernel)
NotDifferentiable("MergeSummary")


def merge_summary_op(inputs: Sequence, name: str):
    return apply_op("MergeSummary", list(inputs), name=name)
