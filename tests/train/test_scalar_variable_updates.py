"""Optimizers update scalar (0-d) variables: a learned temperature, a global bias, a
scalar ``log_std``. Adam, Adagrad and RMSProp failed on them (``return arrays must be of
ArrayType``: NumPy gives a scalar, not an array, for a 0-d scratch result). The values
are TF 2.21's after two steps of minimising ``(w - 1)^2`` from ``w = 2``.
"""
import numpy as np
import pytest

import gradflow as gf

TF_AFTER_TWO_STEPS = [
    (lambda: gf.train.AdamOptimizer(0.1), 1.8004125),
    (lambda: gf.train.AdagradOptimizer(0.1), 1.8347372),
    (lambda: gf.train.RMSPropOptimizer(0.1), 1.6872513),
    (lambda: gf.train.RMSPropOptimizer(0.1, centered=True, momentum=0.5), 1.5897623),
    (lambda: gf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True), 1.2224),
    (lambda: gf.train.AdadeltaOptimizer(1.0), 1.9991001),
    (lambda: gf.train.FtrlOptimizer(0.1), 1.5386008),
    (lambda: gf.train.ProximalAdagradOptimizer(0.1), 1.8347372),
    (lambda: gf.train.GradientDescentOptimizer(0.1), 1.64),
]


@pytest.mark.parametrize("make_optimizer,want", TF_AFTER_TWO_STEPS)
def test_scalar_variable_update_matches_tensorflow(make_optimizer, want):
    with gf.Graph().as_default():
        w = gf.get_variable("w", [], initializer=gf.constant_initializer(2.0))
        train = make_optimizer().minimize(gf.square(w - 1.0))
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(train)
            sess.run(train)
            got = sess.run(w)
    assert np.shape(got) == ()
    np.testing.assert_allclose(got, want, rtol=1e-6)
