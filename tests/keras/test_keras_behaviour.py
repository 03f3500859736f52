"""tf.keras under gradflow beyond the recorded parity cases: atomic failure of bad calls,
arguments gradflow refuses, keras's session and learning phase, callbacks writing files,
weight files, initializer statistics."""
import os
import sys

import numpy as np
import pytest

import gradflow.compat.v1 as tf

K = tf.keras.backend
L = tf.keras.layers


def _snapshot(graph):
    keys = (tf.GraphKeys.GLOBAL_VARIABLES, tf.GraphKeys.TRAINABLE_VARIABLES,
            tf.GraphKeys.REGULARIZATION_LOSSES, tf.GraphKeys.UPDATE_OPS)
    return ([op.name for op in graph.get_operations()],
            {key: list(graph.get_collection(key)) for key in keys})


def _data(n=8):
    x = np.linspace(-1, 1, n * 3, dtype=np.float32).reshape(n, 3)
    return x, (x.sum(axis=1, keepdims=True) > 0).astype(np.float32)


# ------------------------------------------------------------------ atomic failure
def test_bad_layer_call_leaves_graph_and_layer_unchanged():
    graph = tf.get_default_graph()
    flat = tf.placeholder(tf.float32, [None, 3])
    conv = L.Conv2D(2, 3)
    before = _snapshot(graph)
    with pytest.raises(ValueError, match="expected min_ndim=4"):
        conv(flat)
    assert _snapshot(graph) == before
    assert not conv.built and conv.weights == [] and conv._inbound_nodes == []


def test_call_failing_after_weights_were_made_rolls_them_back():
    class Broken(L.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", shape=(3, 2), regularizer="l2")

        def call(self, inputs):
            raise ValueError("call failed on purpose")

    graph = tf.get_default_graph()
    x = tf.placeholder(tf.float32, [None, 3])
    layer = Broken()
    before = _snapshot(graph)
    with pytest.raises(ValueError, match="on purpose"):
        layer(x)
    assert _snapshot(graph) == before
    assert not layer.built and layer.weights == [] and layer.losses == []


def test_bad_compile_leaves_model_uncompiled():
    model = tf.keras.Sequential([L.Dense(1, input_shape=(3,))])
    graph = tf.get_default_graph()
    before = _snapshot(graph)
    with pytest.raises(ValueError, match="Unknown metric function: nope"):
        model.compile("sgd", "mse", metrics=["nope"])
    assert _snapshot(graph) == before and model.optimizer is None
    with pytest.raises(RuntimeError, match="You must compile your model"):
        model.fit(*_data(), verbose=0)


def test_compile_failing_while_building_the_loss_leaves_model_uncompiled():
    def broken_loss(y_true, y_pred):
        raise ValueError("loss failed on purpose")

    model = tf.keras.Sequential([L.Dense(1, input_shape=(3,))])
    graph = tf.get_default_graph()
    before = _snapshot(graph)
    with pytest.raises(ValueError, match="on purpose"):
        model.compile("sgd", broken_loss)
    assert _snapshot(graph) == before and model.optimizer is None and model.targets == []
    model.compile("sgd", "mse", metrics={"dense": None})
    assert model.metrics_names == ["loss"]


def test_bad_functional_model_and_disconnected_graph():
    a, b = tf.keras.Input(shape=(3,)), tf.keras.Input(shape=(3,))
    out = L.Add()([L.Dense(3)(a), b])
    with pytest.raises(ValueError, match="Graph disconnected"):
        tf.keras.Model(a, out)
    with pytest.raises(ValueError, match="must come from `tf.keras.Input`"):
        tf.keras.Model(tf.placeholder(tf.float32, [None, 3]), out)


# ------------------------------------------------------------ refused arguments
@pytest.mark.parametrize("call, argument", [
    (lambda m, x, y: m.fit(x, y, sample_weight=np.ones(len(x)), verbose=0), "sample_weight"),
    (lambda m, x, y: m.fit(x, y, class_weight={0: 1.0}, verbose=0), "class_weight"),
    (lambda m, x, y: m.fit(x, y, shuffle="batch", verbose=0), "shuffle"),
    (lambda m, x, y: m.evaluate(x, y, steps=2, verbose=0), "steps"),
    (lambda m, x, y: m.compile("sgd", "mse", run_eagerly=True), "run_eagerly"),
    (lambda m, x, y: m.compile(tf.keras.optimizers.Adam(amsgrad=True), "mse"), "amsgrad"),
    (lambda m, x, y: m.compile(tf.keras.optimizers.SGD(clipnorm=1.0), "mse"), "clipnorm"),
    (lambda m, x, y: m.load_weights("w", by_name=True), "by_name"),
    (lambda m, x, y: m.train_on_batch(x, y, reset_metrics=False), "reset_metrics"),
    (lambda m, x, y: m.fit(iter([(x, y)]), verbose=0), "`x` of type list_iterator"),
    (lambda m, x, y: m.predict(tf.data.Dataset.from_tensor_slices(x)), "`x` of type"),
])
def test_unsupported_arguments_raise_value_error_naming_them(call, argument):
    model = tf.keras.Sequential([L.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match=argument):
        call(model, *_data())


@pytest.mark.parametrize("make, argument", [
    (lambda: L.Bidirectional(L.Dense(2)), "recurrent layer"),
    (lambda: L.Bidirectional(L.LSTM(2), merge_mode="max"), "Invalid merge mode"),
    (lambda: L.LSTM(2, stateful=True), "stateful"),
    (lambda: L.GRU(2, dropout=0.5), "dropout"),
    (lambda: L.Embedding(5, 2, mask_zero=True), "mask_zero"),
    (lambda: L.BatchNormalization(renorm=True), "renorm"),
    (lambda: L.Lambda(lambda t: t, mask=lambda t, m: m), "mask"),
    (lambda: tf.keras.losses.categorical_crossentropy([[1.0]], [[1.0]],
                                                      label_smoothing=0.1),
     "label_smoothing"),
    (lambda: K.placeholder(shape=(2,), sparse=True), "sparse"),
])
def test_unsupported_layer_arguments(make, argument):
    with pytest.raises(ValueError, match=argument):
        make()


def test_hdf5_weight_files_without_h5py_raise_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)  # as if h5py were not installed
    model = tf.keras.Sequential([L.Dense(1, input_shape=(3,))])
    with pytest.raises(ImportError, match="`save_weights` requires h5py"):
        model.save_weights(str(tmp_path / "w.h5"))
    with pytest.raises(ImportError, match="`load_weights` requires h5py"):
        model.load_weights(str(tmp_path / "w.h5"))


# ------------------------------------------------------------ sessions and phase
def test_get_session_is_the_default_session_when_one_is_open():
    x = tf.placeholder(tf.float32, [None, 3])
    y = L.Dense(2, kernel_initializer="ones")(x)
    with tf.Session() as session:
        assert K.get_session() is session  # and it initialised the layer's weights
        np.testing.assert_allclose(session.run(y, {x: np.ones((1, 3))}), [[3.0, 3.0]])
    own = K.get_session()
    assert own is not session and own.graph is tf.get_default_graph()
    assert K.get_session() is own


def test_weights_set_from_layer_argument_are_their_initial_values():
    x = tf.placeholder(tf.float32, [None, 2])
    kernel, bias = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(3, np.float32)
    layer = L.Dense(3, weights=[kernel, bias])
    y = layer(x)
    np.testing.assert_allclose(K.get_session().run(y, {x: [[1.0, 1.0]]}),
                               [kernel.sum(axis=0) + 1.0])


def test_clear_session_starts_names_and_graph_afresh():
    first = L.Dense(1)
    assert first.name == "dense" and L.Dense(1).name == "dense_1"
    graph = tf.get_default_graph()
    K.clear_session()
    assert tf.get_default_graph() is not graph
    assert L.Dense(1).name == "dense"
    assert tf.keras.Input(shape=(2,)).name == "input_1:0"


def test_fit_feeds_the_learning_phase_and_predict_does_not():
    x, y = _data()
    model = tf.keras.Sequential([L.Dropout(0.999999, input_shape=(3,)),
                                 L.Dense(1, kernel_initializer="ones", use_bias=False)])
    model.compile(tf.keras.optimizers.SGD(0.0), "mse")
    np.testing.assert_allclose(model.predict(x), x.sum(axis=1, keepdims=True), rtol=1e-6)
    loss_training = model.train_on_batch(x, y)
    expected_dropped = np.mean(y ** 2)  # every input dropped: the output is zero
    np.testing.assert_allclose(loss_training, expected_dropped, rtol=1e-5)
    assert K.learning_phase().name == "keras_learning_phase:0"


def test_in_train_phase_selects_with_the_learning_phase():
    chosen = K.in_train_phase(tf.constant(1.0), tf.constant(2.0))
    session = K.get_session()
    assert session.run(chosen) == 2.0
    assert session.run(chosen, {K.learning_phase(): True}) == 1.0
    assert K.in_train_phase(3, 4, training=1) == 3


def test_backend_random_helpers():
    session = K.get_session()
    uniform = session.run(K.random_uniform((400,), -2.0, 3.0, seed=1))
    normal = session.run(K.random_normal((2000,), mean=1.0, stddev=0.5, seed=2))
    dropped = session.run(K.dropout(tf.ones([1000]), 0.25, seed=3))
    assert uniform.min() >= -2.0 and uniform.max() < 3.0 and abs(uniform.mean() - 0.5) < 0.3
    assert abs(normal.mean() - 1.0) < 0.05 and abs(normal.std() - 0.5) < 0.05
    assert abs((dropped == 0).mean() - 0.25) < 0.06
    np.testing.assert_allclose(dropped[dropped != 0], 1 / 0.75, rtol=1e-6)
    counter = K.variable([5.0, 5.0])
    session = K.get_session()
    session.run(K.update_sub(counter, [1.0, 2.0]))
    session.run(K.update(counter, K.get_value(counter) * 2))
    np.testing.assert_allclose(K.get_value(counter), [8.0, 6.0])


# ---------------------------------------------------------------- layers and models
def test_compute_output_shape_leaves_the_layer_unbuilt():
    dense = L.Dense(4)
    assert dense.compute_output_shape((None, 3)).as_list() == [None, 4]
    assert not dense.built and dense.kernel is None and dense.weights == []
    conv = L.Conv2D(2, 3, padding="same")
    assert conv.compute_output_shape((None, 5, 5, 1)).as_list() == [None, 5, 5, 2]


def test_frozen_layer_is_not_trained():
    x, y = _data()
    model = tf.keras.Sequential([L.Dense(2, input_shape=(3,)), L.Dense(1)])
    model.layers[0].trainable = False
    model.compile("sgd", "mse")
    frozen_before = model.layers[0].get_weights()
    last_before = model.layers[1].get_weights()
    model.fit(x, y, epochs=2, verbose=0)
    for a, b in zip(frozen_before, model.layers[0].get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(last_before[0], model.layers[1].get_weights()[0])
    assert len(model.trainable_weights) == 2 and len(model.non_trainable_weights) == 2


def test_sequential_add_checks_layers():
    model = tf.keras.Sequential()
    model.add(L.Dense(2, name="same"))
    with pytest.raises(ValueError, match="unique names"):
        model.add(L.Dense(2, name="same"))
    with pytest.raises(TypeError, match="instance of class Layer"):
        model.add("dense")
    with pytest.raises(ValueError, match="has not yet been built"):
        model.summary()


def test_sequential_add_that_fails_changes_nothing():
    model = tf.keras.Sequential([L.Dense(3, input_shape=(4,))])
    graph = tf.get_default_graph()
    before = _snapshot(graph)
    with pytest.raises(ValueError, match="expected min_ndim=4"):
        model.add(L.Conv2D(2, 3))
    assert _snapshot(graph) == before and len(model.layers) == 1
    first = tf.keras.Sequential()
    with pytest.raises(ValueError, match="expected min_ndim=4"):
        first.add(L.Conv2D(2, 3, input_shape=(5,)))
    assert first.inputs == [] and first.layers == []


def test_sequential_build_and_pop():
    model = tf.keras.Sequential([L.Dense(3), L.Dense(1)])
    model.build((None, 4))
    assert [w.shape.as_list() for w in model.weights] == [[4, 3], [3], [3, 1], [1]]
    model.pop()
    assert [layer.name for layer in model.layers] == ["dense"]
    assert model.outputs[0].shape.as_list() == [None, 3]


def test_nested_model_as_a_layer():
    inner = tf.keras.Sequential([L.Dense(2, input_shape=(3,), kernel_initializer="ones")])
    inputs = tf.keras.Input(shape=(3,))
    outer = tf.keras.Model(inputs, L.Dense(1, kernel_initializer="ones")(inner(inputs)))
    assert [layer.name for layer in outer.layers] == ["input_1", "sequential", "dense_1"]
    np.testing.assert_allclose(outer.predict(np.ones((2, 3), np.float32)), [[6.0], [6.0]])
    assert len(outer.weights) == 4


def test_model_replays_positional_call_arguments():
    class Scale(L.Layer):
        def call(self, inputs, factor):
            return inputs * factor

    inputs = tf.keras.Input(shape=(2,))
    model = tf.keras.Model(inputs, Scale()(inputs, 3.0))
    fresh = tf.placeholder(tf.float32, [None, 2])
    again = model(fresh)
    np.testing.assert_allclose(K.get_session().run(again, {fresh: [[1.0, 2.0]]}),
                               [[3.0, 6.0]])


def test_layer_returning_its_input_makes_a_copy():
    inputs = tf.keras.Input(shape=(3,))
    same = L.Lambda(lambda t: t)(inputs)
    assert same is not inputs and same.op.type == "Identity"
    model = tf.keras.Model(inputs, L.Dense(1)(same))
    assert [layer.name for layer in model.layers] == ["input_1", "lambda", "dense"]


def test_model_input_and_output():
    inputs = tf.keras.Input(shape=(3,))
    model = tf.keras.Model(inputs, L.Dense(2)(inputs))
    assert model.input is inputs and model.output is model.outputs[0]
    assert model.input_shape == (None, 3) and model.output_shape == (None, 2)


def test_subclassed_model_failing_on_first_fit_leaves_the_graph_unchanged():
    class Failing(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = L.Dense(1)

        def call(self, inputs):
            self.dense(inputs)
            raise ValueError("no output on purpose")

    model = Failing()
    model.compile("sgd", "mse")
    graph = tf.get_default_graph()
    before = _snapshot(graph)
    with pytest.raises(ValueError, match="on purpose"):
        model.fit(*_data(), verbose=0)
    assert _snapshot(graph) == before and model.inputs == [] and not model.dense.built


def test_model_get_layer():
    inputs = tf.keras.Input(shape=(3,))
    model = tf.keras.Model(inputs, L.Dense(1, name="head")(inputs))
    assert model.get_layer("head").name == "head" and model.get_layer(index=0).name == "input_1"
    with pytest.raises(ValueError, match="No such layer: tail"):
        model.get_layer("tail")


def test_regularization_losses_are_collected_and_added_to_the_loss():
    x, y = _data()
    model = tf.keras.Sequential([L.Dense(1, input_shape=(3,), kernel_initializer="ones",
                                         kernel_regularizer=tf.keras.regularizers.l2(0.5))])
    model.compile(tf.keras.optimizers.SGD(0.0), "mse")
    plain = np.mean((x.sum(axis=1, keepdims=True) - y) ** 2)
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), plain + 0.5 * 3, rtol=1e-5)
    assert [t.op.name for t in tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)] == \
        [t.op.name for t in model.losses]


# -------------------------------------------------------------------- callbacks
def test_model_checkpoint_and_weights_round_trip(tmp_path):
    x, y = _data()
    model = tf.keras.Sequential([L.Dense(2, input_shape=(3,)), L.Dense(1)])
    model.compile("sgd", "mse")
    path = str(tmp_path / "ckpt-{epoch}")
    model.fit(x, y, epochs=2, verbose=0,
              callbacks=[tf.keras.callbacks.ModelCheckpoint(path, save_weights_only=True,
                                                            monitor="loss")])
    assert os.path.exists(str(tmp_path / "ckpt-2.index"))
    trained = model.get_weights()
    model.set_weights([np.zeros_like(w) for w in trained])
    model.load_weights(str(tmp_path / "ckpt-2"))
    for a, b in zip(trained, model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_tensorboard_writes_epoch_scalars(tmp_path):
    x, y = _data()
    model = tf.keras.Sequential([L.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse")
    model.fit(x, y, epochs=2, verbose=0, validation_split=0.25,
              callbacks=[tf.keras.callbacks.TensorBoard(log_dir=str(tmp_path))])
    tags = {}
    for name in os.listdir(tmp_path):
        for event in tf.train.summary_iterator(str(tmp_path / name)):
            for value in event.summary.value:
                tags.setdefault(value.tag, []).append(event.step)
    assert tags == {"loss": [0, 1], "val_loss": [0, 1]}


def test_history_and_callback_order():
    x, y = _data()
    model = tf.keras.Sequential([L.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse", metrics=["mae"])
    calls = []
    callback = tf.keras.callbacks.LambdaCallback(
        on_train_begin=lambda logs: calls.append("train_begin"),
        on_epoch_begin=lambda epoch, logs: calls.append(f"epoch_begin {epoch}"),
        on_batch_end=lambda batch, logs: calls.append(f"batch {batch} {sorted(logs)}"),
        on_train_end=lambda logs: calls.append("train_end"))
    history = model.fit(x, y, batch_size=5, epochs=1, verbose=0, callbacks=[callback])
    assert calls == ["train_begin", "epoch_begin 0",
                     "batch 0 ['batch', 'loss', 'mean_absolute_error', 'size']",
                     "batch 1 ['batch', 'loss', 'mean_absolute_error', 'size']", "train_end"]
    assert model.history is history and list(history.history) == ["loss",
                                                                   "mean_absolute_error"]


def test_fit_generator_with_validation_arrays_matches_evaluate():
    x, y = _data(12)

    class Batches(tf.keras.utils.Sequence):
        def __init__(self):
            self.ended = 0

        def __len__(self):
            return 3

        def __getitem__(self, index):
            return x[index * 4:index * 4 + 4], y[index * 4:index * 4 + 4]

        def on_epoch_end(self):
            self.ended += 1

    model = tf.keras.Sequential([L.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse")
    batches = Batches()
    history = model.fit_generator(batches, epochs=2, verbose=0, validation_data=(x, y))
    assert batches.ended == 2 and list(history.history) == ["loss", "val_loss"]
    np.testing.assert_allclose(history.history["val_loss"][-1],
                               model.evaluate(x, y, verbose=0), rtol=1e-6)
    with pytest.raises(ValueError, match="only valid for a generator based on"):
        model.fit_generator(iter([(x, y)]), verbose=0)
    with pytest.raises(ValueError, match="must yield \\(x, y\\) tuples"):
        model.fit_generator(iter([x]), steps_per_epoch=1, verbose=0)


# ----------------------------------------------------------------- initializers
@pytest.mark.parametrize("name, check", [
    ("glorot_uniform", lambda v: np.abs(v).max() <= np.sqrt(6.0 / (200 + 300))),
    ("uniform", lambda v: np.abs(v).max() <= 0.05 and abs(v.mean()) < 0.005),
    ("normal", lambda v: abs(v.std() - 0.05) < 0.005),
    ("he_normal", lambda v: abs(v.std() - np.sqrt(2.0 / 200)) < 0.01),
    ("zeros", lambda v: not v.any()),
])
def test_initializers_by_name(name, check):
    variable = L.Dense(300, kernel_initializer=name)
    variable(tf.placeholder(tf.float32, [None, 200]))
    assert check(variable.get_weights()[0])


def test_seeded_initializer_is_deterministic():
    values = []
    for _ in range(2):
        K.clear_session()
        layer = L.Dense(5, kernel_initializer=tf.keras.initializers.RandomNormal(seed=3))
        layer(tf.placeholder(tf.float32, [None, 4]))
        values.append(layer.get_weights()[0])
    np.testing.assert_array_equal(*values)
