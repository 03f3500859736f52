"""ExponentialMovingAverage against TF1 runs (names, collections, values, restore maps)."""
import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import load_json

FIX = load_json("train_ema")
CASES = {"plain": (0.9, False, False, False), "num_updates": (0.99, True, False, False),
         "zero_debias": (0.8, False, True, False), "in_scope": (0.5, False, False, True)}


def _snapshot(graph):
    return [op.name for op in graph.get_operations()], \
        {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}


def _build(decay, num_updates, zero_debias, in_scope):
    """The recorded program: variables v, w (trainable), i, step and the tensor t."""
    v = gf.Variable([1.0, 2.0], name="v")
    w = gf.Variable(5.0, name="w")
    i = gf.Variable(3, name="i", trainable=False)
    step = gf.Variable(0, name="step", trainable=False, dtype=gf.int64)
    t = gf.add(v * 2.0, w, name="t")
    ema = gf.train.ExponentialMovingAverage(decay, num_updates=step if num_updates else None,
                                            zero_debias=zero_debias)
    if in_scope:
        with gf.name_scope("outer"):
            apply_op = ema.apply([v, w, t])
    else:
        apply_op = ema.apply([v, w, t])
    return (v, w, i, step, t), ema, apply_op


@pytest.mark.parametrize("key", sorted(CASES))
def test_names_collections_and_restore_maps_match_tf1(key):
    rec = FIX["cases"][key]
    graph = gf.Graph()
    with graph.as_default():
        (v, w, i, _, t), ema, apply_op = _build(*CASES[key])
        assert ema.name == rec["name"]
        assert apply_op.name == rec["apply_op"]
        assert {x.name: ema.average(x).name for x in (v, w, t)} == rec["averages"]
        assert {x.name: ema.average_name(x) for x in (v, w, t, i)} == rec["average_names"]
        assert ema.average(i) is rec["average_of_unknown"]
        for collection, names in rec["collections"].items():
            assert [x.name for x in graph.get_collection(collection)] == names, collection
        restore = {k: x.name for k, x in ema.variables_to_restore().items()}
        assert restore == rec["variables_to_restore"]
        given = {k: x.name for k, x in ema.variables_to_restore([w]).items()}
        assert given == rec["variables_to_restore_given"]
        for x in (v, w, t):
            assert not ema.average(x).trainable


@pytest.mark.parametrize("key", sorted(CASES))
def test_values_over_steps_match_tf1(key):
    rec = FIX["cases"][key]
    with gf.Graph().as_default():
        (v, w, _, step, t), ema, apply_op = _build(*CASES[key])
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            for x in (v, w, t):
                np.testing.assert_array_equal(sess.run(ema.average(x)), rec["initial"][x.name])
            for n, (v_new, w_new) in enumerate(zip(FIX["v_steps"], FIX["w_steps"],
                                                   strict=True)):
                sess.run([v.assign(v_new), w.assign(w_new)])
                sess.run(apply_op)
                sess.run(step.assign_add(1))
                for x in (v, w, t):
                    np.testing.assert_allclose(sess.run(ema.average(x)),
                                               rec["values"][n][x.name], rtol=1e-6,
                                               err_msg=f"{key} step {n} {x.name}")
            extra = {x.name: sess.run(x).tolist() for x in gf.global_variables()
                     if x.name.endswith(("biased:0", "local_step:0"))}
            assert extra.keys() == rec["extra_variables"].keys()
            for name, value in extra.items():
                np.testing.assert_allclose(value, rec["extra_variables"][name], rtol=1e-6)


def test_shadow_starts_from_the_current_value_of_an_initialised_variable():
    with gf.Graph().as_default():
        v = gf.Variable([1.0, 2.0], name="v")
        ema = gf.train.ExponentialMovingAverage(0.5)
        ema.apply([v])
        with gf.Session() as sess:
            sess.run(v.initializer)
            sess.run(v.assign([4.0, 8.0]))
            sess.run(ema.average(v).initializer)
            np.testing.assert_array_equal(sess.run(ema.average(v)), [4.0, 8.0])


def test_apply_twice_reuses_the_shadow():
    rec = FIX["errors"]["apply_twice"]
    with gf.Graph().as_default():
        ema = gf.train.ExponentialMovingAverage(0.9)
        v = gf.Variable(1.0, name="twice")
        first, second = ema.apply([v]), ema.apply((x for x in [v]))
        assert [first.name, second.name] == [rec["first"], rec["second"]]
        assert ema.average(v).name == rec["average"]
        assert [x.name for x in gf.global_variables()] == \
            [n for n in rec["globals"] if n != "n:0"]


def test_apply_defaults_to_trainable_variables_and_accepts_float64():
    with gf.Graph().as_default():
        a = gf.Variable(np.array([1.0, 3.0]), name="a")
        gf.Variable(2.0, name="frozen", trainable=False)
        ema = gf.train.ExponentialMovingAverage(gf.constant(0.75, gf.float64))
        op = ema.apply()
        assert ema.average(a).dtype == gf.float64
        assert [x.name for x in gf.get_collection(gf.GraphKeys.MOVING_AVERAGE_VARIABLES)] == \
            ["a:0"]
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(a.assign([5.0, 7.0]))
            sess.run(op)
            np.testing.assert_allclose(sess.run(ema.average(a)), [2.0, 4.0])


def test_integer_variable_raises_tf1_error_and_changes_nothing():
    rec = FIX["errors"]["int_variable"]
    graph = gf.Graph()
    with graph.as_default():
        v = gf.Variable(1.0, name="v")
        n = gf.Variable(1, name="n")
        ema = gf.train.ExponentialMovingAverage(0.9)
        before = _snapshot(graph)
        with pytest.raises(TypeError) as err:
            ema.apply([v, n])
        assert type(err.value).__name__ == rec["type"] and str(err.value) == rec["message"]
        assert _snapshot(graph) == before
        assert ema.average(v) is None
        with pytest.raises(TypeError, match="must hold Variables or Tensors"):
            ema.apply([v, "n"])
        assert _snapshot(graph) == before


def test_failure_while_building_rolls_back_shadows():
    with gf.Graph().as_default():
        foreign_step = gf.Variable(0, name="step")
    graph = gf.Graph()
    with graph.as_default():
        v = gf.Variable(1.0, name="v")
        # The shadow is made before num_updates turns out to belong to another graph.
        ema = gf.train.ExponentialMovingAverage(0.9, num_updates=foreign_step)
        before = _snapshot(graph)
        with pytest.raises((TypeError, ValueError)):
            ema.apply([v])
        assert _snapshot(graph) == before
        assert ema.average(v) is None


def test_saver_restores_averages_into_the_model(tmp_path):
    with gf.Graph().as_default():
        v = gf.Variable([1.0, 2.0], name="v")
        ema = gf.train.ExponentialMovingAverage(0.5)
        op = ema.apply([v])
        saver = gf.train.Saver()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(v.assign([3.0, 6.0]))
            sess.run(op)
            path = saver.save(sess, str(tmp_path / "model"))
    with gf.Graph().as_default():
        v = gf.Variable([0.0, 0.0], name="v")
        ema = gf.train.ExponentialMovingAverage(0.5)
        restore = gf.train.Saver(ema.variables_to_restore())
        with gf.Session() as sess:
            restore.restore(sess, path)
            np.testing.assert_allclose(sess.run(v), [2.0, 4.0])


def test_apply_under_control_dependencies_averages_the_updated_value():
    with gf.Graph().as_default():
        w = gf.Variable([1.0, 1.0], name="w")
        train = w.assign([0.5, 0.25])
        ema = gf.train.ExponentialMovingAverage(0.5)
        with gf.control_dependencies([train]):
            apply_op = ema.apply([w])
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(apply_op)
            np.testing.assert_allclose(sess.run(ema.average(w)), [0.75, 0.625])
