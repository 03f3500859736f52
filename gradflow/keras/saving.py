"""``tf.keras.models.load_model`` for keras HDF5 model files (``model.save('m.h5')`` in
tf.keras): the architecture from the file's ``model_config``, the weights from
``model_weights``, and, with ``compile=True``, the optimizer, loss and metrics from
``training_config``. Sequential and functional models of the layers gradflow.keras has
are rebuilt; ``custom_objects`` adds the user's own layer classes and functions.
"""
from __future__ import annotations

import json
import os
from typing import Optional

from gradflow.framework.graph import get_default_graph
from gradflow.keras import backend as K
from gradflow.keras import hdf5, layers as layers_module, optimizers
from gradflow.keras.engine import Input, Layer
from gradflow.keras.network import Model, Sequential

__all__ = ["load_model", "model_from_config", "model_from_json"]

_LAYER_KEYS_DROPPED = ("optional",)  # InputLayer options with nothing to do here


def _layer_class(name: str, custom_objects: dict):
    found = custom_objects.get(name) or getattr(layers_module, name, None)
    if not (isinstance(found, type) and issubclass(found, Layer)):
        raise ValueError(f"Unknown layer: '{name}'. Please ensure you are using a "
                         "`keras.utils.custom_object_scope` and that this object is included "
                         "in the scope.")
    return found


def _input(config: dict):
    config = {k: v for k, v in config.items() if k not in _LAYER_KEYS_DROPPED}
    if config.pop("sparse", False) or config.pop("ragged", False):
        raise ValueError("load_model: sparse and ragged inputs are not supported")
    return Input(batch_shape=tuple(config["batch_input_shape"]), dtype=config.get("dtype"),
                 name=config.get("name"))


def _layer(entry: dict, custom_objects: dict) -> Layer:
    cls = _layer_class(entry["class_name"], custom_objects)
    config = dict(entry["config"])
    if isinstance(config.get("layer"), dict):  # a wrapper's layer
        config["layer"] = _layer(config["layer"], custom_objects)
    if config.get("activation") in custom_objects:
        config["activation"] = custom_objects[config["activation"]]
    return cls(**config)


def model_from_config(config: dict, custom_objects: Optional[dict] = None) -> Model:
    """A Sequential or functional model from its keras config (``{"class_name": ...,
    "config": ...}``)."""
    custom_objects = dict(custom_objects or {})
    kind, body = config.get("class_name"), config.get("config", {})
    with get_default_graph().atomic():
        if kind == "Sequential":
            model = Sequential(name=body.get("name"))
            for entry in body["layers"]:
                if entry["class_name"] == "InputLayer":
                    model.add(_input(entry["config"]))
                else:
                    model.add(_layer(entry, custom_objects))
            return model
        if kind in ("Model", "Functional"):
            return _functional(body, custom_objects)
    raise ValueError(f"load_model: a model of class {kind!r} is not supported (Sequential "
                     "and functional models are)")


def _functional(body: dict, custom_objects: dict) -> Model:
    """Rebuilds a functional model: each layer's calls in turn, once their inputs exist."""
    made: dict = {}  # layer name -> list of its calls' outputs
    pending = list(body["layers"])
    while pending:
        waiting = []
        for entry in pending:
            name = entry["config"].get("name", entry.get("name"))
            if entry["class_name"] == "InputLayer":
                made[name] = [[_input(entry["config"])]]
                continue
            nodes = entry.get("inbound_nodes", [])
            if not all(source in made and len(made[source]) > node
                       for node_entry in nodes for source, node, *_ in node_entry):
                waiting.append(entry)
                continue
            layer = _layer(entry, custom_objects)
            made[name] = []
            for node_entry in nodes:
                args = [made[source][node][index] for source, node, index, *_ in node_entry]
                kwargs = node_entry[0][3] if node_entry and len(node_entry[0]) > 3 else {}
                output = layer(args[0] if len(args) == 1 else args, **kwargs)
                made[name].append(output if isinstance(output, list) else [output])
        if len(waiting) == len(pending):
            raise ValueError("load_model: the model's layers cannot be connected (unknown "
                             f"inbound layers of {[e['config'].get('name') for e in waiting]})")
        pending = waiting

    def tensors(refs):
        return [made[name][node][index] for name, node, index, *_ in refs]
    inputs, outputs = tensors(body["input_layers"]), tensors(body["output_layers"])
    return Model(inputs if len(inputs) > 1 else inputs[0],
                 outputs if len(outputs) > 1 else outputs[0], name=body.get("name"))


def model_from_json(json_string: str, custom_objects: Optional[dict] = None) -> Model:
    """A model from its JSON config (``model.to_json()`` in tf.keras)."""
    return model_from_config(json.loads(json_string), custom_objects)


def _optimizer(config: dict):
    classes = {"SGD": optimizers.SGD, "Adam": optimizers.Adam, "RMSprop": optimizers.RMSprop,
               "Adagrad": optimizers.Adagrad}
    kind = config.get("class_name")
    if kind not in classes:
        raise ValueError(f"load_model: optimizer {kind!r} is not supported; pass "
                         "compile=False and compile the model yourself")
    arguments = dict(config.get("config", {}))
    arguments.pop("name", None)
    return classes[kind](**arguments)


def load_model(filepath, custom_objects: Optional[dict] = None, compile: bool = True,
               options=None) -> Model:
    """A model from a keras HDF5 file: architecture, weights and (``compile``) its
    training configuration."""
    if options is not None:
        raise ValueError("load_model: options is not supported")
    if os.path.isdir(str(filepath)):
        raise ValueError(f"load_model: {filepath} is a SavedModel directory; gradflow loads "
                         "keras HDF5 model files (.h5)")
    h5py = hdf5.h5py_module("load_model")
    with h5py.File(str(filepath), "r") as f:
        if "model_config" not in f.attrs:
            raise ValueError(f"No model config found in the file at {filepath}.")
        config = json.loads(hdf5.texts([f.attrs["model_config"]])[0])
        training = f.attrs.get("training_config")
        model = model_from_config(config, custom_objects)
        hdf5.load_group(model, f["model_weights"])
        saved_state = {}
        if "optimizer_weights" in f:
            group = f["optimizer_weights"]
            saved_state = {name: group[name][()]
                           for name in hdf5.texts(group.attrs["weight_names"])}
    if compile and training is not None:
        settings = json.loads(hdf5.texts([training])[0])
        model.compile(optimizer=_optimizer(settings["optimizer_config"]),
                      loss=settings["loss"], metrics=settings.get("metrics"),
                      loss_weights=settings.get("loss_weights"))
        if saved_state:
            _restore_optimizer(model, saved_state)
    return model


def _restore_optimizer(model: Model, saved: dict) -> None:
    """Loads the optimizer's saved step count and slots (matched by name) into the
    variables the training updates use, so training resumes where it stopped."""
    model._function("train")  # makes the optimizer's variables
    mine = {v.name: v for v in model.optimizer.variables()}
    missing = sorted(set(saved) - set(mine))
    if missing:
        raise ValueError(f"load_model: the saved optimizer state has weights this model's "
                         f"optimizer lacks: {missing[:3]}")
    K.batch_set_value([(mine[name], value) for name, value in saved.items()])
