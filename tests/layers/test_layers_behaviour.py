"""tf.layers behaviour: numeric gradients through every layer, dropout statistics and its
inference path, variable sharing, regularizers and constraints, the Layer base class for
subclasses, and atomic failure of bad calls."""
import numpy as np
import pytest

import gradflow as gf

RNG = np.random.default_rng(5)


def normal(*shape):
    return RNG.standard_normal(shape)


def layer_gradient_error(make_layer, x_value, **call_kwargs) -> float:
    """Max Jacobian error of a float64 layer's output with respect to its input and every
    trainable weight (the weights' read tensors are fed like inputs)."""
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float64, x_value.shape)
        layer = make_layer()
        y = layer(x, **call_kwargs)
        weights = [gf.convert_to_tensor(v) for v in layer.trainable_variables]
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            values = sess.run(weights)
            y_shape = sess.run(y, {x: x_value}).shape
            return gf.test.compute_gradient_error(
                [x] + weights, [x_value.shape] + [v.shape for v in values], y, y_shape,
                x_init_value=[x_value] + values, delta=1e-6)


DISTINCT = RNG.permutation(2 * 6 * 6 * 2).reshape(2, 6, 6, 2) * 0.1

GRADIENT_CASES = {
    "dense": (lambda: gf.layers.Dense(3, activation=gf.nn.tanh, dtype=gf.float64,
                                      bias_initializer=gf.constant_initializer(0.1)),
              normal(4, 5)),
    "dense_3d": (lambda: gf.layers.Dense(2, dtype=gf.float64), normal(2, 3, 4)),
    "conv1d_causal": (lambda: gf.layers.Conv1D(2, 3, padding="causal", dilation_rate=2,
                                               dtype=gf.float64), normal(2, 7, 2)),
    "conv2d": (lambda: gf.layers.Conv2D(3, (3, 2), strides=(2, 1), padding="same",
                                        dtype=gf.float64), normal(2, 5, 4, 2)),
    "conv2d_channels_first": (lambda: gf.layers.Conv2D(2, 2, data_format="channels_first",
                                                       dtype=gf.float64), normal(2, 2, 4, 3)),
    "conv3d": (lambda: gf.layers.Conv3D(2, 2, strides=(1, 2, 1), dtype=gf.float64),
               normal(1, 3, 4, 3, 2)),
    "conv2d_transpose": (lambda: gf.layers.Conv2DTranspose(2, 3, strides=2, dtype=gf.float64),
                         normal(2, 2, 3, 2)),
    "conv3d_transpose": (lambda: gf.layers.Conv3DTranspose(2, 2, strides=2, padding="same",
                                                           dtype=gf.float64),
                         normal(1, 2, 2, 2, 2)),
    "separable_conv1d": (lambda: gf.layers.SeparableConv1D(2, 3, depth_multiplier=2,
                                                           dtype=gf.float64), normal(2, 6, 2)),
    "separable_conv2d": (lambda: gf.layers.SeparableConv2D(2, 2, padding="same",
                                                           dtype=gf.float64),
                         normal(2, 4, 4, 2)),
    "max_pooling2d": (lambda: gf.layers.MaxPooling2D(2, 2), DISTINCT),
    "average_pooling2d": (lambda: gf.layers.AveragePooling2D(3, 2, padding="same"),
                          normal(2, 5, 5, 2)),
    "max_pooling1d": (lambda: gf.layers.MaxPooling1D(2, 1), DISTINCT[:, 0]),
    "average_pooling3d": (lambda: gf.layers.AveragePooling3D(2, 1), normal(1, 3, 3, 3, 2)),
    "max_pooling3d": (lambda: gf.layers.MaxPooling3D(2, 2, padding="same"),
                      DISTINCT.reshape(2, 3, 2, 6, 2)),
    "flatten": (lambda: gf.layers.Flatten(), normal(2, 3, 2)),
}


@pytest.mark.parametrize("key", sorted(GRADIENT_CASES))
def test_numeric_gradient_through_layer(key):
    make_layer, x_value = GRADIENT_CASES[key]
    assert layer_gradient_error(make_layer, x_value) < 1e-7


@pytest.mark.parametrize("axis,shape", [(-1, (6, 3)), (1, (3, 2, 3, 2)), ([1, 2], (4, 3, 2)),
                                        (-1, (3, 2, 2, 2))])
def test_numeric_gradient_through_batch_norm_training(axis, shape):
    def make():
        return gf.layers.BatchNormalization(axis=axis, dtype=gf.float64,
                                            gamma_initializer=gf.constant_initializer(1.5),
                                            beta_initializer=gf.constant_initializer(-0.5))
    assert layer_gradient_error(make, normal(*shape), training=True) < 1e-6


def test_numeric_gradient_through_batch_norm_inference():
    def make():
        return gf.layers.BatchNormalization(dtype=gf.float64)
    assert layer_gradient_error(make, normal(4, 3), training=False) < 1e-7


# -------------------------------------------------------------------------- dropout
def test_dropout_statistics_and_scaling():
    x_value = np.ones((400, 250), np.float32)
    with gf.Graph().as_default():
        y = gf.layers.dropout(x_value, rate=0.3, training=True, seed=1)
        with gf.Session() as sess:
            out = sess.run(y)
    kept = out != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)


def test_dropout_inference_is_the_identity():
    x_value = normal(5, 4).astype(np.float32)
    with gf.Graph().as_default():
        y = gf.layers.dropout(x_value, rate=0.9)
        assert y.op.name == "dropout/Identity"
        with gf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y), x_value)


def test_dropout_with_a_training_tensor_takes_both_paths():
    x_value = np.ones((200, 100), np.float32)
    with gf.Graph().as_default():
        training = gf.placeholder_with_default(False, [])
        y = gf.layers.Dropout(0.5)(x_value, training=training)
        with gf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y), x_value)
            dropped = sess.run(y, {training: True})
    assert abs((dropped == 0).mean() - 0.5) < 0.02
    assert set(np.unique(dropped)) == {0.0, 2.0}


def test_dropout_noise_shape_shares_the_mask_along_unit_axes():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, 50])
        y = gf.layers.dropout(x, 0.5, noise_shape=[None, 1], training=True)
        with gf.Session() as sess:
            out = sess.run(y, {x: np.ones((300, 50), np.float32)})
    rows = out.reshape(300, 50)
    assert all(len(set(row)) == 1 for row in rows)  # each row kept or dropped whole
    assert 0.35 < (rows[:, 0] == 0).mean() < 0.65


def test_dropout_seed_is_deterministic():
    def run():
        with gf.Graph().as_default():
            gf.set_random_seed(3)
            y = gf.layers.dropout(np.ones((20, 20), np.float32), 0.5, training=True, seed=7)
            with gf.Session() as sess:
                return sess.run(y)
    np.testing.assert_array_equal(run(), run())


def test_dropout_rejects_a_rate_out_of_range():
    with gf.Graph().as_default():
        with pytest.raises(ValueError, match="rate"):
            gf.layers.Dropout(1.5)


# ------------------------------------------------------------------ variable sharing
def test_calling_a_layer_twice_shares_its_variables():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, 3])
        layer = gf.layers.Dense(2)
        a, b = layer(x), layer.apply(x)
        assert len(gf.global_variables()) == 2
        assert layer.built and layer.variables == [layer.kernel, layer.bias]
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            value = normal(4, 3)
            out_a, out_b = sess.run([a, b], {x: value})
    np.testing.assert_array_equal(out_a, out_b)


def test_reuse_by_name_and_auto_reuse_share_variables():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, 3])
        for _ in range(2):
            with gf.variable_scope("model", reuse=gf.AUTO_REUSE):
                y = gf.layers.dense(x, 2, name="fc")
        z = gf.layers.dense(x, 2, name="model/fc", reuse=True)
        assert [v.name for v in gf.global_variables()] == ["model/fc/kernel:0",
                                                           "model/fc/bias:0"]
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            value = normal(2, 3)
            np.testing.assert_array_equal(*sess.run([y, z], {x: value}))


def test_the_same_name_without_reuse_is_an_error():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, 3])
        gf.layers.dense(x, 2, name="fc")
        with pytest.raises(ValueError, match="Variable fc/kernel already exists, disallowed"):
            gf.layers.dense(x, 2, name="fc")


# ------------------------------------------------------ regularizers and constraints
def test_regularizers_add_losses_with_tf1_values():
    kernel = normal(3, 2)
    x_value = normal(4, 3)
    with gf.Graph().as_default():
        x = gf.constant(x_value)
        layer = gf.layers.Dense(2, kernel_initializer=gf.constant_initializer(kernel),
                                bias_initializer=gf.constant_initializer(0.5),
                                kernel_regularizer=gf.nn.l2_loss,
                                bias_regularizer=lambda b: 2.0 * gf.reduce_sum(b),
                                activity_regularizer=gf.reduce_sum, dtype=gf.float64)
        y = layer(x)
        losses = gf.get_collection(gf.GraphKeys.REGULARIZATION_LOSSES)
        assert losses == layer.losses and len(losses) == 3
        assert [t.op.name for t in losses][:1] == ["dense/kernel/Regularizer/L2Loss"]
        assert losses[2].name.startswith("dense/ActivityRegularizer/")
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            kernel_loss, bias_loss, activity_loss, out = sess.run(losses + [y])
    np.testing.assert_allclose(kernel_loss, np.sum(kernel ** 2) / 2)
    np.testing.assert_allclose(bias_loss, 2.0)
    np.testing.assert_allclose(activity_loss, out.sum() / 4)


def test_regularizer_loss_is_added_once_for_shared_variables():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, 3])
        gf.layers.dense(x, 2, name="fc", kernel_regularizer=gf.nn.l2_loss)
        gf.layers.dense(x, 2, name="fc", kernel_regularizer=gf.nn.l2_loss, reuse=True)
        assert len(gf.get_collection(gf.GraphKeys.REGULARIZATION_LOSSES)) == 1


def test_kernel_constraint_is_applied_by_optimizers():
    with gf.Graph().as_default():
        x = gf.constant(normal(4, 3), gf.float32)
        layer = gf.layers.Dense(2, kernel_constraint=lambda k: gf.clip_by_value(k, -0.1, 0.1),
                                bias_constraint=lambda b: gf.clip_by_value(b, 0.0, 0.0))
        loss = gf.reduce_sum(layer(x) ** 2)
        assert layer.kernel.constraint is layer.kernel_constraint
        step = gf.train.GradientDescentOptimizer(10.0).minimize(loss)
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(step)
            kernel, bias = sess.run([layer.kernel, layer.bias])
    assert np.abs(kernel).max() <= 0.1 + 1e-7
    np.testing.assert_array_equal(bias, 0.0)


def test_default_initializers_are_glorot_uniform_and_zeros():
    with gf.Graph().as_default():
        layer = gf.layers.Dense(300)
        layer(gf.placeholder(gf.float32, [None, 200]))
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            kernel, bias = sess.run([layer.kernel, layer.bias])
    limit = np.sqrt(6 / (200 + 300))
    assert np.abs(kernel).max() <= limit
    assert abs(kernel.std() - limit / np.sqrt(3)) < 0.01 * limit
    np.testing.assert_array_equal(bias, 0.0)


def test_non_trainable_layer_puts_its_variables_outside_trainable_variables():
    with gf.Graph().as_default():
        layer = gf.layers.Dense(2, trainable=False)
        layer(gf.placeholder(gf.float32, [None, 3]))
        assert gf.trainable_variables() == []
        assert layer.trainable_variables == [] and len(layer.non_trainable_variables) == 2


def test_batch_norm_variables_and_update_ops():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, 3])
        layer = gf.layers.BatchNormalization(center=False, momentum=0.5)
        layer(x, training=True)
        assert layer.gamma is not None and layer.beta is None
        assert [v.op.name for v in layer.trainable_variables] == ["batch_normalization/gamma"]
        assert [v.op.name for v in layer.non_trainable_variables] == [
            "batch_normalization/moving_mean", "batch_normalization/moving_variance"]
        assert gf.get_collection(gf.GraphKeys.UPDATE_OPS) == layer.updates
        assert [op.type for op in layer.updates] == ["AssignSub", "AssignSub"]


@pytest.mark.parametrize("kwargs,words", [({"renorm": True}, "renorm"),
                                          ({"virtual_batch_size": 2}, "virtual_batch_size"),
                                          ({"adjustment": lambda s: s}, "adjustment")])
def test_batch_norm_options_not_built_raise(kwargs, words):
    with pytest.raises(ValueError, match=words):
        gf.layers.BatchNormalization(**kwargs)


def test_batch_norm_fused_is_accepted_with_the_same_numbers():
    value = normal(3, 2, 2, 4).astype(np.float32)
    results = []
    for fused in (None, True):
        with gf.Graph().as_default():
            y = gf.layers.batch_normalization(value, training=True, fused=fused)
            with gf.Session() as sess:
                sess.run(gf.global_variables_initializer())
                results.append(sess.run(y))
    np.testing.assert_array_equal(*results)


# ------------------------------------------------------------- subclassing the base
class Scale(gf.layers.Layer):
    """A user layer: one weight per feature, an update counter and an L1 loss."""

    def build(self, input_shape):
        self.w = self.add_weight("w", shape=[int(input_shape[-1])],
                                 initializer=gf.ones_initializer())
        self.count = self.add_variable("count", shape=[], initializer=gf.zeros_initializer(),
                                       trainable=False)
        super().build(input_shape)

    def call(self, inputs):
        self.add_update(gf.assign_add(self.count, 1.0))
        self.add_loss(gf.reduce_sum(gf.abs(self.w)))
        return inputs * self.w


def test_subclassed_layer():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, 3])
        layer = Scale(name="scale")
        assert not layer.built and layer.name == "scale"
        y = layer(x)
        assert layer.built and layer.dtype == "float32"
        assert [v.name for v in layer.weights] == ["scale/w:0", "scale/count:0"]
        assert layer.trainable_weights == [layer.w]
        assert layer.non_trainable_weights == [layer.count]
        assert len(layer.updates) == 1 and len(layer.losses) == 1
        assert gf.get_collection(gf.GraphKeys.UPDATE_OPS) == layer.updates
        assert y.op.name.startswith("scale/")
        layer.trainable = False
        assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 2
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(layer.updates, {x: np.ones((1, 3))})
            assert sess.run(layer.count) == 1.0


def test_input_spec_is_checked():
    class Needs3D(gf.layers.Layer):
        def __init__(self):
            super().__init__()
            self.input_spec = gf.layers.InputSpec(ndim=3)

    with gf.Graph().as_default():
        with pytest.raises(ValueError, match="expected ndim=3, found ndim=2"):
            Needs3D()(gf.ones([2, 2]))


def test_unknown_layer_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="not understood"):
        gf.layers.Dense(2, bogus=1)


def test_scope_name_before_the_first_call_is_an_error():
    with pytest.raises(ValueError, match="has not been used yet"):
        _ = gf.layers.Dense(2).scope_name


# ---------------------------------------------------------------- atomic failure
def test_failed_call_leaves_graph_and_layer_as_before():
    with gf.Graph().as_default() as graph:
        good = gf.placeholder(gf.float32, [None, 3])
        bad = gf.placeholder(gf.float32, [None, None])
        layer = gf.layers.Dense(2)
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(ValueError):
            layer(bad)
        assert [op.name for op in graph.get_operations()] == before
        assert gf.global_variables() == [] and not layer.built and layer.variables == []
        layer(good)  # a later good call builds the layer under its first name
        assert [v.name for v in gf.global_variables()] == ["dense/kernel:0", "dense/bias:0"]


def test_failed_batch_norm_call_leaves_collections_as_before():
    with gf.Graph().as_default() as graph:
        x = gf.placeholder(gf.float32, [None, 3])
        training = gf.placeholder(gf.float32, [])  # not a bool
        keys = {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(TypeError, match="training"):
            gf.layers.batch_normalization(x, training=training)
        assert [op.name for op in graph.get_operations()] == before
        assert {key: list(graph.get_collection(key))
                for key in graph.get_all_collection_keys() if graph.get_collection(key)} == \
            {key: value for key, value in keys.items() if value}


@pytest.mark.parametrize("flag", [True, False])
def test_numeric_gradient_with_a_training_tensor(flag):
    """Through the cond that picks batch or moving statistics (and dropout's identity
    path when not training)."""
    x_value = normal(5, 3)
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float64, [5, 3])
        training = gf.placeholder(gf.bool, [])
        y = gf.layers.batch_normalization(x, training=training)
        if not flag:
            y = gf.layers.dropout(y, 0.5, training=training)
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            error = gf.test.compute_gradient_error(x, [5, 3], y, [5, 3], x_init_value=x_value,
                                                   delta=1e-6,
                                                   extra_feed_dict={training: flag})
    assert error < 1e-7


CHANNELS_FIRST_CASES = {
    "conv1d": (lambda fmt, k=normal(2, 2, 3): gf.layers.Conv1D(
        3, 2, strides=2, data_format=fmt, kernel_initializer=gf.constant_initializer(k),
                                            bias_initializer=gf.constant_initializer(0.3)),
               (2, 7, 2)),
    "conv2d": (lambda fmt, k=normal(2, 2, 2, 3): gf.layers.Conv2D(
        3, 2, padding="same", data_format=fmt, kernel_initializer=gf.constant_initializer(k)),
               (2, 5, 4, 2)),
    "conv3d": (lambda fmt, k=normal(2, 2, 2, 2, 2): gf.layers.Conv3D(
        2, 2, data_format=fmt, kernel_initializer=gf.constant_initializer(k)), (1, 3, 4, 3, 2)),
    "conv2d_transpose": (lambda fmt, k=normal(3, 3, 2, 2): gf.layers.Conv2DTranspose(
        2, 3, strides=2, data_format=fmt, kernel_initializer=gf.constant_initializer(k)),
                         (2, 3, 2, 2)),
    "separable_conv1d": (lambda fmt, d=normal(3, 2, 1), p=normal(1, 2, 2):
                         gf.layers.SeparableConv1D(
                             2, 3, data_format=fmt,
                             depthwise_initializer=gf.constant_initializer(d),
                             pointwise_initializer=gf.constant_initializer(p)), (2, 6, 2)),
    "max_pooling1d": (lambda fmt: gf.layers.MaxPooling1D(2, 2, data_format=fmt), (2, 7, 3)),
    "average_pooling2d": (lambda fmt: gf.layers.AveragePooling2D(2, 1, padding="same",
                                                                  data_format=fmt),
                          (2, 3, 4, 2)),
    "max_pooling3d": (lambda fmt: gf.layers.MaxPooling3D(2, 1, data_format=fmt),
                      (1, 3, 3, 3, 2)),
    "flatten": (lambda fmt: gf.layers.Flatten(data_format=fmt), (2, 3, 2, 2)),
}


@pytest.mark.parametrize("key", sorted(CHANNELS_FIRST_CASES))
def test_channels_first_computes_what_channels_last_does(key):
    make, shape = CHANNELS_FIRST_CASES[key]
    x_value = normal(*shape)
    outputs = {}
    for fmt in ("channels_last", "channels_first"):
        with gf.Graph().as_default():
            value = x_value if fmt == "channels_last" else np.moveaxis(x_value, -1, 1)
            y = make(fmt)(gf.constant(value))
            with gf.Session() as sess:
                sess.run(gf.global_variables_initializer())
                outputs[fmt] = sess.run(y)
    first = outputs["channels_first"]
    if key != "flatten":  # flatten's outputs are channels-last ordered either way
        first = np.moveaxis(first, 1, -1)
    np.testing.assert_allclose(first, outputs["channels_last"], rtol=1e-12, atol=1e-12)


def test_batch_norm_gamma_beta_regularizers_and_constraints():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, 3])
        layer = gf.layers.BatchNormalization(
            gamma_regularizer=gf.nn.l2_loss, beta_regularizer=gf.nn.l2_loss,
            gamma_constraint=lambda g: gf.clip_by_value(g, 0.0, 1.0),
            beta_constraint=lambda b: gf.clip_by_value(b, 0.0, 0.0))
        layer(x, training=True)
        assert [t.op.name for t in gf.get_collection(gf.GraphKeys.REGULARIZATION_LOSSES)] == [
            "batch_normalization/gamma/Regularizer/L2Loss",
            "batch_normalization/beta/Regularizer/L2Loss"]
        assert layer.gamma.constraint is layer.gamma_constraint
        assert layer.beta.constraint is layer.beta_constraint
        assert layer.moving_mean.constraint is None


def test_transposed_convolution_of_unknown_spatial_size():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, None, None, 3])
        y = gf.layers.conv2d_transpose(x, 2, 3, strides=2)
        z = gf.layers.conv3d_transpose(gf.placeholder(gf.float32, [None, None, 2, None, 1]), 2,
                                       2, strides=2, padding="same")
        assert y.shape.as_list() == [None, None, None, 2]
        assert z.shape.as_list() == [None, None, 4, None, 2]
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            assert sess.run(y, {x: np.ones((2, 4, 5, 3))}).shape == (2, 9, 11, 2)
