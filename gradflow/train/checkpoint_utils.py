"""Reading checkpoints without a graph: ``tf.train.list_variables``, ``load_variable``,
``load_checkpoint`` and ``NewCheckpointReader`` (TF1's checkpoint inspection), and
``init_from_checkpoint`` (warm starts), over the checkpoints ``Saver`` writes.

A checkpoint is named by its prefix or by its directory (whose ``checkpoint`` state file
names the latest). Names are the variables' op names; a trailing ``:0`` is dropped, as
TF1 does.
"""
from __future__ import annotations

import os

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.graph import GraphKeys, get_default_graph
from gradflow.ops.state import Variable
from gradflow.train.saver import MAX_CHECKPOINT_BYTES, checkpoint_exists, latest_checkpoint
from gradflow.tools.npz_io import NpzReader

__all__ = ["CheckpointReader", "NewCheckpointReader", "load_checkpoint", "load_variable",
           "list_variables", "init_from_checkpoint"]

_SUFFIX = ".npz"


class CheckpointReader:
    """The variables of one checkpoint: names, shapes, dtypes and values."""

    def __init__(self, prefix: str):
        if not checkpoint_exists(prefix):
            raise errors.NotFoundError(
                None, None, "Unsuccessful TensorSliceReader constructor: Failed to find any "
                f"matching files for {prefix}")
        self._prefix = prefix
        try:
            with NpzReader(prefix + _SUFFIX, MAX_CHECKPOINT_BYTES) as reader:
                self._headers = {key: reader.header(key) for key in reader.keys}
        except ValueError as err:
            raise errors.DataLossError(None, None, f"Checkpoint {prefix} is malformed: "
                                       f"{err}") from None

    def has_tensor(self, tensor_str: str) -> bool:
        return _name(tensor_str) in self._headers

    def get_variable_to_shape_map(self) -> dict:
        return {key: list(shape) for key, (shape, _) in self._headers.items()}

    def get_variable_to_dtype_map(self) -> dict:
        return {key: dtypes.as_dtype(dtype) for key, (_, dtype) in self._headers.items()}

    def get_tensor(self, tensor_str: str) -> np.ndarray:
        key = _name(tensor_str)
        if key not in self._headers:
            raise errors.NotFoundError(None, None,
                                       f"Key {key} not found in checkpoint {self._prefix}")
        try:
            with NpzReader(self._prefix + _SUFFIX, MAX_CHECKPOINT_BYTES) as reader:
                return reader.read(key)
        except ValueError as err:
            raise errors.DataLossError(None, None, f"Checkpoint {self._prefix} is malformed: "
                                       f"{err}") from None

    def debug_string(self) -> bytes:
        lines = [f"{key} ({dtypes.as_dtype(dtype).name}) {list(shape)}"
                 for key, (shape, dtype) in sorted(self._headers.items())]
        return ("\n".join(lines) + "\n").encode()


def NewCheckpointReader(filepattern: str) -> CheckpointReader:  # noqa: N802 - TF1's name
    """A reader of the checkpoint with prefix ``filepattern``."""
    return CheckpointReader(filepattern)


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A reader of ``ckpt_dir_or_file``: a checkpoint prefix, or a directory's latest."""
    prefix = ckpt_dir_or_file
    if os.path.isdir(ckpt_dir_or_file):
        prefix = latest_checkpoint(ckpt_dir_or_file)
        if prefix is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {ckpt_dir_or_file}")
    return CheckpointReader(prefix)


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The value of variable ``name`` in the checkpoint."""
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file: str) -> list:
    """The checkpoint's ``(name, shape)`` pairs, sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]


def _name(tensor_str: str) -> str:
    return tensor_str[:-2] if tensor_str.endswith(":0") else tensor_str


def init_from_checkpoint(ckpt_dir_or_file: str, assignment_map) -> None:
    """Makes variables start from a checkpoint's values (fine-tuning, warm starts).

    ``assignment_map`` maps checkpoint names to graph variables: ``'old/w': 'new/w'`` or
    ``'old/w': <Variable>`` for one variable, ``'old/': 'new/'`` for every global variable
    under ``new/``. Each variable's initializer is replaced, so initializers built
    afterwards (``global_variables_initializer()``) load the saved value, which is read
    now. Raises ValueError, with TF's messages, for a name missing from the checkpoint, a
    scope mapped to a name, or a shape mismatch; then no variable changes.
    """
    reader = load_checkpoint(ckpt_dir_or_file)
    shapes = reader.get_variable_to_shape_map()
    graph = get_default_graph()
    variables = {v.op.name: v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)}
    items = assignment_map.items() if isinstance(assignment_map, dict) else assignment_map
    plan = []  # (checkpoint name, variable), all checked before any initializer changes
    for ckpt_name, target in items:
        if isinstance(target, Variable):
            plan.append((_checked(ckpt_name, shapes, ckpt_dir_or_file), target))
        elif isinstance(target, str) and target.rstrip("/") in variables \
                and not target.endswith("/"):
            plan.append((_checked(ckpt_name, shapes, ckpt_dir_or_file), variables[target]))
        elif isinstance(target, str):
            if not ckpt_name.endswith("/") and ckpt_name != "":
                raise ValueError(f"Assignment map with scope only name {target.rstrip('/')} "
                                 f"should map to scope only {ckpt_name}. Should be "
                                 "'scope/': 'other_scope/'.")
            scope = "" if target == "/" else target
            source = "" if ckpt_name == "/" else ckpt_name
            for name, var in variables.items():
                if name.startswith(scope):
                    full = source + name[len(scope):]
                    if full not in shapes:
                        raise ValueError(f"Tensor {full} ({name[len(scope):]} in {source}) "
                                         f"is not found in {ckpt_dir_or_file} checkpoint")
                    plan.append((full, var))
        else:
            raise TypeError(f"assignment_map values must be variables or names, got "
                            f"{type(target).__name__} for {ckpt_name!r}")
    for ckpt_name, var in plan:
        if not var.shape.is_compatible_with(shapes[ckpt_name]):
            raise ValueError(f"Shape of variable {var.name} ({tuple(var.shape.as_list())}) "
                             f"doesn't match with shape of tensor {ckpt_name} "
                             f"({shapes[ckpt_name]}) from checkpoint reader.")
    with graph.atomic():
        for ckpt_name, var in plan:
            var.set_initial_value(reader.get_tensor(ckpt_name))


def _checked(ckpt_name: str, shapes: dict, ckpt_dir_or_file: str) -> str:
    name = _name(ckpt_name)
    if name not in shapes:
        raise ValueError(f"Tensor {name} is not found in {ckpt_dir_or_file} checkpoint "
                         f"{shapes}")
    return name
