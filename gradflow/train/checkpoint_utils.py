"""Reading checkpoints without a graph: ``tf.train.list_variables``, ``load_variable``,
``load_checkpoint`` and ``NewCheckpointReader`` (TF1's checkpoint inspection and
warm-start helpers) over the checkpoints ``Saver`` writes.

A checkpoint is named by its prefix or by its directory (whose ``checkpoint`` state file
names the latest). Names are the variables' op names; a trailing ``:0`` is dropped, as
TF1 does.
"""
from __future__ import annotations

import os

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.train.saver import MAX_CHECKPOINT_BYTES, checkpoint_exists, latest_checkpoint
from gradflow.tools.npz_io import NpzReader

__all__ = ["CheckpointReader", "NewCheckpointReader", "load_checkpoint", "load_variable",
           "list_variables"]

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
