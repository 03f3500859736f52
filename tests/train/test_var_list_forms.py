"""``var_list`` in any iterable form for optimizers; list, tuple or dict for Saver."""
import pytest

import gradflow as gf


def _program():
    a = gf.Variable(1.0, name="a")
    b = gf.Variable(2.0, name="b")
    return a, b, a * b


# Orders as TF1 gives them: nest.flatten orders a dict by key ({"z": a, "y": b} -> b, a).
@pytest.mark.parametrize("label,make,order", [
    ("list", lambda a, b: [b, a], ["b:0", "a:0"]),
    ("tuple", lambda a, b: (b, a), ["b:0", "a:0"]),
    ("nested", lambda a, b: [[b], (a,)], ["b:0", "a:0"]),
    ("dict", lambda a, b: {"z": a, "y": b}, ["b:0", "a:0"]),
    ("dict_values", lambda a, b: {"z": a, "y": b}.values(), ["a:0", "b:0"]),
    ("dict_keys", lambda a, b: {b: 1, a: 2}.keys(), ["b:0", "a:0"]),
    ("set", lambda a, b: {b, a}, ["a:0", "b:0"]),
    ("generator", lambda a, b: (v for v in [b, a]), ["b:0", "a:0"]),
    ("single", lambda a, b: a, ["a:0"]),
])
def test_compute_gradients_accepts_any_iterable(label, make, order):
    with gf.Graph().as_default():
        a, b, loss = _program()
        opt = gf.train.GradientDescentOptimizer(0.1)
        pairs = opt.compute_gradients(loss, var_list=make(a, b))
        assert [v.name for _, v in pairs] == order, label


@pytest.mark.parametrize("make", [lambda a, b: {"k": b}.values(), lambda a, b: (v for v in [b]),
                                  lambda a, b: {b}])
def test_minimize_with_views_and_generators_updates_only_those(make):
    with gf.Graph().as_default():
        a, b, loss = _program()
        train = gf.train.GradientDescentOptimizer(0.5).minimize(loss, var_list=make(a, b))
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(train)
            assert sess.run(a) == 1.0 and sess.run(b) == 2.0 - 0.5 * 1.0


def test_bad_var_list_entries_fail_atomically():
    graph = gf.Graph()
    with graph.as_default():
        a, _, loss = _program()
        ops_before = [op.name for op in graph.get_operations()]
        with pytest.raises(NotImplementedError, match="unsupported type"):
            gf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=(v for v in [a, 3]))
        with pytest.raises(ValueError, match="No variables to optimize"):
            gf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=set())
        assert [op.name for op in graph.get_operations()] == ops_before


@pytest.mark.parametrize("label,make,keys", [
    ("list", lambda a, b: [a, b], ["a", "b"]),
    ("tuple", lambda a, b: (b, a), ["a", "b"]),
    ("dict", lambda a, b: {"first": a, "second": b}, ["first", "second"]),
])
def test_saver_accepts_list_tuple_or_dict(tmp_path, label, make, keys):
    with gf.Graph().as_default():
        a, b, _ = _program()
        saver = gf.train.Saver(make(a, b))
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run([a.assign(10.0), b.assign(20.0)])
            path = saver.save(sess, str(tmp_path / label))
    assert sorted(gf.train.NewCheckpointReader(path).get_variable_to_shape_map()) == keys
    with gf.Graph().as_default():
        a, b, _ = _program()
        restore = gf.train.Saver(make(a, b))
        with gf.Session() as sess:
            restore.restore(sess, path)
            assert (sess.run(a), sess.run(b)) == (10.0, 20.0)


def test_saver_dict_names_map_variables_across_names(tmp_path):
    with gf.Graph().as_default():
        a, b, _ = _program()
        saver = gf.train.Saver({"b": a, "a": b})  # swapped on purpose
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "swapped"))
    with gf.Graph().as_default():
        a, b, _ = _program()
        with gf.Session() as sess:
            gf.train.Saver([a, b]).restore(sess, path)
            assert (sess.run(a), sess.run(b)) == (2.0, 1.0)


def test_saver_rejects_bad_dicts_without_changing_the_graph():
    graph = gf.Graph()
    with graph.as_default():
        a, _, _ = _program()
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(TypeError, match="dict mapping string names to Variables"):
            gf.train.Saver({"a": a, 3: a})
        with pytest.raises(TypeError, match="not iterable"):
            gf.train.Saver(a)
        assert [op.name for op in graph.get_operations()] == before
