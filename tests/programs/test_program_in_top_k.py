"""``tf.nn.in_top_k`` (the CIFAR-10 tutorial's eval): values, ties, names and errors as TF 2.21."""
import numpy as np
import pytest

import gradflow as gf
import gradflow.compat.v1 as tf


def test_in_top_k_values_ties_and_non_finite_rows():
    rng = np.random.RandomState(0)
    scores = rng.randint(0, 4, size=(50, 6)).astype(np.float32)  # many ties
    targets = rng.randint(0, 6, size=50)
    with gf.Graph().as_default():
        for k in (1, 2, 3):
            got = tf.Session().run(tf.nn.in_top_k(scores, targets, k))
            want = [(row > row[t]).sum() < k for row, t in zip(scores, targets, strict=True)]
            np.testing.assert_array_equal(got, want)
        # TF 2.21: [1, 1, 1] with target 0 is in the top 1 (ties), a NaN row and an
        # out-of-range target are not.
        x = tf.constant([[1., 5., 3.], [1., 1., 1.], [np.nan, 1., 2.], [4., 2., 6.]])
        got = tf.Session().run(tf.nn.in_top_k(x, tf.constant([1, 0, 2, 7], tf.int64), 1))
        np.testing.assert_array_equal(got, [True, True, False, False])


def test_in_top_k_names_and_shape_as_tf():
    with gf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 3], name="logits")
        plain = tf.nn.in_top_k(x, [1, 0], 1)
        named = tf.nn.in_top_k(x, tf.constant([1, 0], tf.int64), 2, name="named")
        assert plain.op.name == "in_top_k/InTopKV2" and plain.dtype == tf.bool
        assert named.op.name == "named/named"
        assert plain.shape.as_list() == [2]
        assert [op.name for op in g.get_operations() if op.type == "Const"] == [
            "in_top_k/InTopKV2/targets", "in_top_k/InTopKV2/k", "Const", "named/named/k"]
        assert tf.gradients(tf.cast(plain, tf.float32), x) == [None]


@pytest.mark.parametrize("build, error, message", [
    (lambda tf: tf.nn.in_top_k(tf.constant([1., 2.]), [0], 1), ValueError,
     "Shape must be rank 2 but is rank 1"),
    (lambda tf: tf.nn.in_top_k(tf.ones([4, 3]), [0, 1], 1), ValueError,
     "Dimensions must be equal, but are 4 and 2"),
    (lambda tf: tf.nn.in_top_k(tf.ones([2, 3]), [0., 1.], 1), TypeError,
     "'targets' has DataType float32 not in list of allowed values: int32, int64"),
])
def test_in_top_k_bad_input_leaves_the_graph_unchanged(build, error, message):
    with gf.Graph().as_default() as g:
        tf.ones([1])
        before = [op.name for op in g.get_operations()]
        with pytest.raises(error, match=message):
            build(tf)
        after = [op.name for op in g.get_operations() if op.name not in before]
        # only the constants built as arguments before in_top_k was called remain
        assert all(not name.startswith("in_top_k") for name in after)
