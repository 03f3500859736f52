"""Image codecs beyond ``decode_png``/``decode_jpeg``/``decode_image`` (``ops/parsing_ops``):
PNG and JPEG encoding, JPEG-quality distortions, and the BMP, GIF, WebP and cropped-JPEG
decoders and the JPEG header reader, under TF's op types (``EncodePng``, ``EncodeJpeg``,
``EncodeJpegVariableQuality``, ``DecodeBmp``, ``DecodeGif``, ``DecodeWebP``,
``DecodeAndCropJpeg``, ``ExtractJpegShape``). Pillow does the work (the optional
``image`` extra, as for the decoders that exist); without it a kernel raises
UnimplementedError saying so. The bytes Pillow writes are not TF's (libjpeg settings
differ), the pixels decoded from them agree within the format's loss.
"""
from __future__ import annotations

import io
from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope, op_scope
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import apply_op, check_dtype_in, static_ints
from gradflow.ops.image_color import convert_image_dtype
from gradflow.ops.image_resize import atomic, no_gradient_in_tf
from gradflow.ops.math import equal
from gradflow.ops.parsing_ops import decode_jpeg
from gradflow.ops.random import random_uniform
from gradflow.ops.string_ops import substr

try:
    from PIL import Image, ImageSequence
except ImportError:  # the optional [image] extra
    Image = ImageSequence = None

__all__ = ["encode_png", "encode_jpeg", "adjust_jpeg_quality", "random_jpeg_quality",
           "decode_bmp", "decode_gif", "decode_webp", "decode_and_crop_jpeg",
           "extract_jpeg_shape", "is_jpeg"]


# ---------------------------------------------------------------------------- encoding
def _pillow(kind: str):
    if Image is None:
        raise errors.UnimplementedError(
            None, None, f"encode_{kind} needs Pillow: install the image extra "
                        "(pip install 'gradflow[image]')")
    return Image


_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def _encode_png_kernel(image, *, compression):
    pil = _pillow("png")
    if image.shape[2] not in _MODES:
        raise errors.InvalidArgumentError(None, None, "image must have 1, 2, 3, or 4 channels")
    buffer = io.BytesIO()
    if image.dtype == np.uint16:
        if image.shape[2] != 1:
            raise errors.InvalidArgumentError(
                None, None, "encode_png: gradflow (Pillow) writes 16-bit PNGs with one "
                            "channel only")
        picture = pil.fromarray(np.ascontiguousarray(image[:, :, 0]))  # mode I;16
    else:
        data = image[:, :, 0] if image.shape[2] == 1 else image
        picture = pil.fromarray(np.ascontiguousarray(data), _MODES[image.shape[2]])
    level = 6 if compression < 0 else int(compression)
    picture.save(buffer, format="PNG", compress_level=level)
    return np.array(buffer.getvalue(), dtype=object)


def _encode_jpeg_kernel(image, *, quality, format, progressive, optimize_size,
                        chroma_downsampling, x_density, y_density, density_unit):
    pil = _pillow("jpeg")
    channels = image.shape[2]
    mode = format or {1: "grayscale", 3: "rgb"}.get(channels)
    if mode is None or {"grayscale": 1, "rgb": 3}[mode] != channels:
        raise errors.InvalidArgumentError(
            None, None, f"image must have 1 or 3 channels (matching format), got {channels}")
    data = image[:, :, 0] if channels == 1 else image
    picture = pil.fromarray(np.ascontiguousarray(data), "L" if channels == 1 else "RGB")
    buffer = io.BytesIO()
    picture.save(buffer, format="JPEG", quality=int(quality), progressive=bool(progressive),
                 optimize=bool(optimize_size), subsampling=2 if chroma_downsampling else 0,
                 dpi=(int(x_density), int(y_density)))
    return np.array(buffer.getvalue(), dtype=object)


def _encode_variable_kernel(images, quality):
    return _encode_jpeg_kernel(images, quality=int(quality), format="", progressive=False,
                               optimize_size=False, chroma_downsampling=True, x_density=300,
                               y_density=300, density_unit="in")


def _infer_encode(op_type: str, allowed: tuple):
    def infer(inputs, attrs):
        image = inputs[0]
        if image.dtype not in allowed:
            names = ", ".join(d.name for d in allowed)
            if len(allowed) == 1:  # TF's words for an op of one input type
                raise TypeError(f"Input 'image' of '{op_type}' Op has type {image.dtype.name} "
                                f"that does not match expected type of {names}.")
            raise TypeError(f"Value passed to parameter 'image' has DataType "
                            f"{image.dtype.name} not in list of allowed values: {names}")
        if image.shape.ndims is not None and image.shape.ndims < 3:
            raise ValueError(f"Shape must be at least rank 3 but is rank {image.shape.ndims} "
                             f"for '{op_type}' (input shape {image.shape})")
        if image.shape.ndims not in (None, 3):
            raise ValueError(f"Shape must be rank 3 but is rank {image.shape.ndims} for "
                             f"'{op_type}' (input shape {image.shape})")
        return [(dtypes.string, TensorShape([]))]
    return infer


define_op("EncodePng", infer=_infer_encode("EncodePng", (dtypes.uint8, dtypes.uint16)),
          kernel=_encode_png_kernel)
define_op("EncodeJpeg", infer=_infer_encode("EncodeJpeg", (dtypes.uint8,)),
          kernel=_encode_jpeg_kernel)
define_op("EncodeJpegVariableQuality", kernel=_encode_variable_kernel,
          infer=_infer_encode("EncodeJpegVariableQuality", (dtypes.uint8,)))
no_gradient_in_tf("EncodeJpegVariableQuality")
no_gradient_in_tf("EncodePng")
no_gradient_in_tf("EncodeJpeg")


def encode_png(image, compression: int = -1, name: Optional[str] = None) -> Tensor:
    """PNG bytes of a uint8 (or 1-channel uint16) image [H, W, C] (Pillow)."""
    if not -1 <= int(compression) <= 9:
        raise ValueError(f"compression must be in [-1, 9], got {compression}")
    with op_scope(name, "EncodePng", [image]) as scope:
        image = convert_to_tensor(image, name="image")
        return apply_op("EncodePng", [image], name=scope, compression=int(compression))


def encode_jpeg(image, format: str = "", quality: int = 95,  # noqa: A002 - TF's name
                progressive: bool = False, optimize_size: bool = False,
                chroma_downsampling: bool = True, density_unit: str = "in",
                x_density: int = 300, y_density: int = 300, xmp_metadata: str = "",
                name: Optional[str] = None) -> Tensor:
    """JPEG bytes of a uint8 image [H, W, 1 or 3] (Pillow's encoder: the bytes differ
    from TF's libjpeg output; decoded pixels agree within JPEG's loss)."""
    if format not in ("", "grayscale", "rgb"):
        raise ValueError(f"format must be '', 'grayscale' or 'rgb', got {format!r}")
    if not 0 <= int(quality) <= 100:
        raise ValueError(f"quality must be in [0, 100], got {quality}")
    if density_unit != "in" or xmp_metadata:
        raise ValueError("encode_jpeg: density_unit other than 'in' and xmp_metadata are not "
                         "supported by gradflow")
    with op_scope(name, "EncodeJpeg", [image]) as scope:
        image = convert_to_tensor(image, name="image")
        return apply_op("EncodeJpeg", [image], name=scope, quality=int(quality), format=format,
                        progressive=bool(progressive), optimize_size=bool(optimize_size),
                        chroma_downsampling=bool(chroma_downsampling),
                        x_density=int(x_density), y_density=int(y_density),
                        density_unit=density_unit)


def adjust_jpeg_quality(image, jpeg_quality, dct_method: str = "",
                        name: Optional[str] = None) -> Tensor:
    """``image`` after a JPEG round trip at ``jpeg_quality`` (0-100, an int or a scalar int32
    tensor), in its own dtype (Pillow's codec: pixels agree with TF's within JPEG's loss)."""
    with op_scope(name, "adjust_jpeg_quality", [image]):
        image = convert_to_tensor(image, name="image")
        channels = image.shape.as_tuple()[-1] if image.shape.ndims else None
        if channels not in (1, 3):
            raise ValueError(f"adjust_jpeg_quality: the image needs a static depth of 1 or 3, "
                             f"got shape {image.shape}")
        original = image.dtype
        pixels = convert_image_dtype(image, dtypes.uint8, saturate=True)
        if not isinstance(jpeg_quality, Tensor):
            jpeg_quality = convert_to_tensor(jpeg_quality, dtype=dtypes.int32)
        encoded = apply_op("EncodeJpegVariableQuality", [pixels, jpeg_quality],
                           name="EncodeJpegVariableQuality")
        decoded = decode_jpeg(encoded, channels=channels, dct_method=dct_method)
        return convert_image_dtype(decoded, original, saturate=True)


def random_jpeg_quality(image, min_jpeg_quality: int, max_jpeg_quality: int,
                        seed: Optional[int] = None) -> Tensor:
    """``adjust_jpeg_quality`` at a quality drawn uniformly from [min, max)."""
    if min(min_jpeg_quality, max_jpeg_quality) < 0 or max(min_jpeg_quality,
                                                          max_jpeg_quality) > 100:
        raise ValueError("jpeg encoding range must be between 0 and 100.")
    if min_jpeg_quality >= max_jpeg_quality:
        raise ValueError("`min_jpeg_quality` must be less than `max_jpeg_quality`.")
    with atomic([image]):
        quality = random_uniform([], min_jpeg_quality, max_jpeg_quality, seed=seed,
                                 dtype=dtypes.int32)
        return adjust_jpeg_quality(image, quality)


# ---------------------------------------------------------------------------- decoding
def _opened(contents, kind: str, formats: tuple):
    """The Pillow image in ``contents``, loaded; InvalidArgumentError if it is not one of
    ``formats``."""
    pil = _pillow(kind)
    data = np.asarray(contents, dtype=object).item()
    data = data if isinstance(data, bytes) else str(data).encode()
    try:
        picture = pil.open(io.BytesIO(data))
        picture.load()
    except Exception as err:  # Pillow's UnidentifiedImageError, OSError on truncation
        raise errors.InvalidArgumentError(None, None, f"Invalid {kind.upper()} data: {err}") \
            from None
    if picture.format not in formats:
        raise errors.InvalidArgumentError(
            None, None, f"Invalid {kind.upper()} data: the contents are {picture.format}")
    return picture


def _pixels(picture, channels: int) -> np.ndarray:
    """[H, W, C] uint8 pixels: the picture's own channels (0), or converted to ``channels``."""
    if channels == 0:
        mode = picture.mode if picture.mode in ("L", "RGB", "RGBA") else \
            ("RGBA" if "A" in picture.mode or "transparency" in picture.info else "RGB")
    else:
        mode = _MODES[channels]
    array = np.asarray(picture.convert(mode), dtype=np.uint8)
    return array[:, :, None] if array.ndim == 2 else array


def _decode_bmp_kernel(contents, *, channels):
    """Uncompressed 8, 24 and 32-bit BMPs read directly (as TF does: a 32-bit file's fourth
    byte is its fourth channel, an 8-bit file's index its grey level)."""
    if channels not in (0, 3, 4):
        raise errors.InvalidArgumentError(None, None, f"channels attribute {channels} not "
                                                      "supported")
    data = np.asarray(contents, dtype=object).item()
    if len(data) < 54 or data[:2] != b"BM":
        raise errors.InvalidArgumentError(None, None, "Invalid BMP data: no BMP header")
    start, = np.frombuffer(data, "<u4", 1, 10)
    width, height = (int(v) for v in np.frombuffer(data, "<i4", 2, 18))
    bits, = np.frombuffer(data, "<u2", 1, 28)
    compression, = np.frombuffer(data, "<u4", 1, 30)
    depth = int(bits) // 8
    if bits not in (8, 24, 32) or compression not in (0, 3):
        raise errors.InvalidArgumentError(
            None, None, f"Invalid BMP data: {bits}-bit (compression {compression}) BMPs are "
                        "not supported, only uncompressed 8, 24 and 32-bit ones")
    rows = abs(height)
    stride = (width * depth + 3) // 4 * 4
    if len(data) < start + stride * rows:
        raise errors.InvalidArgumentError(None, None, "Invalid BMP data: truncated pixels")
    grid = np.frombuffer(data, np.uint8, stride * rows, int(start)).reshape(rows, stride)
    pixels = grid[:, :width * depth].reshape(rows, width, depth)
    if height > 0:  # stored bottom-up
        pixels = pixels[::-1]
    if depth >= 3:
        pixels = pixels[:, :, [2, 1, 0, 3][:depth]]  # BGR(A) to RGB(A)
    if channels == 3 and depth != 3:
        pixels = np.repeat(pixels, 3, axis=2) if depth == 1 else pixels[:, :, :3]
    elif channels == 4 and depth != 4:
        rgb = np.repeat(pixels, 3, axis=2) if depth == 1 else pixels
        pixels = np.concatenate([rgb, np.full(rgb.shape[:2] + (1,), 255, np.uint8)], axis=2)
    return np.ascontiguousarray(pixels)


def _decode_gif_kernel(contents):
    picture = _opened(contents, "gif", ("GIF",))
    return np.stack([_pixels(frame, 3) for frame in ImageSequence.Iterator(picture)])


def _decode_webp_kernel(contents, *, channels, dtype):
    picture = _opened(contents, "webp", ("WEBP",))
    stored = 4 if "A" in picture.mode else 3
    if channels and channels != stored:
        raise errors.InvalidArgumentError(None, None, "Number of channels requested does not "
                                                      "match input")
    frames = np.stack([_pixels(frame, channels) for frame in ImageSequence.Iterator(picture)])
    return frames.astype(dtype.as_numpy_dtype)


def _crop_window(window: np.ndarray, shape: tuple) -> tuple:
    top, left, rows, cols = (int(v) for v in window)
    if rows <= 0 or cols <= 0 or top < 0 or left < 0 or top + rows > shape[0] \
            or left + cols > shape[1]:
        raise errors.InvalidArgumentError(
            None, None, f"Invalid JPEG data or crop window, data size {shape[0]}x{shape[1]}, "
                        f"crop window [{top}, {left}, {rows}, {cols}]")
    return slice(top, top + rows), slice(left, left + cols)


def _decode_crop_kernel(contents, crop_window, *, channels, dct_method):
    del dct_method  # a hint, as for decode_jpeg: Pillow uses its accurate integer DCT
    pixels = _pixels(_opened(contents, "jpeg", ("JPEG", "MPO")), channels)
    rows, cols = _crop_window(crop_window, pixels.shape)
    return np.ascontiguousarray(pixels[rows, cols])


def _jpeg_shape_kernel(contents, *, output_type):
    pil = _pillow("jpeg")
    data = np.asarray(contents, dtype=object).item()
    try:
        picture = pil.open(io.BytesIO(data))  # reads the header only
    except Exception as err:  # Pillow's UnidentifiedImageError
        raise errors.InvalidArgumentError(None, None, f"Invalid JPEG data: {err}") from None
    if picture.format not in ("JPEG", "MPO"):
        raise errors.InvalidArgumentError(None, None, f"Invalid JPEG data: the contents are "
                                                      f"{picture.format}")
    depth = len(picture.getbands())
    return np.array([picture.height, picture.width, depth], output_type.as_numpy_dtype)


def _infer_decoded(rank: int, depth_attr: Optional[str] = None, fixed: Optional[int] = None,
                   dtype_attr: Optional[str] = None):
    def infer(inputs, attrs):
        _check_contents(inputs[0])
        depth = fixed if fixed is not None else (attrs[depth_attr] or None)
        dtype = attrs[dtype_attr] if dtype_attr else dtypes.uint8
        return [(dtype, TensorShape([None] * (rank - 1) + [depth]))]
    return infer


def _check_contents(contents: Tensor) -> None:
    check_dtype_in(contents, (dtypes.string,), "Decode", "contents")
    if contents.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {contents.shape.ndims} for "
                         f"'contents' (input shape {contents.shape})")


def _infer_jpeg_shape(inputs, attrs):
    _check_contents(inputs[0])
    return [(attrs["output_type"], TensorShape([3]))]


def _infer_decode_crop(inputs, attrs):
    _check_contents(inputs[0])
    window = static_ints(inputs[1])
    if window is not None and len(window) != 4:
        raise ValueError(f"crop_window must be [y, x, height, width], got {window}")
    rows, cols = (window[2], window[3]) if window is not None else (None, None)
    return [(dtypes.uint8, TensorShape([rows, cols, attrs["channels"] or None]))]


define_op("DecodeBmp", infer=_infer_decoded(3, "channels"), kernel=_decode_bmp_kernel)
define_op("DecodeGif", infer=_infer_decoded(4, fixed=3), kernel=_decode_gif_kernel)
define_op("DecodeWebP", infer=_infer_decoded(4, "channels", dtype_attr="dtype"),
          kernel=_decode_webp_kernel)
define_op("DecodeAndCropJpeg", infer=_infer_decode_crop, kernel=_decode_crop_kernel)
define_op("ExtractJpegShape", kernel=_jpeg_shape_kernel, infer=_infer_jpeg_shape)
for _op_type in ("DecodeBmp", "DecodeGif", "DecodeWebP", "DecodeAndCropJpeg",
                 "ExtractJpegShape"):
    NotDifferentiable(_op_type)  # decoders take bytes: nothing to differentiate, as in TF


def _contents(contents, op_type: str) -> Tensor:
    if isinstance(contents, Tensor) and contents.dtype is not dtypes.string:
        raise TypeError(f"Input 'contents' of '{op_type}' Op has type {contents.dtype.name} "
                        "that does not match expected type of string.")
    return convert_to_tensor(contents, dtype=dtypes.string, name="contents")


def decode_bmp(contents, channels: int = 0, name: Optional[str] = None) -> Tensor:
    """Decodes a BMP image into a uint8 [height, width, channels] tensor (``channels`` 0:
    as stored; 3 or 4 convert)."""
    with op_scope(name, "DecodeBmp", [contents]) as scope:
        return apply_op("DecodeBmp", [_contents(contents, "DecodeBmp")], name=scope,
                        channels=int(channels))


def decode_gif(contents, name: Optional[str] = None) -> Tensor:
    """Decodes every frame of a GIF into a uint8 [frames, height, width, 3] tensor."""
    with op_scope(name, "DecodeGif", [contents]) as scope:
        return apply_op("DecodeGif", [_contents(contents, "DecodeGif")], name=scope)


def decode_webp(contents, channels: int = 0, dtype=dtypes.uint8,
                name: Optional[str] = None) -> Tensor:
    """Decodes a WebP image (every frame of an animation) into [frames, height, width,
    channels] of ``dtype`` (uint8 values; ``channels`` 0: 3, or 4 with alpha)."""
    if int(channels) not in (0, 3, 4):
        raise ValueError(f"channels must be 0, 3 or 4, got {channels}")
    dtype = dtypes.as_dtype(dtype)
    with op_scope(name, "DecodeWebP", [contents]) as scope:
        return apply_op("DecodeWebP", [_contents(contents, "DecodeWebP")], name=scope,
                        channels=int(channels), dtype=dtype)


def decode_and_crop_jpeg(contents, crop_window, channels: int = 0, ratio: int = 1,
                         fancy_upscaling: bool = True, try_recover_truncated: bool = False,
                         acceptable_fraction: float = 1, dct_method: str = "",
                         name: Optional[str] = None) -> Tensor:
    """The ``crop_window`` ([y, x, height, width]) of a JPEG image, uint8 (decoded whole,
    then cropped: TF's partial decode can differ by JPEG's rounding at the window edge)."""
    for arg, value, default in (("ratio", ratio, 1), ("fancy_upscaling", fancy_upscaling, True),
                                ("try_recover_truncated", try_recover_truncated, False),
                                ("acceptable_fraction", acceptable_fraction, 1)):
        if value != default:
            raise ValueError(f"decode_and_crop_jpeg: {arg} is not supported by gradflow")
    if int(channels) not in (0, 1, 3):
        raise ValueError(f"channels must be 0, 1 or 3, got {channels}")
    with op_scope(name, "DecodeAndCropJpeg", [contents, crop_window]) as scope:
        window = convert_to_tensor(crop_window, dtype=dtypes.int32, name="crop_window")
        return apply_op("DecodeAndCropJpeg", [_contents(contents, "DecodeAndCropJpeg"), window],
                        name=scope, channels=int(channels), dct_method=str(dct_method))


def extract_jpeg_shape(contents, output_type=dtypes.int32, name: Optional[str] = None
                       ) -> Tensor:
    """[height, width, channels] of a JPEG image, read from its header."""
    output_type = dtypes.as_dtype(output_type)
    if output_type not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"output_type must be int32 or int64, got {output_type.name}")
    with op_scope(name, "ExtractJpegShape", [contents]) as scope:
        return apply_op("ExtractJpegShape", [_contents(contents, "ExtractJpegShape")], name=scope,
                        output_type=output_type)


def is_jpeg(contents, name: Optional[str] = None) -> Tensor:
    """Whether the string ``contents`` starts with JPEG's start-of-image marker ``FF D8 FF``
    (TF builds it the same way: the first three bytes compared with the marker)."""
    with atomic([contents]), name_scope(name, "is_jpeg", [contents]):
        return equal(substr(contents, 0, 3), b"\xff\xd8\xff", name="Equal")
