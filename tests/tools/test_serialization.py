"""save_graph / load_graph: faithful round trips and refusal of malformed files."""
import json
import zipfile

import numpy as np
import pytest

import gradflow as gf
from gradflow.tools import LoadLimits, load_graph, save_graph


def build_model():
    """A graph touching every attr kind: arrays, strings, shapes, dtypes, functions..."""
    w = gf.Variable(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), name="w")
    x = gf.placeholder(gf.float32, [None, 3], name="x")
    with gf.name_scope("layer"), gf.device("/cpu:0"):
        h = gf.tanh(gf.matmul(x, w))
    gf.constant(["a", b"\x00b"], name="names")
    gf.constant(np.float64(np.nan), name="not_a_number")
    loss = gf.reduce_mean(h * h, name="loss")

    @gf.Defun(gf.float32)
    def cube(t):
        return t * t * t

    branch = gf.cond(loss > 0.0, lambda: cube(loss) + h[0, 0], lambda: loss)
    _, looped = gf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 1.5), [0, branch])
    with gf.control_dependencies([loss]):
        out = gf.identity(looped, name="out")
    (grad,) = gf.gradients(out, w)
    gf.add_to_collection("outputs", out)
    return x, out, grad


FEED = np.arange(6, dtype=np.float32).reshape(2, 3) / 10


def run(graph, names):
    with gf.Session(graph=graph) as sess:
        sess.run(graph.get_operation_by_name("w/Assign"))
        return sess.run([graph.get_tensor_by_name(n) for n in names],
                        {graph.get_tensor_by_name("x:0"): FEED})


def test_round_trip_runs_and_differentiates_identically(tmp_path):
    x, out, grad = build_model()
    original = gf.get_default_graph()
    json_path, npz_path = save_graph(original, str(tmp_path / "model"))
    assert json_path.endswith("model.json") and npz_path.endswith("model.npz")
    loaded = load_graph(json_path)
    assert [(op.name, op.type, op.device, [t.name for t in op.inputs],
             [c.name for c in op.control_inputs]) for op in loaded.get_operations()] == \
        [(op.name, op.type, op.device, [t.name for t in op.inputs],
          [c.name for c in op.control_inputs]) for op in original.get_operations()]
    np.testing.assert_array_equal(*[run(g, [out.name, grad.name])[1]
                                    for g in (original, loaded)])
    names = loaded.get_tensor_by_name("names:0")
    with gf.Session(graph=loaded) as sess:
        assert list(sess.run(names)) == [b"a", b"\x00b"]  # TF fetches strings as bytes
        assert np.isnan(sess.run(loaded.get_tensor_by_name("not_a_number:0")))
    with loaded.as_default():
        (again,) = gf.gradients(loaded.get_tensor_by_name(out.name),
                                loaded.get_tensor_by_name("w:0"))
    assert again.name.startswith("gradients_1/")  # loaded scopes count as used
    np.testing.assert_array_equal(run(loaded, [again.name])[0], run(original, [grad.name])[0])
    assert [t.name for t in loaded.get_collection("outputs")] == [out.name]
    assert loaded.get_operation_by_name(grad.op.name).original_op.name == \
        grad.op.original_op.name


def test_loaded_graph_is_drawn_with_gradient_clusters(tmp_path):
    build_model()
    save_graph(gf.get_default_graph(), str(tmp_path / "m"))
    assert 'label="gradients/"' in gf.to_dot(load_graph(str(tmp_path / "m")))


def test_the_json_is_documented_plain_data(tmp_path):
    build_model()
    save_graph(gf.get_default_graph(), str(tmp_path / "m"))
    document = json.loads((tmp_path / "m.json").read_text())
    assert (document["format"], document["version"]) == ("gradflow.graph", 1)
    main = document["graphs"][-1]
    const = next(op for op in main["ops"] if op["name"] == "layer/MatMul")
    assert const["device"] == "/device:CPU:0"
    kinds = {v["kind"] for g in document["graphs"] for op in g["ops"]
             for v in op["attrs"].values()}
    assert {"dtype", "shape", "array", "string_array", "function", "bool", "int",
            "list"} <= kinds
    with np.load(tmp_path / "m.npz", allow_pickle=False) as arrays:
        assert all(not arrays[k].dtype.hasobject for k in arrays.files)


def test_unserialisable_values_are_refused_at_save(tmp_path):
    @gf.Defun(gf.float32, python_grad_func=lambda op, g: g)
    def f(t):
        return t * 2.0

    f(gf.constant(1.0))
    with pytest.raises(ValueError, match="Python gradient"):
        save_graph(gf.get_default_graph(), str(tmp_path / "m"))
    graph = gf.Graph()
    with graph.as_default():
        op = gf.no_op(name="odd")
        op.set_attr("payload", object())
    with pytest.raises(ValueError, match="attr 'payload' of op 'odd'.*type object"):
        save_graph(graph, str(tmp_path / "m2"))


def simple_file(tmp_path):
    with gf.Graph().as_default() as graph:
        gf.add(gf.constant([1.0, 2.0], name="c"), 1.0, name="y")
    save_graph(graph, str(tmp_path / "m"))
    return json.loads((tmp_path / "m.json").read_text())


def write(tmp_path, document):
    (tmp_path / "m.json").write_text(json.dumps(document))
    return str(tmp_path / "m")


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["graphs"][-1]["ops"][0].update(type="Evil"), "unknown op type 'Evil'"),
    (lambda d: d["graphs"][-1]["ops"][-1].update(inputs=["nowhere:0", "c:0"]),
     "bad input reference 'nowhere:0'"),
    (lambda d: d["graphs"][-1]["ops"][-1].update(inputs=["c:5", "c:0"]),
     "bad input reference 'c:5'"),
    (lambda d: d["graphs"][-1]["ops"][0]["attrs"]["dtype"].update(kind="pickle"),
     "unknown attr kind 'pickle'"),
    (lambda d: d["graphs"][-1]["ops"][0]["attrs"]["dtype"].update(value=3), "bad dtype value"),
    (lambda d: d["graphs"][-1]["ops"][0]["attrs"]["value"].update(key="a99"),
     "array 'a99' is not in the array file"),
    (lambda d: d["graphs"][-1]["ops"].append(dict(d["graphs"][-1]["ops"][0])),
     "repeats the name of an earlier op"),
    (lambda d: d["graphs"][-1]["ops"][0].update(name="bad name!"), "not a valid node name"),
    (lambda d: d.update(version=99), "format version 99"),
    (lambda d: d.update(format="other"), "not a gradflow graph file"),
    (lambda d: d["graphs"][-1]["ops"][0]["attrs"].update(
        extra={"kind": "function", "value": 0}), "function 0 is not defined"),
    (lambda d: d["graphs"][-1]["ops"][0]["attrs"].update(
        deep=json.loads('{"kind": "list", "value": [' * 40 + ']}' * 40)), "nested deeper"),
    (lambda d: d["graphs"][-1]["ops"][-1].update(attrs={"T": {"kind": "int", "value": True}}),
     "bad int value"),
    (lambda d: d.update(graphs="x"), "'graphs' must be a list"),
])
def test_malformed_files_are_rejected_by_name(tmp_path, mutate, message):
    document = simple_file(tmp_path)
    mutate(document)
    with pytest.raises(ValueError, match=message):
        load_graph(write(tmp_path, document))


def test_wrong_attr_values_are_reported_with_the_op(tmp_path):
    document = simple_file(tmp_path)
    document["graphs"][-1]["ops"][0]["attrs"]["dtype"]["value"] = "int32"
    with pytest.raises(ValueError, match="op 'c' \\(Const\\): its value must be an array of its "
                       "dtype attr, got float32 for int32"):
        load_graph(write(tmp_path, document))


def test_invalid_json_and_limits(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_graph(str(tmp_path / "bad.json"))
    (tmp_path / "nan.json").write_text('{"format": NaN}')
    with pytest.raises(ValueError, match="not valid JSON|non-standard"):
        load_graph(str(tmp_path / "nan.json"))
    path = write(tmp_path, simple_file(tmp_path))
    with pytest.raises(ValueError, match="over the limit of 2"):
        load_graph(path, LoadLimits(max_ops=2))
    with pytest.raises(ValueError, match="over the limit of 10"):
        load_graph(path, LoadLimits(max_json_bytes=10))
    with pytest.raises(ValueError, match="needs 8 bytes, over the limit of 4"):
        load_graph(path, LoadLimits(max_array_bytes=4))


def test_hostile_array_files_never_unpickle(tmp_path):
    path = write(tmp_path, simple_file(tmp_path))
    with zipfile.ZipFile(tmp_path / "m.npz", "w") as archive:
        with archive.open("a0.npy", "w") as member:
            np.lib.format.write_array(member, np.array([print], dtype=object))
    with pytest.raises(ValueError, match="holds Python objects"):
        load_graph(path)
    (tmp_path / "m.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ValueError, match="NPZ archive"):
        load_graph(path)


def test_huge_declared_array_is_refused_before_allocation(tmp_path):
    path = write(tmp_path, simple_file(tmp_path))
    header = {"descr": "<f4", "fortran_order": False, "shape": (1 << 40,)}
    with zipfile.ZipFile(tmp_path / "m.npz", "w") as archive:
        with archive.open("a0.npy", "w") as member:
            np.lib.format.write_array_header_1_0(member, header)
    with pytest.raises(ValueError, match="over the limit"):
        load_graph(path)


def test_variables_are_rebuilt_in_their_collections(tmp_path):
    graph = gf.Graph()
    with graph.as_default():
        w = gf.Variable(np.ones(3), name="w")
        gf.Variable(2.0, name="frozen", trainable=False, dtype=gf.float64)
        loss = gf.reduce_sum(w * w)
    gf.tools.save_graph(graph, str(tmp_path / "model"))
    loaded = gf.tools.load_graph(str(tmp_path / "model"))
    with loaded.as_default():
        assert [v.name for v in gf.global_variables()] == ["w:0", "frozen:0"]
        assert [v.name for v in gf.trainable_variables()] == ["w:0"]
        (grad,) = gf.gradients(loaded.get_tensor_by_name(loss.name), gf.trainable_variables())
        with gf.Session() as session:
            session.run(gf.global_variables_initializer())
            np.testing.assert_array_equal(session.run(grad), [2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match="needs a VariableV2 op"):
        gf.Variable.from_ops(loss.op)
