"""Sliding-window geometry and array helpers shared by the convolutions and the pooling
ops of any spatial rank (1-D ops run as 2-D ones of height 1; 2-D and 3-D have kernels).

Arrays reach these helpers channels-last ([N, *spatial, C]); a ``WindowSpec`` turns an
op's attrs (``strides``, ``dilations``, ``ksize``, ``padding`` in ``data_format`` order)
into one ``Window`` per spatial axis. Loops here run over filter taps, never over
positions or images.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from typing import Callable, NamedTuple, Optional, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from gradflow.framework.graph import Tensor
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import check_dtype_in, static_ints
from gradflow.ops.nn.helpers import INDEX_TYPES


class Window(NamedTuple):
    """One spatial axis of a sliding-window op.

    Output position ``o`` reads the padded input at ``o * stride + t * dilation`` for
    taps ``t < size``; ``before``/``after`` is the padding added around the input.
    """

    size: int
    stride: int
    dilation: int
    before: int
    after: int
    out: int

    @property
    def span(self) -> int:
        """How many consecutive padded-input positions one window covers."""
        return (self.size - 1) * self.dilation + 1

    def reads(self, tap: int) -> slice:
        """The padded-input positions tap ``tap`` reads, one per output position."""
        start = tap * self.dilation
        return slice(start, start + self.stride * (self.out - 1) + 1, self.stride)


def fit_window(in_size: int, size: int, stride: int, dilation: int, padding: str,
               explicit: tuple[int, int] = (0, 0)) -> Window:
    """The window of one axis: 'SAME' pads to ``ceil(in / stride)`` outputs (the extra
    padding after), otherwise ``explicit`` padding ((0, 0) for 'VALID')."""
    span = (size - 1) * dilation + 1
    if padding == "SAME":
        out = -(-in_size // stride)
        total = max((out - 1) * stride + span - in_size, 0)
        return Window(size, stride, dilation, total // 2, total - total // 2, out)
    before, after = explicit
    padded = in_size + before + after
    if padded < span:
        raise ValueError(f"Negative dimension size caused by subtracting {span} from {padded}")
    return Window(size, stride, dilation, before, after, (padded - span) // stride + 1)


# data formats per spatial rank: channels last, channels first
FORMATS = {2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


class WindowSpec:
    """The window attrs of a ``rank``-D convolution or pooling op, read channels-last."""

    def __init__(self, attrs: dict, rank: int = 2):
        last, first = FORMATS[rank]
        data_format = attrs["data_format"]
        if data_format not in (last, first):
            raise ValueError(f"data_format must be '{last}' or '{first}', got {data_format!r}")
        self.rank = rank
        self.channels_last = data_format == last
        self.spatial = tuple(range(1, rank + 1)) if self.channels_last else \
            tuple(range(2, rank + 2))
        self.padding = attrs["padding"]
        allowed = ("SAME", "VALID", "EXPLICIT") if rank == 2 else ("SAME", "VALID")
        if self.padding not in allowed:
            raise ValueError(f"Attr 'padding' passed string '{self.padding}' not in: "
                             + ", ".join(f'"{p}"' for p in allowed) + ".")
        self.strides = self._spatial_entries(attrs["strides"], "strides")
        self.dilations = self._spatial_entries(attrs.get("dilations", [1] * (rank + 2)),
                                               "dilations")
        ksize = attrs.get("ksize")
        self.ksize = None if ksize is None else self._spatial_entries(ksize, "ksize")
        pads = attrs.get("explicit_paddings") or [0] * (2 * rank + 4)
        if self.padding == "EXPLICIT" and len(pads) != 2 * rank + 4:
            raise ValueError(f"explicit_paddings must hold {2 * rank + 4} values "
                             f"({rank + 2} [before, after] pairs), got {list(pads)}")
        self.explicit = tuple((pads[2 * a], pads[2 * a + 1]) for a in self.spatial)

    def _spatial_entries(self, values: Sequence[int], arg: str) -> tuple[int, ...]:
        values = list(values)
        dims = self.rank + 2
        outer = [values[a] for a in range(dims) if a not in self.spatial] \
            if len(values) == dims else None
        if outer != [1, 1] or min(values) < 1:
            raise ValueError(f"{arg} must hold {dims} positive values with 1 in the batch and "
                             f"channel dimensions (pooling, strides and dilations across them "
                             f"are not supported), got {values}")
        return tuple(values[a] for a in self.spatial)

    def windows(self, in_sizes: Sequence[int], sizes: Sequence[int]) -> tuple[Window, ...]:
        return tuple(fit_window(n, k, s, d, self.padding, e) for n, k, s, d, e in zip(
            in_sizes, sizes, self.strides, self.dilations, self.explicit, strict=True))

    def out_sizes(self, in_sizes: Sequence, sizes: Sequence, context: str) -> list:
        """Static output sizes (None where an input size is unknown)."""
        result = []
        for n, k, s, d, e in zip(in_sizes, sizes, self.strides, self.dilations,
                                 self.explicit, strict=True):
            if n is None or k is None:
                result.append(None)
                continue
            try:
                result.append(fit_window(n, k, s, d, self.padding, e).out)
            except ValueError as err:
                raise ValueError(f"{err} for {context}") from None
        return result

    def last(self, dims: Sequence) -> tuple:
        """Dims in channels-last order."""
        return tuple(dims) if self.channels_last else (dims[0], *dims[2:], dims[1])

    def layout(self, dims: Sequence) -> tuple:
        """Channels-last dims in this op's order."""
        return tuple(dims) if self.channels_last else (dims[0], dims[-1], *dims[1:-1])

    def to_last(self, x: np.ndarray) -> np.ndarray:
        return x if self.channels_last else np.moveaxis(x, 1, -1)

    def from_last(self, x: np.ndarray) -> np.ndarray:
        return x if self.channels_last else np.moveaxis(x, -1, 1)


def checked_spec(attrs: dict, op_type: str, t: Tensor, rank: int = 2) -> WindowSpec:
    """The op's window attrs, or a ValueError naming the op type and its input."""
    try:
        return WindowSpec(attrs, rank)
    except ValueError as err:
        raise ValueError(f"{err} ('{op_type}' of {t.name})") from None


def static_last_dims(spec: WindowSpec, t: Tensor) -> tuple:
    """``t``'s static dims channels-last (None where unknown)."""
    dims = t.shape.as_tuple()
    return (None,) * (spec.rank + 2) if dims is None else spec.last(dims)


def shape_from_sizes(sizes: Tensor, op_type: str, rank: int = 2) -> TensorShape:
    check_dtype_in(sizes, INDEX_TYPES, op_type, "sizes")
    values = static_ints(sizes)
    return TensorShape([None] * (rank + 2)) if values is None else TensorShape(values)


# ---------------------------------------------------------------------- array helpers
def pad_windows(x: np.ndarray, windows: Sequence[Window], pad_value=0) -> np.ndarray:
    """Channels-last ``x`` with the windows' padding around its spatial axes."""
    widths = [(win.before, win.after) for win in windows]
    if any(b or e for b, e in widths):
        x = np.pad(x, [(0, 0), *widths, (0, 0)], constant_values=pad_value)
    return x


def window_taps(padded: np.ndarray, windows: Sequence[Window]):
    """``(tap, view)`` per filter tap (numbered row-major over the window): the
    [N, *out, C] view of the padded input that tap reads, one position per output."""
    for tap, index in enumerate(itertools.product(*(range(win.size) for win in windows))):
        yield tap, padded[(slice(None),) + tuple(
            win.reads(t) for win, t in zip(windows, index, strict=True))]


def tiling(windows: Sequence[Window]) -> bool:
    """Whether the windows tile the unpadded input without overlaps or gaps between
    them (stride = size, no dilation, no padding)."""
    return all(win.stride == win.size and win.dilation == 1 and not win.before
               and not win.after for win in windows)


def tiles(x: np.ndarray, windows: Sequence[Window]) -> Optional[np.ndarray]:
    """When the windows tile ``x`` (see ``tiling``), the [N, o1, k1, o2, k2, ..., C] view
    that splits each spatial axis into (window, tap); else None. Positions past the
    last window are left out."""
    if not tiling(windows):
        return None
    cropped = x[(slice(None),) + tuple(slice(0, win.out * win.size) for win in windows)]
    shape = [x.shape[0]]
    for win in windows:
        shape += [win.out, win.size]
    return cropped.reshape(shape + [x.shape[-1]])


def tile_taps(tiled: np.ndarray, windows: Sequence[Window]):
    """``(tap, view)`` per tap of a ``tiles`` view: the same views as ``window_taps``."""
    for tap, index in enumerate(itertools.product(*(range(win.size) for win in windows))):
        key = [slice(None)]
        for t in index:
            key += [slice(None), t]
        yield tap, tiled[tuple(key)]


def patches(x: np.ndarray, windows: Sequence[Window], pad_value=0) -> np.ndarray:
    """Every output position's receptive field of channels-last ``x``: an
    [N, *out, C, *size] view."""
    rank = len(windows)
    view = sliding_window_view(pad_windows(x, windows, pad_value),
                               tuple(win.span for win in windows), axis=tuple(range(1, rank + 1)))
    return view[(slice(None),)
                + tuple(slice(None, win.stride * (win.out - 1) + 1, win.stride) for win in windows)
                + (slice(None),) + tuple(slice(None, None, win.dilation) for win in windows)]


# Up to this many input channels the patch matrix is built channel-major (see im2col).
CHANNEL_MAJOR_MAX_CHANNELS = 4


def im2col(x: np.ndarray, windows: Sequence[Window]) -> np.ndarray:
    """The receptive fields of channels-last ``x`` as an [N*prod(out), prod(size)*C]
    matrix, each row ordered (taps..., channel) like a filter's rows, so that a
    convolution is one matrix product.

    With many channels the matrix is C-ordered, copied from the window view in runs of
    whole channel rows. With few, such runs are a value or three long, so it is built
    transposed ([prod(size)*C, rows], returned as its transpose view, which BLAS reads
    without a copy): every (tap, channel) row is then one copy of a whole image-sized
    window view into contiguous memory (10x faster for one channel and a 5x5 filter).
    """
    rank = len(windows)
    n, channels = x.shape[0], x.shape[-1]
    outs = tuple(win.out for win in windows)
    taps = int(np.prod([win.size for win in windows]))
    rows = n * int(np.prod(outs))
    if channels <= CHANNEL_MAJOR_MAX_CHANNELS:
        cols = np.empty((taps, channels, n) + outs, x.dtype)
        channel_first = (rank + 1, *range(rank + 1))
        for tap, view in window_taps(pad_windows(x, windows), windows):
            cols[tap] = view.transpose(channel_first)
        return cols.reshape(taps * channels, rows).T
    order = (0, *range(1, rank + 1), *range(rank + 2, 2 * rank + 2), rank + 1)
    return np.ascontiguousarray(patches(x, windows).transpose(order)).reshape(
        rows, taps * channels)


def accumulate_taps(tap_value: Callable, windows: Sequence[Window], in_shape: Sequence[int],
                    dtype) -> np.ndarray:
    """The channels-last input-shaped sum over taps of ``tap_value(tap)`` ([N, *out, C]),
    each added where that tap reads: the adjoint of ``window_taps``."""
    padded = np.zeros((in_shape[0], *(n + win.before + win.after for n, win in zip(
        in_shape[1:-1], windows, strict=True)), in_shape[-1]), dtype)
    for tap, view in window_taps(padded, windows):
        view += tap_value(tap)
    return unpad(padded, windows, in_shape)


def unpad(padded: np.ndarray, windows: Sequence[Window], in_shape: Sequence[int]) -> np.ndarray:
    """The view of ``padded`` without the windows' padding."""
    return padded[(slice(None),) + tuple(slice(win.before, win.before + n) for n, win in zip(
        in_shape[1:-1], windows, strict=True))]


def window_counts(windows: Sequence[Window], in_sizes: Sequence[int], dtype) -> np.ndarray:
    """How many real (unpadded) inputs each window covers, as [1, *out, 1] of ``dtype``
    (the data's: dividing by int64 counts would compute in float64)."""
    counts = np.ones((), dtype)
    for win, size in zip(windows, in_sizes, strict=True):
        start = np.arange(win.out) * win.stride - win.before
        per_axis = np.clip(start + win.size, 0, size) - np.clip(start, 0, size)
        counts = np.multiply.outer(counts, per_axis.astype(dtype))
    return counts[None, ..., None]


# ----------------------------------------------------------------- patch reuse
class PatchCache:
    """The patch matrix of a convolution's forward pass, kept for the filter gradient
    of the same step, which needs the same matrix of the same input.

    An entry is keyed by the input array's identity and the windows, holds a copy of
    the input and is used once: the filter gradient takes it only when its input is
    the same array with the same values (an array can be written in place between
    runs), and it goes away with the input array. At most ``capacity`` entries live.
    """

    def __init__(self, capacity: int = 8):
        self._capacity = capacity
        self._entries: dict = {}
        self._lock = threading.Lock()  # sessions may run in several threads

    def put(self, x: np.ndarray, windows: tuple, matrix: np.ndarray) -> None:
        key = id(x)
        try:
            # the entry goes when x does (the callback runs when x is freed, before
            # another array can take its id)
            ref = weakref.ref(x, lambda _, key=key, entries=self._entries: entries.pop(key, None))
        except TypeError:
            return
        entry = (ref, windows, x.copy(), matrix)
        with self._lock:
            self._entries.pop(key, None)
            for oldest in list(self._entries)[:max(0, len(self._entries) - self._capacity + 1)]:
                self._entries.pop(oldest, None)
            self._entries[key] = entry

    def take(self, x: np.ndarray, windows: tuple) -> Optional[np.ndarray]:
        """The matrix ``put`` with this very ``x`` (same values) and windows, or None."""
        with self._lock:
            entry = self._entries.pop(id(x), None)
        if entry is None:
            return None
        ref, cached_windows, copy, matrix = entry
        if ref() is not x or cached_windows != windows or copy.dtype != x.dtype \
                or not _same_bits(copy, x):
            return None
        return matrix


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two same-shaped arrays hold the same bytes (NaNs and signed zeros too)."""
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" and a.dtype.itemsize in (2, 4, 8):
        view = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
        return bool(np.array_equal(a.view(view), b.view(view)))
    return bool(np.array_equal(a, b))


# ------------------------------------------------------------- constructor arguments
def width_value(value, arg: str, channels_last: bool) -> int:
    """A 1-D op's stride, dilation or window size: an int or a list of 1 or 3 ints (the
    batch and channel entries around it)."""
    values = [value] if isinstance(value, (int, np.integer)) else list(value)
    if len(values) == 3:
        return int(values[1] if channels_last else values[2])
    if len(values) != 1:
        raise ValueError(f"{arg} should be of length 1 or 3. Received: {arg}={value} of "
                         f"length {len(values)}")
    return int(values[0])


def window_list(value, arg: str, data_format: str) -> list[int]:
    """An int or a list of 1, rank or rank + 2 ints as the per-dimension values of
    ``data_format`` (1 in its batch and channel dimensions)."""
    dims = len(data_format)
    values = [value] if isinstance(value, (int, np.integer)) else list(value)
    if len(values) == 1:
        values = values * (dims - 2)
    if len(values) == dims - 2:
        values = [1, *values, 1] if data_format[-1] == "C" else [1, 1, *values]
    elif len(values) != dims:
        raise ValueError(f"{arg} should be of length 1, {dims - 2} or {dims}. Received: "
                         f"{arg}={value} of length {len(values)}")
    return [int(v) for v in values]


def padding_attrs(padding, data_format: str, op_type: str, explicit_ok: bool = True) -> dict:
    """``padding`` ('SAME', 'VALID' or 4 [before, after] pairs) as op attrs."""
    if isinstance(padding, str):
        if padding not in ("SAME", "VALID"):
            allowed = '"SAME", "VALID", "EXPLICIT"' if explicit_ok else '"SAME", "VALID"'
            raise ValueError(f"Attr 'padding' of '{op_type}' Op passed string '{padding}' not "
                             f"in: {allowed}.")
        return {"padding": padding, "explicit_paddings": []}
    pairs = [list(p) for p in padding] if explicit_ok and padding is not None else []
    if len(pairs) != 4 or any(len(p) != 2 for p in pairs):
        raise ValueError(f"padding of '{op_type}' must be 'SAME', 'VALID' or a list of 4 "
                         f"[before, after] pairs, got {padding!r}")
    outer = (0, 3) if data_format == "NHWC" else (0, 1)
    if any(pairs[a] != [0, 0] for a in outer):
        raise ValueError(f"padding of '{op_type}' must be 0 in the batch and channel "
                         f"dimensions, got {padding!r}")
    return {"padding": "EXPLICIT", "explicit_paddings": [int(v) for p in pairs for v in p]}


def alias(arg: str, value, other: str, other_value):
    """One of two spellings of an argument (TF renamed several, keeping both)."""
    if value is not None and other_value is not None:
        raise ValueError(f"Cannot specify both '{arg}' and '{other}'.")
    if value is None and other_value is None:
        raise ValueError(f"'{arg}' must be provided.")
    return value if value is not None else other_value
