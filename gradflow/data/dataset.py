"""``tf.data.Dataset`` (TF1's ``DatasetV1``), its transformations, and ``Iterator``.

A ``Dataset`` is a variant tensor of the graph (made by an op of
``ops/dataset_ops.py``) plus its element structure: a nest of (dtype, shape) leaves.
Functions given to ``map``, ``filter``, ``flat_map`` and ``interleave`` are traced once
into graph functions, called per element when the pipeline runs.
"""
from __future__ import annotations

import warnings
from typing import Callable, Optional

import numpy as np

from gradflow.data import structure as nest
from gradflow.framework import dtypes
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.function import FuncGraph, Function
from gradflow.framework.graph import Tensor, control_dependencies, get_default_graph, name_scope
from gradflow.framework.sparse_tensor import SparseTensor, SparseTensorValue
from gradflow.framework.tensor_shape import TensorShape, as_shape
from gradflow.ops import dataset_ops
from gradflow.ops.array import identity, size
from gradflow.ops.logging_ops import Assert
from gradflow.ops.math import greater
from gradflow.ops.random import get_seed
from gradflow.ops.reader_ops import matching_files

__all__ = ["Dataset", "Iterator", "AUTOTUNE", "make_one_shot_iterator",
           "make_initializable_iterator", "get_output_types", "get_output_shapes",
           "get_output_classes", "interleave_op"]

AUTOTUNE = dataset_ops.AUTOTUNE


class _Spec:
    """One component of an element: its dtype and static shape (for a SparseTensor:
    its values' dtype and its dense shape)."""

    __slots__ = ("dtype", "shape", "sparse")

    def __init__(self, dtype, shape, sparse: bool = False):
        self.dtype = dtypes.as_dtype(dtype)
        self.shape = as_shape(shape)
        self.sparse = sparse


def _spec_of(leaf) -> _Spec:
    if isinstance(leaf, SparseTensor):
        return _Spec(leaf.dtype, leaf.shape, sparse=True)
    return _Spec(leaf.dtype, leaf.shape)


def _specs_of(leaves: list) -> list:
    return [_spec_of(leaf) for leaf in leaves]


def _leaf(value, name: str):
    """A leaf of an element: a SparseTensor (or its value) stays sparse."""
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    return value if isinstance(value, SparseTensor) else convert_to_tensor(value, name=name)


# The ops see each SparseTensor leaf as three components: indices, values, dense shape.
def _component_specs(specs: list) -> list:
    """(dtype, shape) of each component the ops carry for ``specs``."""
    out = []
    for spec in specs:
        if spec.sparse:
            rank = spec.shape.ndims
            out += [(dtypes.int64, TensorShape([None, rank])), (spec.dtype, TensorShape([None])),
                    (dtypes.int64, TensorShape([rank]))]
        else:
            out.append((spec.dtype, spec.shape))
    return out


def _components(leaves: list) -> list:
    """The component tensors of ``leaves``."""
    out = []
    for leaf in leaves:
        if isinstance(leaf, SparseTensor):
            out += [leaf.indices, leaf.values, leaf.dense_shape]
        else:
            out.append(leaf)
    return out


def _leaves(specs: list, components: list) -> list:
    """``components`` grouped back into leaves (three make each SparseTensor)."""
    values, out = iter(components), []
    for spec in specs:
        out.append(SparseTensor(next(values), next(values), next(values)) if spec.sparse
                   else next(values))
    return out


def _sparse_flags(specs: list) -> list:
    return [bool(spec.sparse) for spec in specs]


def _int64(value, name: str) -> Tensor:
    return convert_to_tensor(value, dtype=dtypes.int64, name=name)


def _function_output(graph: FuncGraph, tensor: Tensor) -> Tensor:
    if tensor.graph is graph and tensor.op.type != "Placeholder":
        return tensor
    with graph.as_default():
        return identity(tensor)


class Dataset:
    """A sequence of elements, each a nest of tensors of fixed dtypes (TF1's Dataset)."""

    def __init__(self, variant: Tensor, structure, specs: list):
        self._variant_tensor = variant
        self._structure = structure  # a nest whose leaves are _Spec
        self._specs = specs

    # -------------------------------------------------------------- structure
    @property
    def output_types(self):
        return nest.map_structure(lambda s: s.dtype, self._structure)

    @property
    def output_shapes(self):
        return nest.map_structure(lambda s: s.shape, self._structure)

    @property
    def output_classes(self):
        return nest.map_structure(lambda s: SparseTensor if s.sparse else Tensor,
                                  self._structure)

    def _same_structure(self, op_type: str, inputs: list, name: Optional[str] = None,
                        specs: Optional[list] = None, structure=None, **attrs) -> "Dataset":
        """A dataset of this structure (or ``specs``) made by an ``op_type`` op; ``name``:
        the TF ``name=`` argument, kept in the op's metadata."""
        variant = dataset_ops.make_dataset(op_type, inputs, metadata=name, **attrs)
        specs = self._specs if specs is None else specs
        structure = nest.pack(self._structure, specs) if structure is None else structure
        return Dataset(variant, structure, specs)

    # ---------------------------------------------------------------- sources
    @staticmethod
    def from_tensor_slices(tensors, name: Optional[str] = None) -> "Dataset":
        """Elements are the slices of ``tensors`` along their first dimension."""
        graph = get_default_graph()
        with graph.atomic():
            with name_scope("normalize_element"):
                structure = nest.normalize(tensors)
                flat = [_leaf(v, f"component_{i}")
                        for i, v in enumerate(nest.flatten(structure))]
            first = TensorShape(None)
            for tensor in flat:
                if tensor.shape.ndims == 0:
                    raise ValueError("Unbatching a tensor is only supported for rank >= 1")
                if tensor.shape.ndims is not None:
                    try:
                        first = first.merge_with(tensor.shape[:1]) if first.ndims else \
                            tensor.shape[:1]
                    except ValueError:
                        raise ValueError(f"Dimensions {first[0]} and {tensor.shape[0]} are "
                                         "not compatible") from None
            specs = [_Spec(t.dtype, t.shape[1:] if t.shape.ndims is not None else None,
                           sparse=isinstance(t, SparseTensor)) for t in flat]
            variant = dataset_ops.make_dataset("TensorSliceDataset", _components(flat),
                                               metadata=name, sparse=_sparse_flags(specs))
        return Dataset(variant, nest.pack(structure, specs), specs)

    @staticmethod
    def from_tensors(tensors, name: Optional[str] = None) -> "Dataset":
        """One element: ``tensors`` itself."""
        graph = get_default_graph()
        with graph.atomic():
            with name_scope("normalize_element"):
                structure = nest.normalize(tensors)
                flat = [_leaf(v, f"component_{i}")
                        for i, v in enumerate(nest.flatten(structure))]
            variant = dataset_ops.make_dataset("TensorDataset", _components(flat),
                                               metadata=name)
        specs = _specs_of(flat)
        return Dataset(variant, nest.pack(structure, specs), specs)

    @staticmethod
    def range(*args, output_type=dtypes.int64, name: Optional[str] = None) -> "Dataset":
        """``range(stop)``, ``range(start, stop[, step])`` as a dataset of int64 scalars."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid arguments to range: {args}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (tuple(args) + (1,))[:3]
        graph = get_default_graph()
        with graph.atomic():
            inputs = [_int64(start, "start"), _int64(stop, "stop"), _int64(step, "step")]
            variant = dataset_ops.make_dataset("RangeDataset", inputs, metadata=name,
                                               output_type=dtypes.as_dtype(output_type))
        spec = _Spec(output_type, [])
        return Dataset(variant, spec, [spec])

    @staticmethod
    def from_generator(generator: Callable, output_types, output_shapes=None, args=None,
                       output_signature=None, name: Optional[str] = None) -> "Dataset":
        """Elements yielded by ``generator(*args)``, checked against the given types."""
        if output_signature is not None:
            raise ValueError("from_generator: output_signature is not supported by gradflow; "
                             "give output_types and output_shapes")
        if not callable(generator):
            raise TypeError("`generator` must be callable.")
        types = nest.map_structure(dtypes.as_dtype, nest.normalize(output_types))
        flat_types = nest.flatten(types)
        if output_shapes is None:
            flat_shapes = [TensorShape(None)] * len(flat_types)
        else:
            flat_shapes = [as_shape(s) for s in _flatten_shapes(output_shapes, types)]
        graph = get_default_graph()
        with graph.atomic():
            inputs = [convert_to_tensor(a, name=f"arg{i}") for i, a in enumerate(args or ())]
            token = dataset_ops.register_generator(generator)
            variant = dataset_ops.make_dataset("GeneratorDataset", inputs, token=token,
                                               metadata=name,
                                               output_types=flat_types,
                                               output_shapes=flat_shapes)
        specs = [_Spec(t, s) for t, s in zip(flat_types, flat_shapes, strict=True)]
        return Dataset(variant, nest.pack(types, specs), specs)

    @staticmethod
    def zip(datasets, name: Optional[str] = None) -> "Dataset":
        """Elements are tuples (or the nest) of the given datasets' elements."""
        structure = nest.normalize(datasets)
        members = nest.flatten(structure)
        if not members or not all(isinstance(d, Dataset) for d in members):
            raise TypeError("The argument to `Dataset.zip()` must be a (nested) structure of "
                            "`Dataset` objects.")
        graph = get_default_graph()
        with graph.atomic():
            variant = dataset_ops.make_dataset("ZipDataset", [d._variant_tensor for d in members],
                                               metadata=name,
                                               N=len(members))
        specs = [s for d in members for s in d._specs]
        return Dataset(variant, nest.pack(structure, [d._structure for d in members]), specs)

    # --------------------------------------------------------- transformations
    def concatenate(self, dataset: "Dataset", name: Optional[str] = None) -> "Dataset":
        """This dataset's elements, then ``dataset``'s (same types and structure)."""
        if [(s.dtype, s.sparse) for s in self._specs] != \
                [(s.dtype, s.sparse) for s in dataset._specs]:
            raise TypeError(f"Two datasets to concatenate have different types "
                            f"{self.output_types} and {dataset.output_types}")
        specs = [_Spec(a.dtype, _most_specific(a.shape, b.shape), a.sparse)
                 for a, b in zip(self._specs, dataset._specs, strict=True)]
        with get_default_graph().atomic():
            return self._same_structure("ConcatenateDataset",
                                        [self._variant_tensor, dataset._variant_tensor],
                                        name=name, specs=specs)

    def map(self, map_func: Callable, num_parallel_calls: Optional[int] = None,
            deterministic: Optional[bool] = None, synchronous: Optional[bool] = None,
            use_unbounded_threadpool: bool = False, name: Optional[str] = None) -> "Dataset":
        """Applies ``map_func`` (traced into a graph function) to each element."""
        if deterministic is False:
            raise ValueError("map: deterministic=False is not supported by gradflow (elements "
                             "always come in order)")
        if synchronous or use_unbounded_threadpool:
            raise ValueError("map: synchronous and use_unbounded_threadpool are not supported "
                             "by gradflow (num_parallel_calls sets the threads)")
        graph = get_default_graph()
        with graph.atomic():
            function, structure, captured = self._trace(map_func, "map")
            parallel = 0 if num_parallel_calls is None else _check_parallel(num_parallel_calls)
            specs = nest.flatten(structure)
            variant = dataset_ops.make_dataset(
                "ParallelMapDatasetV2" if num_parallel_calls else "MapDataset",
                [self._variant_tensor] + captured, metadata=name, f=function,
                num_parallel_calls=parallel)
        return Dataset(variant, nest.pack(structure, specs), specs)

    def filter(self, predicate: Callable, name: Optional[str] = None) -> "Dataset":
        """Keeps the elements for which ``predicate`` returns a scalar True."""
        graph = get_default_graph()
        with graph.atomic():
            function, _, captured = self._trace(predicate, "filter")
            out = function.outputs
            if len(out) != 1 or out[0].dtype is not dtypes.bool or \
                    not out[0].shape.is_compatible_with([]):
                raise ValueError(f"`predicate` return type must be convertible to a scalar "
                                 f"boolean tensor. Was {out[0].dtype.name if out else None}.")
            return self._same_structure("FilterDataset", [self._variant_tensor] + captured,
                                        name=name, predicate=function)

    def flat_map(self, map_func: Callable, name: Optional[str] = None) -> "Dataset":
        """Maps each element to a dataset and flattens those datasets in order."""
        graph = get_default_graph()
        with graph.atomic():
            function, inner, captured = self._trace(map_func, "flat_map", dataset=True)
            variant = dataset_ops.make_dataset("FlatMapDataset",
                                               [self._variant_tensor] + captured,
                                               metadata=name, f=function)
        return Dataset(variant, inner._structure, inner._specs)

    def interleave(self, map_func: Callable, cycle_length=AUTOTUNE, block_length=1,
                   num_parallel_calls: Optional[int] = None,
                   deterministic: Optional[bool] = None, name: Optional[str] = None
                   ) -> "Dataset":
        """Maps elements to datasets and interleaves ``cycle_length`` of them at a time,
        ``block_length`` elements from each in turn. With ``num_parallel_calls`` each
        dataset of the cycle is read ahead on a thread of its own; the order is the same."""
        if deterministic is False:
            raise ValueError("interleave: deterministic=False is not supported by gradflow "
                             "(elements always come in order)")
        if num_parallel_calls is None:
            return interleave_op(self, map_func, cycle_length, block_length,
                                 "InterleaveDataset", name=name)
        _check_parallel(num_parallel_calls)
        return interleave_op(self, map_func, cycle_length, block_length,
                             "ParallelInterleaveDatasetV4", buffer_output_elements=1,
                             prefetch_input_elements=0, parallel=num_parallel_calls, name=name)

    def batch(self, batch_size, drop_remainder: bool = False,
              num_parallel_calls: Optional[int] = None, deterministic: Optional[bool] = None,
              name: Optional[str] = None) -> "Dataset":
        """Stacks ``batch_size`` consecutive elements (the last batch may be smaller); with
        ``num_parallel_calls`` that many batches are stacked at once on threads."""
        if deterministic is False:
            raise ValueError("batch: deterministic=False is not supported by gradflow "
                             "(batches always come in order)")
        parallel = None if num_parallel_calls is None else _check_parallel(num_parallel_calls)
        graph = get_default_graph()
        with graph.atomic():
            size = _int64(batch_size, "batch_size")
            drop = convert_to_tensor(drop_remainder, dtype=dtypes.bool, name="drop_remainder")
            known = _static_int(size) if drop_remainder else None
            specs = [_Spec(s.dtype, TensorShape([known]).concatenate(s.shape), s.sparse)
                     for s in self._specs]
            if parallel is None:
                return self._same_structure(
                    "BatchDatasetV2", [self._variant_tensor, size, drop], name=name,
                    specs=specs, sparse=_sparse_flags(self._specs))
            return self._same_structure(
                "ParallelBatchDataset",
                [self._variant_tensor, size, _int64(parallel, "num_parallel_calls"), drop],
                name=name, specs=specs, sparse=_sparse_flags(self._specs))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder: bool = False, name: Optional[str] = None) -> "Dataset":
        """Batches elements padded to ``padded_shapes`` (None/-1 dims: the batch's longest)."""
        _refuse_sparse(self._specs, "padded_batch")
        graph = get_default_graph()
        with graph.atomic():
            shapes = [s.shape for s in self._specs] if padded_shapes is None else \
                [as_shape(s) for s in _flatten_shapes(padded_shapes, self._structure)]
            values = [None] * len(self._specs) if padding_values is None else \
                nest.flatten(nest.normalize(padding_values))
            if len(shapes) != len(self._specs) or len(values) != len(self._specs):
                raise ValueError("padded_shapes and padding_values must match the structure of "
                                 "the dataset's elements")
            inputs, specs = [], []
            for i, (spec, shape) in enumerate(zip(self._specs, shapes, strict=True)):
                if shape.ndims is None:
                    raise ValueError(f"padded_shapes component {i} must have a known rank")
                if not shape.is_compatible_with(spec.shape) and \
                        spec.shape.ndims != shape.ndims:
                    raise ValueError(f"The padded shape {shape} is not compatible with the "
                                     f"corresponding input component shape {spec.shape}.")
                dims = [-1 if d is None else d for d in shape.as_list()]
                inputs.append(_int64(np.asarray(dims, dtype=np.int64), f"padded_shape_{i}"))
                specs.append(_Spec(spec.dtype, TensorShape(
                    [_static_int(_int64(batch_size, "batch_size")) if drop_remainder else None]
                    + shape.as_list())))
            fills = []
            for spec, value in zip(self._specs, values, strict=True):
                default = b"" if spec.dtype is dtypes.string else 0
                fills.append(convert_to_tensor(default if value is None else value,
                                               dtype=spec.dtype, name="padding_value"))
            size = _int64(batch_size, "batch_size")
            drop = convert_to_tensor(drop_remainder, dtype=dtypes.bool, name="drop_remainder")
            return self._same_structure(
                "PaddedBatchDatasetV2", [self._variant_tensor, size, drop] + inputs + fills,
                name=name, specs=specs, n=len(inputs))

    def unbatch(self, name: Optional[str] = None) -> "Dataset":
        """Splits each element along its first dimension into several elements."""
        _refuse_sparse(self._specs, "unbatch")
        for spec in self._specs:
            if spec.shape.ndims == 0:
                raise ValueError("Cannot unbatch an input with scalar components.")
        specs = [_Spec(s.dtype, s.shape[1:] if s.shape.ndims is not None else None)
                 for s in self._specs]
        with get_default_graph().atomic():
            return self._same_structure("UnbatchDataset", [self._variant_tensor], name=name,
                                        specs=specs)

    def shuffle(self, buffer_size, seed: Optional[int] = None,
                reshuffle_each_iteration: Optional[bool] = None,
                name: Optional[str] = None) -> "Dataset":
        """Shuffles through a buffer of ``buffer_size`` elements (TF1's seeding rules)."""
        graph = get_default_graph()
        with graph.atomic():
            size = _int64(buffer_size, "buffer_size")
            op_seed, seed2 = get_seed(seed)
            seeds = [_int64(op_seed or 0, "seed"), _int64(seed2 or 0, "seed2")]
            return self._same_structure(
                "ShuffleDataset", [self._variant_tensor, size] + seeds, name=name,
                reshuffle_each_iteration=reshuffle_each_iteration is not False)

    def repeat(self, count=None, name: Optional[str] = None) -> "Dataset":
        """Repeats the dataset ``count`` times (None or -1: forever)."""
        with get_default_graph().atomic():
            return self._same_structure("RepeatDataset", [
                self._variant_tensor, _int64(-1 if count is None else count, "count")],
                name=name)

    def take(self, count, name: Optional[str] = None) -> "Dataset":
        """At most the first ``count`` elements (-1: all)."""
        with get_default_graph().atomic():
            return self._same_structure("TakeDataset",
                                        [self._variant_tensor, _int64(count, "count")],
                                        name=name)

    def skip(self, count, name: Optional[str] = None) -> "Dataset":
        """All but the first ``count`` elements (-1: none)."""
        with get_default_graph().atomic():
            return self._same_structure("SkipDataset",
                                        [self._variant_tensor, _int64(count, "count")],
                                        name=name)

    def cache(self, filename: str = "", name: Optional[str] = None) -> "Dataset":
        """Keeps the elements of a first full pass in memory (or in ``filename``)."""
        if filename:
            _refuse_sparse(self._specs, "cache to a file")
        with get_default_graph().atomic():
            path = convert_to_tensor(filename, dtype=dtypes.string, name="filename")
            return self._same_structure("CacheDataset", [self._variant_tensor, path], name=name)

    def prefetch(self, buffer_size, name: Optional[str] = None) -> "Dataset":
        """Makes up to ``buffer_size`` elements ahead on a background thread."""
        with get_default_graph().atomic():
            return self._same_structure(
                "PrefetchDataset", [self._variant_tensor, _int64(buffer_size, "buffer_size")],
                name=name)

    @staticmethod
    def list_files(file_pattern, shuffle: Optional[bool] = None, seed: Optional[int] = None,
                   name: Optional[str] = None) -> "Dataset":
        """The names of the files matching ``file_pattern`` (shuffled unless
        ``shuffle=False``)."""
        with get_default_graph().atomic():
            names = matching_files(file_pattern)
            pattern = file_pattern if isinstance(file_pattern, str) else "the pattern"
            check = Assert(greater(size(names), 0), [f"No files matched pattern: {pattern}"],
                           name="match_not_empty")
            with control_dependencies([check]):
                names = identity(names)
            if shuffle is False:
                return Dataset.from_tensor_slices(names, name=name)
            return Dataset.from_tensor_slices(names).shuffle(10000, seed=seed, name=name)

    def apply(self, transformation_func: Callable) -> "Dataset":
        """``transformation_func(self)``, which must return a Dataset."""
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError("`transformation_func` must return a Dataset. Got "
                            f"{type(result).__name__}.")
        return result

    # --------------------------------------------------------------- iterators
    def make_one_shot_iterator(self):
        """An iterator that starts itself on first use (no initializer)."""
        return Iterator.one_shot(self)

    def make_initializable_iterator(self, shared_name: Optional[str] = None):
        """An iterator to start (and restart) by running its ``initializer``."""
        return Iterator.initializable(self, shared_name)

    def __iter__(self):
        raise RuntimeError("`tf.data.Dataset` only supports Python-style iteration in eager "
                           "mode or within tf.function.")

    # ----------------------------------------------------------------- tracing
    def _trace(self, fn: Callable, kind: str, dataset: bool = False):
        """``fn`` traced on this dataset's element: (function, output structure, captures)."""
        outer = get_default_graph()
        graph = FuncGraph(f"{kind}_fn", outer)
        with graph.as_default():
            args = [graph.add_input(dtype, shape, name=f"arg{i}") for i, (dtype, shape)
                    in enumerate(_component_specs(self._specs))]
            element = nest.pack(self._structure, _leaves(self._specs, args))
            if isinstance(element, tuple) and not hasattr(element, "_fields"):
                result = fn(*element)
            else:
                result = fn(element)
            if dataset:
                if not isinstance(result, Dataset):
                    raise TypeError(f"`map_func` must return a `Dataset` object. Got "
                                    f"{type(result).__name__}.")
                structure, outputs = result, [result._variant_tensor]
            else:
                if isinstance(result, list):
                    warnings.warn("The structure of a dataset function's return value is a "
                                  "list: converted to a tuple", stacklevel=3)
                structure = nest.normalize(tuple(result) if isinstance(result, list)
                                           else result)
                leaves = [_leaf(v, "output") for v in nest.flatten(structure)]
                outputs = [_function_output(graph, t) for t in _components(leaves)]
                specs = _specs_of(leaves)
        captured_sources = graph.captured_sources()
        captured = [graph.captures[s] for s in captured_sources]
        function = Function(graph, args + captured, outputs, name=f"{kind}_fn")
        if not dataset:
            structure = nest.pack(structure, specs)
        return function, structure, captured_sources


def interleave_op(dataset: Dataset, map_func: Callable, cycle_length, block_length,
                  op_type: str, buffer_output_elements=None, prefetch_input_elements=None,
                  parallel=None, name: Optional[str] = None, **attrs) -> Dataset:
    """``dataset`` interleaved by an ``op_type`` op (``Dataset.interleave`` and
    ``experimental.parallel_interleave``); the parallel ones take the read-ahead sizes
    and ``num_parallel_calls`` as inputs, as TF's do."""
    graph = get_default_graph()
    with graph.atomic():
        function, inner, captured = dataset._trace(map_func, "interleave", dataset=True)
        cycle = _int64(AUTOTUNE if cycle_length is None else cycle_length, "cycle_length")
        block = _int64(1 if block_length is None else block_length, "block_length")
        inputs = [dataset._variant_tensor, cycle, block]
        if op_type != "InterleaveDataset":
            inputs += [_int64(buffer_output_elements, "buffer_output_elements"),
                       _int64(prefetch_input_elements, "prefetch_input_elements")]
        if parallel is not None:
            inputs.append(_int64(parallel, "num_parallel_calls"))
        variant = dataset_ops.make_dataset(op_type, inputs + captured, metadata=name,
                                           f=function, **attrs)
    return Dataset(variant, inner._structure, inner._specs)


def _check_parallel(num_parallel_calls) -> int:
    """``num_parallel_calls`` as an int: positive or AUTOTUNE."""
    parallel = int(num_parallel_calls)
    if parallel < 1 and parallel != AUTOTUNE:
        raise ValueError(f"num_parallel_calls must be positive or AUTOTUNE, got "
                         f"{num_parallel_calls}")
    return parallel


def _static_int(tensor: Tensor) -> Optional[int]:
    value = constant_value(tensor)
    return None if value is None else int(value)


def _most_specific(a: TensorShape, b: TensorShape) -> TensorShape:
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list(),
                                                               strict=True)])


def _flatten_shapes(shapes, structure) -> list:
    """Shapes given as a nest matching ``structure`` (a shape itself is a leaf)."""
    if isinstance(structure, dict):
        return [s for key in sorted(structure) for s in _flatten_shapes(shapes[key],
                                                                        structure[key])]
    if isinstance(structure, tuple):
        if len(shapes) != len(structure):
            raise ValueError(f"The shapes {shapes} do not match the structure {structure}")
        return [s for shape, item in zip(shapes, structure, strict=True)
                for s in _flatten_shapes(shape, item)]
    return [shapes]


class Iterator:
    """Reads a dataset's elements in a Session (TF1's ``tf.data.Iterator``)."""

    def __init__(self, handle: Tensor, initializer, structure, specs: list):
        self._handle = handle
        self._initializer = initializer
        self._structure = structure
        self._specs = specs

    @classmethod
    def one_shot(cls, dataset: Dataset) -> "Iterator":
        for op in _ops_behind(dataset._variant_tensor):
            if op.type == "Placeholder":
                raise ValueError(f"Failed to capture {op.name} by value: a one-shot iterator "
                                 "cannot depend on a placeholder; use an initializable "
                                 "iterator.")
        graph = dataset._variant_tensor.graph
        with graph.atomic():
            handle = dataset_ops.iterator_handle(
                *_types_and_shapes(dataset._specs), dataset=dataset._variant_tensor,
                name="OneShotIterator")
        return cls(handle, None, dataset._structure, dataset._specs)

    @classmethod
    def initializable(cls, dataset: Dataset, shared_name: Optional[str] = None) -> "Iterator":
        graph = dataset._variant_tensor.graph
        with graph.atomic():
            handle = dataset_ops.iterator_handle(
                *_types_and_shapes(dataset._specs), shared_name=shared_name or "",
                name="IteratorV2")
            initializer = dataset_ops.make_iterator(dataset._variant_tensor, handle)
        return cls(handle, initializer, dataset._structure, dataset._specs)

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name: Optional[str] = None,
                       output_classes=None) -> "Iterator":
        """An iterator of this structure, not bound to a dataset (see ``make_initializer``)."""
        structure, specs = _structure_of(output_types, output_shapes, output_classes)
        with get_default_graph().atomic():
            handle = dataset_ops.iterator_handle(*_types_and_shapes(specs),
                                                 shared_name=shared_name or "",
                                                 name="Iterator")
        return Iterator(handle, None, structure, specs)

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None,
                           output_classes=None) -> "Iterator":
        """The iterator a fed ``string_handle()`` value names (a feedable iterator)."""
        structure, specs = _structure_of(output_types, output_shapes, output_classes)
        graph = get_default_graph()
        with graph.atomic():
            string_handle = convert_to_tensor(string_handle, dtype=dtypes.string,
                                              name="string_handle")
            handle = dataset_ops.iterator_from_string_handle(string_handle,
                                                             *_types_and_shapes(specs))
        return Iterator(handle, None, structure, specs)

    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError("The iterator does not have an initializer. This means it was "
                             "likely created using `tf.data.Dataset.make_one_shot_iterator()`. "
                             "For an initializable iterator, use "
                             "`tf.data.Dataset.make_initializable_iterator()` instead.")
        return self._initializer

    @property
    def output_types(self):
        return nest.map_structure(lambda s: s.dtype, self._structure)

    @property
    def output_shapes(self):
        return nest.map_structure(lambda s: s.shape, self._structure)

    @property
    def output_classes(self):
        return nest.map_structure(lambda s: SparseTensor if s.sparse else Tensor,
                                  self._structure)

    def make_initializer(self, dataset: Dataset, name: Optional[str] = None):
        """The op starting this iterator on ``dataset`` (same types, compatible shapes)."""
        mine = [(s.dtype, s.sparse) for s in self._specs]
        theirs = [(s.dtype, s.sparse) for s in dataset._specs]
        if mine != theirs:
            raise TypeError(f"Expected output types {self.output_types!r} but got dataset with "
                            f"output types {dataset.output_types!r}.")
        for a, b in zip(self._specs, dataset._specs, strict=True):
            if not a.shape.is_compatible_with(b.shape):
                raise TypeError(f"Expected output shapes compatible with {self.output_shapes} "
                                f"but got dataset with output shapes {dataset.output_shapes}.")
        with self._handle.graph.atomic(), name_scope(name, "make_initializer"):
            return dataset_ops.make_iterator(dataset._variant_tensor, self._handle)

    def get_next(self, name: Optional[str] = None):
        """The next element (a nest of tensors); running it past the end raises
        ``OutOfRangeError``."""
        with self._handle.graph.atomic():
            flat = dataset_ops.iterator_get_next(self._handle,
                                                 *_types_and_shapes(self._specs), name=name)
            return nest.pack(self._structure, _leaves(self._specs, flat))

    def string_handle(self, name: Optional[str] = None) -> Tensor:
        """A string naming this iterator, to feed to ``from_string_handle``."""
        with self._handle.graph.atomic():
            return dataset_ops.iterator_to_string_handle(self._handle, name=name)


def _structure_of(output_types, output_shapes, output_classes) -> tuple:
    types = nest.map_structure(dtypes.as_dtype, nest.normalize(output_types))
    flat_types = nest.flatten(types)
    classes = [Tensor] * len(flat_types) if output_classes is None else \
        _flatten_shapes(output_classes, types)
    if any(c not in (Tensor, SparseTensor) for c in classes):
        raise ValueError("output_classes other than Tensor and SparseTensor are not "
                         "supported by gradflow")
    shapes = [TensorShape(None)] * len(flat_types) if output_shapes is None else \
        [as_shape(s) for s in _flatten_shapes(output_shapes, types)]
    specs = [_Spec(t, s, c is SparseTensor)
             for t, s, c in zip(flat_types, shapes, classes, strict=True)]
    return nest.pack(types, specs), specs


def _types_and_shapes(specs: list) -> tuple:
    """The component dtypes and shapes an iterator op holds for ``specs``."""
    components = _component_specs(specs)
    return [dtype for dtype, _ in components], [shape for _, shape in components]


def _refuse_sparse(specs: list, what: str) -> None:
    if any(spec.sparse for spec in specs):
        raise ValueError(f"{what}: elements with SparseTensor components are not supported "
                         "by gradflow (densify them with sparse.to_dense inside map)")


def _ops_behind(tensor: Tensor) -> list:
    seen, stack, ops = set(), [tensor.op], []
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        ops.append(op)
        stack.extend(t.op for t in op.inputs)
    return ops


def make_one_shot_iterator(dataset: Dataset) -> Iterator:
    """TF1's ``tf.data.make_one_shot_iterator(dataset)``."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset: Dataset, shared_name: Optional[str] = None
                                ) -> Iterator:
    """TF1's ``tf.data.make_initializable_iterator(dataset)``."""
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes
