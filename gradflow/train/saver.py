"""Checkpoints: ``Saver`` writes variables to ``<prefix>.npz`` and restores them.

A checkpoint is one NPZ archive with one array per variable, keyed by its name in the
checkpoint (the variable's op name, or the key of a ``var_list`` dict). Restoring never
executes code (no pickle) and checks every name, shape and dtype before any variable
changes. A text file ``checkpoint`` beside the checkpoints (TF1's format) names the
latest ones; :func:`latest_checkpoint` reads it.
"""
from __future__ import annotations

import collections
import json
import logging
import os
import re
import time
from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.graph import GraphKeys, Tensor, get_default_graph
from gradflow.ops import array, control
from gradflow.ops.state import Variable, assign
from gradflow.tools.npz_io import NpzReader, atomic_write_text, write_npz

__all__ = ["Saver", "latest_checkpoint", "get_checkpoint_state", "checkpoint_exists",
           "CheckpointState"]

logger = logging.getLogger("gradflow")

_SUFFIX = ".npz"
_STATE_FILE = "checkpoint"
# A checkpoint may hold at most this much data (restoring never allocates more).
MAX_CHECKPOINT_BYTES = 1 << 34

CheckpointState = collections.namedtuple(
    "CheckpointState", ["model_checkpoint_path", "all_model_checkpoint_paths"])


class Saver:
    """Saves and restores variables (TF1's ``tf.train.Saver``).

    Args:
      var_list: Variables (saved under their op names) or a dict name -> Variable;
        default: all global variables.
      reshape: restore a value of another shape with the same number of elements.
      sharded: accepted for TF1 compatibility; there is one device, so one file.
      max_to_keep: how many recent checkpoints to keep (None or 0: all).
      keep_checkpoint_every_n_hours: also keep one checkpoint per this many hours.
      name: the name scope of the restore ops (default "save").
      allow_empty: with no variables, save and restore do nothing instead of raising.
      pad_step_number: write ``prefix-00000042`` instead of ``prefix-42``.
    """

    def __init__(self, var_list=None, reshape: bool = False, sharded: bool = False,
                 max_to_keep: Optional[int] = 5, keep_checkpoint_every_n_hours: float = 10000.0,
                 name: Optional[str] = None, *, allow_empty: bool = False,
                 pad_step_number: bool = False):
        self._variables = _named_variables(var_list)
        if not self._variables and not allow_empty:
            raise ValueError("No variables to save")
        self._reshape = reshape
        self._max_to_keep = max_to_keep
        self._keep_period = keep_checkpoint_every_n_hours * 3600.0
        self._next_keep_time = time.time() + self._keep_period
        self._pad_step_number = pad_step_number
        self._last_checkpoints: list[tuple[str, float]] = []
        self._feeds: dict[str, Tensor] = {}
        self._restore_op = None
        if self._variables:
            self._build_restore_ops(name or "save")

    def _build_restore_ops(self, name: str) -> None:
        """One placeholder + Assign per variable, built now so a finalized graph works."""
        graph = next(iter(self._variables.values())).graph
        with graph.atomic(), graph.as_default(), graph.name_scope(name):
            assigns = []
            for i, (key, var) in enumerate(self._variables.items()):
                value = array.placeholder(var.dtype, shape=var.shape, name=f"restore_{i}")
                self._feeds[key] = value
                assigns.append(assign(var, value))
            self._restore_op = control.group(*assigns, name="restore_all")

    @property
    def last_checkpoints(self) -> list[str]:
        """The checkpoints this Saver has kept, oldest first."""
        return [path for path, _ in self._last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time: list) -> None:
        """Sets the kept checkpoints as ``(prefix, timestamp)`` pairs, oldest first."""
        if not isinstance(last_checkpoints_with_time, list):
            raise TypeError("last_checkpoints_with_time must be a list, got "
                            f"{type(last_checkpoints_with_time).__name__}")
        self._last_checkpoints = [(str(p), float(t)) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths: list) -> None:
        """Takes over ``checkpoint_paths`` (e.g. a restored directory's
        ``all_model_checkpoint_paths``) as the kept checkpoints, so that a restarted
        program goes on counting them toward ``max_to_keep``. Missing ones are skipped."""
        kept = [(p, os.path.getmtime(p + _SUFFIX)) for p in checkpoint_paths
                if os.path.exists(p + _SUFFIX)]
        self.set_last_checkpoints_with_time(kept)

    def save(self, sess, save_path: str, global_step=None, latest_filename: Optional[str] = None,
             *, write_state: bool = True) -> Optional[str]:
        """Writes the variables' values in ``sess``; returns the checkpoint prefix.

        With ``global_step`` (an int, or a tensor/variable evaluated in ``sess``) the
        prefix is ``save_path-<step>``. Older checkpoints beyond ``max_to_keep`` are
        deleted and the ``checkpoint`` state file is updated.
        """
        if not self._variables:
            return None
        prefix = self._prefix(sess, save_path, global_step)
        values = sess.run(list(self._variables.values()))
        write_npz(prefix + _SUFFIX, {key: _storable(value)
                                     for key, value in zip(self._variables, values)})
        self._remember(prefix)
        if write_state:
            _write_state(os.path.dirname(prefix), latest_filename, self.last_checkpoints)
        return prefix

    def restore(self, sess, save_path: str) -> None:
        """Loads the variables from checkpoint ``save_path`` into ``sess``.

        Raises ValueError if ``save_path`` is not a checkpoint, NotFoundError if a
        variable is missing from it, InvalidArgumentError on a shape or dtype mismatch and
        DataLossError if the file is malformed; no variable changes when it raises.
        """
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if not checkpoint_exists(save_path):
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path}")
        if not self._variables:
            return
        try:
            reader = NpzReader(save_path + _SUFFIX, MAX_CHECKPOINT_BYTES)
        except ValueError as err:
            raise errors.DataLossError(None, None, f"Checkpoint {save_path} is malformed: "
                                       f"{err}") from None
        with reader:
            feeds = {self._feeds[key]: self._checked_value(reader, save_path, key, var)
                     for key, var in self._variables.items()}
        sess.run(self._restore_op, feed_dict=feeds)

    def _checked_value(self, reader: NpzReader, save_path: str, key: str,
                       var: Variable) -> np.ndarray:
        if key not in reader.keys:
            raise errors.NotFoundError(
                None, None, f"Restoring from checkpoint failed: key {key!r} (variable "
                f"{var.op.name}) not found in checkpoint {save_path}, which holds "
                f"{sorted(reader.keys)}. The graph's variables differ from the ones saved.")
        try:
            value = reader.read(key, max_elements=var.shape.num_elements())  # before inflating
        except ValueError as err:
            raise errors.DataLossError(None, None, f"Checkpoint {save_path} is malformed: "
                                       f"{err}") from None
        value = _restored_dtype(value, var.dtype)
        if value.dtype != np.dtype(var.dtype.as_numpy_dtype):
            raise errors.InvalidArgumentError(
                None, None, f"Restoring from checkpoint failed: {key!r} is {value.dtype} in "
                f"{save_path} but variable {var.op.name} is {var.dtype.name}")
        return self._fitted(value, save_path, key, var)

    def _fitted(self, value: np.ndarray, save_path: str, key: str, var: Variable) -> np.ndarray:
        shape = var.shape
        if shape.is_compatible_with(value.shape):
            return value
        if self._reshape and shape.is_fully_defined() and \
                value.size == shape.num_elements():
            return value.reshape(shape.as_list())
        raise errors.InvalidArgumentError(
            None, None, f"Restoring from checkpoint failed: {key!r} has shape "
            f"{list(value.shape)} in {save_path} but variable {var.op.name} has shape {shape}")

    def _prefix(self, sess, save_path: str, global_step) -> str:
        if global_step is None:
            return save_path
        if not isinstance(global_step, (int, np.integer)):
            global_step = sess.run(global_step)
        step = int(global_step)
        return f"{save_path}-{step:08d}" if self._pad_step_number else f"{save_path}-{step}"

    def _remember(self, prefix: str) -> None:
        """Adds ``prefix`` to the kept checkpoints, deleting the oldest beyond the limit."""
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != prefix]
        self._last_checkpoints.append((prefix, time.time()))
        if not self._max_to_keep:
            return
        while len(self._last_checkpoints) > self._max_to_keep:
            oldest, stamp = self._last_checkpoints.pop(0)
            if stamp > self._next_keep_time:
                self._next_keep_time += self._keep_period
                continue
            if os.path.exists(oldest + _SUFFIX):
                os.remove(oldest + _SUFFIX)


def _named_variables(var_list) -> dict[str, Variable]:
    if var_list is None:
        var_list = get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES)
    if isinstance(var_list, dict):
        for key, var in var_list.items():
            if not isinstance(key, str) or not isinstance(var, Variable):
                raise TypeError("var_list must be a dict mapping string names to Variables. "
                                f"Not a string name and Variable: {key!r}: {var!r}")
        return dict(var_list)
    named: dict[str, Variable] = {}
    for var in var_list:
        if not isinstance(var, Variable):
            raise TypeError(f"Saver var_list must hold Variables, got {var!r}")
        if var.op.name in named:
            raise ValueError(f"At least two variables have the same name: {var.op.name}")
        named[var.op.name] = var
    return named


def _storable(value) -> np.ndarray:
    """bfloat16 (an extension dtype when ml_dtypes is installed) is stored as float32,
    which holds it exactly and loads without pickle."""
    value = np.asarray(value)
    return value.astype(np.float32) if value.dtype.kind == "V" else value


def _restored_dtype(value: np.ndarray, dtype: dtypes.DType) -> np.ndarray:
    if dtype is dtypes.bfloat16 and value.dtype == np.float32:
        return value.astype(dtype.as_numpy_dtype)
    return value


# ------------------------------------------------------------- the state file
def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a checkpoint with this prefix exists."""
    return os.path.isfile(checkpoint_prefix + _SUFFIX)


def _write_state(directory: str, latest_filename: Optional[str], prefixes: list[str]) -> None:
    """Writes TF1's text state file, with paths relative to ``directory`` where possible."""
    def relative(path: str) -> str:
        return os.path.basename(path) if os.path.dirname(path) == directory else path
    lines = [f"model_checkpoint_path: {json.dumps(relative(prefixes[-1]))}"]
    lines += [f"all_model_checkpoint_paths: {json.dumps(relative(p))}" for p in prefixes]
    atomic_write_text(os.path.join(directory, latest_filename or _STATE_FILE),
                      "\n".join(lines) + "\n")


_STATE_LINE = re.compile(
    r'^(model_checkpoint_path|all_model_checkpoint_paths): ("(?:[^"\\]|\\.)*")$')


def _parse_state(path: str, data: bytes) -> Optional[dict]:
    """The paths a state file lists per field; None (with a warning) if malformed."""
    fields: dict[str, list[str]] = {"model_checkpoint_path": [],
                                    "all_model_checkpoint_paths": []}
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as err:
        logger.warning("%s: not UTF-8 text (%s); checkpoint state ignored", path, err)
        return None
    for line in lines:
        entry = _state_entry(line)
        if entry is None and line.strip():
            logger.warning("%s: cannot parse line %r; checkpoint state ignored", path, line)
            return None
        if entry is not None:
            fields[entry[0]].append(entry[1])
    return fields


def _state_entry(line: str) -> Optional[tuple[str, str]]:
    """``(field, path)`` of one state-file line, or None if it is not one."""
    match = _STATE_LINE.match(line.strip())
    if match is None:
        return None
    try:
        return match.group(1), json.loads(match.group(2))
    except ValueError:  # a bad escape inside the quotes
        return None


def get_checkpoint_state(checkpoint_dir: str,
                         latest_filename: Optional[str] = None) -> Optional[CheckpointState]:
    """The checkpoints named by ``checkpoint_dir``'s state file, or None (with a warning
    when the file exists but cannot be parsed)."""
    path = os.path.join(checkpoint_dir, latest_filename or _STATE_FILE)
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        fields = _parse_state(path, f.read(1 << 20))
    if fields is None:
        return None
    if len(fields["model_checkpoint_path"]) != 1:
        logger.warning("%s: no model_checkpoint_path; checkpoint state ignored", path)
        return None

    def absolute(p: str) -> str:
        return p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
    return CheckpointState(absolute(fields["model_checkpoint_path"][0]),
                           [absolute(p) for p in fields["all_model_checkpoint_paths"]])


def latest_checkpoint(checkpoint_dir: str, latest_filename: Optional[str] = None) -> Optional[str]:
    """The prefix of the newest checkpoint in ``checkpoint_dir``, or None."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not checkpoint_exists(state.model_checkpoint_path):
        return None
    return state.model_checkpoint_path
