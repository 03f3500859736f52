"""``tf.data``'s ops: datasets as variant tensors, iterators as session resources.

Each ``*Dataset`` op outputs a scalar variant whose run-time value is a
``DatasetValue`` (``ops/dataset_iteration.py``): a recipe for its elements, built from
its inputs' values. Transformations taking Python functions hold them as graph
``Function``s (attr ``f``/``predicate``) whose captured outer tensors are extra inputs.
Dataset ops are stateful so the plan optimizer never folds or merges them.

Iterators live in the Session like variables (``Session.resource``): ``IteratorV2``
and ``OneShotIterator`` make one, ``MakeIterator`` (re)starts it on a dataset,
``IteratorGetNext`` reads it (``OutOfRangeError`` at the end), ``IteratorToStringHandle``
and ``IteratorFromStringHandleV2`` name it for feedable iterators.
"""
from __future__ import annotations

import collections
import gzip
import io
import itertools
import os
import threading
import zlib
from typing import Callable, Iterator, Optional, Sequence

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.function import Function
from gradflow.framework.graph import Operation, Tensor
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import dataset_iteration as it
from gradflow.ops.common import apply_op, graph_for
from gradflow.ops.record_formats import open_records

__all__ = ["make_dataset", "DATASET_OP_TYPES", "iterator_handle", "make_iterator",
           "iterator_get_next", "iterator_to_string_handle", "iterator_from_string_handle",
           "register_generator", "AUTOTUNE"]

AUTOTUNE = -1
_SHUFFLE_DRAWS = 1024  # random buffer slots a shuffle draws at once
_VARIANT = [(dtypes.variant, TensorShape([]))]
_keys = itertools.count()


def _dataset(op_type: str, kernel: Callable) -> None:
    def run(*inputs, metadata: bytes = b"", **attrs):  # the metadata attr names, only
        return kernel(*inputs, **attrs)
    define_op(op_type, infer=lambda inputs, attrs: _VARIANT, kernel=run, stateful=True)
    NotDifferentiable(op_type)


def _scalar(value) -> int:
    return int(np.asarray(value).reshape(()))


# ------------------------------------------------------------------------ sources
def _leaf_groups(components: Sequence, sparse: Optional[Sequence]) -> list:
    """The components of each leaf: one array, or a SparseTensor's three."""
    groups, at = [], 0
    for is_sparse in (sparse if sparse is not None else [False] * len(components)):
        width = 3 if is_sparse else 1
        groups.append(tuple(components[at:at + width]))
        at += width
    return groups


def _sparse_rows(indices, values, dense_shape) -> list:
    """A SparseTensor's slices along its first dimension, as component triples."""
    indices, values = np.asarray(indices), np.asarray(values)
    shape = np.asarray(dense_shape)
    rows = indices[:, 0] if len(indices) else np.zeros(0, np.int64)
    order = np.argsort(rows, kind="stable")
    bounds = np.searchsorted(rows[order], np.arange(int(shape[0]) + 1))
    return [(indices[order[a:b], 1:], values[order[a:b]], shape[1:])
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _slices_kernel(*components, sparse=None):
    groups = _leaf_groups(components, sparse)
    slices = [_sparse_rows(*g) if len(g) == 3 else g[0] for g in groups]
    sizes = {len(s) if isinstance(s, list) else np.shape(s)[0] for s in slices}
    if len(sizes) != 1:
        raise errors.InvalidArgumentError(
            None, None, f"All components must have the same size in the 0th dimension, got "
            f"{sorted(sizes)}")
    size = sizes.pop()

    def element(i: int) -> tuple:
        return tuple(c for s in slices for c in (s[i] if isinstance(s, list) else (s[i],)))
    return it.DatasetValue(lambda env: (element(i) for i in range(size)))


def _tensors_kernel(*components):
    return it.DatasetValue(lambda env: iter([tuple(components)]))


def _range_kernel(start, stop, step, *, output_type):
    if _scalar(step) == 0:
        raise errors.InvalidArgumentError(None, None, "step must be a non-zero integer.")
    numpy_type = output_type.as_numpy_dtype
    return it.DatasetValue(lambda env: ((numpy_type(i),) for i in range(
        _scalar(start), _scalar(stop), _scalar(step))))


_GENERATORS: dict[str, Callable] = {}


def register_generator(generator: Callable) -> str:
    """Keeps a ``from_generator`` callable; the op holds the returned token."""
    token = f"generator_{next(_keys)}"
    _GENERATORS[token] = generator
    return token


def _generator_kernel(*args, token, output_types, output_shapes):
    def elements(env):
        for value in _GENERATORS[token](*args):
            env.check_stopped()
            yield _generated_element(value, output_types, output_shapes)
    return it.DatasetValue(elements)


def _generated_element(value, output_types, output_shapes) -> tuple:
    values = value if len(output_types) > 1 else (value,)
    if len(values) != len(output_types):
        raise errors.InvalidArgumentError(
            None, None, f"generator yielded an element of {len(values)} components, expected "
            f"{len(output_types)}")
    out = []
    for v, dtype, shape in zip(values, output_types, output_shapes, strict=True):
        try:
            array = np.asarray(v, dtype=dtype.as_numpy_dtype)
        except (TypeError, ValueError):
            raise errors.InvalidArgumentError(
                None, None, f"TypeError: `generator` yielded an element that could not be "
                f"converted to the expected type. The expected type was {dtype.name}, but the "
                f"yielded element was {v!r}.") from None
        if dtype is dtypes.string:
            array = np.vectorize(lambda s: s.encode() if isinstance(s, str) else s,
                                 otypes=[object])(array) if array.size else array
        if not shape.is_compatible_with(array.shape):
            raise errors.InvalidArgumentError(
                None, None, f"`generator` yielded an element of shape {list(array.shape)} where "
                f"an element of shape {shape} was expected.")
        out.append(array)
    return tuple(out)


def _filenames(filenames) -> list:
    return [f.decode() if isinstance(f, bytes) else str(f)
            for f in np.asarray(filenames, dtype=object).reshape(-1)]


def _compression(value) -> str:
    text = np.asarray(value, dtype=object).item()
    return (text.decode() if isinstance(text, bytes) else str(text)).upper()


def _tfrecord_kernel(filenames, compression_type, buffer_size):
    names, compression = _filenames(filenames), _compression(compression_type)

    def elements(env):
        for name in names:
            yield from zip(open_records("TFRecord", name, compression))  # 1-tuples, made in C
    return it.DatasetValue(elements)


def _open_binary(name: str, compression: str):
    """A readable binary file, decompressed as the ``compression_type`` says."""
    try:
        if compression == "GZIP":
            return gzip.open(name, "rb")
        raw = open(name, "rb")
    except OSError as err:
        raise errors.NotFoundError(None, None, f"{name}; {err.strerror}") from None
    if compression == "ZLIB":
        with raw:
            return io.BytesIO(zlib.decompress(raw.read()))
    return raw


def _text_line_kernel(filenames, compression_type, buffer_size):
    names, compression = _filenames(filenames), _compression(compression_type)

    def elements(env):
        for name in names:
            with _open_binary(name, compression) as source:
                for line in source:
                    line = line[:-1] if line.endswith(b"\n") else line
                    yield (line[:-1] if line.endswith(b"\r") else line,)
    return it.DatasetValue(elements)


def _fixed_length_kernel(filenames, header_bytes, record_bytes, footer_bytes, buffer_size,
                         compression_type):
    names, compression = _filenames(filenames), _compression(compression_type)
    header, width, footer = _scalar(header_bytes), _scalar(record_bytes), _scalar(footer_bytes)

    def elements(env):
        for name in names:
            with _open_binary(name, compression) as source:
                data = source.read()
            body = data[header:len(data) - footer]
            if len(body) % width:
                raise errors.DataLossError(
                    None, None, f"Excluding the header ({header} bytes) and footer ({footer} "
                    f"bytes), input file \"{name}\" has body length {len(body)} bytes, which is "
                    f"not an exact multiple of the record length ({width} bytes).")
            for start in range(0, len(body), width):
                yield (body[start:start + width],)
    return it.DatasetValue(elements)


_dataset("TensorSliceDataset", _slices_kernel)
_dataset("TensorDataset", _tensors_kernel)
_dataset("RangeDataset", _range_kernel)
_dataset("GeneratorDataset", _generator_kernel)
_dataset("TFRecordDataset", _tfrecord_kernel)
_dataset("TextLineDataset", _text_line_kernel)
_dataset("FixedLengthRecordDataset", _fixed_length_kernel)


# ---------------------------------------------------------- function transformations
def _mapper(env, f, captured) -> Callable[[tuple], tuple]:
    return lambda element: tuple(env.call(f, list(element) + list(captured)))


def _map_kernel(dataset, *captured, f, num_parallel_calls, preserve_cardinality=True):
    def elements(env):
        fn = _mapper(env, f, captured)
        source = dataset.iterate(env)
        if num_parallel_calls in (None, 0, 1):
            return map(fn, source)
        workers = it.autotune_workers() if num_parallel_calls == AUTOTUNE else num_parallel_calls
        return it.parallel_map(source, fn, workers, env)
    return it.DatasetValue(elements)


def _filter_kernel(dataset, *captured, predicate):
    def elements(env):
        keep = _mapper(env, predicate, captured)
        return (e for e in dataset.iterate(env) if bool(keep(e)[0]))
    return it.DatasetValue(elements)


def _flat_map_kernel(dataset, *captured, f):
    def elements(env):
        inner = _mapper(env, f, captured)
        for element in dataset.iterate(env):
            yield from inner(element)[0].iterate(env)
    return it.DatasetValue(elements)


def _interleave_kernel(dataset, cycle_length, block_length, *captured, f):
    return _interleaved(dataset, cycle_length, block_length, captured, f, 0, 0, None)


def _parallel_interleave_kernel(dataset, cycle_length, block_length, buffer_output_elements,
                                prefetch_input_elements, num_parallel_calls, *captured, f):
    workers = _scalar(num_parallel_calls)
    return _interleaved(dataset, cycle_length, block_length, captured, f,
                        max(1, _scalar(buffer_output_elements)),
                        max(0, _scalar(prefetch_input_elements)),
                        it.autotune_workers() if workers == AUTOTUNE else workers)


def _legacy_interleave_kernel(dataset, cycle_length, block_length, buffer_output_elements,
                              prefetch_input_elements, *captured, f, sloppy):
    return _interleaved(dataset, cycle_length, block_length, captured, f,
                        max(1, _scalar(buffer_output_elements)),
                        max(0, _scalar(prefetch_input_elements)), None)


def _interleaved(dataset, cycle_length, block_length, captured, f, ahead: int, opened: int,
                 workers: Optional[int]):
    """Interleave's elements; ``ahead`` > 0: each input dataset is read ahead (that many
    elements) on a thread, ``opened`` more inputs than the cycle holds are started early,
    and at most ``workers`` (None: any number) of those threads make an element at once.
    The order is the sequential interleave's either way (as TF's deterministic parallel
    interleave)."""
    cycle = _scalar(cycle_length)
    cycle = it.autotune_workers() if cycle == AUTOTUNE else cycle
    block = _scalar(block_length)
    if cycle <= 0 or block <= 0:
        raise errors.InvalidArgumentError(None, None, "cycle_length and block_length must be "
                                          "positive")

    def elements(env):
        inner = _mapper(env, f, captured)
        source = dataset.iterate(env)
        waiting: collections.deque = collections.deque()  # inputs opened ahead
        gate = None if workers is None else threading.BoundedSemaphore(workers)

        def next_input():
            while len(waiting) <= opened:
                element = next(source, None)
                if element is None:
                    break
                made = inner(element)[0].iterate(env)
                if gate is not None:
                    made = _gated(made, gate)
                waiting.append(it.prefetched(made, ahead, env, "gradflow-interleave")
                               if ahead else made)
            return waiting.popleft() if waiting else None

        slots: list = [None] * cycle
        index, taken, open_count, input_done = 0, 0, 0, False
        while not input_done or open_count:
            if slots[index] is not None:
                element = next(slots[index], None)
                if element is not None:
                    yield element
                    taken += 1
                    if taken == block:
                        index, taken = (index + 1) % cycle, 0
                    continue
                slots[index], open_count = None, open_count - 1
                index, taken = (index + 1) % cycle, 0
            elif not input_done:
                slots[index] = next_input()
                if slots[index] is None:
                    input_done = True
                else:
                    open_count += 1
            else:
                index, taken = (index + 1) % cycle, 0
    return it.DatasetValue(elements)


def _gated(elements: Iterator[tuple], gate: threading.BoundedSemaphore) -> Iterator[tuple]:
    """``elements``, each made while holding ``gate`` (which bounds the threads at work)."""
    while True:
        with gate:
            element = next(elements, None)
        if element is None:
            return
        yield element


_dataset("MapDataset", _map_kernel)
_dataset("ParallelMapDatasetV2", _map_kernel)
_dataset("FilterDataset", _filter_kernel)
_dataset("FlatMapDataset", _flat_map_kernel)
_dataset("InterleaveDataset", _interleave_kernel)
_dataset("ParallelInterleaveDatasetV4", _parallel_interleave_kernel)
_dataset("LegacyParallelInterleaveDatasetV2", _legacy_interleave_kernel)


# ------------------------------------------------------------ other transformations
def _batch_kernel(dataset, batch_size, drop_remainder, *, sparse=None):
    return _batched(dataset, batch_size, drop_remainder, sparse, 1)


def _parallel_batch_kernel(dataset, batch_size, num_parallel_calls, drop_remainder, *,
                           sparse=None):
    workers = _scalar(num_parallel_calls)
    return _batched(dataset, batch_size, drop_remainder, sparse,
                    it.autotune_workers() if workers == AUTOTUNE else workers)


def _batched(dataset, batch_size, drop_remainder, sparse, workers: int):
    """Batches of ``batch_size`` elements; ``workers`` > 1 stacks that many at once on a
    thread pool (in order)."""
    size, drop = _scalar(batch_size), bool(np.asarray(drop_remainder))
    if size <= 0:
        raise errors.InvalidArgumentError(None, None, "Batch size must be greater than zero.")
    batch = it.batch_components if not sparse or not any(sparse) else \
        (lambda chunk: _batch_with_sparse(chunk, sparse))

    def chunks(env):
        source = dataset.iterate(env)
        while True:
            chunk = list(itertools.islice(source, size))
            if not chunk or (drop and len(chunk) < size):
                return
            yield chunk

    def elements(env):
        if workers <= 1:
            return map(batch, chunks(env))
        return it.parallel_map(chunks(env), batch, workers, env)
    return it.DatasetValue(elements)


def _batch_with_sparse(chunk: list, sparse: Sequence) -> tuple:
    """Batches elements with SparseTensor leaves: those gain a first index (the element's
    place in the batch) and a dense shape of the batch size and each dimension's largest."""
    out, at = [], 0
    for is_sparse in sparse:
        if not is_sparse:
            out.extend(it.batch_components([(e[at],) for e in chunk]))
            at += 1
            continue
        shapes = [np.asarray(e[at + 2]) for e in chunk]
        if len({s.shape for s in shapes}) != 1:
            raise errors.InvalidArgumentError(
                None, None, "Cannot batch SparseTensors of different ranks")
        rank = len(shapes[0])
        indices = [np.concatenate([np.full((len(e[at]), 1), row, np.int64),
                                   np.asarray(e[at], np.int64).reshape(len(e[at]), rank)],
                                  axis=1) for row, e in enumerate(chunk)]
        out += [np.concatenate(indices), np.concatenate([np.asarray(e[at + 1]) for e in chunk]),
                np.concatenate([[len(chunk)], np.max(shapes, axis=0)]).astype(np.int64)]
        at += 3
    return tuple(out)


def _padded_batch_kernel(dataset, batch_size, drop_remainder, *shapes_and_values, n):
    size, drop = _scalar(batch_size), bool(np.asarray(drop_remainder))
    shapes = [np.asarray(s).reshape(-1).tolist() for s in shapes_and_values[:n]]
    values = [np.asarray(v) for v in shapes_and_values[n:]]
    if size <= 0:
        raise errors.InvalidArgumentError(None, None, "Batch size must be greater than zero.")

    def elements(env):
        source = dataset.iterate(env)
        while True:
            chunk = list(itertools.islice(source, size))
            if not chunk or (drop and len(chunk) < size):
                return
            yield it.pad_components(chunk, shapes, values)
    return it.DatasetValue(elements)


def _unbatch_kernel(dataset):
    def elements(env):
        for element in dataset.iterate(env):
            sizes = {np.shape(c)[0] if np.ndim(c) else None for c in element}
            if None in sizes or len(sizes) != 1:
                raise errors.InvalidArgumentError(
                    None, None, "Input element must have a non-scalar value in each component "
                    "and the same size in the 0th dimension.")
            for i in range(sizes.pop()):
                yield tuple(c[i] for c in element)
    return it.DatasetValue(elements)


def _shuffle_kernel(dataset, buffer_size, seed, seed2, *, reshuffle_each_iteration):
    size = _scalar(buffer_size)
    if size <= 0:
        raise errors.InvalidArgumentError(None, None, "buffer_size must be greater than zero.")
    seeds = (_scalar(seed), _scalar(seed2))
    if seeds == (0, 0):  # no seed: fresh entropy, drawn once per dataset value
        seeds = tuple(int(s) for s in np.random.SeedSequence().generate_state(2))
    epochs = itertools.count()

    def elements(env):
        epoch = next(epochs) if reshuffle_each_iteration else 0
        rng = np.random.default_rng([seeds[0], seeds[1], epoch])
        source = dataset.iterate(env)
        buffer = list(itertools.islice(source, size))
        picks: Iterator[int] = iter(())
        for element in source:  # the buffer is full: each new element replaces a random one
            pick = next(picks, None)
            if pick is None:  # random slots drawn a block at a time, not one per element
                picks = iter(rng.integers(size, size=_SHUFFLE_DRAWS).tolist())
                pick = next(picks)
            yield buffer[pick]
            buffer[pick] = element
        while buffer:
            pick = int(rng.integers(len(buffer)))
            buffer[pick], buffer[-1] = buffer[-1], buffer[pick]
            yield buffer.pop()
    return it.DatasetValue(elements)


def _repeat_kernel(dataset, count):
    times = _scalar(count)

    def elements(env):
        epoch = 0
        while times < 0 or epoch < times:
            produced = False
            for element in dataset.iterate(env):
                produced = True
                yield element
            if not produced:
                return
            epoch += 1
    return it.DatasetValue(elements)


def _take_kernel(dataset, count):
    n = _scalar(count)
    return it.DatasetValue(lambda env: dataset.iterate(env) if n < 0
                           else itertools.islice(dataset.iterate(env), n))


def _skip_kernel(dataset, count):
    n = _scalar(count)

    def elements(env):
        source = dataset.iterate(env)
        if n < 0:
            for _ in source:
                pass
            return iter(())
        return itertools.islice(source, n, None)
    return it.DatasetValue(elements)


def _cache_kernel(dataset, filename):
    path = np.asarray(filename, dtype=object).item()
    path = path.decode() if isinstance(path, bytes) else str(path)
    value = it.DatasetValue(lambda env: None)

    def elements(env):
        cached = value.cache if not path else _read_cache(path)
        if cached is not None:
            yield from cached
            return
        seen = []
        for element in dataset.iterate(env):
            seen.append(element)
            yield element
        if path:
            _write_cache(path, seen)
        else:
            value.cache = seen
    value.make = elements
    return value


def _cache_file(path: str) -> str:
    return path + ".gfcache.npz"


def _read_cache(path: str) -> Optional[list]:
    if not os.path.exists(_cache_file(path)):
        return None
    with np.load(_cache_file(path)) as data:
        count, width = int(data["count"]), int(data["width"])
        columns = []
        for i in range(width):
            column = data[f"c{i}"]
            columns.append(column.astype(object) if column.dtype.kind == "S" else column)
    return [tuple(column[j] for column in columns) for j in range(count)]


def _write_cache(path: str, elements: list) -> None:
    width = len(elements[0]) if elements else 0
    columns = {}
    for i in range(width):
        column = np.stack([np.asarray(e[i]) for e in elements])
        columns[f"c{i}"] = column.astype(bytes) if column.dtype == object else column
    with open(_cache_file(path), "wb") as target:
        np.savez(target, count=len(elements), width=width, **columns)


def _zip_kernel(*datasets, N):  # noqa: N803 - TF's attr name
    def elements(env):
        for parts in zip(*(d.iterate(env) for d in datasets)):
            yield tuple(c for part in parts for c in part)
    return it.DatasetValue(elements)


def _concatenate_kernel(first, second):
    return it.DatasetValue(lambda env: itertools.chain(first.iterate(env), second.iterate(env)))


def _prefetch_kernel(dataset, buffer_size):
    size = _scalar(buffer_size)
    size = it.autotune_workers() * 2 if size == AUTOTUNE else size
    if size == 0:
        return dataset
    return it.DatasetValue(lambda env: it.prefetched(dataset.iterate(env), size, env,
                                                     "gradflow-prefetch"))


for _type, _kernel in (("BatchDatasetV2", _batch_kernel),
                       ("ParallelBatchDataset", _parallel_batch_kernel),
                       ("PaddedBatchDatasetV2", _padded_batch_kernel),
                       ("UnbatchDataset", _unbatch_kernel), ("ShuffleDataset", _shuffle_kernel),
                       ("RepeatDataset", _repeat_kernel), ("TakeDataset", _take_kernel),
                       ("SkipDataset", _skip_kernel), ("CacheDataset", _cache_kernel),
                       ("ZipDataset", _zip_kernel), ("ConcatenateDataset", _concatenate_kernel),
                       ("PrefetchDataset", _prefetch_kernel)):
    _dataset(_type, _kernel)

DATASET_OP_TYPES = frozenset({
    "TensorSliceDataset", "TensorDataset", "RangeDataset", "GeneratorDataset",
    "TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset", "MapDataset",
    "ParallelMapDatasetV2",
    "FilterDataset", "FlatMapDataset", "InterleaveDataset", "ParallelInterleaveDatasetV4",
    "LegacyParallelInterleaveDatasetV2", "BatchDatasetV2", "ParallelBatchDataset",
    "PaddedBatchDatasetV2", "UnbatchDataset", "ShuffleDataset", "RepeatDataset", "TakeDataset",
    "SkipDataset", "CacheDataset", "ZipDataset", "ConcatenateDataset", "PrefetchDataset"})


def make_dataset(op_type: str, inputs: Sequence[Tensor], name: Optional[str] = None,
                 metadata: Optional[str] = None, **attrs) -> Tensor:
    """Adds a dataset op of type ``op_type``; returns its variant tensor. ``metadata``:
    the ``name=`` a TF program gave the transformation, kept as TF keeps it (the op's
    ``metadata`` attr, a serialized ``DatasetMetadata`` holding the name)."""
    if op_type not in DATASET_OP_TYPES:
        raise ValueError(f"Unknown dataset op type {op_type!r}")
    if metadata is not None:
        if not isinstance(metadata, str):
            raise TypeError(f"name must be a string, got {type(metadata).__name__}")
        attrs["metadata"] = _dataset_metadata(metadata)
    return apply_op(op_type, list(inputs), name=name or op_type, **attrs)


def _dataset_metadata(name: str) -> bytes:
    """TF's ``DatasetMetadata`` proto bytes: field 1, the name."""
    text = name.encode("utf-8")
    length, prefix = len(text), bytearray()
    while length >= 0x80:
        prefix.append(length & 0x7F | 0x80)
        length >>= 7
    prefix.append(length)
    return b"\x0a" + bytes(prefix) + text


# ------------------------------------------------------------------------- iterators
def _iterator_resource(ctx, shared_name: str, output_types, output_shapes):
    return ctx.session.resource(("iterator", shared_name), lambda: _named_resource(
        shared_name, output_types, output_shapes))


def _named_resource(shared_name: str, output_types, output_shapes) -> it.IteratorResource:
    resource = it.IteratorResource(output_types, output_shapes)
    resource.key = shared_name
    return resource


def _iterator_kernel(ctx, *, shared_name, container, output_types, output_shapes):
    return _iterator_resource(ctx, shared_name, output_types, output_shapes)


def _one_shot_kernel(ctx, *, dataset_factory, shared_name, container, output_types,
                     output_shapes):
    resource = _iterator_resource(ctx, shared_name, output_types, output_shapes)
    if not resource.initialized:  # the dataset is made once, on first use
        resource.initialize(ctx.call(dataset_factory, [])[0], ctx)
    return resource


def _make_iterator_kernel(ctx, dataset, resource):
    resource.initialize(dataset, ctx)
    return ()


def _get_next_kernel(resource, *, output_types, output_shapes):
    element = resource.get_next()
    return element if len(element) != 1 else element[0]


def _to_string_handle_kernel(resource):
    return f"gradflow-iterator:{resource.key}".encode()


def _from_string_handle_kernel(ctx, handle, *, output_types, output_shapes):
    text = np.asarray(handle, dtype=object).item()
    text = text.decode() if isinstance(text, bytes) else str(text)
    prefix = "gradflow-iterator:"
    resource = ctx.session.resource(("iterator", text[len(prefix):])) \
        if text.startswith(prefix) else None
    if resource is None:
        raise errors.InvalidArgumentError(
            None, None, f"Unable to decode bytes as a string handle of an iterator of this "
            f"session: {text!r}")
    if [t.name for t in resource.output_types] != [t.name for t in output_types]:
        raise errors.InvalidArgumentError(
            None, None, f"Expected types {[t.name for t in output_types]} but got the "
            f"iterator's {[t.name for t in resource.output_types]}")
    return resource


def _infer_resource(inputs, attrs):
    return [(dtypes.resource, TensorShape([]))]


def _infer_get_next(inputs, attrs):
    return list(zip(attrs["output_types"], attrs["output_shapes"], strict=True))


define_op("IteratorV2", infer=_infer_resource, kernel=_iterator_kernel, stateful=True,
          needs_context=True, locks_itself=True)
define_op("OneShotIterator", infer=_infer_resource, kernel=_one_shot_kernel, stateful=True,
          needs_context=True, locks_itself=True)
define_op("MakeIterator", infer=lambda inputs, attrs: [], kernel=_make_iterator_kernel,
          stateful=True, needs_context=True, locks_itself=True)
define_op("IteratorGetNext", infer=_infer_get_next, kernel=_get_next_kernel, stateful=True)
define_op("IteratorToStringHandle", infer=lambda inputs, attrs: [
    (dtypes.string, TensorShape([]))], kernel=_to_string_handle_kernel, stateful=True)
define_op("IteratorFromStringHandleV2", infer=_infer_resource,
          kernel=_from_string_handle_kernel, stateful=True, needs_context=True,
          locks_itself=True)
for _type in ("IteratorV2", "OneShotIterator", "MakeIterator", "IteratorGetNext",
              "IteratorToStringHandle", "IteratorFromStringHandleV2"):
    NotDifferentiable(_type)


def iterator_handle(output_types: Sequence, output_shapes: Sequence, shared_name: str = "",
                    dataset: Optional[Tensor] = None, name: Optional[str] = None) -> Tensor:
    """A new iterator resource: ``IteratorV2``, or ``OneShotIterator`` over ``dataset``."""
    attrs = dict(shared_name=shared_name or f"iterator_{next(_keys)}", container="",
                 output_types=list(output_types), output_shapes=list(output_shapes))
    if dataset is None:
        return apply_op("IteratorV2", [], name=name or "IteratorV2", **attrs)
    # as TF's, the op holds a function making the dataset (here: the dataset's part of the
    # graph), so a get_next step does not rebuild the dataset's ops
    factory = Function(dataset.graph, [], [dataset], name="make_dataset")
    return apply_op("OneShotIterator", [], name=name or "OneShotIterator",
                    dataset_factory=factory, **attrs)


def make_iterator(dataset: Tensor, handle: Tensor, name: Optional[str] = None) -> Operation:
    """The op (re)starting iterator ``handle`` on ``dataset``."""
    return graph_for([dataset, handle]).create_op("MakeIterator", [dataset, handle], {},
                                                  name=name or "MakeIterator")


def iterator_get_next(handle: Tensor, output_types: Sequence, output_shapes: Sequence,
                      name: Optional[str] = None) -> list:
    """The next element's components (``OutOfRangeError`` when there is none)."""
    out = apply_op("IteratorGetNext", [handle], name=name or "IteratorGetNext",
                   output_types=list(output_types), output_shapes=list(output_shapes))
    return list(out) if isinstance(out, (list, tuple)) else [out]


def iterator_to_string_handle(handle: Tensor, name: Optional[str] = None) -> Tensor:
    return apply_op("IteratorToStringHandle", [handle], name=name or "IteratorToStringHandle")


def iterator_from_string_handle(string_handle: Tensor, output_types: Sequence,
                                output_shapes: Sequence, name: Optional[str] = None) -> Tensor:
    return apply_op("IteratorFromStringHandleV2", [string_handle],
                    name=name or "IteratorFromStringHandleV2", output_types=list(output_types),
                    output_shapes=list(output_shapes))
