"""``tf.test``: TestCase (sessions, evaluate, assertions), get_temp_dir and the build
queries, against the outcomes of the same checks under TF 2.21
(tests/fixtures/tf/make_gaps.py)."""
import os
import unittest

import numpy as np

import gradflow.compat.v1 as tf1
from tf_fixtures import load_json

RECORDED = load_json("gaps")


def _outcomes(tf_):
    """Runs a few TestCase checks under ``tf_``; {check: "pass" | exception type}."""

    class Checks(tf_.test.TestCase):
        def test_close_within(self):
            self.assertAllClose(1.0, 1.0 + 5e-7)

        def test_close_outside(self):
            self.assertAllClose(1.0, 1.0 + 5e-6)

        def test_close_nested(self):
            self.assertAllClose({"a": [1.0, 2.0], "b": (3.0, [4.0])},
                                {"a": [1.0, 2.0000001], "b": (3.0, [4.0])})

        def test_close_shapes(self):
            self.assertAllClose([1.0, 2.0], [1.0, 2.0, 3.0])

        def test_close_rtol(self):
            self.assertAllClose([100.0], [100.5], rtol=1e-2)

        def test_equal(self):
            self.assertAllEqual([[1, 2]], np.array([[1, 2]]))

        def test_equal_shapes(self):
            self.assertAllEqual([[1, 2]], [1, 2])

        def test_equal_values(self):
            self.assertAllEqual([1, 2], [1, 3])

        def test_session_default(self):
            with self.session() as sess:
                assert tf_.get_default_session() is sess
                self.assertAllEqual(sess.run(tf_.constant([1, 2]) * 2), [2, 4])

        def test_cached_session_reused(self):
            with self.cached_session() as first:
                pass
            with self.cached_session() as second:
                assert first is second

        def test_evaluate(self):
            x = tf_.constant([[1.0, 2.0]])
            self.assertAllClose(self.evaluate({"x": x, "y": [x * 2]}),
                                {"x": [[1.0, 2.0]], "y": [[[2.0, 4.0]]]})

        def test_fresh_graph(self):
            assert not tf_.get_default_graph().get_operations()
            tf_.constant(1.0, name="made_here")

        def test_fresh_graph_again(self):
            assert not tf_.get_default_graph().get_operations()

        def test_op_error(self):
            p = tf_.placeholder(tf_.float32)
            with self.cached_session() as sess:
                with self.assertRaisesOpError("bad value"):
                    sess.run(tf_.debugging.assert_positive(p, message="bad value"),
                             {p: -1.0})

        def test_temp_dir(self):
            assert os.path.isdir(self.get_temp_dir())
            assert os.path.isdir(tf_.test.get_temp_dir())

        def test_near(self):
            self.assertNear(1.0, 1.05, 0.1)
            self.assertArrayNear([1.0, 2.0], [1.01, 2.01], 0.02)

        def test_near_outside(self):
            self.assertNear(1.0, 1.5, 0.1)

        def test_in_range(self):
            self.assertAllInRange([1.0, 2.0], 1.0, 2.0)

        def test_in_range_open(self):
            self.assertAllInRange([1.0, 2.0], 1.0, 2.0, open_lower_bound=True)

        def test_shape_equal(self):
            self.assertShapeEqual(np.zeros((2, 3)), tf_.zeros([2, 3]))

    class Outcome(unittest.TestResult):
        def __init__(self):
            super().__init__()
            self.kind = "pass"

        def addFailure(self, test, err):
            self.kind = err[0].__name__

        def addError(self, test, err):
            self.kind = err[0].__name__

    outcomes = {}
    for case in unittest.defaultTestLoader.loadTestsFromTestCase(Checks):
        name = case.id().rsplit(".", 1)[-1]
        if name == "test_session":  # TestCase's own helper, collected by its name
            continue
        result = Outcome()
        case.run(result)
        outcomes[name] = result.kind
    return outcomes


def test_test_case_outcomes_match_tf1():
    assert _outcomes(tf1) == RECORDED["misc"]["test_case"]


def test_build_queries():
    assert tf1.test.gpu_device_name() == RECORDED["misc"]["test_gpu"]["gpu_device_name"]
    assert tf1.test.is_gpu_available() is RECORDED["misc"]["test_gpu"]["is_gpu_available"]
    assert tf1.test.is_built_with_cuda() is False
    assert tf1.test.get_temp_dir() == tf1.test.get_temp_dir()
