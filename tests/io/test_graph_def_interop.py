"""GraphDef both ways: TF 2.21's frozen CNN (tests/fixtures/tf/files/frozen.pb) imports,
runs with TF's outputs and differentiates with TF's gradients; gradflow's GraphDefs use
TF's op types and attrs, re-import, and (where TF is installed) import and run in TF."""
import os
import shutil
import subprocess

import numpy as np
import pytest
from google.protobuf import text_format

import gradflow as gf
from gradflow.io.graph_import import importable_op_types
from tf_fixtures import FIXTURES, load_arrays, load_json

FROZEN = FIXTURES / "files" / "frozen.pb"


def _frozen() -> gf.GraphDef:
    return gf.GraphDef.FromString(FROZEN.read_bytes())


def _snapshot(graph):
    return [op.name for op in graph.get_operations()], \
        {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}


def test_tfs_frozen_graph_runs_and_differentiates_like_tf():
    arrays = load_arrays("tf_files")
    with gf.Graph().as_default() as graph:
        x, probs = gf.import_graph_def(_frozen(), return_elements=["x:0", "probs:0"])
        assert x.name == "import/x:0" and probs.op.name == "import/probs"
        assert {op.type for op in graph.get_operations()} >= {"Conv2D", "MaxPool", "BiasAdd"}
        dx = gf.gradients(gf.reduce_sum(probs * arrays["w"]), x)[0]
        with gf.Session() as sess:
            got, grad = sess.run([probs, dx], {x: arrays["x"]})
    np.testing.assert_allclose(got, arrays["probs"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(grad, arrays["grad_x"], rtol=1e-4, atol=1e-7)


def test_every_op_type_tf_wrote_is_importable():
    assert set(load_json("tf_files")["frozen_op_types"]) <= set(importable_op_types())


def test_input_map_name_prefix_and_return_elements():
    arrays = load_arrays("tf_files")
    with gf.Graph().as_default():
        fed = gf.placeholder(gf.float32, [2, 8, 8, 1], name="images")
        probs, probs_op = gf.import_graph_def(_frozen(), input_map={"x": fed},
                                              return_elements=["probs:0", "probs"],
                                              name="net")
        assert probs_op is probs.op and probs.op.name == "net/probs"
        assert probs.shape.as_list() == [2, 3]
        with gf.Session() as sess:
            np.testing.assert_allclose(sess.run(probs, {fed: arrays["x"]}), arrays["probs"],
                                       rtol=1e-5, atol=1e-7)
        again = gf.import_graph_def(_frozen(), return_elements=["probs:0"], name="net")[0]
        assert again.op.name == "net_1/probs"


def test_unknown_op_type_names_node_and_type_and_changes_nothing():
    graph_def = _frozen()
    graph_def.node[5].op = "FancyTFOnlyOp"
    with gf.Graph().as_default() as graph:
        gf.constant(1.0, name="before")
        snapshot = _snapshot(graph)
        with pytest.raises(ValueError, match="Node 'Conv2D': op type 'FancyTFOnlyOp' is "
                                             "not supported"):
            gf.import_graph_def(graph_def)
        assert _snapshot(graph) == snapshot


def test_bad_graph_defs_raise_clear_errors_and_change_nothing():
    with gf.Graph().as_default() as graph:
        one = gf.constant(1.0)
        snapshot = _snapshot(graph)
        broken = _frozen()
        broken.node[-1].input[0] = "nowhere:0"
        with pytest.raises(ValueError, match="Node 'probs': Unknown input node 'nowhere:0'"):
            gf.import_graph_def(broken)
        with pytest.raises(ValueError, match="not found in graph_def"):
            gf.import_graph_def(_frozen(), return_elements=["missing:0"])
        with pytest.raises(ValueError, match="not found in graph_def"):
            gf.import_graph_def(_frozen(), input_map={"ghost:0": one})
        with pytest.raises(TypeError, match="GraphDef"):
            gf.import_graph_def("not a graph def")
        random = gf.GraphDef()
        text_format.Parse('node { name: "r" op: "RandomUniform" input: "s" '
                          'attr { key: "T" value { type: DT_INT32 } } '
                          'attr { key: "dtype" value { type: DT_FLOAT } } } '
                          'node { name: "s" op: "Const" }', random)
        with pytest.raises(ValueError, match="Node 'r': op type 'RandomUniform' needs"):
            gf.import_graph_def(random)
        loop = gf.GraphDef()
        text_format.Parse('node { name: "a" op: "Identity" input: "b" '
                          'attr { key: "T" value { type: DT_FLOAT } } } '
                          'node { name: "b" op: "Identity" input: "a" '
                          'attr { key: "T" value { type: DT_FLOAT } } }', loop)
        with pytest.raises(ValueError, match="cycle"):
            gf.import_graph_def(loop)
        assert _snapshot(graph) == snapshot


def _gradflow_cnn():
    arrays = load_arrays("tf_files")
    x = gf.placeholder(gf.float32, [None, 8, 8, 1], name="x")
    kernel = gf.Variable(arrays["var/conv/kernel"], name="conv/kernel")
    bias = gf.Variable(arrays["var/conv/bias"], name="conv/bias")
    conv = gf.nn.bias_add(gf.nn.conv2d(x, kernel, [1, 1, 1, 1], "SAME"), bias)
    pooled = gf.nn.max_pool(gf.nn.relu(conv), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    flat = gf.reshape(pooled, [-1, 64])
    weights = gf.Variable(arrays["var/dense/kernel"], name="dense/kernel")
    logits = gf.add(gf.matmul(flat, weights), arrays["var/dense/bias"], name="logits")
    gf.reduce_sum(gf.nn.softmax(logits, name="probs"), axis=1, keepdims=True, name="total")
    gf.concat([logits, logits], axis=1, name="both")
    return x


def test_gradflow_graph_def_uses_tfs_op_types_and_attrs():
    with gf.Graph().as_default() as graph:
        _gradflow_cnn()
        nodes = {n.name: n for n in graph.as_graph_def(add_shapes=True).node}
    assert nodes["conv/kernel/read"].op == "Identity"
    assert nodes["conv/kernel/read"].attr["T"].type == 1
    assert set(nodes["Conv2D"].attr) >= {"T", "strides", "padding", "data_format"}
    assert "axis" not in nodes["probs"].attr and nodes["probs"].attr["T"].type == 1
    assert nodes["total"].attr["keep_dims"].b and nodes["total"].attr["Tidx"].type == 3
    assert nodes["both"].attr["N"].i == 2 and nodes["both"].attr["Tidx"].type == 3
    assert nodes["Reshape"].attr["Tshape"].type == 3
    assert [d.size for d in nodes["Reshape"].attr["_output_shapes"].list.shape[0].dim] == \
        [-1, 64]


def test_freeze_export_and_reimport_round_trip(tmp_path):
    arrays = load_arrays("tf_files")
    with gf.Graph().as_default() as graph:
        x = _gradflow_cnn()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            expected = sess.run("probs:0", {x: arrays["x"]})
            frozen = gf.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), ["probs"])
        assert gf.graph_util.tensor_shape_from_node_def_name(graph, "Reshape").as_list() \
            == [None, 64]
    assert {n.op for n in frozen.node} <= set(importable_op_types())
    assert "VariableV2" not in {n.op for n in frozen.node}
    assert not any(n.name.endswith("/Assign") for n in frozen.node)
    binary = gf.train.write_graph(frozen, str(tmp_path), "frozen.pb", as_text=False)
    text = gf.train.write_graph(frozen, str(tmp_path / "txt"), "frozen.pbtxt")
    from_text = text_format.Parse(open(text).read(), gf.GraphDef())
    assert from_text == gf.GraphDef.FromString(open(binary, "rb").read()) == frozen
    with gf.Graph().as_default():
        probs = gf.import_graph_def(from_text, return_elements=["probs:0"], name="")[0]
        with gf.Session() as sess:
            np.testing.assert_array_equal(sess.run(probs, {"x:0": arrays["x"]}), expected)


def test_whole_graph_with_variables_reimports_and_trains():
    with gf.Graph().as_default() as graph:
        _gradflow_cnn()
        graph_def = graph.as_graph_def()
    with gf.Graph().as_default() as again:
        gf.import_graph_def(graph_def, name="")
        assert again.get_operation_by_name("conv/kernel/read").type == "ReadVariableOp"
        assert again.get_operation_by_name("conv/kernel/Assign").colocation_groups() == \
            [b"loc:@conv/kernel"]
        kernel = again.get_tensor_by_name("conv/kernel/read:0")
        with gf.Session() as sess:
            sess.run([again.get_operation_by_name(n + "/Assign")
                      for n in ("conv/kernel", "conv/bias", "dense/kernel")])
            np.testing.assert_array_equal(sess.run(kernel),
                                          load_arrays("tf_files")["var/conv/kernel"])


def test_extract_sub_graph_and_remove_training_nodes():
    graph_def = _frozen()
    sub = gf.graph_util.extract_sub_graph(graph_def, ["Relu"])
    assert [n.name for n in sub.node] == ["x", "conv/kernel", "conv/kernel/read", "conv/bias",
                                          "conv/bias/read", "Conv2D", "BiasAdd", "Relu"]
    with pytest.raises(AssertionError, match="nope is not in graph"):
        gf.graph_util.extract_sub_graph(graph_def, ["nope"])
    with pytest.raises(TypeError, match="must be a list"):
        gf.graph_util.extract_sub_graph(graph_def, "Relu")
    slim = gf.graph_util.remove_training_nodes(graph_def, protected_nodes=["dense/bias/read"])
    names = {n.name: n for n in slim.node}
    assert "conv/kernel/read" not in names and "dense/bias/read" in names
    assert list(names["Conv2D"].input) == ["x", "conv/kernel"]
    arrays = load_arrays("tf_files")
    with gf.Graph().as_default():
        probs = gf.import_graph_def(slim, return_elements=["probs:0"])[0]
        with gf.Session() as sess:
            np.testing.assert_allclose(sess.run(probs, {"import/x:0": arrays["x"]}),
                                       arrays["probs"], rtol=1e-5, atol=1e-7)


def test_control_inputs_and_devices_survive_import():
    with gf.Graph().as_default() as graph:
        a = gf.constant(1.0, name="a")
        with gf.device("/cpu:0"), gf.control_dependencies([a.op]):
            gf.identity(gf.constant(2.0, name="b"), name="c")
        graph_def = graph.as_graph_def()
    with gf.Graph().as_default():
        b, c = gf.import_graph_def(graph_def, return_elements=["b", "c"], name="p")
        assert [op.name for op in b.control_inputs] == ["p/a"]
        assert c.device == b.device == "/device:CPU:0"


TF_SCRIPT = """
import sys
import numpy as np
import tensorflow as tf
tf1 = tf.compat.v1
tf1.disable_v2_behavior()
graph_def = tf1.GraphDef.FromString(open(sys.argv[1], "rb").read())
data = np.load(sys.argv[2])
with tf1.Graph().as_default():
    probs, = tf1.import_graph_def(graph_def, return_elements=["probs:0"], name="")
    with tf1.Session() as sess:
        got = sess.run(probs, {"x:0": data["x"]})
assert np.allclose(got, data["expected"], rtol=1e-5, atol=1e-7), (got, data["expected"])
print("TF-OK")
"""


@pytest.mark.slow
def test_tf_imports_and_runs_gradflows_graph_def(tmp_path):
    python = os.environ.get("GRADFLOW_TF_PYTHON", "/opt/tfenv/bin/python")
    if not (os.path.exists(python) or shutil.which(python)):
        pytest.skip("no TensorFlow interpreter (set GRADFLOW_TF_PYTHON)")
    arrays = load_arrays("tf_files")
    with gf.Graph().as_default() as graph:
        x = _gradflow_cnn()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            expected = sess.run("probs:0", {x: arrays["x"]})
            frozen = gf.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(add_shapes=True), ["probs", "total", "both"])
    gf.train.write_graph(frozen, str(tmp_path), "gf.pb", as_text=False)
    np.savez(tmp_path / "data.npz", x=arrays["x"], expected=expected)
    (tmp_path / "check.py").write_text(TF_SCRIPT)
    done = subprocess.run([python, str(tmp_path / "check.py"), str(tmp_path / "gf.pb"),
                           str(tmp_path / "data.npz")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if done.returncode != 0 and "No module named 'tensorflow'" in done.stderr:
        pytest.skip("TensorFlow is not installed")
    assert done.returncode == 0 and "TF-OK" in done.stdout, done.stderr[-3000:]


def test_frozen_node_defs_match_tfs_attr_for_attr():
    """The same CNN frozen by gradflow and by TF: per op type the same attrs and values
    (TF's defaults included) and the same number of inputs."""
    with gf.Graph().as_default() as graph:
        _gradflow_cnn()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            mine = gf.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), ["probs"])
    ours = {node.op: node for node in mine.node}
    for theirs in _frozen().node:
        node = ours[theirs.op]
        assert sorted(node.attr) == sorted(set(theirs.attr) - {"_output_shapes"}), theirs.op
        assert len(node.input) == len(theirs.input), theirs.op
        if theirs.op not in ("Const", "Placeholder"):
            for name in set(theirs.attr) - {"_class", "_output_shapes"}:
                assert node.attr[name] == theirs.attr[name], (theirs.op, name)
