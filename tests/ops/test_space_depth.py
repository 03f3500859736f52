"""``depth_to_space`` and ``space_to_depth`` against TF 2.21 (fixture
``make_space_depth.py``): values, names, shapes, gradients (also numerically, and in
NCHW) and messages."""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error
from tf_fixtures import load_json

RECORDED = load_json("space_depth")
VALUE = np.arange(2 * 2 * 3 * 8, dtype=np.float32).reshape(2, 2, 3, 8)


def test_rearrangements_match_tensorflow():
    with gf.Graph().as_default():
        x = gf.constant(VALUE)
        d = gf.depth_to_space(x, 2)
        s = gf.space_to_depth(d, 2, name="s2d")
        s4 = gf.nn.space_to_depth(gf.constant(np.arange(32, dtype=np.float32).reshape(
            2, 4, 4, 1)), 2)
        fed = gf.nn.depth_to_space(gf.placeholder(gf.float32, [None, None, 4, 12]), 2)
        grad = gf.gradients(gf.reduce_sum(d * gf.cos(d)), x)[0]
        with gf.Session() as sess:
            dv, sv, s4v, gv = sess.run([d, s, s4, grad])
    assert [dv.ravel().tolist(), d.name, d.shape.as_list()] == RECORDED["depth_to_space"]
    assert [sv.ravel().tolist(), s.name, s.shape.as_list()] == RECORDED["space_to_depth"]
    assert [s4v.ravel().tolist(), s4.shape.as_list()] == RECORDED["space_to_depth_4"]
    assert fed.shape.as_list() == RECORDED["fed_shape"]
    np.testing.assert_allclose(gv.ravel(), RECORDED["grad"][0], rtol=1e-5, atol=1e-6)
    assert grad.name == RECORDED["grad"][1]


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_gradients_numerically(data_format):
    value = np.sin(np.arange(1 * 2 * 2 * 8, dtype=np.float64)).reshape(1, 2, 2, 8)
    if data_format == "NCHW":
        value = value.transpose(0, 3, 1, 2)
    assert gradient_error(lambda x: gf.depth_to_space(x, 2, data_format=data_format),
                          [value]) < 1e-8
    assert second_order_error(lambda x: gf.depth_to_space(x * x, 2, data_format=data_format),
                              [value]) < 1e-6
    with gf.Graph().as_default():
        x = gf.constant(value)
        back = gf.space_to_depth(gf.depth_to_space(x, 2, data_format=data_format), 2,
                                 data_format=data_format)
        with gf.Session() as sess:
            np.testing.assert_array_equal(sess.run(back), value)


def test_errors_match_tensorflow_and_leave_the_graph():
    with gf.Graph().as_default() as g:
        x = gf.constant(VALUE)
        flat = gf.zeros([2, 3])
        before = [op.name for op in g.get_operations()]
        got = []
        for make in (lambda: gf.depth_to_space(x, 3), lambda: gf.space_to_depth(x, 2),
                     lambda: gf.depth_to_space(x, 1), lambda: gf.depth_to_space(flat, 2),
                     lambda: gf.depth_to_space(x, 2, data_format="NCHW")):
            with pytest.raises(ValueError) as info:
                make()
            got.append(str(info.value).split(" for ")[0])
        assert got == RECORDED["errors"]
        assert [op.name for op in g.get_operations()] == before
