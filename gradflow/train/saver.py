"""Checkpoints: ``Saver`` writes variables in TF's V2 format and restores them.

A checkpoint is TF's tensor bundle (``<prefix>.index`` + ``<prefix>.data-00000-of-00001``,
see :mod:`gradflow.io.tensor_bundle`) with one tensor per variable, keyed by its name in
the checkpoint (the variable's op name, or the key of a ``var_list`` dict): TF 2.21
restores it, and gradflow restores TF's. Checkpoints gradflow wrote before, one NPZ
archive ``<prefix>.npz``, still restore. Restoring never executes code (no pickle) and
checks every name, shape and dtype before any variable changes. A text file
``checkpoint`` beside the checkpoints (TF1's format) names the latest ones;
:func:`latest_checkpoint` reads it.
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
from gradflow.io.meta_graph import (
    build_meta_graph_def, import_meta_graph_def, read_meta_graph_def, saver_def_for, write_proto)
from gradflow.io.meta_graph import strip_default_attrs as strip_defaults
from gradflow.io.tensor_bundle import BundleReader, bundle_exists, write_bundle
from gradflow.ops import array, control
from gradflow.ops.state import Variable, assign
from gradflow.tools.npz_io import NpzReader, atomic_write_text

__all__ = ["Saver", "export_meta_graph", "import_meta_graph", "latest_checkpoint",
           "get_checkpoint_state", "checkpoint_exists", "CheckpointState", "CheckpointReader",
           "NewCheckpointReader", "open_checkpoint"]

logger = logging.getLogger("gradflow")

_SUFFIX = ".npz"  # gradflow's former checkpoint format, still restored
# TF's ``SaverDef.CheckpointFormatVersion``: V1 (1) is TF's deprecated format.
V1, V2 = 1, 2
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
      sharded: accepted for TF1 compatibility; there is one device, so one data shard.
      max_to_keep: how many recent checkpoints to keep (None or 0: all).
      keep_checkpoint_every_n_hours: also keep one checkpoint per this many hours.
      name: the name scope of the restore ops (default "save").
      allow_empty: with no variables, save and restore do nothing instead of raising.
      pad_step_number: write ``prefix-00000042`` instead of ``prefix-42``.
      write_version: ``SaverDef.V2`` (2, the default); TF's deprecated V1 format raises
        ValueError.
    """

    def __init__(self, var_list=None, reshape: bool = False, sharded: bool = False,
                 max_to_keep: Optional[int] = 5, keep_checkpoint_every_n_hours: float = 10000.0,
                 name: Optional[str] = None, *, allow_empty: bool = False,
                 pad_step_number: bool = False, write_version: int = V2):
        if write_version != V2:
            raise ValueError(f"write_version={write_version!r}: gradflow writes only TF's V2 "
                             "checkpoint format (saver_pb2.SaverDef.V2)")
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
        self._scope = ""
        self._sharded = sharded
        if self._variables:
            self._build_restore_ops(name or "save")

    def _build_restore_ops(self, name: str) -> None:
        """One placeholder + Assign per variable, built now so a finalized graph works."""
        graph = next(iter(self._variables.values())).graph
        with graph.atomic(), graph.as_default(), graph.name_scope(name) as scope:
            self._scope = scope.rstrip("/")
            assigns = []
            for i, (key, var) in enumerate(self._variables.items()):
                value = array.placeholder(var.dtype, shape=var.shape, name=f"restore_{i}")
                self._feeds[key] = value
                assigns.append(assign(var, value))
            self._restore_op = control.group(*assigns, name="restore_all")

    @property
    def saver_def(self):
        """TF's ``SaverDef`` of this Saver, naming the saver subgraph a MetaGraph holds."""
        return saver_def_for(self._scope or "save", self._max_to_keep or 0,
                             self._keep_period / 3600.0, self._sharded)

    def as_saver_def(self):
        return self.saver_def

    def export_meta_graph(self, filename: Optional[str] = None, collection_list=None,
                          as_text: bool = False, clear_devices: bool = False,
                          strip_default_attrs: bool = False):
        """The graph as a MetaGraphDef with this Saver's ``SaverDef`` (written to
        ``filename`` if given)."""
        return export_meta_graph(filename, collection_list=collection_list, as_text=as_text,
                                 clear_devices=clear_devices,
                                 strip_default_attrs=strip_default_attrs, saver=self)

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
        kept = [(p, os.path.getmtime(p + ".index" if bundle_exists(p) else p + _SUFFIX))
                for p in checkpoint_paths if checkpoint_exists(p)]
        self.set_last_checkpoints_with_time(kept)

    def save(self, sess, save_path: str, global_step=None, latest_filename: Optional[str] = None,
             meta_graph_suffix: str = "meta", write_meta_graph: bool = True,
             write_state: bool = True, strip_default_attrs: bool = False,
             save_debug_info: bool = False) -> Optional[str]:
        """Writes the variables' values in ``sess``; returns the checkpoint prefix.

        With ``global_step`` (an int, or a tensor/variable evaluated in ``sess``) the
        prefix is ``save_path-<step>``. The graph goes to ``<prefix>.meta`` (TF's
        MetaGraphDef) unless ``write_meta_graph`` is False. Older checkpoints beyond
        ``max_to_keep`` are deleted and the ``checkpoint`` state file is updated.
        ``strip_default_attrs`` leaves out of it the attrs that have TF's default values;
        ``save_debug_info`` must stay False.
        """
        if save_debug_info:
            raise ValueError("save_debug_info is not supported")
        if not self._variables:
            return None
        prefix = self._prefix(sess, save_path, global_step)
        values = sess.run(list(self._variables.values()))
        if os.path.dirname(prefix):
            os.makedirs(os.path.dirname(prefix), exist_ok=True)  # as TF's SaveV2 does
        write_bundle(prefix, {key: np.asarray(value)
                              for key, value in zip(self._variables, values, strict=True)})
        if write_meta_graph:
            self.export_meta_graph(f"{prefix}.{meta_graph_suffix}",
                                   strip_default_attrs=strip_default_attrs)
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
        with open_checkpoint(save_path) as reader:
            feeds = {self._feeds[key]: self._checked_value(reader, save_path, key, var)
                     for key, var in self._variables.items()}
        sess.run(self._restore_op, feed_dict=feeds)

    def _checked_value(self, reader: "CheckpointReader", save_path: str, key: str,
                       var: Variable) -> np.ndarray:
        if not reader.has_tensor(key):
            raise errors.NotFoundError(
                None, None, f"Restoring from checkpoint failed: key {key!r} (variable "
                f"{var.op.name}) not found in checkpoint {save_path}, which holds "
                f"{sorted(reader.keys())}. The graph's variables differ from the ones saved.")
        # bounded by what the variable needs, checked before anything is inflated
        value = reader.get_tensor(key, max_elements=var.shape.num_elements())
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
            _delete_checkpoint(oldest)


def export_meta_graph(filename: Optional[str] = None, meta_info_def=None, graph_def=None,
                      saver_def=None, collection_list=None, as_text: bool = False,
                      graph=None, export_scope: Optional[str] = None,
                      clear_devices: bool = False, clear_extraneous_savers: bool = False,
                      strip_default_attrs: bool = False, save_debug_info: bool = False,
                      *, saver: Optional["Saver"] = None):
    """The graph as TF's ``MetaGraphDef`` (written to ``filename`` if given).

    With a Saver (``saver``, or the last Saver made in the graph), its ops are written as
    TF's saver subgraph and its ``SaverDef`` is included, so TF's ``import_meta_graph``
    gets a working Saver. ``strip_default_attrs`` leaves out the attrs that have TF's
    default values (``meta_info_def.stripped_default_attrs``). ``export_scope`` and
    ``save_debug_info`` are not supported (ValueError).
    """
    if export_scope or save_debug_info:
        raise ValueError("export_meta_graph: export_scope and save_debug_info are not "
                         "supported")
    del clear_extraneous_savers  # only one Saver's subgraph is ever written
    if graph is None:
        graph = next(iter(saver._variables.values())).graph if saver and saver._variables \
            else get_default_graph()
    if saver is None:
        savers = graph.get_collection(GraphKeys.SAVERS)
        saver = savers[-1] if savers else None
    meta = build_meta_graph_def(
        graph, saver_scope=saver._scope if saver else None,
        saver_def=saver_def or (saver.saver_def if saver else None),
        saver_variables=saver._variables if saver else None,
        collection_list=collection_list, clear_devices=clear_devices, graph_def=graph_def)
    if meta_info_def is not None:
        meta.meta_info_def.CopyFrom(meta_info_def)
    if strip_default_attrs:
        strip_defaults(meta)
    if filename:
        write_proto(meta, filename, as_text)
    return meta


def import_meta_graph(meta_graph_or_file, clear_devices: bool = False,
                      import_scope: Optional[str] = None, input_map=None,
                      **kwargs) -> Optional["Saver"]:
    """Imports a MetaGraph (a ``.meta`` file of TF or gradflow, or the proto) into the
    default graph with its collections; returns a Saver over its variables (None when
    it has none). Further keyword arguments are refused (ValueError)."""
    if kwargs:
        raise ValueError(f"import_meta_graph: arguments {sorted(kwargs)} are not supported")
    meta = meta_graph_or_file if not isinstance(meta_graph_or_file, str) \
        else read_meta_graph_def(meta_graph_or_file)
    graph = get_default_graph()
    variables = import_meta_graph_def(meta, graph, import_scope, clear_devices, input_map)
    if not variables:
        return None
    saver_def = meta.saver_def if meta.HasField("saver_def") else None
    keep = saver_def.max_to_keep if saver_def else 5
    hours = saver_def.keep_checkpoint_every_n_hours if saver_def else 10000.0
    prefix = f"{import_scope}/" if import_scope else ""
    return Saver({v.op.name[len(prefix):]: v for v in variables}, max_to_keep=keep,
                 keep_checkpoint_every_n_hours=hours or 10000.0)


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


def _restored_dtype(value: np.ndarray, dtype: dtypes.DType) -> np.ndarray:
    """Old NPZ checkpoints stored bfloat16 as float32."""
    if dtype is dtypes.bfloat16 and value.dtype == np.float32:
        return value.astype(dtype.as_numpy_dtype)
    return value


def _delete_checkpoint(prefix: str) -> None:
    """Removes every file of checkpoint ``prefix`` (index, data shards, meta, NPZ)."""
    directory = os.path.dirname(prefix) or "."
    base = os.path.basename(prefix)
    shard = re.compile(re.escape(base) + r"\.data-\d{5}-of-\d{5}$")
    for name in os.listdir(directory):
        if name in (base + ".index", base + ".meta", base + _SUFFIX) or shard.match(name):
            os.remove(os.path.join(directory, name))


# ------------------------------------------------------------- reading checkpoints
class CheckpointReader:
    """Reads a checkpoint's tensors by name (TF's ``NewCheckpointReader``): a V2 bundle,
    or gradflow's former NPZ checkpoint.

    Raises NotFoundError when no checkpoint has this prefix and DataLossError when it is
    malformed.
    """

    def __init__(self, prefix: str):
        self._prefix = prefix
        self._npz: Optional[NpzReader] = None
        self._bundle: Optional[BundleReader] = None
        if bundle_exists(prefix) or not os.path.isfile(prefix + _SUFFIX):
            self._bundle = BundleReader(prefix)
            return
        try:
            self._npz = NpzReader(prefix + _SUFFIX, MAX_CHECKPOINT_BYTES)
        except ValueError as err:
            raise errors.DataLossError(None, None, f"Checkpoint {prefix} is malformed: "
                                       f"{err}") from None

    def __enter__(self) -> "CheckpointReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._npz is not None:
            self._npz.close()

    def keys(self) -> list[str]:
        return self._bundle.keys() if self._bundle is not None else sorted(self._npz.keys)

    def has_tensor(self, name: str) -> bool:
        """Whether the checkpoint holds a tensor ``name``."""
        return name in self.keys()

    def get_tensor(self, name: str, max_elements: Optional[int] = None) -> np.ndarray:
        """The value of tensor ``name``; NotFoundError if there is none. With
        ``max_elements`` (what the reader's target can hold), a tensor declaring more is
        refused as malformed before it is read."""
        if self._bundle is not None:
            declared = 0 if max_elements is None or name not in self.keys() else \
                int(np.prod(self._bundle.shape(name), dtype=np.int64))
            if max_elements is not None and declared > max_elements:
                raise errors.DataLossError(
                    None, None, f"Checkpoint {self._prefix} is malformed: tensor {name!r} "
                    f"declares {declared} elements; its target needs at most {max_elements}")
            return self._bundle.read(name)
        if name not in self._npz.keys:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint")
        try:
            return self._npz.read(name, max_elements=max_elements)
        except ValueError as err:
            raise errors.DataLossError(None, None, f"Checkpoint {self._prefix} is "
                                       f"malformed: {err}") from None

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        """Each tensor's shape, by name."""
        if self._bundle is not None:
            return {key: self._bundle.shape(key) for key in self.keys()}
        return {key: list(self.get_tensor(key).shape) for key in self.keys()}

    def get_variable_to_dtype_map(self) -> dict[str, dtypes.DType]:
        """Each tensor's dtype, by name."""
        if self._bundle is not None:
            return {key: self._bundle.dtype(key) for key in self.keys()}
        return {key: dtypes.as_dtype(self.get_tensor(key).dtype) for key in self.keys()}

    def debug_string(self) -> bytes:
        """One line per tensor: ``name (DT_...) [shape]``, as TF prints it."""
        shapes = self.get_variable_to_shape_map()
        kinds = self.get_variable_to_dtype_map()
        return "".join(f"{key} ({kinds[key].name}) {shapes[key]}\n"
                       for key in self.keys()).encode("utf-8")


def open_checkpoint(prefix: str) -> CheckpointReader:
    """A reader of checkpoint ``prefix`` (use as a context manager)."""
    return CheckpointReader(prefix)


NewCheckpointReader = open_checkpoint


# ------------------------------------------------------------- the state file
def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a checkpoint with this prefix exists (V2 ``.index`` or an old ``.npz``)."""
    return bundle_exists(checkpoint_prefix) or os.path.isfile(checkpoint_prefix + _SUFFIX)


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
