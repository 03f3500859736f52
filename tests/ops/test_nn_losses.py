"""Cross entropies and l2_loss: values, stability at extreme logits, gradients, errors."""
import numpy as np
import pytest
from gradcheck import gradient_error, second_order_error
from scipy import special

import gradflow as gf

RNG = np.random.default_rng(5)


def logits(*shape):
    return RNG.standard_normal(shape) * 2


def distribution(*shape):
    p = RNG.random(shape) + 0.1
    return p / p.sum(axis=-1, keepdims=True)


def np_log_softmax(x, axis=-1):
    return x - special.logsumexp(x, axis=axis, keepdims=True)


# ------------------------------------------------------------------ softmax cross entropy
@pytest.mark.parametrize("shape,axis", [((4,), -1), ((2, 3), -1), ((3, 2), 0),
                                        ((2, 3, 4), 1), ((2, 2, 3), -1)])
def test_softmax_cross_entropy_values(shape, axis, sess):
    x, z = logits(*shape), RNG.random(shape)
    loss = gf.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x, axis=axis)
    expected = -np.sum(z * np_log_softmax(x, axis), axis=axis)
    assert loss.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(sess.run(loss), expected, rtol=1e-12)


@pytest.mark.parametrize("shape,axis", [((3,), -1), ((2, 3), -1), ((3, 2), 0)])
def test_softmax_cross_entropy_gradients_in_both_arguments(shape, axis):
    def loss(x, z):
        return gf.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x, axis=axis)
    # Labels that do not sum to one: the gradient is still exact.
    assert gradient_error(loss, [logits(*shape), RNG.random(shape)]) < 1e-7
    assert second_order_error(loss, [logits(*shape), RNG.random(shape)]) < 1e-7
    assert second_order_error(lambda z, x: loss(x, z), [RNG.random(shape), logits(*shape)]) < 1e-7


def test_v1_softmax_cross_entropy_stops_the_label_gradient(sess):
    x, z = gf.constant(logits(2, 3)), gf.constant(distribution(2, 3))
    loss = gf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x)
    d_x, d_z = gf.gradients(loss, [x, z])
    assert d_z is None
    v2 = gf.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x)
    np.testing.assert_allclose(*sess.run([loss, v2]))
    np.testing.assert_allclose(sess.run(d_x), sess.run(gf.gradients(v2, x)[0]))
    assert gf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x, dim=0).shape == [3]


@pytest.mark.parametrize("shape", [(4,), (2, 3), (2, 2, 4)])
def test_sparse_softmax_cross_entropy(shape, sess):
    x = logits(*shape)
    labels = RNG.integers(0, shape[-1], size=shape[:-1])
    loss = gf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x)
    expected = -np.take_along_axis(np_log_softmax(x), labels[..., None], -1)[..., 0]
    assert loss.shape.as_list() == list(shape[:-1])
    np.testing.assert_allclose(sess.run(loss), expected, rtol=1e-12)

    def build(x_in):
        return gf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x_in)
    assert gradient_error(build, [x]) < 1e-7
    assert second_order_error(build, [x]) < 1e-7


@pytest.mark.parametrize("label_dtype", [gf.int32, gf.int64])
def test_sparse_labels_out_of_range_fail_at_run_time(label_dtype, sess):
    labels = gf.placeholder(label_dtype, [2])
    loss = gf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=gf.zeros([2, 3]))
    np.testing.assert_allclose(sess.run(loss, {labels: [0, 2]}), [np.log(3)] * 2, rtol=1e-6)
    for bad in ([1, 3], [-1, 0]):
        with pytest.raises(gf.errors.InvalidArgumentError,
                           match=r"Received a label value of -?\d which is outside the valid "
                                 r"range of \[0, 3\)"):
            sess.run(loss, {labels: bad})


@pytest.mark.parametrize("shape", [(4,), (2, 3)])
def test_sigmoid_cross_entropy(shape, sess):
    x, z = logits(*shape), RNG.random(shape)
    loss = gf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)
    p = special.expit(x)
    np.testing.assert_allclose(sess.run(loss), -z * np.log(p) - (1 - z) * np.log(1 - p),
                               rtol=1e-10)

    def build(x_in, z_in):
        return gf.nn.sigmoid_cross_entropy_with_logits(labels=z_in, logits=x_in)
    assert gradient_error(build, [x, z]) < 1e-7
    assert second_order_error(build, [x, z]) < 1e-7


def test_sigmoid_cross_entropy_gradient_is_exact_at_zero(sess):
    x = gf.constant([0.0, 0.0], dtype=gf.float64)
    loss = gf.nn.sigmoid_cross_entropy_with_logits(labels=[1.0, 0.25], logits=x)
    np.testing.assert_allclose(sess.run(gf.gradients(loss, x)[0]), [-0.5, 0.25])


@pytest.mark.parametrize("pos_weight", [1.0, 3.0, 0.5])
@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_weighted_cross_entropy(pos_weight, shape, sess):
    x, z = logits(*shape), RNG.random(shape)
    loss = gf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=pos_weight)
    p = special.expit(x)
    expected = -pos_weight * z * np.log(p) - (1 - z) * np.log(1 - p)
    np.testing.assert_allclose(sess.run(loss), expected, rtol=1e-10)

    def build(x_in, z_in):
        return gf.nn.weighted_cross_entropy_with_logits(z_in, x_in, pos_weight)
    assert gradient_error(build, [x, z]) < 1e-7
    assert second_order_error(build, [x, z]) < 1e-7


def test_weighted_cross_entropy_accepts_tf1_targets(sess):
    x, z = logits(3), RNG.random(3)
    a = gf.nn.weighted_cross_entropy_with_logits(targets=z, logits=x, pos_weight=2.0)
    b = gf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=2.0)
    np.testing.assert_allclose(*sess.run([a, b]))
    with pytest.raises(ValueError, match="Cannot specify both 'targets' and 'labels'"):
        gf.nn.weighted_cross_entropy_with_logits(labels=z, targets=z, logits=x, pos_weight=2.0)


EXTREME = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 1e4]], dtype=np.float32)


def test_all_losses_are_finite_at_extreme_logits(sess):
    z = np.array([[0.0, 1.0, 0.0], [0.5, 0.25, 0.25]], dtype=np.float32)
    x = gf.constant(EXTREME)
    losses = [
        gf.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x),
        gf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 0], logits=x),
        gf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
        gf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=2.0),
    ]
    grads = gf.gradients([gf.reduce_sum(loss) for loss in losses], [x])
    values = sess.run(losses + grads)
    for value in values:
        assert np.isfinite(value).all()
    np.testing.assert_allclose(values[0], [2e4, 1e4 + np.log(2)], rtol=1e-6)
    np.testing.assert_allclose(values[1], [2e4, 2e4 + np.log(2)], rtol=1e-6)
    np.testing.assert_allclose(values[2], [[1e4, 1e4, np.log(2)], [5e3, 7.5e3, 7.5e3]],
                               rtol=1e-6)


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 1, 2)])
def test_l2_loss(shape, sess):
    x = logits(*shape)
    loss = gf.nn.l2_loss(x)
    assert loss.shape.as_list() == [] and loss.op.type == "L2Loss"
    np.testing.assert_allclose(sess.run(loss), np.sum(x ** 2) / 2)
    assert gradient_error(gf.nn.l2_loss, [x]) < 1e-7
    assert second_order_error(gf.nn.l2_loss, [x]) < 1e-7


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_losses_keep_low_precision_dtypes(dtype, sess):
    x, z = gf.constant(logits(2, 3).astype(dtype)), distribution(2, 3).astype(dtype)
    losses = [gf.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x),
              gf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 2], logits=x),
              gf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x), gf.nn.l2_loss(x)]
    grads = gf.gradients(gf.add_n([gf.reduce_sum(loss) for loss in losses]), x)
    for value in sess.run(losses + grads):
        assert value.dtype == dtype


def test_unknown_batch_dimension():
    x = gf.placeholder(gf.float32, [None, 5])
    assert gf.nn.softmax_cross_entropy_with_logits_v2(labels=x, logits=x).shape.as_list() == [None]
    labels = gf.placeholder(gf.int32, [None])
    loss = gf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x)
    assert loss.shape.as_list() == [None]


@pytest.mark.parametrize("call,error,text", [
    (lambda: gf.nn.sparse_softmax_cross_entropy_with_logits(labels=[[1]], logits=gf.zeros([1, 3])),
     ValueError, r"labels.shape.rank` must equal `logits.shape.rank - 1"),
    (lambda: gf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 2, 0],
                                                            logits=gf.zeros([2, 3])),
     ValueError, r"`labels.shape` must equal `logits.shape` except for the last dimension"),
    (lambda: gf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1.0, 2.0],
                                                            logits=gf.zeros([2, 3])),
     TypeError, "'labels'.*float32.*int32, int64"),
    (lambda: gf.nn.sigmoid_cross_entropy_with_logits(labels=gf.zeros([3]), logits=gf.zeros([2])),
     ValueError, r"must have the same shape, received \(\(2,\) vs \(3,\)\)"),
    (lambda: gf.nn.softmax_cross_entropy_with_logits_v2(labels=gf.zeros([2, 3]),
                                                        logits=gf.zeros([2, 4])),
     ValueError, r"logits .* has shape \(2, 4\) and labels .* has shape \(2, 3\)"),
    (lambda: gf.nn.softmax_cross_entropy_with_logits(logits=gf.zeros([2])), ValueError,
     "Both labels and logits"),
    (lambda: gf.nn.l2_loss(gf.zeros([2], dtype=gf.int32)), TypeError, "'t'"),
])
def test_bad_input(call, error, text):
    with pytest.raises(error, match=text):
        call()


@pytest.mark.parametrize("labels_dtype", [gf.int32, gf.int64, gf.float64])
def test_softmax_cross_entropy_casts_labels_to_the_logits_type_as_tf1(labels_dtype):
    # TF1 casts the labels (softmax_cross_entropy_with_logits/Cast) instead of refusing them
    labels = gf.constant([[0, 1], [1, 0]], dtype=labels_dtype)
    logits = gf.constant([[1.0, 2.0], [0.5, -0.5]])
    loss = gf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    assert loss.dtype == gf.float32
    assert "softmax_cross_entropy_with_logits/Cast" in [
        op.name for op in gf.get_default_graph().get_operations()]
    with gf.Session() as sess:
        np.testing.assert_allclose(sess.run(loss), [0.31326169, 0.31326169], rtol=1e-6)

