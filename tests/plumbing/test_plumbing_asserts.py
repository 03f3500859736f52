"""Assert, Print and the assert_* family against TF 2.21's recorded messages."""
import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import load_json

FIXTURE = load_json("plumbing")
c = gf.constant

RUN_CASES = {
    "assert_equal": lambda a, b: gf.assert_equal(a, b),
    "assert_equal_message": lambda a, b: gf.assert_equal(a, b, message="msg"),
    "assert_none_equal": lambda a, b: gf.assert_none_equal(a, b),
    "assert_less": lambda a, b: gf.assert_less(a, b),
    "assert_less_equal": lambda a, b: gf.assert_less_equal(a, b),
    "assert_greater": lambda a, b: gf.assert_greater(a, b),
    "assert_greater_equal": lambda a, b: gf.assert_greater_equal(a, b),
    "assert_positive": lambda a: gf.assert_positive(a),
    "assert_negative": lambda a: gf.assert_negative(a),
    "assert_non_negative": lambda a: gf.assert_non_negative(a),
    "assert_non_positive": lambda a: gf.assert_non_positive(a, message="np"),
    "assert_rank": lambda a: gf.assert_rank(a, 2),
    "assert_rank_at_least": lambda a: gf.assert_rank_at_least(a, 2),
    "Assert": lambda a: gf.Assert(gf.reduce_all(a > 0), [a, c("hi")]),
    "Assert_summarize": lambda a: gf.Assert(gf.reduce_all(a > 0), [a], summarize=1),
    "Assert_matrix": lambda a: gf.Assert(gf.reduce_all(a > 0), [gf.reshape(a, [2, 3])],
                                         summarize=4),
    "Assert_long": lambda a: gf.Assert(gf.reduce_all(a > 0), [a]),
}

BUILD_CASES = {
    "assert_equal_static": lambda: gf.assert_equal(c([1, 2]), c([1, 3])),
    "assert_equal_static_message": lambda: gf.assert_equal(c([1, 2]), c([1, 3]), message="msg"),
    "assert_positive_static": lambda: gf.assert_positive(c([1., -2.])),
    "assert_less_static": lambda: gf.assert_less(c([1., 2.]), c(1.5)),
    "assert_rank_static": lambda: gf.assert_rank(c([1, 2]), 2),
    "assert_rank_at_least_static": lambda: gf.assert_rank_at_least(c([1, 2]), 3),
    "assert_type": lambda: gf.assert_type(c([1, 2]), gf.float32),
    "assert_integer": lambda: gf.assert_integer(c([1., 2.])),
    "assert_scalar": lambda: gf.assert_scalar(c([1., 2.])),
}


@pytest.mark.parametrize("key", sorted(RUN_CASES))
def test_run_time_messages_match_tf(key):
    recorded = FIXTURE["run"][key]
    phs = [gf.placeholder(gf.float32, None, name=f"x{i}") for i in range(len(recorded["feeds"]))]
    op = RUN_CASES[key](*phs)
    with gf.Session() as sess:
        if recorded["type"] is None:
            sess.run(op, dict(zip(phs, recorded["feeds"])))
            return
        with pytest.raises(getattr(gf.errors, recorded["type"])) as info:
            sess.run(op, dict(zip(phs, recorded["feeds"])))
    assert str(info.value).split("\n")[0] == recorded["message"]


@pytest.mark.parametrize("key", sorted(BUILD_CASES))
def test_build_time_messages_match_tf(key):
    recorded = FIXTURE["build"][key]
    kind = getattr(gf.errors, recorded["type"], None) or getattr(__builtins__, recorded["type"],
                                                                  None)
    kind = kind or {"ValueError": ValueError, "TypeError": TypeError}[recorded["type"]]
    graph = gf.get_default_graph()
    with pytest.raises(kind) as info:
        BUILD_CASES[key]()
    assert str(info.value) == recorded["message"]
    # a static failure leaves only the operands it was given
    assert all(op.type == "Const" for op in graph.get_operations())


def test_passing_asserts_run_and_gate_values():
    x = gf.placeholder(gf.float32, [2])
    with gf.control_dependencies([gf.assert_positive(x), gf.assert_rank(x, 1)]):
        y = gf.identity(x * 2.0)
    with gf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: [1.0, 2.0]}), [2.0, 4.0])
        with pytest.raises(gf.errors.InvalidArgumentError):
            sess.run(y, {x: [1.0, -2.0]})


def test_print_matches_tf_output(capfd):
    x = gf.constant([[1.5, 2.0], [3.0, -4.25]])
    p = gf.Print(x, [x, gf.constant(7), gf.constant("txt")], message="m: ", first_n=2,
                 summarize=3)
    with gf.Session() as sess:
        for _ in range(3):
            np.testing.assert_array_equal(sess.run(p), [[1.5, 2.0], [3.0, -4.25]])
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("m: ")]
    assert lines == FIXTURE["print"]


def test_print_passes_gradient_through():
    x = gf.constant([1.0, 2.0], dtype=gf.float64)
    (grad,) = gf.gradients(gf.reduce_sum(gf.Print(x, [x]) ** 2), [x])
    with gf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad), [2.0, 4.0])


def test_tf_print_op(capfd):
    op = gf.print("value:", gf.constant([1, 2, 3, 4, 5]),
                  gf.constant([[1.5, 2.0, 3, 4, 5], [3.0, -4.25, 1, 1, 1]]), summarize=2)
    with gf.Session() as sess:
        sess.run(op)
    # what TF 2.21's tf.print writes for these values
    assert capfd.readouterr().err == "value: [1 2 ... 4 5] [[1.5 2 ... 4 5]\n [3 -4.25 ... 1 1]]\n"


def test_bad_assert_leaves_graph_unchanged():
    graph = gf.get_default_graph()
    x = gf.constant([1.0, -1.0])
    one, true = gf.constant(1.0), gf.constant(True)
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(gf.errors.InvalidArgumentError):
        gf.assert_positive(x)
    with pytest.raises(TypeError):
        gf.Assert(one, [x])
    with pytest.raises(TypeError):
        gf.Assert(true, x)
    assert [op.name for op in graph.get_operations()] == before


def test_is_numeric_tensor_and_debugging_namespace():
    assert gf.is_numeric_tensor(gf.constant(1.0))
    assert not gf.is_numeric_tensor(gf.constant("a"))
    assert not gf.is_numeric_tensor(np.ones(2))
    assert gf.debugging.assert_equal is gf.assert_equal
    assert gf.debugging.check_numerics is gf.check_numerics
