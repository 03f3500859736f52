"""``gf.saved_model.loader``: loads a TF1-style SavedModel (TF's or gradflow's) into a
session: the MetaGraph of the given tags, its variables, then its main/init op."""
from __future__ import annotations

import os
from typing import Optional

from gradflow.io.saved_model import (
    SAVED_MODEL_FILENAME_PB, SAVED_MODEL_FILENAME_PBTXT, VARIABLES_DIRECTORY, VARIABLES_FILENAME,
    read_saved_model)
from gradflow.saved_model.builder import LEGACY_INIT_OP_KEY, MAIN_OP_KEY
from gradflow.train.saver import checkpoint_exists, import_meta_graph

__all__ = ["load", "maybe_saved_model_directory", "contains_saved_model"]


def maybe_saved_model_directory(export_dir: str) -> bool:
    """Whether ``export_dir`` holds a ``saved_model.pb`` or ``saved_model.pbtxt``."""
    return any(os.path.isfile(os.path.join(export_dir, name))
               for name in (SAVED_MODEL_FILENAME_PB, SAVED_MODEL_FILENAME_PBTXT))


contains_saved_model = maybe_saved_model_directory


def load(sess, tags: list, export_dir: str, import_scope: Optional[str] = None,
         **saver_kwargs):
    """Imports the MetaGraph tagged ``tags`` into ``sess.graph``, restores its variables
    and runs its main op; returns the MetaGraphDef.

    RuntimeError when no MetaGraph has exactly these tags, OSError when ``export_dir``
    holds no SavedModel."""
    saved_model = read_saved_model(export_dir)
    wanted = set(tags)
    found = [m for m in saved_model.meta_graphs if set(m.meta_info_def.tags) == wanted]
    if not found:
        available = [list(m.meta_info_def.tags) for m in saved_model.meta_graphs]
        raise RuntimeError(
            f"MetaGraphDef associated with tags {sorted(wanted)!r} could not be found in "
            f"SavedModel, with available tags '{available}'. To inspect available tag-sets "
            "in the SavedModel, please use the SavedModel CLI: `saved_model_cli`.")
    meta = found[0]
    with sess.graph.as_default():
        saver = import_meta_graph(meta, import_scope=import_scope, **saver_kwargs)
        prefix = os.path.join(export_dir, VARIABLES_DIRECTORY, VARIABLES_FILENAME)
        if saver is not None and checkpoint_exists(prefix):
            saver.restore(sess, prefix)
        for key in (MAIN_OP_KEY, LEGACY_INIT_OP_KEY):
            names = meta.collection_def[key].node_list.value if key in meta.collection_def \
                else []
            if names:
                name = f"{import_scope}/{names[0]}" if import_scope else names[0]
                sess.run(sess.graph.get_operation_by_name(name))
                break
    return meta
