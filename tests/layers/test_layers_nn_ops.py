"""The nn ops under tf.layers (3-D convolution and pooling, 1-D pooling, separable
convolution, nn.pool): values and gradients against TF, numeric gradients, errors."""
import numpy as np
import pytest
from gradcheck import gradient_error, second_order_error
from tf_fixtures import load_arrays, load_json

import gradflow as gf

FIX = load_json("layers_ops")
ARR = load_arrays("layers_ops")
RNG = np.random.default_rng(3)

BUILDERS = {
    "conv3d_same_strided": lambda x, w: gf.nn.conv3d(x, w, [1, 2, 1, 2, 1], "SAME"),
    "conv3d_valid": lambda x, w: gf.nn.conv3d(x, w, [1, 1, 1, 1, 1], "VALID"),
    "conv3d_transpose": lambda y, w: gf.nn.conv3d_transpose(y, w, [2, 5, 6, 7, 3],
                                                            [1, 2, 1, 2, 1], "SAME"),
    "max_pool3d_SAME": lambda x: gf.nn.max_pool3d(x, [1, 2, 3, 2, 1], [1, 2, 2, 2, 1], "SAME"),
    "max_pool3d_VALID": lambda x: gf.nn.max_pool3d(x, [1, 2, 3, 2, 1], [1, 2, 2, 2, 1],
                                                   "VALID"),
    "avg_pool3d_SAME": lambda x: gf.nn.avg_pool3d(x, [1, 2, 3, 2, 1], [1, 2, 2, 2, 1], "SAME"),
    "avg_pool3d_VALID": lambda x: gf.nn.avg_pool3d(x, [1, 2, 3, 2, 1], [1, 2, 2, 2, 1],
                                                   "VALID"),
    "max_pool1d": lambda x: gf.nn.max_pool1d(x, 3, 2, "SAME"),
    "avg_pool1d": lambda x: gf.nn.avg_pool1d(x, 3, 2, "SAME"),
    "separable_conv2d": lambda x, d, p: gf.nn.separable_conv2d(x, d, p, [1, 2, 2, 1], "SAME"),
    "pool_max_2d": lambda x: gf.nn.pool(x, [2, 2], "MAX", "SAME", strides=[2, 2]),
    "pool_max_3d": lambda x: gf.nn.pool(x, [2, 2, 2], "MAX", "SAME", strides=[2, 2, 2]),
    "pool_avg_3d": lambda x: gf.nn.pool(x, [2, 2, 2], "AVG", "VALID", strides=[1, 2, 1]),
}


def normal(*shape):
    return RNG.standard_normal(shape)


@pytest.mark.parametrize("key", sorted(FIX["cases"]))
def test_values_and_gradients_match_tf(key):
    count = FIX["cases"][key]["inputs"]
    inputs = [ARR[f"{key}/in{i}"] for i in range(count)]
    graph = gf.Graph()
    with graph.as_default():
        xs = [gf.placeholder(gf.as_dtype(v.dtype), v.shape) for v in inputs]
        y = BUILDERS[key](*xs)
        assert y.shape.as_list() == FIX["cases"][key]["shape"]
        grads = gf.gradients(y, xs, grad_ys=gf.constant(ARR[f"{key}/up"]))
        with gf.Session() as sess:
            out, grad_values = sess.run([y, grads], dict(zip(xs, inputs, strict=True)))
    tol = 1e-4 if inputs[0].dtype == np.float32 else 1e-10
    np.testing.assert_allclose(out, ARR[f"{key}/out"], rtol=tol, atol=tol)
    for i, value in enumerate(grad_values):
        np.testing.assert_allclose(value, ARR[f"{key}/grad{i}"], rtol=tol, atol=tol)


def test_op_names_and_shapes_match_tf():
    graph = gf.Graph()
    with graph.as_default():
        a = gf.placeholder(gf.float32, [2, 5, 6, 7, 3], name="a")
        b = gf.placeholder(gf.float32, [2, 2, 2, 3, 4], name="b")
        c = gf.nn.conv3d(a, b, [1, 1, 1, 1, 1], "SAME")
        gf.nn.conv3d_transpose(c, b, [2, 5, 6, 7, 3], [1, 1, 1, 1, 1], "SAME")
        p = gf.nn.max_pool3d(a, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID")
        q = gf.nn.avg_pool3d(a, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID")
        gf.gradients([c, p, q], [a, b])
        v = gf.placeholder(gf.float32, [2, 9, 3], name="v")
        gf.nn.max_pool1d(v, 2, 2, "VALID")
        gf.nn.avg_pool1d(v, 2, 2, "VALID")
        i = gf.placeholder(gf.float32, [2, 9, 9, 3], name="i")
        gf.nn.separable_conv2d(i, gf.ones([3, 3, 3, 2]), gf.ones([1, 1, 6, 5]), [1, 1, 1, 1],
                               "SAME")
        ops = {op.name: op for op in graph.get_operations()}
    forward = {name: kind for name, kind in FIX["names"].items()
               if not name.startswith("gradients/")}
    for name, kind in forward.items():
        assert ops[name].type == kind, name
        assert ops[name].outputs[0].shape.as_list() == FIX["shapes"][name], name
    grad_types = {op.type for op in ops.values() if op.name.startswith("gradients/")}
    assert {"Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", "MaxPool3DGrad",
            "AvgPool3DGrad"} <= grad_types


# ------------------------------------------------------------------ numeric gradients
CONV_CASES = [([1, 1, 1, 1, 1], "SAME", [1, 1, 1, 1, 1]),
              ([1, 2, 1, 2, 1], "VALID", [1, 1, 1, 1, 1]),
              ([1, 1, 1, 1, 1], "SAME", [1, 2, 1, 2, 1])]


@pytest.mark.parametrize("strides,padding,dilations", CONV_CASES)
def test_conv3d_numeric_gradient(strides, padding, dilations):
    def build(x, w):
        return gf.nn.conv3d(x, w, strides, padding, dilations=dilations)
    assert gradient_error(build, [normal(2, 4, 5, 5, 2), normal(2, 2, 3, 2, 3)]) < 1e-7


def test_conv3d_channels_first_matches_channels_last():
    x, w = normal(2, 4, 5, 3, 2), normal(2, 2, 2, 2, 3)
    with gf.Graph().as_default(), gf.Session() as sess:
        last = gf.nn.conv3d(x, w, [1, 2, 1, 1, 1], "SAME")
        first = gf.nn.conv3d(np.moveaxis(x, -1, 1), w, [1, 1, 2, 1, 1], "SAME",
                             data_format="NCDHW")
        a, b = sess.run([last, first])
    np.testing.assert_allclose(np.moveaxis(b, 1, -1), a, rtol=1e-12)
    assert gradient_error(lambda x_, w_: gf.nn.conv3d(x_, w_, [1, 1, 2, 1, 1], "SAME",
                                                      data_format="NCDHW"),
                          [np.moveaxis(x, -1, 1).copy(), w]) < 1e-7


def test_conv3d_second_order():
    x, w = normal(1, 3, 4, 3, 2), normal(2, 2, 2, 2, 2)
    for strides in ([1, 1, 1, 1, 1], [1, 2, 1, 2, 1]):
        def conv(a, b, strides=strides):
            return gf.nn.conv3d(a, b, strides, "SAME")
        assert second_order_error(conv, [x, w]) < 1e-6
        assert second_order_error(lambda b, a: conv(a, b), [w, x]) < 1e-6


def test_conv3d_transpose_numeric_gradient():
    def build(y, w):
        return gf.nn.conv3d_transpose(y, w, [2, 4, 5, 5, 2], [1, 2, 2, 2, 1], "SAME")
    assert gradient_error(build, [normal(2, 2, 3, 3, 3), normal(2, 2, 3, 2, 3)]) < 1e-7


def test_conv3d_backprop_filter_numeric_gradient():
    def build(x, dy):
        return gf.nn.conv3d_backprop_filter_v2(x, [2, 2, 2, 2, 3], dy, [1, 1, 1, 1, 1], "VALID")
    assert gradient_error(build, [normal(1, 3, 3, 3, 2), normal(1, 2, 2, 2, 3)]) < 1e-7


def distinct(*shape):
    """Values far enough apart that a finite difference never changes a max's winner."""
    return RNG.permutation(np.prod(shape)).reshape(shape) * 0.1


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("pool", [gf.nn.max_pool3d, gf.nn.avg_pool3d])
def test_pool3d_numeric_gradient(pool, padding):
    def build(x):
        return pool(x, [1, 2, 3, 2, 1], [1, 2, 1, 2, 1], padding)
    assert gradient_error(build, [distinct(2, 4, 5, 5, 2)]) < 1e-7


@pytest.mark.parametrize("pool", [gf.nn.max_pool3d, gf.nn.avg_pool3d])
def test_pool3d_second_order(pool):
    def build(x):
        return pool(x, [1, 2, 2, 2, 1], [1, 1, 2, 1, 1], "SAME")
    assert second_order_error(build, [distinct(1, 3, 4, 3, 2)]) < 1e-7


@pytest.mark.parametrize("pool", [gf.nn.max_pool1d, gf.nn.avg_pool1d])
def test_pool1d_numeric_gradient(pool):
    assert gradient_error(lambda x: pool(x, 3, 2, "SAME"), [distinct(2, 7, 3)]) < 1e-7


def test_pool1d_channels_first():
    x = normal(2, 7, 3)
    with gf.Graph().as_default(), gf.Session() as sess:
        last = gf.nn.max_pool1d(x, 2, 2, "VALID")
        first = gf.nn.max_pool1d(np.moveaxis(x, -1, 1), 2, 2, "VALID", data_format="NCW")
        a, b = sess.run([last, first])
    np.testing.assert_array_equal(np.moveaxis(b, 1, -1), a)


def test_separable_conv2d_numeric_gradient():
    def build(x, d, p):
        return gf.nn.separable_conv2d(x, d, p, [1, 1, 1, 1], "SAME", rate=[2, 2])
    inputs = [normal(2, 5, 5, 2), normal(2, 2, 2, 2), normal(1, 1, 4, 3)]
    assert gradient_error(build, inputs) < 1e-7


def test_max_pool3d_routes_ties_to_the_first_maximum():
    x = np.zeros((1, 2, 2, 2, 1))
    with gf.Graph().as_default(), gf.Session() as sess:
        xt = gf.constant(x)
        (grad,) = gf.gradients(gf.nn.max_pool3d(xt, 2, 2, "VALID"), [xt])
        value = sess.run(grad)
    assert value.reshape(-1).tolist() == [1.0] + [0.0] * 7


# --------------------------------------------------------------------------- errors
def snapshot(graph):
    return [op.name for op in graph.get_operations()]


@pytest.mark.parametrize("key,build", [
    ("conv3d_depth", lambda: gf.nn.conv3d(gf.ones([1, 4, 4, 4, 3]), gf.ones([2, 2, 2, 2, 4]),
                                          [1, 1, 1, 1, 1], "SAME")),
    ("conv3d_rank", lambda: gf.nn.conv3d(gf.ones([1, 4, 4, 3]), gf.ones([2, 2, 2, 3, 4]),
                                         [1, 1, 1, 1, 1], "SAME")),
    ("max_pool3d_too_small", lambda: gf.nn.max_pool3d(gf.ones([1, 2, 2, 2, 1]),
                                                      [1, 3, 3, 3, 1], [1, 1, 1, 1, 1],
                                                      "VALID"))])
def test_errors_as_tf(key, build):
    expected = FIX["errors"][key]
    with gf.Graph().as_default() as graph:
        gf.ones([1])
        before = snapshot(graph)
        with pytest.raises(ValueError) as info:
            with graph.atomic():
                build()
        assert snapshot(graph) == before
    assert expected["type"] == "ValueError"
    head = expected["message"].split(" for '")[0]
    assert head in str(info.value)


@pytest.mark.parametrize("build,words", [
    (lambda x: gf.nn.max_pool3d(x, [2, 2, 2, 2, 1], 1, "VALID"), "ksize"),
    (lambda x: gf.nn.conv3d(x, gf.ones([1, 1, 1, 1, 1]), 1, "EXPLICIT"), "padding"),
    (lambda x: gf.nn.conv3d(x, gf.ones([1, 1, 1, 1, 1]), 1, "SAME", data_format="NHWC"),
     "data_format"),
    (lambda x: gf.nn.pool(x, [2, 2, 2], "MAX", "SAME", dilation_rate=[2, 2, 2]),
     "dilation_rate"),
    (lambda x: gf.nn.pool(x, [2, 2, 2], "MIN", "SAME"), "pooling_type"),
    (lambda x: gf.nn.max_pool1d(x, 2, 2, "VALID"), "rank 3"),
])
def test_bad_arguments_raise_value_errors(build, words):
    with gf.Graph().as_default() as graph:
        x = gf.ones([2, 4, 4, 4, 1])
        before = snapshot(graph)
        with pytest.raises(ValueError, match=words):
            build(x)
        # the public constructors add nothing before they fail
        assert snapshot(graph)[:len(before)] == before


def test_max_pool3d_rejects_integers():
    with gf.Graph().as_default():
        with pytest.raises(TypeError, match="input"):
            gf.nn.max_pool3d(gf.ones([1, 2, 2, 2, 1], dtype=gf.int32), 2, 2, "VALID")
