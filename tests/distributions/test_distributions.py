"""``tf.distributions`` (Normal, Categorical, Bernoulli, Uniform, kl_divergence) against
TF 2.21: values, dtypes, static shapes, name scopes and messages (fixture
``make_distributions.py``); gradients numerically; samples statistically."""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error
from tf_fixtures import load_json

RECORDED = load_json("distributions")


def _check(tensor, want, value):
    np.testing.assert_allclose(np.asarray(value, np.float64), np.asarray(want["value"],
                               np.float64), rtol=2e-5, atol=2e-6)
    assert tensor.dtype.name == want["dtype"]
    assert (tensor.shape.as_list() if tensor.shape.ndims is not None else None) == want["shape"]
    # The distribution's and the method's scopes are TF's; the ops inside are gradflow's.
    assert "/".join(tensor.name.split("/")[:2]).split(":")[0] == \
        "/".join(want["scope"].split("/")[:2]) or tensor.name.rsplit("/", 1)[0] == want["scope"]


def test_normal_matches_tensorflow():
    with gf.Graph().as_default():
        mu = gf.placeholder(gf.float32, [None, 2], name="mu")
        sigma = gf.placeholder(gf.float32, [None, 2], name="sigma")
        x = gf.placeholder(gf.float32, [None, 2], name="x")
        feed = {mu: [[0., 1.], [2., -1.]], sigma: [[1., 0.5], [2., 0.1]],
                x: [[0.3, 1.1], [0., -1.05]]}
        d = gf.distributions.Normal(loc=mu, scale=sigma)
        q = gf.distributions.Normal(0.0, 1.0)
        assert [d.name, d.dtype.name, d.batch_shape.as_list(), d.event_shape.as_list(),
                repr(d.reparameterization_type), d.allow_nan_stats, d.validate_args] == \
            RECORDED["normal_properties"]
        methods = {"log_prob": d.log_prob(x), "prob": d.prob(x), "cdf": d.cdf(x),
                   "log_cdf": d.log_cdf(x), "survival_function": d.survival_function(x),
                   "entropy": d.entropy(), "mean": d.mean(), "stddev": d.stddev(),
                   "variance": d.variance(), "mode": d.mode(),
                   "quantile": d.quantile(gf.constant(0.3)),
                   "cross_entropy": d.cross_entropy(q),
                   "kl": gf.distributions.kl_divergence(d, q), "log_prob_again": d.log_prob(x),
                   "kl_method": d.kl_divergence(q)}
        samples = [d.sample(), d.sample(3, seed=1), d.sample([2, 4])]
        with gf.Session() as sess:
            values = sess.run(methods, feed)
        for key, tensor in methods.items():
            _check(tensor, RECORDED["normal"][key], values[key])
        assert [[s.shape.as_list(), s.dtype.name, s.name.rsplit("/", 1)[0]]
                for s in samples] == RECORDED["normal_samples"]


def test_categorical_bernoulli_uniform_match_tensorflow():
    with gf.Graph().as_default():
        # The fixture's graph made one KL (of its Normals) before these.
        gf.distributions.kl_divergence(gf.distributions.Normal(0.0, 1.0, name="N"),
                                       gf.distributions.Normal(0.0, 1.0, name="N"))
        c = gf.distributions.Categorical(logits=gf.constant([[1.0, 2.0, 0.5], [0.1, 0.1, 3.0]]))
        c2 = gf.distributions.Categorical(probs=[[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
        b = gf.distributions.Bernoulli(probs=gf.constant([0.2, 0.9]))
        b2 = gf.distributions.Bernoulli(logits=[0.0, 1.0])
        u = gf.distributions.Uniform(low=-1.0, high=gf.constant([1.0, 3.0]))
        others = {
            "c_log_prob": c.log_prob([1, 2]), "c_log_prob_broadcast": c.log_prob(2),
            "c_prob": c.prob([0, 2]), "c_entropy": c.entropy(), "c_mode": c.mode(),
            "c_probs": c.probs, "c2_logits": c2.logits,
            "c_kl": gf.distributions.kl_divergence(c, c2),
            "b_log_prob": b.log_prob([1, 0]), "b_entropy": b.entropy(), "b_mean": b.mean(),
            "b_logits": b.logits, "b2_probs": b2.probs, "b_mode": b.mode(),
            "b_variance": b.variance(), "b_kl": gf.distributions.kl_divergence(b, b2),
            "u_log_prob": u.log_prob([0.0, 2.0]), "u_prob": u.prob([0.0, 5.0]),
            "u_entropy": u.entropy(), "u_mean": u.mean(), "u_stddev": u.stddev(),
            "u_cdf": u.cdf([0.5, -2.0]), "u_variance": u.variance()}
        samples = [c.sample(4, seed=3), b.sample(), b.sample(5), u.sample(2)]
        with gf.Session() as sess:
            values = sess.run(others)
            drawn = sess.run(samples)
        for key, tensor in others.items():
            _check(tensor, RECORDED["others"][key], values[key])
        assert [[s.shape.as_list(), s.dtype.name] for s in samples] == RECORDED["other_samples"]
        assert [c.name, b.name, u.name, c.dtype.name, b.dtype.name, c.batch_shape.as_list(),
                b.batch_shape.as_list(), u.batch_shape.as_list()] == RECORDED["other_properties"]
        assert set(np.unique(drawn[0])) <= {0, 1, 2} and set(np.unique(drawn[2])) <= {0, 1}
        assert ((drawn[3] >= -1.0) & (drawn[3] < np.array([1.0, 3.0]))).all()


def test_bad_calls_raise_tensorflow_errors_and_leave_the_graph():
    with gf.Graph().as_default() as g:
        d = gf.distributions.Normal(loc=gf.placeholder(gf.float32, [2]), scale=1.0)
        c = gf.distributions.Categorical(logits=[1.0, 2.0])
        before = [op.name for op in g.get_operations()]
        got = []
        for make in (lambda: gf.distributions.Categorical(),
                     lambda: gf.distributions.Bernoulli(logits=[1.0], probs=[1.0]),
                     lambda: gf.distributions.kl_divergence(d, c)):
            with pytest.raises((ValueError, NotImplementedError)) as info:
                make()
            got.append([type(info.value).__name__, str(info.value)])
        assert [op.name for op in g.get_operations()] == before
        with gf.Graph().as_default():  # TF's names for the dtype message
            gf.distributions.Normal(0.0, 1.0)
            gf.distributions.Normal(0.0, 1.0)
            with pytest.raises(ValueError) as info:
                gf.distributions.Normal(loc=1, scale=2.0)
            got.append([type(info.value).__name__, str(info.value)])
        assert got == RECORDED["errors"]
        with pytest.raises(ValueError, match="validate_args"):
            gf.distributions.Normal(0.0, 1.0, validate_args=True)


def test_normal_log_prob_and_kl_gradients():
    x = np.array([[0.3, -1.2], [2.0, 0.1]])

    def log_prob(loc, scale):
        return gf.distributions.Normal(loc, scale).log_prob(x)

    def kl(loc, scale):
        return gf.distributions.kl_divergence(gf.distributions.Normal(loc, scale),
                                              gf.distributions.Normal(
                                                  gf.constant(0.5, gf.float64),
                                                  gf.constant(2.0, gf.float64)))

    loc = np.array([[0.0, 1.0], [1.5, -0.5]])
    scale = np.array([[1.0, 0.7], [2.0, 0.4]])
    assert gradient_error(log_prob, [loc, scale]) < 1e-6
    assert gradient_error(kl, [loc, scale]) < 1e-6
    logits = np.array([[1.0, 2.0, 0.5], [0.1, 0.1, 3.0]])
    assert gradient_error(lambda z: gf.distributions.Categorical(logits=z).entropy(),
                          [logits]) < 1e-6
    assert gradient_error(lambda z: gf.distributions.Bernoulli(logits=z).log_prob([1, 0, 1]),
                          [np.array([0.3, -2.0, 1.0])]) < 1e-6


def test_samples_are_reparameterized_and_seeded():
    with gf.Graph().as_default():
        loc = gf.constant([0.5, -2.0])
        scale = gf.constant([1.0, 3.0])
        draws = gf.distributions.Normal(loc, scale).sample(20000, seed=7)
        d_loc, d_scale = gf.gradients(gf.reduce_sum(draws), [loc, scale])
        noise = (draws - loc) / scale
        with gf.Session() as sess:
            first, grads_loc, grads_scale, eps = sess.run([draws, d_loc, d_scale, noise])
        with gf.Session() as sess:
            again = sess.run(draws)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(first.mean(0), [0.5, -2.0], atol=0.06)
    np.testing.assert_allclose(first.std(0), [1.0, 3.0], rtol=0.03)
    np.testing.assert_allclose(grads_loc, [20000.0, 20000.0])
    np.testing.assert_allclose(grads_scale, eps.sum(0), rtol=1e-4, atol=1e-2)
