"""rnn_cell behaviour beyond the numbers: zero states, sizes, errors (TF's types and
messages), dropout, user-defined cells, weight bookkeeping and atomic failure."""
from __future__ import annotations

import re

import numpy as np
import pytest

import gradflow as gf
from gradflow.ops.loops import flatten
from tf_fixtures import load_json

rnn_cell = gf.nn.rnn_cell
META = load_json("rnn")


def _mask_tensor_names(message: str) -> str:
    """Tensor names differ where gradflow names an op's scope otherwise (zeros/zeros)."""
    return re.sub(r'Tensor\("[^"]*"', 'Tensor("<name>"', message)


def test_zero_state_matches_tensorflow():
    recorded = META["zero_state"]
    with gf.Graph().as_default():
        cells = {"basic_lstm": rnn_cell.BasicLSTMCell(4),
                 "lstm_proj": rnn_cell.LSTMCell(4, num_proj=2),
                 "lstm_concat": rnn_cell.LSTMCell(4, num_proj=2, state_is_tuple=False),
                 "multi": rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(4),
                                                 rnn_cell.GRUCell(3)]),
                 "gru": rnn_cell.GRUCell(5)}
        for key, cell in cells.items():
            state = cell.zero_state(7, gf.float32)
            assert repr(cell.state_size) == recorded[key]["state_size"], key
            assert cell.output_size == recorded[key]["output_size"], key
            assert [t.shape.as_list() for t in flatten(state)] == recorded[key]["shapes"]
            assert [t.name for t in flatten(state)] == recorded[key]["names"], key
            with gf.Session() as sess:
                assert all(not np.any(v) for v in sess.run(flatten(state)))


def test_zero_state_with_a_tensor_batch_size():
    with gf.Graph().as_default():
        batch = gf.placeholder(gf.int32, [])
        state = rnn_cell.BasicLSTMCell(3).zero_state(batch, gf.float64)
        assert state.c.shape.as_list() == [None, 3] and state.c.dtype == gf.float64
        assert [state.c.name, state.h.name] == ["BasicLSTMCellZeroState/zeros:0",
                                                "BasicLSTMCellZeroState/zeros_1:0"]
        with gf.Session() as sess:
            assert sess.run(state.h, {batch: 4}).shape == (4, 3)


ERROR_CALLS = {
    "dropout_keep0": lambda: rnn_cell.DropoutWrapper(rnn_cell.GRUCell(3), input_keep_prob=0.0),
    "multi_empty": lambda: rnn_cell.MultiRNNCell([]),
    "dynamic_no_dtype": lambda: gf.nn.dynamic_rnn(rnn_cell.GRUCell(3), gf.zeros([2, 3, 4])),
    "dynamic_rank1": lambda: gf.nn.dynamic_rnn(rnn_cell.GRUCell(3), gf.zeros([2]),
                                               dtype=gf.float32),
    "dynamic_bad_cell": lambda: gf.nn.dynamic_rnn("not a cell", gf.zeros([2, 3, 4]),
                                                  dtype=gf.float32),
    "static_not_list": lambda: gf.nn.static_rnn(rnn_cell.GRUCell(3), gf.zeros([2, 3, 4]),
                                                dtype=gf.float32),
    "static_empty": lambda: gf.nn.static_rnn(rnn_cell.GRUCell(3), [], dtype=gf.float32),
    "seq_len_rank": lambda: gf.nn.dynamic_rnn(rnn_cell.GRUCell(3), gf.zeros([2, 3, 4]),
                                              dtype=gf.float32,
                                              sequence_length=gf.zeros([2, 2], gf.int32)),
}


@pytest.mark.parametrize("key", sorted(ERROR_CALLS))
def test_errors_match_tensorflow(key):
    recorded = META["errors"][key]
    with gf.Graph().as_default():
        if recorded is None:
            ERROR_CALLS[key]()
            return
        with pytest.raises(Exception) as info:
            ERROR_CALLS[key]()
    assert type(info.value).__name__ == recorded[0]
    assert _mask_tensor_names(str(info.value)) == _mask_tensor_names(recorded[1])


@pytest.mark.parametrize("arg", ["num_unit_shards", "num_proj_shards"])
def test_lstm_shards_not_supported(arg):
    """TF1 (deprecated) shards the weights; gradflow says it does not."""
    with pytest.raises(ValueError, match=f"{arg}=2 is not supported"):
        rnn_cell.LSTMCell(4, **{arg: 2})
    assert rnn_cell.LSTMCell(4, **{arg: 1}).output_size == 4


def test_unknown_input_depth_raises_and_rolls_back():
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float32, [2, 3, None])
        ops_before = [op.name for op in graph.get_operations()]
        with pytest.raises(ValueError, match=r"Expected inputs.shape\[-1\] to be known"):
            gf.nn.dynamic_rnn(rnn_cell.BasicLSTMCell(3), x, dtype=gf.float32)
        assert [op.name for op in graph.get_operations()] == ops_before
        assert gf.global_variables() == [] and gf.trainable_variables() == []
        good = gf.placeholder(gf.float32, [2, 3, 4])
        gf.nn.dynamic_rnn(rnn_cell.BasicLSTMCell(3), good, dtype=gf.float32)
        assert [v.name for v in gf.global_variables()] == ["rnn/basic_lstm_cell/kernel:0",
                                                           "rnn/basic_lstm_cell/bias:0"]


@pytest.mark.parametrize("key", ["seq_len_rank", "dynamic_no_dtype", "static_empty"])
def test_bad_calls_leave_the_graph_unchanged(key):
    graph = gf.Graph()
    with graph.as_default():
        gf.zeros([2, 3, 4])
        gf.zeros([2, 2], gf.int32)
        ops_before = [op.name for op in graph.get_operations()]
        keys = graph.get_all_collection_keys()
        collections = {k: list(graph.get_collection(k)) for k in keys}
        with pytest.raises((TypeError, ValueError)):
            ERROR_CALLS[key]()
        assert [op.name for op in graph.get_operations()][:len(ops_before)] == ops_before
        created = [op.name for op in graph.get_operations()][len(ops_before):]
        # the call's arguments themselves (zeros, cells' nothing) may remain; the rnn may not
        assert not any(name.startswith("rnn") for name in created)
        assert {k: list(graph.get_collection(k)) for k in keys} == collections


def test_cell_weights_are_tracked_when_built_in_the_loop():
    with gf.Graph().as_default():
        cell = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(3), rnn_cell.GRUCell(2)])
        gf.nn.dynamic_rnn(cell, gf.zeros([2, 4, 5]), dtype=gf.float32)
        names = [v.name for v in cell.trainable_weights]
        assert names == [v.name for v in gf.trainable_variables()]
        assert len(names) == 6 and cell.non_trainable_weights == []


def test_static_rnn_shares_weights_across_steps_and_calls():
    with gf.Graph().as_default():
        cell = rnn_cell.GRUCell(3)
        inputs = gf.unstack(gf.ones([2, 4, 5]), axis=1)
        gf.nn.static_rnn(cell, inputs, dtype=gf.float32)
        gf.nn.dynamic_rnn(cell, gf.ones([2, 4, 5]), dtype=gf.float32)
        assert len(gf.trainable_variables()) == 4


def test_scope_argument_names_variables():
    with gf.Graph().as_default():
        gf.nn.dynamic_rnn(rnn_cell.BasicRNNCell(2), gf.ones([1, 2, 3]), dtype=gf.float32,
                          scope="encoder")
        with gf.variable_scope("decoder"):
            gf.nn.dynamic_rnn(rnn_cell.BasicRNNCell(2), gf.ones([1, 2, 3]), dtype=gf.float32)
        assert [v.name for v in gf.trainable_variables()] == [
            "encoder/basic_rnn_cell/kernel:0", "encoder/basic_rnn_cell/bias:0",
            "decoder/rnn/basic_rnn_cell/kernel:0", "decoder/rnn/basic_rnn_cell/bias:0"]


def test_cell_call_with_scope_argument():
    with gf.Graph().as_default():
        cell = rnn_cell.BasicLSTMCell(2)
        state = cell.zero_state(1, gf.float32)
        cell(gf.ones([1, 3]), state, scope="my_lstm")
        # as TF1: the given scope becomes the cell's own scope
        assert [v.name for v in gf.trainable_variables()] == ["my_lstm/kernel:0",
                                                              "my_lstm/bias:0"]


def test_lstm_state_tuple():
    with gf.Graph().as_default():
        state = rnn_cell.LSTMStateTuple(gf.zeros([1, 2]), gf.ones([1, 2]))
        assert state.dtype == gf.float32 and state.c is state[0] and state.h is state[1]
        with pytest.raises(TypeError, match="Inconsistent dtypes"):
            _ = rnn_cell.LSTMStateTuple(gf.zeros([1, 2]), gf.ones([1, 2], gf.float64)).dtype


def test_abstract_cell_needs_its_methods():
    cell = rnn_cell.RNNCell()
    with pytest.raises(NotImplementedError):
        cell.state_size  # noqa: B018


def _dropout_outputs(wrapper_kwargs, runs: int = 1, steps: int = 6):
    graph = gf.Graph()
    with graph.as_default():
        cell = rnn_cell.DropoutWrapper(rnn_cell.BasicRNNCell(
            64, activation=lambda t: t * 0 + 1.0), **wrapper_kwargs)
        outputs, _ = gf.nn.dynamic_rnn(cell, gf.ones([8, steps, 3]), dtype=gf.float32)
        with gf.Session(graph=graph) as sess:
            sess.run(gf.global_variables_initializer())
            return [sess.run(outputs) for _ in range(runs)]


def test_dropout_output_keep_probability():
    (values,) = _dropout_outputs({"output_keep_prob": 0.75, "seed": 5})
    kept = values != 0
    assert abs(kept.mean() - 0.75) < 0.03
    np.testing.assert_allclose(values[kept], 1 / 0.75, rtol=1e-6)
    # a fresh mask at each step and for each sequence
    assert not np.array_equal(kept[:, 0], kept[:, 1])


def test_variational_dropout_reuses_one_mask():
    (values,) = _dropout_outputs({"output_keep_prob": 0.5, "variational_recurrent": True,
                                  "dtype": gf.float32, "seed": 3})
    kept = values != 0
    assert 0.3 < kept.mean() < 0.7
    # one [1, units] mask: the same for every time step and every sequence
    assert (kept == kept[:1, :1]).all()


def test_variational_dropout_arguments():
    with gf.Graph().as_default():
        with pytest.raises(ValueError, match="dtype must be provided"):
            rnn_cell.DropoutWrapper(rnn_cell.GRUCell(2), variational_recurrent=True)
        with pytest.raises(ValueError, match="input_size must be provided"):
            rnn_cell.DropoutWrapper(rnn_cell.GRUCell(2), input_keep_prob=0.5,
                                    variational_recurrent=True, dtype=gf.float32)
        with pytest.raises(ValueError, match="between 0 and 1"):
            rnn_cell.DropoutWrapper(rnn_cell.GRUCell(2), output_keep_prob=1.5)


def test_dropout_keeps_lstm_memory_and_state_filter():
    with gf.Graph().as_default():
        cell = rnn_cell.DropoutWrapper(rnn_cell.BasicLSTMCell(50), state_keep_prob=0.5,
                                       seed=2)
        _, state = gf.nn.dynamic_rnn(cell, gf.ones([4, 3, 2]), dtype=gf.float32)
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            c, h = sess.run(state)
        assert (c != 0).all() and (h == 0).any()


def test_wrappers_expose_the_wrapped_cell():
    base = rnn_cell.GRUCell(3)
    for wrapper in (rnn_cell.DropoutWrapper(base), rnn_cell.ResidualWrapper(base),
                    rnn_cell.DeviceWrapper(base, "/cpu:0")):
        assert wrapper.wrapped_cell is base
        assert wrapper.state_size == 3 and wrapper.output_size == 3
    with pytest.raises(TypeError, match="not a RNNCell"):
        rnn_cell.ResidualWrapper("cell")


def test_variables_from_get_variable_in_call_are_the_cells():
    """A user's cell making a variable with plain get_variable in call (TF1 style)."""
    class ScaledCell(rnn_cell.RNNCell):
        @property
        def state_size(self):
            return 2

        @property
        def output_size(self):
            return 2

        def call(self, inputs, state):
            scale = gf.get_variable("scale", [2], initializer=gf.ones_initializer())
            out = gf.tanh(inputs[:, :2] + state) * scale
            return out, out

    with gf.Graph().as_default():
        cell = ScaledCell()
        gf.nn.dynamic_rnn(cell, gf.ones([1, 3, 2]), dtype=gf.float32)
        assert [v.name for v in cell.trainable_weights] == ["rnn/scaled_cell/scale:0"]
        gf.nn.dynamic_rnn(cell, gf.ones([1, 3, 2]), dtype=gf.float32)
        assert len(cell.trainable_weights) == 1 and len(gf.trainable_variables()) == 1
