"""Atomic failure: a catalogue of bad calls to public entry points. Each raises the
documented exception with a message naming the offender, and leaves the graph exactly
as it was (ops, names, collections) and every variable unchanged."""
import dataclasses
import re
from typing import Callable

import numpy as np
import pytest

import gradflow as gf
from gradflow.framework import errors
from gradflow.framework.registry import registered_op_types


@gf.RegisterGradient("ReliabilityTwoGradients")
def _two_gradients(op, grad):
    return grad, grad


@gf.RegisterGradient("ReliabilityWrongShape")
def _wrong_shape(op, grad):
    return gf.reduce_sum(grad)[None]


class World:
    """A small model in its own graph, a session with initialised variables, and a
    tensor of a foreign graph."""

    def __init__(self):
        self.graph = gf.Graph()
        with self.graph.as_default():
            self.x = gf.placeholder(gf.float32, [2, 3], name="x")
            self.i = gf.placeholder(gf.int32, [None], name="i")
            self.v = gf.Variable(np.ones((2, 3), np.float32), name="v")
            self.step = gf.Variable(np.int64(0), name="step", trainable=False)
            self.y = gf.tanh(self.x * self.v, name="y")
            self.loss = gf.reduce_sum(self.y, name="loss")
            self.z = gf.constant(np.complex64(1 + 2j), name="z")
            self.d = gf.constant(np.ones(3), name="d")            # float64
            self.pred = gf.placeholder(gf.bool, [], name="pred")
            gf.add_to_collection("losses", self.loss)
            self.saver = gf.train.Saver()
            self.sess = gf.Session(graph=self.graph)
            self.sess.run(gf.global_variables_initializer())
        self.feed = {self.x: np.ones((2, 3), np.float32)}
        self.other = gf.Graph()
        with self.other.as_default():
            self.foreign = gf.constant(1.0, name="foreign")

    def snapshot(self):
        graph = self.graph
        return ([op.name for op in graph.get_operations()],
                {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()},
                [graph.unique_name(name, mark_as_used=False) for name in PROBES],
                [op.name for op in self.other.get_operations()],
                [a.tolist() for a in self.sess.run([self.v, self.step])],
                [(t.name, t.shape.as_tuple()) for op in graph.get_operations()
                 for t in op.outputs])


PROBES = sorted({name for t in registered_op_types() for name in (t, t.lower())} | {
    "gradients", "cond", "while", "save", "concat", "gather", "group_deps", "mul", "add",
    "restore_all", "Variable", "v_1", "x_1", "y", "foo", "w", "tuple", "stack", "strided_slice",
    "TensorArray", "GradientDescent", "Adam", "beta1_power", "train"})


@dataclasses.dataclass
class Bad:
    """``call(world, *setup(world))`` must raise ``error`` with ``message`` (a regex naming
    the offender); ``setup`` makes the call's legitimate inputs beforehand."""

    what: str
    call: Callable
    error: type
    message: str
    setup: Callable = lambda world: ()


def _run_with_feed(world, fetches, feed):
    return world.sess.run(fetches, feed)


def _session_run(fetch, feed=None):
    return lambda w: w.sess.run(fetch(w), feed(w) if feed else None)


def _optimizer(**kwargs):
    return gf.train.GradientDescentOptimizer(0.1, **kwargs)


def _bad_loop_body(result):
    return lambda w, zero: gf.while_loop(lambda i, a: i < 3, lambda i, a: result(i, a),
                                         [zero, w.y])


CATALOGUE = [
    # --------------------------------------------------------------- gradients
    Bad("gradients: an x is None", lambda w: gf.gradients(w.loss, [w.x, None]), ValueError,
        r"xs\[1\] is None"),
    Bad("gradients: an x is not a tensor", lambda w: gf.gradients(w.loss, object()), TypeError,
        r"xs\[0\] must be a Tensor or Variable, got object"),
    Bad("gradients: a y is a string", lambda w: gf.gradients("loss:0", w.x), TypeError,
        "with type string must be numeric to obtain a default gradient"),
    Bad("gradients: grad_ys count", lambda w: gf.gradients(w.loss, w.x, grad_ys=[1.0, 2.0]),
        ValueError, "Passed 2 grad_ys for 1 ys"),
    Bad("gradients: complex y without grad_ys", lambda w, y: gf.gradients(y, w.z),
        TypeError, r"Gradients of complex tensors must set grad_ys \(y.dtype = complex64\)",
        lambda w: (w.z * 2,)),
    Bad("gradients: complex grad_y for a real y",
        lambda w: gf.gradients(w.loss, w.x, grad_ys=w.z), TypeError,
        "Gradient type complex64 generated for real or integer-valued tensor loss:0"),
    Bad("gradients: non-numeric y", lambda w: gf.gradients(w.pred, w.x), TypeError,
        "Tensor pred:0 with type bool must be numeric"),
    Bad("gradients: aggregation method", lambda w: gf.gradients(w.loss, w.x,
                                                                aggregation_method=7),
        ValueError, "Invalid aggregation_method specified 7"),
    Bad("gradients: unconnected_gradients", lambda w: gf.gradients(
        w.loss, w.x, unconnected_gradients="nonsense"), ValueError,
        "Unknown value for unconnected_gradients: 'nonsense'"),
    Bad("gradients: a stop_gradients entry is None",
        lambda w: gf.gradients(w.loss, w.x, stop_gradients=[None]), ValueError,
        r"stop_gradients\[0\] is None"),
    Bad("gradients: prevent_gradient on the path", lambda w, y: gf.gradients(y, w.x),
        LookupError, "explicitly disabled.*no way",
        lambda w: (gf.reduce_sum(gf.prevent_gradient(w.y, message="no way")),)),
    Bad("gradients: no gradient registered", lambda w, y: gf.gradients(y, w.x), LookupError,
        r"No gradient defined for operation 'Sin' \(op type: Sin\); gradient_override_map "
        r"maps it to 'NoSuchGradient'",
        lambda w: (_sin_with_gradient(w, "NoSuchGradient"),)),
    Bad("gradients: a rule returns two gradients for one input",
        lambda w, y: gf.gradients(y, w.x), ValueError,
        r"Num gradients 2 generated for op Sin \(type Sin\) do not match num inputs 1",
        lambda w: (_sin_with_gradient(w, "ReliabilityTwoGradients"),)),
    Bad("gradients: a rule returns a wrongly shaped gradient",
        lambda w, y: gf.gradients(y, w.x), ValueError,
        r"Incompatible shapes between op input and calculated input gradient.*Sin",
        lambda w: (_sin_with_gradient(w, "ReliabilityWrongShape"),)),
    Bad("gradients: finalized graph", lambda w: (w.graph.finalize(),
                                                 gf.gradients(w.loss, w.x)),
        RuntimeError, "Graph is finalized"),
    Bad("hessian_vector_product: lengths", lambda w: gf.hessian_vector_product(
        w.loss, [w.x], [w.x, w.x]), ValueError, "xs and v must have the same length."),
    Bad("gradients: y of a foreign graph", lambda w: gf.gradients(w.foreign, w.x),
        ValueError, "Tensor x:0 must be from the same graph as Tensor foreign:0"),
    Bad("gradients: stop_gradients of a foreign graph",
        lambda w: gf.gradients(w.loss, w.x, stop_gradients=w.foreign), ValueError,
        "Tensor foreign:0 must be from the same graph as Tensor loss:0"),
    # --------------------------------------------------------- building ops
    Bad("placeholder: unknown dtype", lambda w: gf.placeholder("float99"), TypeError,
        "float99"),
    Bad("placeholder: negative dimension", lambda w: gf.placeholder(gf.float32, [-2]),
        ValueError, "-2"),
    Bad("constant: wrong element count", lambda w: gf.constant([1, 2, 3], shape=[2]),
        ValueError, r"Too many elements provided. Takes at most 2, but got 3"),
    Bad("constant: lossy dtype", lambda w: gf.constant(1.5, dtype=gf.int32), TypeError,
        "Expected int32, but got 1.5"),
    Bad("add: dtypes differ", lambda w: gf.add(w.x, w.d), TypeError,
        "type float64 that does not match type float32.*x:0.*d:0"),
    Bad("add: shapes do not broadcast", lambda w, b: w.x + b, ValueError,
        r"Incompatible shapes: \(2, 3\) and \(4,\)", lambda w: (gf.ones([4], gf.float32),)),
    Bad("matmul: inner dimensions", lambda w: gf.matmul(w.x, w.x), ValueError,
        r"x:0.*\(2, 3\)|\(2, 3\).*x:0"),
    Bad("reshape: element count", lambda w, s: gf.reshape(w.x, s), ValueError,
        r"Cannot reshape a tensor with 6 elements to shape \[4\].*x:0",
        lambda w: (gf.constant([4]),)),
    Bad("reduce_sum: axis out of range", lambda w, a: gf.reduce_sum(w.x, axis=a), ValueError,
        "Invalid reduction dimension 5 for .*x.* with 2 dimensions", lambda w: (gf.constant(5),)),
    Bad("concat: shapes", lambda w, b, a: gf.concat([w.x, b], a), ValueError,
        r"equal rank.*\(2, 3\).*\(2, 2, 2\)", lambda w: (gf.ones([2, 2, 2]), gf.constant(0))),
    Bad("concat: dtypes", lambda w, b, a: gf.concat([w.x, b], a), TypeError,
        "int32.*float32|float32.*int32", lambda w: (gf.cast(w.x, gf.int32), gf.constant(0))),
    Bad("gather: float indices", lambda w, i: gf.gather(w.x, i), TypeError,
        "indices.*float32|float32.*indices", lambda w: (gf.constant([[0.5]]),)),
    Bad("transpose: not a permutation", lambda w, p: gf.transpose(w.x, p), ValueError,
        r"\[0, 0\]", lambda w: (gf.constant([0, 0]),)),
    Bad("split: uneven", lambda w, a: gf.split(w.x, 4, axis=a), ValueError, "3.*4|4.*3",
        lambda w: (gf.constant(1),)),
    Bad("stack: shapes differ", lambda w, b: gf.stack([w.x, b]), ValueError,
        r"\(2, 3\).*\(3, 2\)|\(3, 2\).*\(2, 3\)", lambda w: (gf.ones([3, 2]),)),
    Bad("tile: multiples length", lambda w, m: gf.tile(w.x, m), ValueError, "x:0|multiples",
        lambda w: (gf.constant([2]),)),
    Bad("slicing: index out of range", lambda w: w.x[5], ValueError,
        "index 5.*out of bounds|out of range.*5"),
    Bad("slicing: bad key type", lambda w: w.x["a"], TypeError, "'a'|str"),
    Bad("add_n: empty", lambda w: gf.add_n([]), ValueError, "at least one|empty|inputs"),
    Bad("add_n: shapes", lambda w, b: gf.add_n([w.x, b]), ValueError,
        r"\(2, 3\).*\(3,\)|\(3,\).*\(2, 3\)", lambda w: (gf.ones([3]),)),
    Bad("one_hot: float indices", lambda w, d: gf.one_hot(w.x, d), TypeError, "x:0|float32",
        lambda w: (gf.constant(3),)),
    Bad("softmax cross entropy: shapes", lambda w, labels:
        gf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=w.x), ValueError,
        r"\(2, 4\).*\(2, 3\)|\(2, 3\).*\(2, 4\)", lambda w: (gf.ones([2, 4]),)),
    Bad("conv2d: padding", lambda w, image, kernel: gf.nn.conv2d(image, kernel, [1, 1, 1, 1],
                                                                 "HALF"),
        ValueError, "HALF", lambda w: (gf.ones([1, 4, 4, 1]), gf.ones([2, 2, 1, 1]))),
    Bad("unregistered op type", lambda w: w.graph.create_op("NoSuchOp", []), ValueError,
        "Op type not registered 'NoSuchOp'"),
    Bad("op name: invalid", lambda w: gf.identity(w.x, name="bad name!"), ValueError,
        "'bad name!' is not a valid node name"),
    Bad("op name: a scope name that is taken", lambda w: gf.identity(w.x, name="y/"),
        ValueError, "Duplicate node name in graph: 'y'"),
    Bad("op name: an invalid scope name", lambda w: gf.identity(w.x, name="a:0/"),
        ValueError, "'a:0' is not a valid node name"),
    Bad("get_tensor_by_name: unknown", lambda w: w.graph.get_tensor_by_name("nope:0"),
        KeyError, "nope"),
    Bad("get_operation_by_name: not a string", lambda w: w.graph.get_operation_by_name(5),
        TypeError, "int"),
    Bad("group: not an op", lambda w: gf.group(w.loss, 5), TypeError, "int"),
    Bad("control_dependencies: foreign op", lambda w: w.graph.control_dependencies(
        [w.foreign]).__enter__(), ValueError, "foreign"),
    Bad("check_numerics: integer tensor", lambda w: gf.check_numerics(w.i, "m"), TypeError,
        r"'CheckNumerics' \(i:0\) has DataType int32"),
    Bad("check_numerics ops: finalized graph", lambda w: (w.graph.finalize(),
                                                          gf.add_check_numerics_ops()),
        RuntimeError, "Graph is finalized"),
    # ------------------------------------------------------------ control flow
    Bad("cond: non-boolean predicate", lambda w: gf.cond(w.x, lambda: w.y, lambda: w.y),
        TypeError, "x:0|pred"),
    Bad("cond: branch structures differ", lambda w: gf.cond(
        w.pred, lambda: (w.y, w.y), lambda: w.y), ValueError, "structure"),
    Bad("cond: branch dtypes differ", lambda w: gf.cond(
        w.pred, lambda: w.y, lambda: gf.cast(w.y, gf.float64)), (TypeError, ValueError),
        "float32.*float64|float64.*float32"),
    Bad("cond: a branch raises", lambda w: gf.cond(w.pred, lambda: gf.add(w.x, w.d),
                                                   lambda: w.y), TypeError, "d:0"),
    Bad("while_loop: body structure", _bad_loop_body(lambda i, a: (i + 1,)), ValueError,
        "structure|2.*1|1.*2", lambda w: (gf.constant(0),)),
    Bad("while_loop: body dtype", _bad_loop_body(lambda i, a: (i + 1, gf.cast(a, gf.float64))),
        TypeError, "float32.*float64|float64.*float32", lambda w: (gf.constant(0),)),
    Bad("while_loop: body shape", _bad_loop_body(lambda i, a: (i + 1, gf.concat([a, a], 0))),
        ValueError, r"\(2, 3\).*\(4, 3\)|shape_invariants", lambda w: (gf.constant(0),)),
    Bad("while_loop: cond not boolean", lambda w, zero: gf.while_loop(
        lambda i: i, lambda i: i + 1, [zero]), TypeError, "bool|int32",
        lambda w: (gf.constant(0),)),
    Bad("while_loop: no loop variables", lambda w: gf.while_loop(
        lambda: True, lambda: (), []), ValueError, "loop_vars|No loop variables"),
    Bad("TensorArray: write of the wrong dtype", lambda w, ta, i: ta.write(i, w.d), TypeError,
        "float64.*float32|float32.*float64",
        lambda w: (gf.TensorArray(gf.float32, size=2), gf.constant(0))),
    Bad("TensorArray: write of the wrong shape", lambda w, ta, i: ta.write(i, w.x), ValueError,
        r"\(2, 3\)|\[2, 3\]",
        lambda w: (gf.TensorArray(gf.float32, size=2, element_shape=[3]), gf.constant(0))),
    Bad("Defun: wrong argument count", lambda w: gf.Defun(gf.float32)(lambda a: a)(w.x, w.x),
        ValueError, "2.*1|1.*2|argument"),
    Bad("Defun: two gradients", lambda w: gf.Defun(gf.float32, python_grad_func=lambda *a: a,
                                                   grad_func=lambda *a: a)(lambda a: a)(w.x),
        ValueError, "Gradient defined twice"),
    # ---------------------------------------------------------------- state
    Bad("Variable: None initial value", lambda w: gf.Variable(None), ValueError,
        "initial_value"),
    Bad("Variable: foreign initial value", lambda w: gf.Variable(w.foreign), ValueError,
        "foreign"),
    Bad("assign: wrong shape", lambda w, value: w.v.assign(value), ValueError,
        r"\(3, 2\).*\(2, 3\)|\(2, 3\).*\(3, 2\)", lambda w: (gf.ones([3, 2]),)),
    Bad("assign: wrong dtype", lambda w, value: w.v.assign(value), (TypeError, ValueError),
        "float64", lambda w: (gf.ones([2, 3], gf.float64),)),
    Bad("Saver: not a variable", lambda w: gf.train.Saver([w.loss]), TypeError, "loss"),
    Bad("optimizer: loss independent of the variables", lambda w, loss: _optimizer().minimize(
        loss), ValueError, "No gradients provided for any variable.*v:0.*Sum:0",
        lambda w: (gf.reduce_sum(w.x),)),
    Bad("optimizer: nothing to train", lambda w, loss: _optimizer().minimize(
        loss, var_list=[]), ValueError, "No variables to optimize",
        lambda w: (gf.reduce_sum(w.x),)),
    Bad("optimizer: no gradients", lambda w: _optimizer().apply_gradients([(None, w.v)]),
        ValueError, "No gradients provided for any variable.*v"),
    Bad("optimizer: gradient of the wrong shape", lambda w, g: _optimizer().apply_gradients(
        [(g, w.v)]), ValueError, r"v.*\(2, 3\)|\(3,\)", lambda w: (gf.ones([3]),)),
    # ------------------------------------------------------------- sessions
    Bad("run: None fetch", _session_run(lambda w: [w.y, None]), TypeError,
        "Argument `fetch` = None has invalid type"),
    Bad("run: unknown tensor name", _session_run(lambda w: "nope:0"), ValueError,
        "Argument `fetch` = nope:0 cannot be interpreted as a Tensor.*nope"),
    Bad("run: malformed nest", _session_run(lambda w: {"a": [w.y, object()]}), TypeError,
        "Argument `fetch` = <object.*invalid type"),
    Bad("run: feed_dict not a dict", lambda w: w.sess.run(w.y, [w.x]), TypeError,
        "feed_dict must be a dictionary, got list"),
    Bad("run: unknown feed key", _session_run(lambda w: w.y, lambda w: {"nope:0": 1.0}),
        TypeError, "Cannot interpret feed_dict key as Tensor.*nope"),
    Bad("run: missing feed", _session_run(lambda w: w.y), errors.InvalidArgumentError,
        "You must feed a value for placeholder tensor 'x' with dtype float and shape "
        r"\[2,3\]"),
    Bad("run: feed of the wrong shape", _session_run(
        lambda w: w.y, lambda w: {w.x: np.ones(3)}), ValueError,
        r"Cannot feed value of shape \(3,\) for Tensor x:0, which has shape \(2, 3\)"),
    Bad("run: feed of a lossy dtype", _session_run(
        lambda w: w.i, lambda w: {w.i: [0.5]}), TypeError,
        "Cannot feed value of dtype float64 for Tensor 'i:0' of dtype int32"),
    Bad("run: a tensor fed as a value", _session_run(
        lambda w: w.y, lambda w: {w.x: w.y}), TypeError, r"feed cannot be a tf.Tensor.*y:0"),
    Bad("run: gather index out of range, after an update in the same run", _run_with_feed,
        errors.InvalidArgumentError, "7.*(not in|out of range).*GatherV2|GatherV2.*7",
        lambda w: ([w.v.assign_add(w.v), w.step.assign_add(1), gf.gather(w.y, w.i)],
                   {**w.feed, w.i: [0, 7]})),
    Bad("run: non-finite value caught after an update", _run_with_feed,
        errors.InvalidArgumentError, "log of x : Tensor had Inf values.*CheckNumerics",
        lambda w: ([w.step.assign_add(5), gf.check_numerics(gf.log(w.x - 1.0), "log of x")],
                   w.feed)),
    Bad("run: TensorArray read out of range", _run_with_feed, errors.InvalidArgumentError,
        "index 3.*size 2|TensorArray.*3",
        lambda w: ([w.step.assign_add(1), gf.TensorArray(gf.float32, size=2).write(
            0, w.y).write(1, w.y).read(gf.constant(2) + gf.size(w.i))],
            {**w.feed, w.i: [1]})),
    Bad("run: TensorArray read of an unwritten element of unknown shape", _run_with_feed,
        errors.InvalidArgumentError, "1.*(not|never|unwritten|has not been)",
        lambda w: ([w.step.assign_add(1), gf.TensorArray(
            gf.float32, size=2, infer_shape=False).write(0, w.y).read(gf.size(w.i))],
            {**w.feed, w.i: [1]})),
    Bad("run: restore from a missing checkpoint", lambda w: w.saver.restore(
        w.sess, "/nonexistent/ckpt"), ValueError,
        "The passed save_path is not a valid checkpoint: /nonexistent/ckpt"),
]


def _sin_with_gradient(world, op_type):
    with world.graph.gradient_override_map({"Sin": op_type}):
        return gf.sin(world.x)


def test_the_catalogue_is_large_enough():
    assert len(CATALOGUE) >= 60


@pytest.mark.parametrize("bad", CATALOGUE, ids=[b.what for b in CATALOGUE])
def test_bad_call_raises_cleanly_and_changes_nothing(bad):
    world = World()
    with world.graph.as_default():
        made = bad.setup(world)
        before = world.snapshot()
        with pytest.raises(bad.error) as info:
            bad.call(world, *made)
        world.graph._unsafe_unfinalize()
        assert re.search(bad.message, str(info.value), re.S), str(info.value)
        after = world.snapshot()
        assert after == before
