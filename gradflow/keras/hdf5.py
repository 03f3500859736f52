"""Keras's HDF5 weight files (``model.save_weights('w.h5')``), read and written with
h5py when it is installed.

The layout is keras's: the root's ``layer_names`` attribute lists every layer; each
layer's group lists its ``weight_names`` (``dense/kernel:0``...) and holds one dataset
per weight under that name. Loading matches the layers that have weights by order, as
keras does, so a file written by tf.keras loads into the same architecture here.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gradflow.keras import backend as K

__all__ = ["save_weights", "load_weights", "load_group", "h5py_module", "texts"]

_FORMAT_VERSION = "2.21.0"  # the tf_keras release whose layout this follows


def h5py_module(what: str) -> Any:
    """h5py, or an ImportError saying ``what`` needs it."""
    return _h5py(what)


def texts(values) -> list:
    """HDF5 string attributes (bytes or str) as str."""
    return _texts(values)


def _h5py(what: str) -> Any:
    try:
        import h5py  # optional: only HDF5 weight files need it
    except ImportError:
        raise ImportError(f"`{what}` requires h5py when saving or loading in HDF5 format "
                          "(pip install h5py), or use the TF checkpoint format (a path "
                          "without .h5).") from None
    return h5py


def _texts(values) -> list:
    return [v.decode("utf8") if isinstance(v, bytes) else str(v) for v in values]


def save_weights(model, filepath: str) -> None:
    """Writes every layer's weights to ``filepath`` in keras's HDF5 layout."""
    h5py = _h5py("save_weights")
    layers = model.layers
    values = K.batch_get_value([w for layer in layers for w in layer.weights])
    with h5py.File(filepath, "w") as f:
        f.attrs["layer_names"] = [layer.name.encode("utf8") for layer in layers]
        f.attrs["backend"] = b"tensorflow"
        f.attrs["keras_version"] = _FORMAT_VERSION.encode("utf8")
        at = 0
        for layer in layers:
            group = f.create_group(layer.name)
            names = [w.name for w in layer.weights]
            group.attrs["weight_names"] = [n.encode("utf8") for n in names]
            for name in names:
                group.create_dataset(name, data=values[at])
                at += 1
        f.create_group("top_level_model_weights").attrs["weight_names"] = []


def load_weights(model, filepath: str) -> None:
    """Loads ``filepath``'s weights into the layers with weights, in order."""
    h5py = _h5py("load_weights")
    with h5py.File(filepath, "r") as f:
        load_group(model, f)


def load_group(model, group) -> None:
    """Loads the weights an HDF5 group holds in keras's layout (a weights file's root,
    or a saved model's ``model_weights``) into the layers with weights, in order."""
    saved = []
    for name in _texts(group.attrs["layer_names"]):
        names = _texts(group[name].attrs["weight_names"])
        if names:
            saved.append([np.asarray(group[name][n]) for n in names])
    layers = [layer for layer in model.layers if layer.weights]
    if len(saved) != len(layers):
        raise ValueError(f"Layer count mismatch when loading weights from file. Model "
                         f"expected {len(layers)} layers, found {len(saved)} saved layers.")
    pairs = []
    for layer, arrays in zip(layers, saved, strict=True):
        if len(arrays) != len(layer.weights):
            raise ValueError(f"Layer {layer.name} expects {len(layer.weights)} weight(s), "
                             f"but the saved weights have {len(arrays)} element(s).")
        for weight, value in zip(layer.weights, arrays, strict=True):
            if tuple(weight.shape.as_list()) != value.shape:
                raise ValueError(f"Shape mismatch in layer {layer.name} for weight "
                                 f"{weight.name}. Weight expects shape "
                                 f"{tuple(weight.shape.as_list())}. Received saved weight "
                                 f"with shape {value.shape}")
            pairs.append((weight, value))
    K.batch_set_value(pairs)
