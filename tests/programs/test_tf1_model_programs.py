"""Real TF1 model and training programs run unchanged under gradflow give TF 2.21's results.

The programs live in ``tests/fixtures/tf/tf1_model_cases.py`` (a GAN, a VAE, tf.data
regression, attention seq2seq, SavedModel and MetaGraph round trips, batch norm by hand,
a conv autoencoder, REINFORCE, training utilities); ``make_model_programs.py`` recorded
what TensorFlow (``tf.compat.v1``, graph mode) returned for each. Here the same code runs
with ``gradflow.compat.v1`` as ``tf`` and must match with the comparison of
``test_tf1_programs.py``: floats to float32 training tolerance, everything else exactly,
checkpoint files folded into their prefixes (docs/tf1_programs.md).

``KNOWN`` lists the recorded values gradflow still differs on, with what it gives
instead (docs/tf1_programs.md, "Remaining differences"): the test fails when either
side changes, so a fix shows up.
"""
import pathlib
import sys

import pytest

import gradflow
import gradflow.compat.v1 as tf
from test_tf1_programs import assert_matches, checkpoint_prefixes
from tf_fixtures import load_json

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fixtures" / "tf"))
import tf1_model_cases  # noqa: E402

RECORDED = load_json("model_programs")

# program -> {key: gradflow's value}: TF builds softmax_cross_entropy_with_logits_v2 from
# Rank/Shape/Slice/Reshape ops around the kernel (its result is ``<name>/Reshape_2``);
# gradflow's result is the kernel's output.
KNOWN = {"logistic_regression_dataset": {"entropy": "entropy:0"}}


@pytest.mark.parametrize("name", sorted(tf1_model_cases.PROGRAMS))
def test_model_program_matches_tensorflow(name, tmp_path):
    with gradflow.Graph().as_default():
        got = tf1_model_cases.PROGRAMS[name](tf, str(tmp_path))
    want = dict(RECORDED[name])
    for key, value in KNOWN.get(name, {}).items():
        assert want[key] != value, f"{name}.{key}: TF's recorded value is gradflow's now"
        want[key] = value
    if "files" in want:
        got["files"] = checkpoint_prefixes(got["files"])
        want["files"] = checkpoint_prefixes(want["files"])
    assert_matches(got, want, name)
