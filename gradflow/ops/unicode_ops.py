"""Unicode and token ops of ``tf.strings``: ``unicode_transcode``, ``unicode_decode``,
``unicode_encode``, ``unicode_split`` (and their ``_with_offsets`` forms), ``ngrams`` and
``bytes_split``.

TF returns a ``RaggedTensor`` from most of these; gradflow has none, so they take the
inputs whose result TF gives as a plain tensor (a scalar string to decode or split, a
vector or a matrix of code points to encode, any dense tensor for ``ngrams``) and raise
a ValueError naming ``RaggedTensor`` for the others. Invalid input is replaced by
``replacement_char`` one maximal invalid subsequence at a time, as ICU does.
"""
from __future__ import annotations

import codecs
import threading
from typing import Optional, Sequence

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, op_scope
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.array import concat, reshape, shape
from gradflow.ops.common import apply_op
from gradflow.ops.parsing_ops import string_split
from gradflow.ops.string_ops import map_strings

__all__ = ["unicode_transcode", "unicode_decode", "unicode_decode_with_offsets",
           "unicode_encode", "unicode_split", "unicode_split_with_offsets", "ngrams",
           "bytes_split"]

_ENCODINGS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}
_SENTINEL = "\udfff"  # stands for one invalid subsequence while decoding
_errors_seen = threading.local()


def _record_error(err: UnicodeDecodeError):
    _errors_seen.spans.append((err.start, err.end))
    return _SENTINEL, err.end


codecs.register_error("gradflow.unicode", _record_error)


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _decode(data: bytes, encoding: str, errors_mode: str, replacement: int,
            replace_control: bool) -> tuple[list, list]:
    """The code points of ``data`` and the byte offset where each starts."""
    _errors_seen.spans = []
    text = data.decode(_ENCODINGS[encoding], "gradflow.unicode")
    spans, points, starts = _errors_seen.spans, [], []
    position = spans_at = 0
    codec = _ENCODINGS[encoding]
    for char in text:
        if char == _SENTINEL and spans_at < len(spans):
            start, position = spans[spans_at]
            spans_at += 1
            if errors_mode == "strict":
                raise _invalid(f"Invalid formatting on input string at byte {start}")
            if errors_mode == "ignore":
                continue
            points.append(replacement)
            starts.append(start)
            continue
        point = ord(char)
        if replace_control and point < 0x20:
            point = replacement
        points.append(point)
        starts.append(position)
        position += len(char.encode(codec, "surrogatepass"))
    return points, starts


def _encode(points, encoding: str, errors_mode: str, replacement: int) -> bytes:
    chars = []
    for point in points:
        point = int(point)
        if 0 <= point <= 0x10FFFF and not 0xD800 <= point <= 0xDFFF:
            chars.append(chr(point))
        elif errors_mode == "strict":
            raise _invalid(f"Invalid code point {point} in the input")
        elif errors_mode == "replace":
            chars.append(chr(replacement))
    return "".join(chars).encode(_ENCODINGS[encoding])


def _check(encoding: str, errors_mode: str, replacement_char: int, arg: str) -> None:
    if encoding not in _ENCODINGS:
        raise ValueError(f"{arg} must be one of {sorted(_ENCODINGS)} in gradflow, got "
                         f"{encoding!r}")
    if errors_mode not in ("strict", "replace", "ignore"):
        raise ValueError(f"errors must be 'strict', 'replace' or 'ignore', got {errors_mode!r}")
    if not 0 <= int(replacement_char) <= 0x10FFFF:
        raise ValueError(f"replacement_char must be a code point, got {replacement_char}")


def _ragged(what: str) -> ValueError:
    return ValueError(f"{what} would be a RaggedTensor, which gradflow does not have; "
                      "give a scalar string (or split it with tf.string_split)")


# ---- UnicodeTranscode ---------------------------------------------------------------------

def _transcode_kernel(x, *, input_encoding, output_encoding, errors, replacement_char,
                      replace_control_characters):
    def transcode(data: bytes) -> bytes:
        points, _ = _decode(data, input_encoding, errors, replacement_char,
                            replace_control_characters)
        return _encode(points, output_encoding, errors, replacement_char)
    return map_strings(transcode, x)


define_op("UnicodeTranscode", kernel=_transcode_kernel,
          infer=lambda inputs, attrs: [(dtypes.string, inputs[0].shape)])
NotDifferentiable("UnicodeTranscode")


def unicode_transcode(input, input_encoding: str, output_encoding: str,  # noqa: A002
                      errors: str = "replace", replacement_char: int = 65533,
                      replace_control_characters: bool = False,
                      name: Optional[str] = None) -> Tensor:
    """Each string re-encoded from ``input_encoding`` to ``output_encoding`` (UTF-8,
    UTF-16-BE or UTF-32-BE)."""
    _check(input_encoding, errors, replacement_char, "input_encoding")
    _check(output_encoding, errors, replacement_char, "output_encoding")
    with op_scope(name, "UnicodeTranscode", [input]) as scope:
        x = convert_to_tensor(input, dtype=dtypes.string, name="input")
        return apply_op("UnicodeTranscode", [x], name=scope, input_encoding=input_encoding,
                        output_encoding=output_encoding, errors=errors,
                        replacement_char=int(replacement_char),
                        replace_control_characters=bool(replace_control_characters))


# ---- UnicodeDecode(WithOffsets) -----------------------------------------------------------

def _decode_kernel(x, *, input_encoding, errors, replacement_char, replace_control_characters,
                   offsets):
    splits, values, starts = [0], [], []
    for item in np.asarray(x, dtype=object).reshape(-1):
        points, where = _decode(item, input_encoding, errors, replacement_char,
                                replace_control_characters)
        values += points
        starts += where
        splits.append(len(values))
    out = (np.array(splits, np.int64), np.array(values, np.int32))
    return out + (np.array(starts, np.int64),) if offsets else out


def _infer_decode(inputs, attrs):
    out = [(dtypes.int64, TensorShape([None])), (dtypes.int32, TensorShape([None]))]
    return out + [(dtypes.int64, TensorShape([None]))] if attrs["offsets"] else out


define_op("UnicodeDecode", kernel=_decode_kernel, infer=_infer_decode)
define_op("UnicodeDecodeWithOffsets", kernel=_decode_kernel, infer=_infer_decode)
NotDifferentiable("UnicodeDecode")
NotDifferentiable("UnicodeDecodeWithOffsets")


def _decode_scalar(input, input_encoding, errors, replacement_char,  # noqa: A002
                   replace_control_characters, name, default: str, offsets: bool):
    _check(input_encoding, errors, replacement_char, "input_encoding")
    with op_scope(name, default, [input]) as scope:
        x = convert_to_tensor(input, dtype=dtypes.string, name="input")
        if x.shape.ndims != 0:
            raise _ragged(f"{default.lower()} of a rank-{x.shape.ndims} input")
        op_type = "UnicodeDecodeWithOffsets" if offsets else "UnicodeDecode"
        outputs = apply_op(op_type, [x], name=scope, input_encoding=input_encoding,
                           errors=errors, replacement_char=int(replacement_char),
                           replace_control_characters=bool(replace_control_characters),
                           offsets=offsets)
        return outputs[1:] if offsets else outputs[1]


def unicode_decode(input, input_encoding: str, errors: str = "replace",  # noqa: A002
                   replacement_char: int = 65533, replace_control_characters: bool = False,
                   name: Optional[str] = None) -> Tensor:
    """The code points (int32) of a scalar string."""
    return _decode_scalar(input, input_encoding, errors, replacement_char,
                          replace_control_characters, name, "UnicodeDecode", False)


def unicode_decode_with_offsets(input, input_encoding: str,  # noqa: A002
                                errors: str = "replace", replacement_char: int = 65533,
                                replace_control_characters: bool = False,
                                name: Optional[str] = None) -> tuple[Tensor, Tensor]:
    """The code points of a scalar string and the byte offset where each starts."""
    return tuple(_decode_scalar(input, input_encoding, errors, replacement_char,
                                replace_control_characters, name,
                                "UnicodeDecodeWithOffsets", True))


# ---- UnicodeEncode ------------------------------------------------------------------------

def _encode_kernel(values, splits, *, output_encoding, errors, replacement_char):
    splits = np.asarray(splits)
    out = np.empty(len(splits) - 1, dtype=object)
    for row in range(len(out)):
        out[row] = _encode(values[splits[row]:splits[row + 1]], output_encoding, errors,
                           replacement_char)
    return out


define_op("UnicodeEncode", kernel=_encode_kernel,
          infer=lambda inputs, attrs: [(dtypes.string, TensorShape([None]))])
NotDifferentiable("UnicodeEncode")


def unicode_encode(input, output_encoding: str, errors: str = "replace",  # noqa: A002
                   replacement_char: int = 65533, name: Optional[str] = None) -> Tensor:
    """Code points (int32) encoded as strings: a vector gives a scalar string, a matrix
    a vector of strings (one per row)."""
    _check(output_encoding, errors, replacement_char, "output_encoding")
    with op_scope(name, "UnicodeEncode", [input]) as scope:
        points = convert_to_tensor(input, dtype=dtypes.int32, name="input")
        dims = points.shape.as_list() if points.shape.ndims is not None else None
        if dims is None or len(dims) not in (1, 2) or (len(dims) == 2 and None in dims):
            raise _ragged(f"unicode_encode of an input of shape {points.shape}")
        rows, width = (1, dims[0]) if len(dims) == 1 else dims
        if width is None:
            flat = points
            splits = _scalar_splits(points)
        else:
            flat = reshape(points, [-1])
            splits = convert_to_tensor(np.arange(rows + 1, dtype=np.int64) * width,
                                       name="input_splits")
        text = apply_op("UnicodeEncode", [flat, splits], name=scope,
                        output_encoding=output_encoding, errors=errors,
                        replacement_char=int(replacement_char))
        if len(dims) == 1:
            return reshape(text, [])
        text.set_shape([rows])
        return text


def _scalar_splits(points: Tensor) -> Tensor:
    """``[0, len(points)]`` for a vector of unknown length."""
    return concat([np.zeros(1, np.int64), shape(points, out_type=dtypes.int64)], 0)


# ---- splitting into characters and bytes --------------------------------------------------

def _split_chars_kernel(x, *, input_encoding, errors, replacement_char, offsets):
    data = np.asarray(x, dtype=object).item()
    points, starts = _decode(data, input_encoding, errors, replacement_char, False)
    chars = np.empty(len(points), dtype=object)
    chars[:] = [_encode([p], input_encoding, errors, replacement_char) for p in points]
    return (chars, np.array(starts, np.int64)) if offsets else chars


def _infer_split_chars(inputs, attrs):
    out = [(dtypes.string, TensorShape([None]))]
    return out + [(dtypes.int64, TensorShape([None]))] if attrs["offsets"] else out


define_op("UnicodeSplit", kernel=_split_chars_kernel, infer=_infer_split_chars)
NotDifferentiable("UnicodeSplit")


def _split_scalar(input, input_encoding, errors, replacement_char, name,  # noqa: A002
                  default: str, offsets: bool):
    _check(input_encoding, errors, replacement_char, "input_encoding")
    with op_scope(name, default, [input]) as scope:
        x = convert_to_tensor(input, dtype=dtypes.string, name="input")
        if x.shape.ndims != 0:
            raise _ragged(f"{default.lower()} of a rank-{x.shape.ndims} input")
        return apply_op("UnicodeSplit", [x], name=scope, input_encoding=input_encoding,
                        errors=errors, replacement_char=int(replacement_char),
                        offsets=offsets)


def unicode_split(input, input_encoding: str, errors: str = "replace",  # noqa: A002
                  replacement_char: int = 65533, name: Optional[str] = None) -> Tensor:
    """The characters of a scalar string, each a string in ``input_encoding``."""
    return _split_scalar(input, input_encoding, errors, replacement_char, name,
                         "UnicodeSplit", False)


def unicode_split_with_offsets(input, input_encoding: str,  # noqa: A002
                               errors: str = "replace", replacement_char: int = 65533,
                               name: Optional[str] = None) -> tuple[Tensor, Tensor]:
    """The characters of a scalar string and the byte offset where each starts."""
    return tuple(_split_scalar(input, input_encoding, errors, replacement_char, name,
                               "UnicodeSplitWithOffsets", True))


def bytes_split(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """The bytes of a scalar string, each a string (TF's ``StringSplit`` with no
    separator)."""
    with op_scope(name, "StringsByteSplit", [input]):
        x = convert_to_tensor(input, dtype=dtypes.string, name="input")
        if x.shape.ndims != 0:
            raise _ragged(f"bytes_split of a rank-{x.shape.ndims} input")
        return string_split(reshape(x, [1]), sep="", skip_empty=False).values


# ---- StringNGrams -------------------------------------------------------------------------

def _row_ngrams(tokens: list, widths, separator: bytes, left: bytes, right: bytes,
                pad_width: int, preserve: bool) -> list:
    out = []
    for width in widths:
        pad = 0 if pad_width == 0 else (width - 1 if pad_width < 0 else
                                         min(pad_width, width - 1))
        padded = [left] * pad + tokens + [right] * pad
        count = len(padded) - width + 1
        out += [separator.join(padded[i:i + width]) for i in range(max(count, 0))]
    if preserve and not out and tokens:
        pad = 0 if pad_width == 0 else (max(widths) - 1 if pad_width < 0 else pad_width)
        out.append(separator.join([left] * pad + tokens + [right] * pad))
    return out


def _ngrams_kernel(data, splits, *, separator, ngram_widths, left_pad, right_pad, pad_width,
                   preserve_short_sequences):
    data = np.asarray(data, dtype=object)
    splits = np.asarray(splits)
    grams, out_splits = [], [0]
    for row in range(len(splits) - 1):
        tokens = list(data[splits[row]:splits[row + 1]])
        grams += _row_ngrams(tokens, ngram_widths, separator.encode("utf-8"),
                             left_pad.encode("utf-8"), right_pad.encode("utf-8"), pad_width,
                             preserve_short_sequences)
        out_splits.append(len(grams))
    values = np.empty(len(grams), dtype=object)
    values[:] = grams
    return values, np.array(out_splits, np.int64)


define_op("StringNGrams", kernel=_ngrams_kernel,
          infer=lambda inputs, attrs: [(dtypes.string, TensorShape([None])),
                                       (dtypes.int64, TensorShape([None]))])
NotDifferentiable("StringNGrams")


def _pads(pad_values, padding_width) -> tuple[str, str, int]:
    if pad_values is None:
        if padding_width is not None:
            raise ValueError("pad_values must be provided if padding_width is set.")
        return "", "", 0
    if padding_width is not None and padding_width < 1:
        raise ValueError("padding_width must be greater than 0.")
    if isinstance(pad_values, (list, tuple)):
        if len(pad_values) != 2:
            raise ValueError("pad_values must be a string or a pair of strings")
        left, right = pad_values
    else:
        left = right = pad_values
    text = [v.decode("utf-8") if isinstance(v, bytes) else v for v in (left, right)]
    if not all(isinstance(v, str) for v in text):
        raise TypeError("pad_values must be strings")
    return text[0], text[1], -1 if padding_width is None else int(padding_width)


def ngrams(data, ngram_width, separator: str = " ", pad_values=None,
           padding_width: Optional[int] = None, preserve_short_sequences: bool = False,
           name: Optional[str] = None) -> Tensor:
    """The n-grams of the last axis of a dense string tensor, joined by ``separator``
    (``ngram_width`` an int or a sequence of them; padding as TF's ``ngrams``)."""
    widths: Sequence[int] = [ngram_width] if isinstance(ngram_width, int) else \
        list(ngram_width)
    bad = [w for w in widths if w < 1]
    if bad:
        raise ValueError(f"All ngram_widths must be greater than 0. Got {bad[0]}")
    left, right, pad_width = _pads(pad_values, padding_width)
    with op_scope(name, "StringNGrams", [data]) as scope:
        x = convert_to_tensor(data, dtype=dtypes.string, name="data")
        dims = x.shape.as_list() if x.shape.ndims is not None else None
        if dims is None or None in dims:
            raise ValueError(f"ngrams needs data of fully known shape in gradflow, got "
                             f"{x.shape}")
        if not dims:
            raise ValueError("Data must have rank>0")
        rows, length = int(np.prod(dims[:-1], dtype=np.int64)), dims[-1]
        splits = convert_to_tensor(np.arange(rows + 1, dtype=np.int64) * length,
                                   name="data_splits")
        values, _ = apply_op("StringNGrams", [reshape(x, [-1]), splits], name=scope,
                             separator=str(separator), ngram_widths=tuple(widths),
                             left_pad=left, right_pad=right, pad_width=pad_width,
                             preserve_short_sequences=bool(preserve_short_sequences))
        # TF's static shape leaves the n-gram count unknown
        return reshape(values, dims[:-1] + [-1]) if len(dims) > 1 else values
