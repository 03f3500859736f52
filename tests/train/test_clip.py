"""clip_by_norm, clip_by_global_norm, clip_by_average_norm and global_norm against TF1."""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error
from tf_fixtures import load_json

FIX = load_json("train_clip")
A = np.array(FIX["inputs"]["a"])
B = np.array(FIX["inputs"]["b"])
C = np.array(FIX["inputs"]["c"])


def _snapshot(graph):
    return [op.name for op in graph.get_operations()], \
        {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}


def _close(actual, expected):
    """Compares a value, or a list of values of different shapes, with the record."""
    if isinstance(actual, list):
        assert len(actual) == len(expected)
        for got, want in zip(actual, expected, strict=True):
            _close(got, want)
        return
    np.testing.assert_allclose(actual, np.array(expected, dtype=float), rtol=1e-6,
                               equal_nan=True)


def test_namespaces_match_tf1():
    for fn, spaces in FIX["namespaces"].items():
        for space in spaces:
            module = getattr(gf, space) if space else gf
            assert callable(getattr(module, fn)), (space, fn)


def test_clip_by_norm_values_and_names():
    rec = FIX["clip_by_norm"]
    with gf.Graph().as_default():
        a = gf.constant(A, name="a")
        norm = gf.clip_by_norm(a, 2.0)
        rows = gf.clip_by_norm(a, 2.0, axes=[1], name="rows")
        big = gf.clip_by_norm(a, 100.0)
        zero = gf.clip_by_norm(gf.zeros([3], gf.float64), 1.0)
        assert norm.name == rec["name"] and rows.name == rec["axes_name"]
        with gf.Session() as sess:
            _close(sess.run(norm), rec["value"])
            _close(sess.run(rows), rec["axes_value"])
            _close(sess.run(big), rec["big"])
            _close(sess.run(zero), rec["zero"])


def test_global_norm_and_clip_by_global_norm_values_and_names():
    rec = FIX["clip_by_global_norm"]
    with gf.Graph().as_default():
        a = gf.constant(A, name="a")
        b = gf.constant(B, name="b")
        norm = gf.global_norm([a, None, b])
        clipped, used = gf.clip_by_global_norm([a, None, b], 2.0)
        named, _ = gf.clip_by_global_norm((a, b), 2.0, name="gclip")
        given, given_norm = gf.clip_by_global_norm([a, b], 2.0,
                                                   use_norm=gf.constant(10.0, gf.float64))
        assert norm.name == FIX["global_norm"]["name"]
        assert [t if t is None else t.name for t in clipped] == rec["names"]
        assert used.name == rec["used_name"]
        assert [t.name for t in named] == rec["named"]
        with gf.Session() as sess:
            _close(sess.run(norm), FIX["global_norm"]["value"])
            _close(sess.run(used), rec["used"])
            _close(sess.run(clipped[0]), rec["values"][0])
            _close(sess.run(clipped[2]), rec["values"][2])
            _close(sess.run(given), rec["use_norm"])
            assert sess.run(given_norm) == 10.0


@pytest.mark.parametrize("bad", ["inf", "nan"])
def test_non_finite_global_norm_gives_nan_as_tf1(bad):
    rec = FIX["clip_by_global_norm"]
    with gf.Graph().as_default():
        a = gf.constant(A, name="a")
        odd = gf.constant([float(bad), 1.0], gf.float64)
        clipped, norm = gf.clip_by_global_norm([a, odd], 2.0)
        with gf.Session() as sess:
            _close(sess.run(clipped), rec[bad])
            _close(sess.run(norm), rec[f"{bad}_norm"])


def test_clip_by_average_norm():
    rec = FIX["clip_by_average_norm"]
    with gf.Graph().as_default():
        avg = gf.clip_by_average_norm(gf.constant(A, gf.float32), 0.5)
        assert avg.name == rec["name"] and avg.dtype.name == rec["dtype"]
        with gf.Session() as sess:
            _close(sess.run(avg), rec["value"])


def test_indexed_slices_keep_their_indices():
    rec = FIX["indexed_slices"]
    with gf.Graph().as_default():
        a = gf.constant(A, name="a")
        b = gf.constant(B, name="b")
        for _ in range(3):  # TF's recorded name is the fourth clip_by_norm of its graph
            gf.clip_by_norm(a, 1.0)
        slices = gf.IndexedSlices(a, gf.constant([3, 0]), gf.constant([5, 2]))
        by_norm = gf.clip_by_norm(slices, 2.0)
        by_global, norm = gf.clip_by_global_norm([slices, b], 2.0)
        assert isinstance(by_norm, gf.IndexedSlices) and isinstance(by_global[0],
                                                                    gf.IndexedSlices)
        assert by_norm.values.name == rec["norm_name"]
        assert by_norm.indices is slices.indices and by_global[0].indices is slices.indices
        assert by_norm.dense_shape is slices.dense_shape
        with gf.Session() as sess:
            _close(sess.run(by_norm.values), rec["norm_values"])
            _close(sess.run(by_global[0].values), rec["global_values"])
            _close(sess.run(norm), rec["global_norm"])


def test_gradients_match_tf1():
    rec = FIX["gradients"]
    with gf.Graph().as_default():
        a = gf.constant(A, name="a")
        b = gf.constant(B, name="b")
        c = gf.constant(C, name="c")
        norm = gf.clip_by_norm(a, 2.0)
        gnorm = gf.global_norm([a, None, b])
        clipped, _ = gf.clip_by_global_norm([a, None, b], 2.0)
        grads = {
            "clip_by_norm": gf.gradients(gf.reduce_sum(norm * c[:, :2]), a)[0],
            "global_norm": gf.gradients(gnorm, [a, b]),
            "clip_by_global_norm": gf.gradients(
                gf.reduce_sum(clipped[0]) + gf.reduce_sum(clipped[2] * b), [a, b]),
        }
        with gf.Session() as sess:
            for key, grad in grads.items():
                _close(sess.run(grad), rec[key])


@pytest.mark.parametrize("name,build,inputs", [
    ("clip_by_norm", lambda x: gf.clip_by_norm(x, 1.5), [A / 2]),
    ("clip_by_norm_unclipped", lambda x: gf.clip_by_norm(x, 50.0), [A]),
    ("clip_by_norm_axes", lambda x: gf.clip_by_norm(x, 2.0, axes=[0]), [A]),
    ("clip_by_norm_tensor_bound", lambda x, n: gf.clip_by_norm(x, n), [A, np.array(2.0)]),
    ("global_norm", lambda x, y: gf.global_norm([x, y]), [A, B]),
    ("clip_by_global_norm", lambda x, y: gf.concat(
        [gf.reshape(t, [-1]) for t in gf.clip_by_global_norm([x, y], 3.0)[0]], 0), [A, B]),
    ("clip_by_average_norm", lambda x: gf.clip_by_average_norm(x, 0.5), [A]),
])
def test_numeric_gradients(name, build, inputs):
    assert gradient_error(build, inputs) < 1e-6, name


@pytest.mark.parametrize("build,inputs", [
    (lambda x: gf.clip_by_norm(x, 1.5), [A / 2]),
    (lambda x, y: gf.global_norm([x, y]), [A, B]),
])
def test_second_order_gradients(build, inputs):
    assert second_order_error(build, inputs) < 1e-5


def test_gradient_at_zero_is_finite():
    with gf.Graph().as_default():
        x = gf.zeros([3], gf.float64)
        (grad,) = gf.gradients(gf.reduce_sum(gf.clip_by_norm(x, 1.0)), [x])
        with gf.Session() as sess:
            assert np.all(np.isfinite(sess.run(grad)))


@pytest.mark.parametrize("key,call", [
    ("global_norm_not_sequence", lambda t, bound: gf.global_norm(t)),
    ("clip_by_global_norm_not_sequence", lambda t, bound: gf.clip_by_global_norm(t, 1.0)),
    ("clip_by_norm_broadcast", lambda t, bound: gf.clip_by_norm(t, bound)),
])
def test_errors_match_tf1_and_leave_graph_unchanged(key, call):
    rec = FIX["errors"][key]
    graph = gf.Graph()
    with graph.as_default():
        t = gf.constant([1.0, 2.0])
        bound = gf.constant([[1.0], [2.0]])
        before = _snapshot(graph)
        with pytest.raises((TypeError, ValueError)) as err:
            call(t, bound)
        assert type(err.value).__name__ == rec["type"]
        # TF's text up to the class name it prints for the offending value.
        assert str(err.value).startswith(rec["message"].split(" Received")[0])
        assert _snapshot(graph) == before


def test_global_norm_of_only_none_and_mixed_dtypes_raise_cleanly():
    graph = gf.Graph()
    with graph.as_default():
        x = gf.constant([1.0], gf.float32)
        y = gf.constant([1.0], gf.float64)
        before = _snapshot(graph)
        with pytest.raises(ValueError, match="at least one tensor"):
            gf.global_norm([None, None])
        with pytest.raises(TypeError, match="share one dtype"):
            gf.clip_by_global_norm([x, y], 1.0)
        assert _snapshot(graph) == before


def test_clip_by_global_norm_in_a_training_step():
    with gf.Graph().as_default():
        w = gf.Variable([3.0, 4.0], dtype=gf.float64)
        loss = gf.reduce_sum(w * w)
        opt = gf.train.GradientDescentOptimizer(0.5)
        grads, variables = zip(*opt.compute_gradients(loss), strict=True)
        clipped, norm = gf.clip_by_global_norm(grads, 1.0)
        train = opt.apply_gradients(zip(clipped, variables, strict=True))
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            assert sess.run(norm) == pytest.approx(10.0)
            sess.run(train)
            np.testing.assert_allclose(sess.run(w), [3.0 - 0.3, 4.0 - 0.4])
