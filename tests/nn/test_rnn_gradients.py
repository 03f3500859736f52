"""Numeric gradient checks (float64) through every cell and unroller, with respect to
inputs, initial states and weights; second order through ``dynamic_rnn``."""
from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.ops.loops import flatten, map_structure

rnn_cell = gf.nn.rnn_cell
BATCH, TIME, DEPTH = 2, 3, 2
LENGTHS = np.array([3, 1], np.int32)

CELLS = {
    "basic_rnn": lambda: rnn_cell.BasicRNNCell(3, dtype=gf.float64),
    "basic_lstm": lambda: rnn_cell.BasicLSTMCell(3, dtype=gf.float64),
    "basic_lstm_concat": lambda: rnn_cell.BasicLSTMCell(2, state_is_tuple=False,
                                                        dtype=gf.float64),
    "lstm_peep_proj": lambda: rnn_cell.LSTMCell(3, use_peepholes=True, num_proj=2,
                                                cell_clip=2.0, dtype=gf.float64),
    "gru": lambda: rnn_cell.GRUCell(3, dtype=gf.float64),
    "multi": lambda: rnn_cell.MultiRNNCell([rnn_cell.GRUCell(2, dtype=gf.float64),
                                            rnn_cell.BasicLSTMCell(2, dtype=gf.float64)]),
    "residual": lambda: rnn_cell.ResidualWrapper(rnn_cell.BasicRNNCell(DEPTH,
                                                                       dtype=gf.float64)),
    "device": lambda: rnn_cell.DeviceWrapper(rnn_cell.GRUCell(2, dtype=gf.float64), "/cpu:0"),
}


def _rng_inputs(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((BATCH, TIME, DEPTH))


def _weighted_sum(tensors) -> gf.Tensor:
    """A scalar mixing every output so each entry's gradient is checked."""
    rng = np.random.default_rng(7)
    terms = [gf.reduce_sum(t * rng.standard_normal(t.shape.as_list())) for t in tensors]
    return gf.add_n(terms)


def _check(build, wrt_weights: bool = True, tolerance: float = 1e-6) -> None:
    """Gradient error of ``build(x) -> tensors`` for the input and (fed) weights."""
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float64, [BATCH, TIME, DEPTH], name="x")
        y = _weighted_sum(flatten(build(x)))
        init = gf.global_variables_initializer()
        with gf.Session(graph=graph) as sess:
            sess.run(init)
            weights = gf.trainable_variables() if wrt_weights else []
            values = [_rng_inputs()] + [sess.run(w) for w in weights]
            error = gf.test.compute_gradient_error(
                [x] + [w.value() for w in weights], [v.shape for v in values], y, [],
                x_init_value=values, delta=1e-6)
    assert error < tolerance


@pytest.mark.parametrize("name", sorted(CELLS))
def test_cell_step_gradients(name):
    def build(x):
        cell = CELLS[name]()
        state = map_structure(lambda s: s + 0.3, cell.zero_state(BATCH, gf.float64))
        out, new_state = cell(x[:, 0], state)
        out2, new_state2 = cell(x[:, 1], new_state)
        return out, out2, new_state2
    _check(build)


@pytest.mark.parametrize("name", sorted(CELLS))
def test_dynamic_rnn_gradients(name):
    def build(x):
        return gf.nn.dynamic_rnn(CELLS[name](), x, sequence_length=LENGTHS, dtype=gf.float64)
    _check(build)


def _raw_rnn(x):
    cell = rnn_cell.BasicLSTMCell(2, dtype=gf.float64)
    inputs_ta = gf.TensorArray(gf.float64, size=TIME).unstack(gf.transpose(x, [1, 0, 2]))

    def loop_fn(time, cell_output, cell_state, loop_state):
        state = cell.zero_state(BATCH, gf.float64) if cell_output is None else cell_state
        finished = time >= LENGTHS
        next_input = gf.cond(gf.reduce_all(finished),
                             lambda: gf.zeros([BATCH, DEPTH], gf.float64),
                             lambda: inputs_ta.read(gf.minimum(time, TIME - 1)))
        return finished, next_input, state, cell_output, None

    emit, state, _ = gf.nn.raw_rnn(cell, loop_fn)
    outputs = emit.stack()
    outputs.set_shape([TIME, BATCH, 2])  # the loop runs to the longest length, 3 steps
    return outputs, state


UNROLLERS = {
    "dynamic_time_major": lambda x: gf.nn.dynamic_rnn(
        rnn_cell.GRUCell(2, dtype=gf.float64), gf.transpose(x, [1, 0, 2]), time_major=True,
        dtype=gf.float64),
    "dynamic_initial_state": lambda x: gf.nn.dynamic_rnn(
        rnn_cell.BasicLSTMCell(2, dtype=gf.float64), x, sequence_length=LENGTHS,
        initial_state=rnn_cell.LSTMStateTuple(x[:, 0, :] * 2.0, gf.tanh(x[:, 1, :]))),
    "static": lambda x: gf.nn.static_rnn(rnn_cell.BasicLSTMCell(2, dtype=gf.float64),
                                         gf.unstack(x, axis=1), dtype=gf.float64),
    "static_lengths": lambda x: gf.nn.static_rnn(rnn_cell.GRUCell(2, dtype=gf.float64),
                                                 gf.unstack(x, axis=1), dtype=gf.float64,
                                                 sequence_length=LENGTHS),
    "bidirectional_dynamic": lambda x: gf.nn.bidirectional_dynamic_rnn(
        rnn_cell.GRUCell(2, dtype=gf.float64), rnn_cell.BasicRNNCell(2, dtype=gf.float64), x,
        sequence_length=LENGTHS, dtype=gf.float64),
    "static_bidirectional": lambda x: gf.nn.static_bidirectional_rnn(
        rnn_cell.GRUCell(2, dtype=gf.float64), rnn_cell.BasicRNNCell(2, dtype=gf.float64),
        gf.unstack(x, axis=1), sequence_length=LENGTHS, dtype=gf.float64),
    "raw_rnn": _raw_rnn,
}


@pytest.mark.parametrize("name", sorted(UNROLLERS))
def test_unroller_gradients(name):
    _check(UNROLLERS[name])


def test_dynamic_rnn_second_order():
    """The gradient of a gradient through dynamic_rnn's loop matches central differences
    of the first gradient (input and weights)."""
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float64, [BATCH, TIME, DEPTH], name="x")
        cell = rnn_cell.BasicRNNCell(2, dtype=gf.float64)
        outputs, state = gf.nn.dynamic_rnn(cell, x, sequence_length=LENGTHS,
                                           dtype=gf.float64)
        y = _weighted_sum([outputs, state])
        kernel = cell.trainable_weights[0]
        (dx,) = gf.gradients(y, [x])
        (dk,) = gf.gradients(y, [kernel])
        z = gf.reduce_sum(dx * dx) + gf.reduce_sum(dk * gf.sin(dk))
        with gf.Session(graph=graph) as sess:
            sess.run(gf.global_variables_initializer())
            value = sess.run(kernel)
            error = gf.test.compute_gradient_error(
                [x, kernel.value()], [[BATCH, TIME, DEPTH], list(value.shape)], z, [],
                x_init_value=[_rng_inputs(1), value], delta=1e-6)
    assert error < 1e-5
