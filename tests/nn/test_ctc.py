"""CTC: ctc_loss and its gradient, the greedy and beam-search decoders, against TF 2.21."""
import numpy as np
import pytest
from gradcheck import gradient_error
from tf_fixtures import load_arrays, load_json

import gradflow as gf

FIXTURE = load_json("sequence_ops_ctc")
ARRAYS = load_arrays("sequence_ops_ctc")
LOSS_CASES = {case["name"]: case for case in FIXTURE["loss"]}
DECODE_CASES = {case["name"]: case for case in FIXTURE["decode"]}
ERRORS = {case["name"]: case for case in FIXTURE["errors"]}


def sparse_labels(labels):
    indices = [[b, j] for b, row in enumerate(labels) for j in range(len(row))]
    values = [c for row in labels for c in row]
    return gf.SparseTensor(np.asarray(indices, np.int64).reshape(-1, 2),
                           np.asarray(values, np.int32),
                           [len(labels), max(len(r) for r in labels)])


@pytest.mark.parametrize("name", sorted(LOSS_CASES))
def test_ctc_loss_and_gradient_match_tf(name, sess):
    case = LOSS_CASES[name]
    x = gf.constant(ARRAYS[f"{name}/logits"])
    loss = gf.nn.ctc_loss(sparse_labels(case["labels"]), x, case["lengths"], **case["options"])
    (grad,) = gf.gradients(gf.reduce_sum(loss * ARRAYS[f"{name}/weights"]), [x])
    loss_value, grad_value = sess.run([loss, grad])
    np.testing.assert_allclose(loss_value, ARRAYS[f"{name}/loss"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(grad_value, ARRAYS[f"{name}/grad"], rtol=1e-6, atol=1e-6)
    assert loss.name == case["loss_name"]
    assert loss.shape.as_list() == [len(case["labels"])]


def test_ctc_loss_op_names_match_tf():
    case = LOSS_CASES["basic"]
    x = gf.constant(ARRAYS["basic/logits"])
    loss = gf.nn.ctc_loss(sparse_labels(case["labels"]), x, case["lengths"])
    gf.gradients(loss, [x])
    names = {op.name: op.type for op in gf.get_default_graph().get_operations()}
    for name, op_type in case["ops"]:
        if name.startswith(("CTCLoss", "SparseTensor", "gradients/CTCLoss_grad/PreventGradient")):
            assert names.get(name) == op_type, name


@pytest.mark.parametrize("options", [{}, {"ctc_merge_repeated": False},
                                     {"preprocess_collapse_repeated": True},
                                     {"time_major": False}])
def test_ctc_loss_numeric_gradient(options):
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((5, 2, 4))
    if not options.get("time_major", True):
        logits = rng.standard_normal((2, 5, 4))
    error = gradient_error(lambda x: gf.nn.ctc_loss(sparse_labels([[1, 1], [0, 2, 0]]), x,
                                                    [5, 4], **options), [logits])
    assert error < 1e-7


def test_ctc_loss_second_derivative_is_refused():
    x = gf.constant(np.zeros((3, 1, 3)))
    loss = gf.nn.ctc_loss(sparse_labels([[0]]), x, [3])
    (grad,) = gf.gradients(loss, [x])
    with pytest.raises(LookupError, match="second derivative of ctc_loss"):
        gf.gradients(gf.reduce_sum(grad), [x])


@pytest.mark.parametrize("name", ["not_enough_time", "empty_label", "empty_label_ignored",
                                  "too_long_sequence"])
def test_ctc_loss_runtime_errors_match_tf(name, sess):
    case = ERRORS[name]
    loss = gf.nn.ctc_loss(sparse_labels(case["labels"]), gf.constant(np.zeros((4, 1, 4))),
                          case["lengths"], **case["options"])
    key = case["message"].split("\n")[-2].split("(")[0].split(" in batch")[0].strip()
    with pytest.raises(gf.errors.InvalidArgumentError, match=key.replace("(", r"\(")):
        sess.run(loss)


def test_ctc_loss_refuses_blank_as_a_label(sess):
    loss = gf.nn.ctc_loss(sparse_labels([[0, 3]]), gf.constant(np.zeros((4, 1, 4))), [4])
    with pytest.raises(gf.errors.InvalidArgumentError, match="the last class is the blank"):
        sess.run(loss)


def test_ctc_loss_ignores_sequences_too_short_when_asked(sess):
    loss = gf.nn.ctc_loss(sparse_labels([[0, 1, 0], [1]]), gf.constant(np.ones((2, 2, 3))),
                          [2, 2], ignore_longer_outputs_than_inputs=True)
    value = sess.run(loss)
    assert value[0] == 0.0 and value[1] > 0.0


def test_ctc_loss_bad_calls_leave_graph_unchanged():
    graph = gf.get_default_graph()
    x = gf.constant(np.zeros((3, 2, 4)))
    labels = sparse_labels([[0], [1]])
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(TypeError, match="labels"):
        gf.nn.ctc_loss([[0]], x, [3, 3])
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        gf.nn.ctc_loss(labels, x, [3, 3, 3])
    assert [op.name for op in graph.get_operations()] == before


def decoded_matches(values, recorded):
    for got, want in zip(values, recorded, strict=True):
        np.testing.assert_array_equal(got.indices.reshape(-1, 2),
                                      np.asarray(want["indices"]).reshape(-1, 2))
        assert got.values.tolist() == want["values"]
        assert got.dense_shape.tolist() == want["dense_shape"]


@pytest.mark.parametrize("name", sorted(DECODE_CASES))
def test_decoders_match_tf(name, sess):
    case = DECODE_CASES[name]
    x = gf.constant(ARRAYS[f"{name}/logits"])
    if case["kind"] == "beam":
        decoded, log_probs = gf.nn.ctc_beam_search_decoder(x, case["lengths"], **case["options"])
    else:
        decoded, log_probs = gf.nn.ctc_greedy_decoder(x, case["lengths"], **case["options"])
    values, log_values = sess.run([decoded, log_probs])
    decoded_matches(values, case["decoded"])
    np.testing.assert_allclose(log_values, ARRAYS[f"{name}/log_probs"], rtol=1e-5, atol=1e-5)
    assert [isinstance(d, gf.SparseTensor) for d in decoded] == [True] * len(decoded)
    names = {op.name: op.type for op in gf.get_default_graph().get_operations()}
    for op_name, op_type in case["ops"]:
        if op_name.startswith("CTC"):
            assert names.get(op_name) == op_type


def test_beam_search_arguments_are_checked():
    x = gf.constant(np.zeros((2, 1, 3), np.float32))
    with pytest.raises(ValueError, match="top_paths"):
        gf.nn.ctc_beam_search_decoder(x, [2], beam_width=2, top_paths=3)
    with pytest.raises(ValueError, match="beam_width"):
        gf.nn.ctc_beam_search_decoder(x, [2], beam_width=0)
