"""``gf.saved_model.builder``: ``SavedModelBuilder`` writes TF1-style SavedModels.

``export_dir/saved_model.pb`` holds one MetaGraphDef per ``add_meta_graph*`` call (tags,
signatures, the saver's ``SaverDef``, collections) and ``export_dir/variables/`` the V2
checkpoint of the global variables, written once by ``add_meta_graph_and_variables``.
Assets are not supported (a non-empty ``assets_collection`` raises ValueError).
"""
from __future__ import annotations

import os
from typing import Optional

from tensorboard.compat.proto import meta_graph_pb2

from gradflow.framework.graph import GraphKeys, Operation
from gradflow.io.saved_model import VARIABLES_DIRECTORY, VARIABLES_FILENAME, write_saved_model
from gradflow.train.saver import Saver, export_meta_graph

__all__ = ["SavedModelBuilder", "MAIN_OP_KEY", "LEGACY_INIT_OP_KEY", "TRAIN_OP_KEY"]

MAIN_OP_KEY = "saved_model_main_op"
LEGACY_INIT_OP_KEY = "legacy_init_op"
TRAIN_OP_KEY = "saved_model_train_op"


def _check_signatures(signature_def_map: Optional[dict]) -> dict:
    signature_def_map = signature_def_map or {}
    for key, signature in signature_def_map.items():
        if not isinstance(signature, meta_graph_pb2.SignatureDef):
            raise TypeError(f"signature_def_map[{key!r}] must be a SignatureDef proto, got "
                            f"{type(signature).__name__}")
    return signature_def_map


def _check_op(value, name: str) -> Optional[Operation]:
    if value is None:
        return None
    op = getattr(value, "op", value) if not isinstance(value, Operation) else value
    if not isinstance(op, Operation):
        raise TypeError(f"{name} needs to be an Operation: {value!r}")
    return op


class SavedModelBuilder:
    """Builds a SavedModel in ``export_dir``, which must not exist or be empty."""

    def __init__(self, export_dir: str):
        if os.path.exists(export_dir) and (not os.path.isdir(export_dir)
                                           or os.listdir(export_dir)):
            raise AssertionError(
                "Export directory already exists, and isn't empty. Please choose a different "
                f"export directory, or delete all the contents of the specified directory: "
                f"{export_dir}")
        self._export_dir = export_dir
        self._meta_graphs: list = []
        self._saver: Optional[Saver] = None

    def add_meta_graph_and_variables(self, sess, tags: list, signature_def_map=None,
                                     assets_collection=None, legacy_init_op=None,
                                     clear_devices: bool = False, main_op=None,
                                     strip_default_attrs: bool = False, saver=None,
                                     train_op=None, init_op=None) -> None:
        """Saves the global variables' values in ``sess`` and the graph under ``tags``."""
        if self._saver is not None:
            raise AssertionError("Graph state including variables and assets has already "
                                 "been saved. Please invoke `add_meta_graph()` instead.")
        signature_def_map = _check_signatures(signature_def_map)
        if saver is None:
            saver = Saver(list(sess.graph.get_collection(GraphKeys.GLOBAL_VARIABLES)),
                          sharded=True, allow_empty=True)
        prefix = os.path.join(self._export_dir, VARIABLES_DIRECTORY, VARIABLES_FILENAME)
        os.makedirs(os.path.dirname(prefix), exist_ok=True)
        saver.save(sess, prefix, write_meta_graph=False, write_state=False)
        self._saver = saver
        self._add(tags, signature_def_map, assets_collection, legacy_init_op, clear_devices,
                  main_op, strip_default_attrs, train_op, init_op)

    def add_meta_graph(self, tags: list, signature_def_map=None, assets_collection=None,
                       legacy_init_op=None, clear_devices: bool = False, main_op=None,
                       strip_default_attrs: bool = False, saver=None, train_op=None,
                       init_op=None) -> None:
        """Adds the current graph under ``tags``, sharing the variables saved before."""
        if self._saver is None:
            raise AssertionError("Graph state including variables and assets has not been "
                                 "saved yet. Please invoke `add_meta_graph_and_variables()` "
                                 "first.")
        if saver is not None:
            self._saver = saver
        self._add(tags, _check_signatures(signature_def_map), assets_collection,
                  legacy_init_op, clear_devices, main_op, strip_default_attrs, train_op,
                  init_op)

    def _add(self, tags, signature_def_map, assets_collection, legacy_init_op, clear_devices,
             main_op, strip_default_attrs, train_op, init_op) -> None:
        if assets_collection:
            raise ValueError("assets_collection: SavedModel assets are not supported")
        if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
            raise TypeError(f"tags must be a list of strings, got {tags!r}")
        extra = {MAIN_OP_KEY: _check_op(main_op or init_op, "main_op"),
                 LEGACY_INIT_OP_KEY: _check_op(legacy_init_op, "legacy_init_op"),
                 TRAIN_OP_KEY: _check_op(train_op, "train_op")}
        meta = export_meta_graph(clear_devices=clear_devices,
                                 strip_default_attrs=strip_default_attrs,
                                 saver=self._saver if self._saver._variables else None)
        meta.meta_info_def.tags.extend(tags)
        for key, signature in signature_def_map.items():
            meta.signature_def[key].CopyFrom(signature)
        for key, op in extra.items():
            if op is not None:
                meta.collection_def[key].node_list.value[:] = [op.name]
        self._meta_graphs.append(meta)

    def save(self, as_text: bool = False) -> str:
        """Writes ``saved_model.pb`` (``.pbtxt`` with ``as_text``); returns its path."""
        return write_saved_model(self._export_dir, self._meta_graphs, as_text)


Builder = SavedModelBuilder
