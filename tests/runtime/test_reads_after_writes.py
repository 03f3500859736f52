"""A read of a variable that the graph orders after a write to it sees the write, as a
TF1 ``v/read`` (which shares the variable's buffer) does. Expected values were taken
from TF 2.21 ``compat.v1`` running the same graphs."""
import numpy as np
import pytest

import gradflow as gf
from gradflow.runtime import executor


@pytest.fixture(params=[True, False], ids=["optimized", "plain"])
def optimizations(request):
    before = executor.optimizations_enabled()
    executor.set_optimizations(request.param)
    yield request.param
    executor.set_optimizations(before)


def test_reads_ordered_after_an_update_see_it(optimizations):
    with gf.Graph().as_default():
        v = gf.Variable(1.0)
        bump = gf.assign_add(v, 1.0)
        with gf.control_dependencies([bump]):
            through_identity = gf.identity(v)
            through_add = v + 0
            through_fill = gf.fill([2], v)
        with gf.Session() as sess:
            sess.run(v.initializer)
            got = sess.run([through_identity, through_add, through_fill])
            assert got[0] == 2.0 and got[1] == 2.0
            np.testing.assert_array_equal(got[2], [2.0, 2.0])
            assert sess.run(v) == 2.0


def test_a_read_before_the_update_keeps_the_old_value(optimizations):
    with gf.Graph().as_default():
        v = gf.Variable(1.0)
        before = v * 3.0
        with gf.control_dependencies([before]):
            bump = gf.assign_add(v, 1.0)
        with gf.control_dependencies([bump]):
            after = v * 3.0
        with gf.Session() as sess:
            sess.run(v.initializer)
            assert sess.run([before, after]) == [3.0, 6.0]


def test_identity_after_a_training_step_reads_the_trained_weights(optimizations):
    with gf.Graph().as_default():
        w = gf.Variable([1.0, 2.0], name="w")
        loss = gf.reduce_sum(w * w)
        step = gf.train.GradientDescentOptimizer(0.1).minimize(loss)
        ema = gf.train.ExponentialMovingAverage(0.5)
        with gf.control_dependencies([step]):
            train = ema.apply([w])
        average = ema.average(w)
        with gf.control_dependencies([train]):
            trained = gf.identity(w) * 1.0
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            for _ in range(3):
                _, seen = sess.run([train, trained])
            np.testing.assert_allclose(seen, [0.512, 1.024], rtol=1e-6)
            np.testing.assert_allclose(sess.run(average), [0.641, 1.282], rtol=1e-6)
