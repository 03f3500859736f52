"""map_fn, scan, foldl, foldr and switch_case: values, shapes, gradients and TF's errors
(fixture ``rnn_loops``), numeric gradient checks and atomic failure."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error
from gradflow.ops.loops import flatten
from tf_fixtures import load_json

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fixtures" / "tf"))
from rnn_loop_cases import ELEMS, cases, error_calls  # noqa: E402

META = load_json("rnn_loops")


@pytest.mark.parametrize("name", sorted(META["values"]))
def test_values_and_gradients_match_tensorflow(name):
    recorded = META["values"][name]
    with gf.Graph().as_default():
        x = gf.constant(ELEMS)
        flat = flatten(cases(gf, x)[name]())
        loss = gf.add_n([gf.reduce_sum(t * (1.0 + i)) for i, t in enumerate(flat)])
        (grad,) = gf.gradients(loss, [x])
        assert [t.shape.as_list() for t in flat] == recorded["shapes"]
        with gf.Session() as sess:
            values, grad_value = sess.run([flat, grad])
    for value, expected in zip(values, recorded["outputs"], strict=True):
        np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad_value, recorded["grad"], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(META["errors"]))
def test_errors_match_tensorflow(name):
    recorded = META["errors"][name]
    graph = gf.Graph()
    with graph.as_default():
        x = gf.constant(ELEMS)
        before = [op.name for op in graph.get_operations()]
        with pytest.raises((TypeError, ValueError)) as info:
            error_calls(gf, x)[name]()
        # atomic: only the call's own arguments (constants, zeros) remain
        created = [op.name for op in graph.get_operations() if op.name not in before]
        assert not [n for n in created if n.startswith(("map", "scan", "fold", "switch"))]
    assert type(info.value).__name__ == recorded[0]
    assert str(info.value).split("\n")[0] == recorded[1]


def test_map_fn_unknown_length_and_static_shapes():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, 3])
        y = gf.map_fn(lambda r: gf.reduce_sum(r * r), x)
        assert y.shape.as_list() == [None]
        z = gf.map_fn(lambda r: gf.reshape(r, [3, 1]), x, infer_shape=True)
        assert z.shape.as_list() == [None, 3, 1]
        with gf.Session() as sess:
            value = np.arange(6, dtype=np.float32).reshape(2, 3)
            np.testing.assert_allclose(sess.run(y, {x: value}), (value ** 2).sum(1))


def test_map_fn_dtype_changes_the_output_dtype():
    with gf.Graph().as_default():
        x = gf.constant([[1.5, 2.5], [3.5, 4.5]])
        y = gf.map_fn(lambda r: gf.cast(r, gf.int32), x, dtype=gf.int32)
        assert y.dtype == gf.int32
        with gf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y), [[1, 2], [3, 4]])
        with pytest.raises(TypeError, match="dtype says float32"):
            gf.map_fn(lambda r: gf.cast(r, gf.int32), x)


def test_back_prop_false_stops_gradients():
    with gf.Graph().as_default():
        x = gf.constant(ELEMS)
        y = gf.map_fn(lambda r: r * r, x, back_prop=False)
        s = gf.scan(lambda a, e: a + e, x, back_prop=False)
        assert gf.gradients(gf.reduce_sum(y) + gf.reduce_sum(s), [x]) == [None]


def test_not_callable():
    with gf.Graph().as_default():
        for fn in (gf.map_fn, gf.scan, gf.foldl, gf.foldr):
            with pytest.raises(TypeError, match="fn must be callable"):
                fn(3, gf.constant(ELEMS))


GRADIENT_CASES = {
    "map_fn": lambda x: gf.map_fn(lambda r: gf.sin(r) * r, x),
    "map_fn_nested": lambda x: gf.map_fn(lambda t: t[0] * gf.reduce_sum(t[1]), (x, x * x),
                                         dtype=gf.float64),
    "scan": lambda x: gf.scan(lambda a, e: a * gf.tanh(e) + e, x),
    "scan_reverse_initializer": lambda x: gf.scan(lambda a, e: a * e + 1.0, x,
                                                  initializer=gf.ones([3], gf.float64),
                                                  reverse=True),
    "foldl": lambda x: gf.foldl(lambda a, e: a * gf.cos(e) + e, x),
    "foldr": lambda x: gf.foldr(lambda a, e: a * a * 0.5 + e, x,
                                initializer=gf.zeros([3], gf.float64)),
    "switch_case": lambda x: gf.switch_case(gf.constant(1), [lambda: x * x,
                                                             lambda: gf.sin(x) * x]),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_numeric_gradients(name):
    x = np.random.default_rng(3).standard_normal((4, 3)) * 0.5
    assert gradient_error(GRADIENT_CASES[name], [x]) < 1e-7


@pytest.mark.parametrize("name", ["scan", "map_fn"])
def test_second_order(name):
    x = np.random.default_rng(4).standard_normal((3, 3)) * 0.5
    assert second_order_error(GRADIENT_CASES[name], [x]) < 1e-6


def test_switch_case_runs_only_by_index_at_run_time():
    with gf.Graph().as_default():
        index = gf.placeholder(gf.int32, [])
        y = gf.switch_case(index, {0: lambda: gf.constant(10.0), 1: lambda: gf.constant(20.0)},
                           default=lambda: gf.constant(-1.0))
        with gf.Session() as sess:
            assert [sess.run(y, {index: i}) for i in (0, 1, 2, -1)] == [10.0, 20.0, -1.0, -1.0]
