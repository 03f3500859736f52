"""``tf.keras.models``: the model classes and the functions that rebuild saved models."""
from gradflow.keras.network import Model, Sequential
from gradflow.keras.saving import load_model, model_from_config, model_from_json

__all__ = ["Model", "Sequential", "load_model", "model_from_config", "model_from_json"]
