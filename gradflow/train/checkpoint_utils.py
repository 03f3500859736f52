"""Reading checkpoints outside a Saver: TF1's ``tf.train.load_checkpoint``,
``list_variables`` and ``load_variable`` (TF's V2 bundles and gradflow's old NPZ files)."""
from __future__ import annotations

import os

import numpy as np

from gradflow.framework import errors
from gradflow.train.saver import CheckpointReader, checkpoint_exists, latest_checkpoint

__all__ = ["load_checkpoint", "list_variables", "load_variable"]


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
