"""Every registered op type is either in the table of TF 2.21's op definitions
(gradflow/io/tf_op_defs.json, so GraphDefs of it carry TF's attrs and TF reads them) or one
of gradflow's own internal op types. A new TF op type added without regenerating the table
(``PYTHONPATH=. python tests/fixtures/tf/make_tf_op_defs.py`` under TensorFlow) fails here."""
import json
import subprocess
import sys

from gradflow.io.tf_op_defs import TF_OP_DEFS

# Op types TF does not have: gradflow's loop, gradient and layout internals.
GRADFLOW_ONLY = {
    "AddVariants", "ArgSort", "BooleanMask", "BooleanMaskGrad", "CaseCheck", "CustomGradient",
    "LoopHistoryCotangent", "LoopHistoryCotangentRead", "LoopHistoryRead", "LoopHistorySize",
    "PermuteAlongAxis", "ProdLayout", "ReducedShape", "SequenceMask",
    "SigmoidCrossEntropyWithLogits", "SparseApplyAdam", "SparseApplyGradientDescent",
    "TensorArrayCotangentGather", "TensorArrayCotangentScatter", "UnicodeSplit",
    "ZerosLikeVariant"}


def test_every_op_type_is_tfs_or_gradflows_own():
    # a fresh interpreter: other tests register op types of their own in this one
    listing = subprocess.run(
        [sys.executable, "-c", "import json, gradflow; from gradflow.framework.registry import "
         "registered_op_types; print(json.dumps(sorted(registered_op_types())))"],
        check=True, capture_output=True, text=True).stdout
    missing = set(json.loads(listing)) - set(TF_OP_DEFS)
    assert missing == GRADFLOW_ONLY, (
        f"not in tf_op_defs.json: {sorted(missing - GRADFLOW_ONLY)} (regenerate it); "
        f"now in it: {sorted(GRADFLOW_ONLY - missing)}")


def test_the_table_reads_back_as_bytes_and_tuples():
    attrs, inputs, outputs = TF_OP_DEFS["All"]
    assert attrs["keep_dims"] == ("bool", b"(\x00") and attrs["Tidx"] == ("type", b"0\x03")
    assert inputs == [("", "", ""), ("Tidx", "", "")] and outputs == [("", "", "")]
