"""``tf.keras`` for TF1 graph mode (docs/keras.md): layers, Sequential and functional
models with compile/fit/evaluate/predict, and keras's backend, run in keras's session."""
from gradflow.keras import (activations, backend, callbacks, constraints,  # noqa: F401
                            initializers, layers, losses, metrics, models, optimizers,
                            regularizers, utils)
from gradflow.keras.engine import Input  # noqa: F401
from gradflow.keras.network import Model, Sequential  # noqa: F401

__all__ = ["activations", "backend", "callbacks", "constraints", "initializers", "layers",
           "losses", "metrics", "models", "optimizers", "regularizers", "utils", "Input",
           "Model", "Sequential"]
