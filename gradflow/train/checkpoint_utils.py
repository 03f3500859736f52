"""Reading checkpoints outside a Saver: TF1's ``tf.train.load_checkpoint``,
``list_variables``, ``load_variable`` and ``init_from_checkpoint`` (TF's V2 bundles and
gradflow's old NPZ files)."""
from __future__ import annotations

import os

import numpy as np

from gradflow.framework import errors
from gradflow.framework.graph import GraphKeys, get_default_graph
from gradflow.framework.constant import constant
from gradflow.ops.state import Variable, assign
from gradflow.train.saver import CheckpointReader, checkpoint_exists, latest_checkpoint

__all__ = ["load_checkpoint", "list_variables", "load_variable", "init_from_checkpoint"]


def _prefix(ckpt_dir_or_file: str) -> str:
    """A directory's latest checkpoint, or the prefix given."""
    if os.path.isdir(ckpt_dir_or_file):
        latest = latest_checkpoint(ckpt_dir_or_file)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {ckpt_dir_or_file}")
        return latest
    if not checkpoint_exists(ckpt_dir_or_file):
        raise errors.NotFoundError(
            None, None, f"Unsuccessful TensorSliceReader constructor: Failed to find any "
                        f"matching files for {ckpt_dir_or_file}")
    return ckpt_dir_or_file


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A reader of the checkpoint ``ckpt_dir_or_file`` (a prefix, or a directory whose
    ``checkpoint`` state file names its latest)."""
    return CheckpointReader(_prefix(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """``(name, shape)`` of every tensor in the checkpoint, sorted by name."""
    with load_checkpoint(ckpt_dir_or_file) as reader:
        return sorted(reader.get_variable_to_shape_map().items())


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The value of tensor ``name`` (a trailing ``:0`` is dropped) in the checkpoint."""
    if name.endswith(":0"):
        name = name[:-2]
    with load_checkpoint(ckpt_dir_or_file) as reader:
        return reader.get_tensor(name)


def _pairs(assignment_map: dict, reader: CheckpointReader) -> list[tuple[str, Variable]]:
    """``(checkpoint tensor, variable)`` for each entry of TF1's assignment map: a
    tensor name to a variable (or its name), or a scope ``"a/"`` (``"/"``: the root) to a
    scope, matching the names below them."""
    graph = get_default_graph()
    variables = {v.op.name: v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)}
    pairs = []
    for source, target in assignment_map.items():
        if isinstance(target, Variable):
            pairs.append((source, target))
            continue
        if not isinstance(target, str):
            raise TypeError(f"assignment_map values must be Variables or names, got {target!r}")
        if not source.endswith("/"):
            if target not in variables:
                raise ValueError(f"Variable {target} is not found in the graph's global "
                                 "variables")
            pairs.append((source, variables[target]))
            continue
        source_scope = "" if source == "/" else source
        target_scope = "" if target in ("/", "") else target.rstrip("/") + "/"
        for name, var in sorted(variables.items()):
            if name.startswith(target_scope):
                key = source_scope + name[len(target_scope):]
                if reader.has_tensor(key):
                    pairs.append((key, var))
    return pairs


def init_from_checkpoint(ckpt_dir_or_file: str, assignment_map: dict) -> None:
    """Makes the mapped variables initialize from the checkpoint (TF1's
    ``tf.train.init_from_checkpoint``): their initializers assign the stored values.

    ValueError when a tensor is missing or its shape differs from its variable's; nothing
    changes then."""
    reader = load_checkpoint(ckpt_dir_or_file)
    pairs = _pairs(assignment_map, reader)
    shapes = reader.get_variable_to_shape_map()
    for key, var in pairs:
        if key not in shapes:
            raise ValueError(f"Tensor {key} is not found in {ckpt_dir_or_file} checkpoint "
                             f"{sorted(shapes)}")
        if not var.shape.is_compatible_with(shapes[key]):
            raise ValueError(f"Shape of variable {var.op.name} ({var.shape}) doesn't match "
                             f"with shape of tensor {key} ({shapes[key]}) from checkpoint "
                             "reader.")
    graph = get_default_graph()
    replaced = []
    with graph.atomic():
        for key, var in pairs:
            with graph.name_scope(var.op.name + "/"):
                value = constant(reader.get_tensor(key).astype(var.dtype.as_numpy_dtype),
                                 name="checkpoint_initializer")
                with graph.colocate_with(var.op):
                    replaced.append((var, assign(var, value), value))
    for var, initializer, value in replaced:
        var.set_initializer(initializer.op, value)
