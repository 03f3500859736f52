"""contrib-free sequence_loss: tf.losses with a sequence_mask as weights, against TF 2.21."""
import numpy as np
from sequence_fixture import ARRAYS, DATA

import gradflow as gf

CASE = DATA["sequence_loss"]


def test_masked_sequence_loss_matches_tf(sess):
    logits = gf.constant(ARRAYS["sequence_loss/logits"])
    mask = gf.sequence_mask(CASE["lengths"], 4, dtype=gf.float64)
    loss = gf.losses.sparse_softmax_cross_entropy(CASE["labels"], logits, weights=mask)
    (grad,) = gf.gradients(loss, [logits])
    value, grad_value = sess.run([loss, grad])
    np.testing.assert_allclose(value, CASE["value"], rtol=1e-6)
    np.testing.assert_allclose(grad_value, ARRAYS["sequence_loss/grad"], rtol=1e-6, atol=1e-9)
    assert loss.name == CASE["name"] and loss.dtype.name == CASE["dtype"]
    # Steps past each sequence's end get no gradient.
    assert np.all(grad_value[1, 1:] == 0) and np.all(grad_value[2, 2:] == 0)
