"""ExponentialMovingAverage.apply inside a cond branch and under a variable scope.

The hand-written batch norm of TF1 programs (``cond(is_training, mean_var_with_update,
lambda: (ema.average(mean), ema.average(var)))``) must update the averages only in runs
that take the branch, and the shadows are named under the variable scope in force
(TF 2.21: ``s/s/v/ExponentialMovingAverage``, ``t/t/t/m2/.../biased``).
"""
import numpy as np

import gradflow as gf


def test_update_in_cond_branch_runs_only_when_taken():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [4, 2])
        training = gf.placeholder(gf.bool, [])
        mean, var = gf.nn.moments(x, [0])
        ema = gf.train.ExponentialMovingAverage(0.9)

        def update():
            with gf.control_dependencies([ema.apply([mean, var])]):
                return gf.identity(mean), gf.identity(var)

        m, _ = gf.cond(training, update, lambda: (ema.average(mean), ema.average(var)))
        data = np.arange(8, dtype=np.float32).reshape(4, 2)
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(m, {x: data, training: True})
            after_one = sess.run(ema.average(mean))
            np.testing.assert_allclose(after_one, 0.1 * data.mean(0), rtol=1e-6)
            served = sess.run(m, {x: np.zeros((4, 2), np.float32), training: False})
            np.testing.assert_allclose(served, after_one)
            np.testing.assert_allclose(sess.run(ema.average(mean)), after_one)
            sess.run(m, {x: data, training: True})
            np.testing.assert_allclose(sess.run(ema.average(mean)),
                                       0.9 * after_one + 0.1 * data.mean(0), rtol=1e-6)


def test_shadow_names_follow_the_variable_scope():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [3])
        with gf.variable_scope("s"):
            v = gf.Variable([1.0, 2.0, 3.0], name="v")
            m = gf.reduce_mean(x * v, name="m")
            ema = gf.train.ExponentialMovingAverage(0.9)
            ema.apply([v, m])
        with gf.variable_scope("t"):
            debiased = gf.train.ExponentialMovingAverage(0.5, zero_debias=True)
            debiased.apply([gf.reduce_sum(x, name="m2")])
        assert [w.op.name for w in gf.global_variables()] == [
            "s/v", "s/s/v/ExponentialMovingAverage", "s/s/m/ExponentialMovingAverage",
            "t/t/m2/ExponentialMovingAverage", "t/t/t/m2/ExponentialMovingAverage/biased",
            "t/t/t/m2/ExponentialMovingAverage/local_step"]
        assert ema.average_name(v) == "s/s/v/ExponentialMovingAverage"


def test_failed_apply_in_branch_leaves_graphs_unchanged():
    with gf.Graph().as_default() as g:
        x = gf.placeholder(gf.float32, [2])
        flag = gf.placeholder(gf.bool, [])
        ema = gf.train.ExponentialMovingAverage(0.9)
        before = [op.name for op in g.get_operations()]

        def bad():
            ema.apply([gf.reduce_sum(x), gf.cast(x, gf.int32)])
            return x

        try:
            gf.cond(flag, bad, lambda: x)
        except TypeError:
            pass
        assert [op.name for op in g.get_operations()] == before
        assert gf.global_variables() == []
