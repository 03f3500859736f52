"""tf.layers against TF 2.21 (compat.v1, tf-keras): op and variable names, collections,
values and gradients from constant weights, batch-norm moving statistics, errors."""
import numpy as np
import pytest
from tf_fixtures import load_arrays, load_json

import gradflow as gf

FIX = load_json("layers")
ARR = load_arrays("layers")

# Where gradflow's graph differs from TF's on purpose (docs/layers.md says why).
OUTPUT_NAME_DIFFERENCES = {"drop_true", "bn4"}
KEY_TYPES = {"MatMul", "BiasAdd", "Relu", "Tanh", "Conv2D", "Conv3D", "DepthwiseConv2dNative",
             "Conv2DBackpropInput", "Conv3DBackpropInputV2", "MaxPool", "AvgPool", "MaxPool3D",
             "AvgPool3D", "VariableV2", "AssignSub", "L2Loss", "ExpandDims", "Squeeze",
             "Reshape", "Rsqrt", "Mean", "SquaredDifference", "Sub", "Mul", "AddV2"}


# ------------------------------------------------------------------- the programs
def program_dense(layer_props):
    x = gf.placeholder(gf.float32, [None, 4], name="x")
    t = gf.placeholder(gf.bool, [], name="t")
    out = {}
    out["h"] = gf.layers.dense(x, 3, activation=gf.nn.relu)
    out["h2"] = gf.layers.dense(out["h"], 2, kernel_regularizer=gf.nn.l2_loss)
    out["drop_true"] = gf.layers.dropout(out["h2"], 0.3, training=True)
    out["drop_false"] = gf.layers.dropout(out["h2"], 0.3)
    out["bn_true"] = gf.layers.batch_normalization(out["h2"], training=True)
    out["bn_false"] = gf.layers.batch_normalization(out["h2"])
    out["bn_tensor"] = gf.layers.batch_normalization(out["h2"], training=t)
    out["flat"] = gf.layers.flatten(gf.reshape(x, [-1, 2, 2]))
    with gf.variable_scope("outer"):
        out["fc"] = gf.layers.dense(x, 3, name="fc", activation=gf.nn.tanh)
        out["bn_outer"] = gf.layers.batch_normalization(out["fc"], training=True)
    layer = gf.layers.Dense(3)
    out["shared_a"], out["shared_b"] = layer(x), layer(x)
    out["named"] = gf.layers.dense(x, 3, name="named")
    out["named_reuse"] = gf.layers.dense(x, 3, name="named", reuse=True)
    with gf.variable_scope("s"):
        out["scoped"] = gf.layers.dense(x, 3)
    with gf.variable_scope("s", reuse=True):
        out["scoped_reuse"] = gf.layers.dense(x, 3, name="dense")
    out["act_reg"] = gf.layers.dense(x, 2, activity_regularizer=gf.reduce_sum,
                                     bias_regularizer=gf.nn.l2_loss)
    layer_props.update({"shared_scope": layer.scope_name,
                        "shared_variables": [v.name for v in layer.variables],
                        "shared_kernel": layer.kernel.name, "shared_bias": layer.bias.name})
    return out


def program_conv(layer_props):
    x4 = gf.placeholder(gf.float32, [None, 5, 5, 3], name="x4")
    x3 = gf.placeholder(gf.float32, [None, 6, 2], name="x3")
    x5 = gf.placeholder(gf.float32, [None, 4, 4, 4, 2], name="x5")
    out = {}
    out["conv2d"] = gf.layers.conv2d(x4, 4, 3)
    out["conv2d_relu"] = gf.layers.conv2d(x4, 4, 3, padding="same", strides=2,
                                          activation=gf.nn.relu)
    out["conv1d"] = gf.layers.conv1d(x3, 4, 3)
    out["conv3d"] = gf.layers.conv3d(x5, 3, 2)
    out["conv2d_transpose"] = gf.layers.conv2d_transpose(x4, 4, 3, strides=2)
    out["conv3d_transpose"] = gf.layers.conv3d_transpose(x5, 3, 2, strides=2, padding="same")
    out["separable_conv2d"] = gf.layers.separable_conv2d(x4, 4, 3)
    out["separable_conv1d"] = gf.layers.separable_conv1d(x3, 4, 3)
    out["max_pooling1d"] = gf.layers.max_pooling1d(x3, 2, 2)
    out["max_pooling2d"] = gf.layers.max_pooling2d(x4, 2, 2)
    out["max_pooling3d"] = gf.layers.max_pooling3d(x5, 2, 2)
    out["average_pooling1d"] = gf.layers.average_pooling1d(x3, 2, 2)
    out["average_pooling2d"] = gf.layers.average_pooling2d(x4, 2, 2, padding="same")
    out["average_pooling3d"] = gf.layers.average_pooling3d(x5, 2, 2)
    out["bn4"] = gf.layers.batch_normalization(x4, training=True)
    out["flatten4"] = gf.layers.flatten(x4)
    return out


def record(key):
    graph, props = gf.Graph(), {}
    with graph.as_default():
        outputs = {"dense": program_dense, "conv": program_conv}[key](props)
        return graph, outputs, props


@pytest.mark.parametrize("key", ["dense", "conv"])
def test_variables_and_collections_match_tf(key):
    graph, _, _ = record(key)
    expected = FIX["programs"][key]
    with graph.as_default():
        assert [v.name for v in gf.global_variables()] == expected["global"]
        assert [v.name for v in gf.trainable_variables()] == expected["trainable"]
        assert [t.name for t in gf.get_collection(gf.GraphKeys.REGULARIZATION_LOSSES)] == \
            expected["regularization"]
        updates = [op.name for op in gf.get_collection(gf.GraphKeys.UPDATE_OPS)]
    # With a training tensor TF's update ops are the Merge of a cond; gradflow's are the
    # AssignSub ops themselves (named as when training is a Python bool).
    assert updates == [name.replace("cond_2/Merge", "AssignMovingAvg")
                       .replace("cond_3/Merge", "AssignMovingAvg_1")
                       for name in expected["update_ops"]]


@pytest.mark.parametrize("key", ["dense", "conv"])
def test_output_names_and_shapes_match_tf(key):
    _, outputs, props = record(key)
    expected = FIX["programs"][key]
    for name, tensor in outputs.items():
        assert tensor.shape.as_list() == expected["shapes"][name], name
        if name not in OUTPUT_NAME_DIFFERENCES:
            assert tensor.name == expected["outputs"][name], name
    if key == "dense":
        assert props == FIX["layer_props"]


@pytest.mark.parametrize("key", ["dense", "conv"])
def test_key_op_names_match_tf(key):
    graph, _, _ = record(key)
    ours = {op.name: op.type for op in graph.get_operations()}
    expected = [(name, kind) for name, kind in FIX["programs"][key]["ops"]
                if kind in KEY_TYPES and "/cond" not in name and "Initializer" not in name
                and not name.startswith(("conv2d_transpose/", "conv3d_transpose/"))
                and "FusedBatchNorm" not in name and "/dropout/" not in name
                and not (key == "conv" and name.startswith("batch_normalization/"))]
    assert expected
    missing = [(name, kind) for name, kind in expected if ours.get(name) != kind]
    assert missing == []


def test_batch_norm_layer_called_twice_updates_as_tf():
    with gf.Graph().as_default():
        inputs = gf.placeholder(gf.float32, [None, 3])
        layer = gf.layers.BatchNormalization()
        layer(inputs, training=True)
        layer(inputs, training=True)
        assert [op.name for op in gf.get_collection(gf.GraphKeys.UPDATE_OPS)] == \
            FIX["shared_bn"]["update_ops"]
        assert len(layer.updates) == FIX["shared_bn"]["updates"]
        assert [v.name for v in layer.variables] == FIX["shared_bn"]["variables"]


def test_layers_in_a_template_share_as_tf():
    with gf.Graph().as_default():
        inputs = gf.placeholder(gf.float32, [None, 4])
        net = gf.make_template("net", lambda t: gf.layers.batch_normalization(
            gf.layers.dense(t, 3), training=True))
        first, second = net(inputs), net(inputs)
        assert [first.name, second.name] == FIX["template"]["outputs"]
        assert [v.name for v in gf.global_variables()] == FIX["template"]["global"]
        assert [op.name for op in gf.get_collection(gf.GraphKeys.UPDATE_OPS)] == \
            FIX["template"]["update_ops"]


# ----------------------------------------------------- values from constant weights
def init(key):
    return gf.constant_initializer(ARR[f"w/{key}"])


VALUE_CASES = {
    "dense": lambda x: gf.layers.dense(x, 3, activation=gf.nn.relu,
                                       kernel_initializer=init("dense/k"),
                                       bias_initializer=init("dense/b")),
    "dense_3d": lambda x: gf.layers.dense(x, 2, kernel_initializer=init("dense_3d/k"),
                                          bias_initializer=init("dense_3d/b")),
    "conv1d_causal": lambda x: gf.layers.conv1d(
        x, 2, 3, padding="causal", dilation_rate=2, kernel_initializer=init("conv1d_causal/k"),
        bias_initializer=init("conv1d_causal/b")),
    "conv2d": lambda x: gf.layers.conv2d(
        x, 4, (3, 2), strides=(2, 1), padding="same", activation=gf.nn.relu,
        kernel_initializer=init("conv2d/k"), bias_initializer=init("conv2d/b")),
    "conv3d": lambda x: gf.layers.conv3d(x, 3, 2, strides=(1, 2, 1),
                                         kernel_initializer=init("conv3d/k"),
                                         bias_initializer=init("conv3d/b")),
    "conv2d_transpose": lambda x: gf.layers.conv2d_transpose(
        x, 2, 3, strides=2, kernel_initializer=init("conv2d_transpose/k"),
        bias_initializer=init("conv2d_transpose/b")),
    "conv2d_transpose_same": lambda x: gf.layers.conv2d_transpose(
        x, 2, 3, strides=2, padding="same", kernel_initializer=init("conv2d_transpose_same/k")),
    "conv3d_transpose": lambda x: gf.layers.conv3d_transpose(
        x, 2, 2, strides=2, kernel_initializer=init("conv3d_transpose/k"),
        bias_initializer=init("conv3d_transpose/b")),
    "separable_conv2d": lambda x: gf.layers.separable_conv2d(
        x, 4, 3, depth_multiplier=2, padding="same",
        depthwise_initializer=init("separable_conv2d/d"),
        pointwise_initializer=init("separable_conv2d/p"),
        bias_initializer=init("separable_conv2d/b")),
    "separable_conv1d": lambda x: gf.layers.separable_conv1d(
        x, 2, 3, strides=2, depthwise_initializer=init("separable_conv1d/d"),
        pointwise_initializer=init("separable_conv1d/p"),
        bias_initializer=init("separable_conv1d/b")),
    "max_pooling2d": lambda x: gf.layers.max_pooling2d(x, 2, 2, padding="same"),
    "average_pooling1d": lambda x: gf.layers.average_pooling1d(x, 3, 2),
    "average_pooling3d": lambda x: gf.layers.average_pooling3d(x, 2, 2),
    "flatten": gf.layers.flatten,
    "bn_inference": lambda x: gf.layers.batch_normalization(
        x, gamma_initializer=init("bn_inference/g"), beta_initializer=init("bn_inference/b"),
        moving_mean_initializer=init("bn_inference/m"),
        moving_variance_initializer=gf.constant_initializer(np.array([0.5, 1.0, 2.0]))),
}


@pytest.mark.parametrize("key", sorted(VALUE_CASES))
def test_values_and_gradients_match_tf(key):
    x_value = ARR[f"{key}/x"]
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, x_value.shape)
        y = VALUE_CASES[key](x)
        variables = gf.trainable_variables()
        assert [v.op.name for v in variables] == FIX["values"][key]["variables"]
        grads = gf.gradients(y, [x] + variables,
                             grad_ys=gf.constant(ARR[f"{key}/up"], gf.float32))
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            out, grad_values = sess.run([y, grads], {x: x_value})
    np.testing.assert_allclose(out, ARR[f"{key}/out"], rtol=1e-4, atol=1e-5)
    for variable, value in zip([None] + variables, grad_values, strict=True):
        name = "x" if variable is None else variable.op.name
        np.testing.assert_allclose(value, ARR[f"{key}/grad/{name}"], rtol=1e-4, atol=1e-5,
                                   err_msg=name)


# ------------------------------------------- batch norm: training steps and inference
@pytest.mark.parametrize("key", sorted(FIX["batch_norm"]))
def test_batch_norm_moving_statistics_match_tf(key):
    kwargs = FIX["batch_norm"][key]
    batches = [ARR[f"bn/{key}/batch{i}"] for i in range(3)]
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, batches[0].shape)
        training = gf.placeholder(gf.bool, [])
        y = gf.layers.batch_normalization(x, training=training, **kwargs)
        layer_vars = {v.op.name.split("/")[-1]: v for v in gf.global_variables()}
        with gf.control_dependencies(gf.get_collection(gf.GraphKeys.UPDATE_OPS)):
            train_out = gf.identity(y)
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            for i, batch in enumerate(batches):
                np.testing.assert_allclose(sess.run(train_out, {x: batch, training: True}),
                                           ARR[f"bn/{key}/train_out{i}"], rtol=1e-4,
                                           atol=1e-4)
            mean, variance = sess.run([layer_vars["moving_mean"],
                                       layer_vars["moving_variance"]])
            infer = sess.run(y, {x: batches[0], training: False})
            after = sess.run(layer_vars["moving_mean"])
    np.testing.assert_allclose(mean, ARR[f"bn/{key}/moving_mean"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(variance, ARR[f"bn/{key}/moving_variance"], rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(infer, ARR[f"bn/{key}/infer"], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(after, mean)  # the inference run updated nothing


# --------------------------------------------------------------------------- errors
def ones(*shape):
    return lambda: gf.ones(shape)


def unknown(*shape):
    return lambda: gf.placeholder(gf.float32, shape)


ERRORS = {  # key: (inputs, layer call, a fragment of TF's message or None for all of it)
    "dense_rank1": (ones(3), lambda x: gf.layers.dense(x, 2),
                    "expected min_ndim=2, found ndim=1"),
    "dense_unknown_last": (unknown(2, None), lambda x: gf.layers.dense(x, 2),
                           "The last dimension of the inputs to a Dense layer should be "
                           "defined. Found None."),
    "conv2d_rank3": (ones(2, 5, 3), lambda x: gf.layers.conv2d(x, 2, 3),
                     "expected min_ndim=4, found ndim=3"),
    "conv2d_padding": (ones(2, 5, 5, 3), lambda x: gf.layers.conv2d(x, 2, 3, padding="full"),
                       None),
    "conv2d_kernel_size": (ones(2, 5, 5, 3), lambda x: gf.layers.conv2d(x, 2, (3, 3, 3)), None),
    "conv2d_data_format": (ones(2, 5, 5, 3),
                           lambda x: gf.layers.conv2d(x, 2, 3, data_format="NHWC"), None),
    "conv2d_too_small": (ones(2, 2, 2, 3), lambda x: gf.layers.conv2d(x, 2, 3),
                         "Negative dimension size caused by subtracting 3 from 2"),
    "conv2d_channels": (unknown(2, 5, 5, None), lambda x: gf.layers.conv2d(x, 2, 3),
                        "The channel dimension of the inputs should be defined."),
    "max_pooling2d_rank": (ones(2, 5, 3), lambda x: gf.layers.max_pooling2d(x, 2, 2),
                           "expected ndim=4, found ndim=3"),
    "bn_axis": (ones(2, 3), lambda x: gf.layers.batch_normalization(x, axis=4), None),
    "dense_reuse_missing": (ones(2, 3), lambda x: gf.layers.dense(x, 2, name="nope",
                                                                  reuse=True), None),
}


def shared_layer():
    layer = gf.layers.Dense(2)
    layer(gf.ones([2, 3]))
    return layer, gf.ones([2, 4])


ERRORS["shared_mismatch"] = (shared_layer, lambda made: made[0](made[1]),
                             "expected axis -1 of input shape to have value 3, but received "
                             "input with shape (2, 4)")


def snapshot(graph):
    keys = graph.get_all_collection_keys()
    return ([op.name for op in graph.get_operations()],
            {key: list(graph.get_collection(key)) for key in keys})


@pytest.mark.parametrize("key", sorted(ERRORS))
def test_errors_match_tf_and_leave_the_graph_unchanged(key):
    make_inputs, call, fragment = ERRORS[key]
    expected = FIX["errors"][key]
    with gf.Graph().as_default() as graph:
        inputs = make_inputs()
        before = snapshot(graph)
        with pytest.raises(ValueError) as info:
            call(inputs)
        assert snapshot(graph) == before
    assert expected["type"] == "ValueError"
    assert (fragment or expected["message"]) in str(info.value)
    if fragment is not None:
        assert fragment in expected["message"]


def test_dense_with_zero_units_builds_as_in_tf():
    assert FIX["errors"]["dense_units"] is None
    with gf.Graph().as_default():
        assert gf.layers.dense(gf.ones([2, 3]), 0).shape.as_list() == [2, 0]


ARGUMENT_ERRORS = {  # raised before any graph work: TF's message, word for word
    "dropout_rate": lambda x: gf.layers.Dropout(1.5),
    "conv2d_kernel0": lambda x: gf.layers.conv2d(x, 2, 0),
    "conv2d_filters0": lambda x: gf.layers.conv2d(x, 0, 2),
    "conv2d_strides0": lambda x: gf.layers.conv2d(x, 2, 2, strides=0),
    "conv2d_causal": lambda x: gf.layers.conv2d(x, 2, 2, padding="causal"),
    "pooling_padding": lambda x: gf.layers.max_pooling2d(x, 2, 2, padding="full"),
}


@pytest.mark.parametrize("key", sorted(ARGUMENT_ERRORS))
def test_argument_errors_have_tf_messages(key):
    expected = FIX["errors"][key]
    with gf.Graph().as_default() as graph:
        x = gf.ones([2, 5, 5, 3])
        before = snapshot(graph)
        with pytest.raises(ValueError) as info:
            ARGUMENT_ERRORS[key](x)
        assert snapshot(graph) == before
    assert expected["type"] == "ValueError"
    assert str(info.value) == expected["message"]


def test_dense_on_integers_is_a_type_error_as_in_tf():
    expected = FIX["errors"]["dense_int"]
    assert expected["type"] == "TypeError"
    with gf.Graph().as_default() as graph:
        x = gf.ones([2, 3], gf.int32)
        before = snapshot(graph)
        with pytest.raises(TypeError) as info:
            gf.layers.dense(x, 2)
        assert snapshot(graph) == before
    head = "A Dense layer can only be built with a floating-point dtype. Received: dtype="
    assert expected["message"].startswith(head) and str(info.value).startswith(head)
