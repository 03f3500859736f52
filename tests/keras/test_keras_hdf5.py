"""Keras HDF5 weight files (with h5py): a file tf.keras wrote loads here, and the files
written here have tf.keras's layout."""
import importlib.util

import numpy as np
import pytest

import gradflow.compat.v1 as tf
from tf_fixtures import FIXTURES, load_json

h5py = pytest.importorskip("h5py")

_spec = importlib.util.spec_from_file_location("keras_cases", FIXTURES / "keras_cases.py")
keras_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(keras_cases)

RECORDED = load_json("keras")["hdf5"]


def _fresh_model():
    model = keras_cases.hdf5_model(tf)
    model.set_weights([np.zeros(w.shape.as_list(), np.float32) for w in model.weights])
    return model


def test_loads_a_file_tf_keras_wrote():
    model = _fresh_model()
    model.load_weights(str(FIXTURES / "keras_weights.h5"))
    for got, want in zip(model.get_weights(), RECORDED["weights"], strict=True):
        np.testing.assert_array_equal(got, np.asarray(want, dtype=np.float32))


def test_writes_tf_keras_layout_and_reads_it_back(tmp_path):
    model = keras_cases.hdf5_model(tf)
    path = tmp_path / "weights.h5"
    model.save_weights(str(path))
    assert keras_cases.hdf5_structure(h5py, path) == RECORDED["structure"]
    written = model.get_weights()
    model.set_weights([np.zeros_like(w) for w in written])
    model.load_weights(str(path))
    for got, want in zip(model.get_weights(), written, strict=True):
        np.testing.assert_array_equal(got, want)


def test_mismatched_architecture_is_refused(tmp_path):
    small = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
    with pytest.raises(ValueError, match="Layer count mismatch when loading weights"):
        small.load_weights(str(FIXTURES / "keras_weights.h5"))
    other = tf.keras.Sequential([tf.keras.layers.Dense(5, input_shape=(3,)),
                                 tf.keras.layers.BatchNormalization(),
                                 tf.keras.layers.Dense(1)])
    with pytest.raises(ValueError, match="Shape mismatch in layer dense_1"):
        other.load_weights(str(FIXTURES / "keras_weights.h5"))


@pytest.mark.parametrize("key", ["cnn", "functional"])
def test_loads_a_whole_model_tf_keras_saved(key):
    """Summary, predictions and further training of a model tf.keras saved (a
    batch-norm CNN with Adam; a two-input Embedding-Bidirectional(LSTM) model with
    RMSprop) match what tf.keras does with it once loaded."""
    tf.keras.backend.clear_session()
    got = keras_cases.use_saved_model(tf, FIXTURES / f"keras_model_{key}.h5", key)
    want = load_json("keras")["saved_models"][key]
    assert got["summary"] == want["summary"] and got["weights"] == want["weights"]
    assert got["metrics_names"] == want["metrics_names"]
    np.testing.assert_allclose(got["predict"], want["predict"], rtol=2e-5, atol=2e-6)
    for name, values in want["history"].items():
        np.testing.assert_allclose(got["history"][name], values, rtol=1e-4, atol=1e-6)


def test_load_model_refusals(tmp_path):
    with pytest.raises(ValueError, match="SavedModel directory"):
        tf.keras.models.load_model(str(tmp_path))
    path = tmp_path / "weights_only.h5"
    tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))]).save_weights(str(path))
    with pytest.raises(ValueError, match="No model config found"):
        tf.keras.models.load_model(str(path))
