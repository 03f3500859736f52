"""Every public op constructor is transactional: a bad call leaves the graph untouched.

The catalogue is generated, not hand-written: each constructor of the engine's op
families (``gradflow.ops.array``, ``math``, ``nn``, ``linalg``, ``segments``, ``random``,
``numerics``...) is called with a bad first input (a string tensor, an object) or with
bad values for its other inputs (an out-of-range axis, a ragged or rank-3 float list, a
rank-4 tensor), which gradflow converts to constants before a later check rejects the
call. Each call must raise TypeError or ValueError and leave the graph exactly as it was:
op names, name-scope counters (``unique_name(..., mark_as_used=False)``), collections and
the static shapes of every existing tensor. Nothing left over is tolerated.
"""
import importlib

import pytest

import gradflow as gf
from gradflow.framework.graph import op_scope

FAMILIES = ("array", "math", "nn", "nn_more", "primitives", "linalg", "segments", "random",
            "clip", "numerics")
# Public functions with a ``name`` that are not op constructors: helpers the
# constructors call inside their scope, add_n, which hands on to its constructor, and
# clip_by_global_norm, which hands on to two (global_norm's scope and the clipping's sit
# side by side in TF1) inside one transaction, and pool, which checks its arguments and
# hands on to one pooling constructor (its default name depends on the pooling type).
NOT_CONSTRUCTORS = {"apply_op", "as_tensor", "int_vector", "shape_tensor", "filled",
                    "true_coordinates", "branches", "indexed_slices_to_tensor", "add_n",
                    "clip_by_global_norm", "pool"}


def _public_functions() -> dict:
    found = {}
    for family in FAMILIES:
        module = importlib.import_module(f"gradflow.ops.{family}")
        for attr in sorted(dir(module)):
            fn = getattr(module, attr)
            if attr.startswith("_") or not callable(fn) or isinstance(fn, type):
                continue
            origin = getattr(fn, "__module__", "") or ""
            if not origin.startswith("gradflow.ops.") or fn in found.values():
                continue
            code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
            if code is not None and "name" in code.co_varnames[:code.co_argcount +
                                                              code.co_kwonlyargcount]:
                found[f"{family}.{attr}"] = fn
    return found


FUNCTIONS = _public_functions()
CONSTRUCTORS = {key: fn for key, fn in FUNCTIONS.items()
                if key.split(".")[-1] not in NOT_CONSTRUCTORS}


def test_every_public_constructor_runs_in_an_op_scope():
    missing = sorted(key for key, fn in CONSTRUCTORS.items() if not hasattr(fn, "default_name"))
    assert not missing
    assert len(CONSTRUCTORS) >= 200


class Inputs:
    """Legitimate tensors of one graph, made before the bad call."""

    def __init__(self, graph):
        with graph.as_default():
            self.x = gf.placeholder(gf.float32, [2, 3], name="x")
            self.rows = gf.placeholder(gf.float32, [None, 3], name="rows")
            self.text = gf.constant(["a", "b"], name="text")
            self.wide = gf.placeholder(gf.float32, [4, 5, 6, 7], name="wide")
            gf.add_to_collection("things", self.x)


BAD_CALLS = {
    "a string tensor, the other inputs Python ints": lambda t, n: [t.text] + [1] * n,
    "an object as the first input": lambda t, n: [object()] + [1] * n,
    "an out-of-range axis, perm, size or shape": lambda t, n: [t.x] + [99] * n,
    "a rank-3 float list for the other inputs": lambda t, n: [t.x] + [[[[1.5]]]] * n,
    "a ragged list for the other inputs": lambda t, n: [t.rows] + [[[1, 2], [3]]] * n,
    "a rank-4 tensor for the other inputs": lambda t, n: [t.x] + [t.wide] * n,
}
PROBES = sorted({"Const", "x", "y", "a", "b", "shape", "axis", "perm", "stack", "things"} | {
    name for fn in CONSTRUCTORS.values() for name in (fn.default_name, *fn.inputs)} | {
    fn.default_name.lower() for fn in CONSTRUCTORS.values()})


def snapshot(graph):
    ops = graph.get_operations()
    return ([op.name for op in ops],
            [graph.unique_name(name, mark_as_used=False) for name in PROBES],
            {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()},
            [(t.name, t.shape.as_tuple()) for op in ops for t in op.outputs])


def _attempts(key):
    """(bad call, whether it raised, whether it built ops first) for one constructor."""
    fn = CONSTRUCTORS[key]
    results = []
    for what, make_args in BAD_CALLS.items():
        graph = gf.Graph()
        inputs = Inputs(graph)
        with graph.as_default():
            args = make_args(inputs, max(len(fn.inputs) - 1, 0))[:max(len(fn.inputs), 1)]
            before, version = snapshot(graph), graph.version
            try:
                fn(*args)
            except (TypeError, ValueError):
                assert snapshot(graph) == before, (key, what)
                results.append((what, True, graph.version > version))
            else:
                results.append((what, False, False))
    return results


@pytest.mark.parametrize("key", sorted(CONSTRUCTORS))
def test_bad_calls_raise_and_leave_the_graph_untouched(key):
    results = _attempts(key)
    assert any(raised for _, raised, _ in results), f"no bad call of {key} raised"


def test_the_catalogue_covers_rollbacks():
    """The catalogue's size, and how many of its calls built ops that were undone."""
    raised = built = 0
    for key in CONSTRUCTORS:
        for _, did_raise, did_build in _attempts(key):
            raised += did_raise
            built += did_build
    assert raised >= 600 and built >= 100, (raised, built)


def test_op_scope_undoes_shapes_scopes_and_collections():
    graph = gf.Graph()
    inputs = Inputs(graph)
    with graph.as_default():
        before = snapshot(graph)
        with pytest.raises(ValueError, match="late failure"):
            with op_scope(None, "Thing", [inputs.rows]) as scope:
                assert scope == "Thing/"
                inputs.rows.set_shape([2, 3])
                gf.add_to_collection("things", gf.constant(1.0, name="inner"))
                with graph.name_scope("deeper"):
                    gf.constant(2.0)
                raise ValueError("late failure")
        assert inputs.rows.shape.as_tuple() == (None, 3)
        assert snapshot(graph) == before


def test_op_scope_takes_the_graph_of_its_values_and_names_the_op():
    graph, other = gf.Graph(), gf.Graph()
    inputs = Inputs(other)
    with graph.as_default():
        with op_scope("y", "Mul", [inputs.x]) as scope:
            assert gf.get_default_graph() is other
            made = gf.constant(2.0, name="y")
            op = other.create_op("Mul", [inputs.x, made], name=scope)
        assert (scope, made.op.name, op.name) == ("y/", "y/y", "y")
        with pytest.raises(TypeError, match="`name` must be a string, got 1: expected string "
                                            "or bytes-like object, got 'int'"):
            with op_scope(1, "Mul", [inputs.x]):
                pass
    assert graph.get_operations() == []
