"""TF1's unrollers: ``dynamic_rnn``, ``static_rnn``, ``bidirectional_dynamic_rnn``,
``static_bidirectional_rnn`` and ``raw_rnn``.

``dynamic_rnn`` and ``raw_rnn`` run the cell in a ``while_loop`` whose inputs and
outputs travel in TensorArrays, so the graph does not grow with the sequence length and
the gradient is the loop's backward ``While`` (differentiable again). ``static_rnn``
calls the cell once per given input. Variables sit under the unroller's scope exactly
as TF1 puts them (``rnn/basic_lstm_cell/kernel``,
``bidirectional_rnn/fw/lstm_cell/bias``); the loop's internal op names differ.

With ``sequence_length``, a sequence's outputs past its end are zeros and its state
stays what it was at its last step.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph, name_scope
from gradflow.framework.tensor_shape import TensorShape, as_shape
from gradflow.nn.rnn_cell import _zero_state_tensors
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.functional import while_loop
from gradflow.ops.loops import (assert_same_structure, flatten, map_structure,
                                pack_sequence_as)
from gradflow.ops.sequence_ops import reverse_sequence
from gradflow.ops.tensor_array import TensorArray
from gradflow.variables import variable_scope

__all__ = ["dynamic_rnn", "static_rnn", "bidirectional_dynamic_rnn",
           "static_bidirectional_rnn", "raw_rnn"]


# ------------------------------------------------------------------ checks
def _check_cell(cell: Any, what: str = "cell") -> None:
    """TF1's test for an RNN cell, with its message."""
    problems = []
    if not hasattr(cell, "output_size"):
        problems.append("'output_size' property is missing")
    if not hasattr(cell, "state_size"):
        problems.append("'state_size' property is missing")
    if not (hasattr(cell, "zero_state") or hasattr(cell, "get_initial_state")):
        problems.append("either 'zero_state' or 'get_initial_state' method is required")
    if not callable(cell):
        problems.append("is not callable")
    if problems:
        raise TypeError(f"The argument {what!r} ({cell}) is not an RNNCell: "
                        f"{', '.join(problems)}.")


def _sequence_length(sequence_length) -> Optional[Tensor]:
    if sequence_length is None:
        return None
    lengths = convert_to_tensor(sequence_length, name="sequence_length")
    if not lengths.dtype.is_integer:
        raise TypeError(f"sequence_length must be an integer vector, got dtype "
                        f"{lengths.dtype.name}")
    if lengths.shape.ndims not in (None, 1):
        raise ValueError("Argument sequence_length must be a vector of length batch_size. "
                         f"Received sequence_length={lengths} of shape: {lengths.shape}")
    lengths = math_ops.cast(lengths, dtypes.int32)
    return array.identity(lengths, name="sequence_length")


def _initial_state(cell, initial_state, batch_size, dtype):
    if initial_state is not None:
        return initial_state
    if dtype is None:
        raise ValueError("If no initial_state is provided, argument `dtype` must be specified")
    return cell.zero_state(batch_size, dtype)


def _state_dtype(dtype, state) -> dtypes.DType:
    if dtype is not None:
        return dtypes.as_dtype(dtype)
    leaves = flatten(state)
    if not leaves:
        raise ValueError("Unable to infer dtype from empty state.")
    return convert_to_tensor(leaves[0]).dtype


def _batch_size(flat: list[Tensor], batch_axis: int):
    """The static batch size of the inputs if known, else a tensor."""
    for t in flat:
        dims = t.shape.as_list() if t.shape.ndims is not None else None
        if dims is not None and dims[batch_axis] is not None:
            return dims[batch_axis]
    return array.shape(flat[0], out_type=dtypes.int32)[batch_axis]


def _transpose_batch_time(x: Tensor) -> Tensor:
    """Swaps the first two axes of ``x`` (rank >= 2)."""
    ndims = x.shape.ndims
    if ndims is not None and ndims < 2:
        raise ValueError(f"Input tensor should have rank >= 2. Received input={x} of rank "
                         f"{ndims}")
    if ndims is None:
        rank = array.rank(x)
        perm = array.concat([constant([1, 0]), math_ops.range(2, rank)], 0)
    else:
        perm = [1, 0] + list(range(2, ndims))
    return array.transpose(x, perm)


def _select_finished(finished: Tensor, done_value: Tensor, new_value: Tensor) -> Tensor:
    """Rows of ``done_value`` where ``finished``, else of ``new_value``."""
    return math_ops.where(finished, done_value, new_value) if new_value.shape.ndims != 0 \
        else new_value


def _copy_finished(finished: Tensor, done_values, new_values):
    """``_select_finished`` over two nests of the same structure."""
    return map_structure(lambda done, new: _select_finished(finished, done, new),
                         done_values, new_values)


# ------------------------------------------------------------------ dynamic_rnn
def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations: Optional[int] = None, swap_memory: bool = False,
                time_major: bool = False, scope=None):
    """Runs ``cell`` over ``inputs`` ([batch, time, ...], or [time, batch, ...] with
    ``time_major``) in a ``while_loop``; returns ``(outputs, final_state)``."""
    _check_cell(cell)
    graph = get_default_graph()
    with graph.atomic(), variable_scope(scope or "rnn"):
        flat_input = [convert_to_tensor(x, name="inputs") for x in flatten(inputs)]
        if not time_major:
            flat_input = [_transpose_batch_time(x) for x in flat_input]
        for x in flat_input:
            if x.shape.ndims is not None and x.shape.ndims < 2:
                raise ValueError(f"Input tensor should have rank >= 2. Received input={x} "
                                 f"of rank {x.shape.ndims}")
        lengths = _sequence_length(sequence_length)
        batch_size = _batch_size(flat_input, 1)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        outputs, final_state = _dynamic_loop(
            cell, pack_sequence_as(inputs, flat_input), flat_input, state, lengths,
            batch_size, _state_dtype(dtype, state), parallel_iterations or 32, swap_memory)
        if not time_major:
            outputs = map_structure(_transpose_batch_time, outputs)
        return outputs, final_state


def _dynamic_loop(cell, structure, flat_input: list[Tensor], state, lengths, batch_size,
                  dtype: dtypes.DType, parallel_iterations: int, swap_memory: bool):
    """The time loop of ``dynamic_rnn`` on time-major inputs."""
    static_time = {x.shape.as_list()[0] for x in flat_input
                   if x.shape.ndims is not None and x.shape.as_list()[0] is not None}
    if len(static_time) > 1:
        raise ValueError(f"Time steps is not the same for all the elements in the input in a "
                         f"batch: {[x.shape for x in flat_input]}")
    time_steps = convert_to_tensor(static_time.pop(), dtype=dtypes.int32) if static_time \
        else array.shape(flat_input[0], out_type=dtypes.int32)[0]
    input_tas = [TensorArray(x.dtype, size=time_steps, element_shape=x.shape[1:],
                             name="input_ta").unstack(x) for x in flat_input]
    output_sizes = [as_shape(size) for size in flatten(cell.output_size)]
    static_batch = batch_size if isinstance(batch_size, int) else None
    output_tas = [TensorArray(dtype, size=time_steps,
                              element_shape=TensorShape([static_batch]).concatenate(size),
                              name="output_ta") for size in output_sizes]
    zero_output = None
    if lengths is not None:
        with name_scope("zero_output"):
            zero_output = _zero_state_tensors(cell.output_size, batch_size, dtype)

    def body(time, tas, state):
        step_inputs = []
        for ta, x in zip(input_tas, flat_input, strict=True):
            value = ta.read(time)
            value.set_shape(x.shape[1:])
            step_inputs.append(value)
        output, new_state = cell(pack_sequence_as(structure, step_inputs), state)
        assert_same_structure(state, new_state, "the cell's state vs. its new state")
        if lengths is not None:
            finished = math_ops.greater_equal(time, lengths)
            output = _copy_finished(finished, zero_output, output)
            new_state = _copy_finished(finished, state, new_state)
        flat_output = flatten(output)
        tas = [ta.write(time, o) for ta, o in zip(tas, flat_output, strict=True)]
        return time + 1, tas, new_state

    _, output_tas, final_state = while_loop(
        lambda time, *_: math_ops.less(time, time_steps), body,
        (constant(0, dtype=dtypes.int32, name="time"), output_tas, state),
        parallel_iterations=parallel_iterations, swap_memory=swap_memory)
    static_steps = next(iter(x.shape.as_list()[0] for x in flat_input
                             if x.shape.ndims is not None), None)
    flat_outputs = []
    for ta, size in zip(output_tas, output_sizes, strict=True):
        stacked = ta.stack()
        stacked.set_shape(TensorShape([static_steps, static_batch]).concatenate(size))
        flat_outputs.append(stacked)
    final_state = map_structure(lambda s, i: _with_static_shape(s, i), final_state, state)
    return pack_sequence_as(cell.output_size, flat_outputs), final_state


def _with_static_shape(value, like):
    """The loop's result carries the shape its initial value had."""
    if isinstance(value, Tensor) and isinstance(like, Tensor):
        value.set_shape(like.shape)
    return value


# ------------------------------------------------------------------ static_rnn
def static_rnn(cell, inputs: Sequence, initial_state=None, dtype=None,
               sequence_length=None, scope=None):
    """Calls ``cell`` once per entry of the list ``inputs`` (sharing its weights);
    returns ``(outputs, final_state)`` with ``outputs`` a list."""
    _check_cell(cell)
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"Argument `inputs` must be a sequence. Received: {inputs}")
    if not inputs:
        raise ValueError("Argument `inputs` must not be empty.")
    graph = get_default_graph()
    with graph.atomic(), variable_scope(scope or "rnn") as varscope:
        first = [convert_to_tensor(x) for x in flatten(inputs[0])]
        for x in first:
            if x.shape.ndims is not None and x.shape.ndims < 2:
                raise ValueError(f"Input size (depth of inputs) must be accessible via shape "
                                 f"inference, but saw value None. Input tensor: {x}")
        batch_size = _batch_size(first, 0)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        lengths = _sequence_length(sequence_length)
        zero_output = None
        if lengths is not None:
            zero_output = _zero_state_tensors(cell.output_size, batch_size,
                                              _state_dtype(dtype, state))
        outputs = []
        for time, step_input in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()
            output, new_state = cell(step_input, state)
            if lengths is not None:
                finished = math_ops.greater_equal(constant(time, dtype=dtypes.int32), lengths)
                output = _copy_finished(finished, zero_output, output)
                new_state = _copy_finished(finished, state, new_state)
            state = new_state
            outputs.append(output)
        return outputs, state


# ------------------------------------------------------------------ bidirectional
def _reverse_sequences(x: Tensor, lengths: Optional[Tensor], time_axis: int) -> Tensor:
    """Reverses each sequence's first ``lengths[b]`` steps (all steps without lengths)."""
    if lengths is None:
        return array.reverse(x, [time_axis])
    return reverse_sequence(x, lengths, seq_axis=time_axis, batch_axis=1 - time_axis)


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations: Optional[int] = None,
                              swap_memory: bool = False, time_major: bool = False, scope=None):
    """A forward and a backward ``dynamic_rnn`` (under ``fw``/``bw``); returns
    ``((output_fw, output_bw), (state_fw, state_bw))``, the backward outputs put back in
    forward time order."""
    _check_cell(cell_fw, "cell_fw")
    _check_cell(cell_bw, "cell_bw")
    graph = get_default_graph()
    with graph.atomic(), variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(
                cell_fw, inputs, sequence_length=sequence_length,
                initial_state=initial_state_fw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=fw_scope)
        time_axis = 0 if time_major else 1
        with variable_scope("bw") as bw_scope:
            lengths = _sequence_length(sequence_length)

            def reverse(x):
                return _reverse_sequences(convert_to_tensor(x), lengths, time_axis)

            tmp, state_bw = dynamic_rnn(
                cell_bw, map_structure(reverse, inputs), sequence_length=lengths,
                initial_state=initial_state_bw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=bw_scope)
        output_bw = map_structure(reverse, tmp)
        return (output_fw, output_bw), (state_fw, state_bw)


def static_bidirectional_rnn(cell_fw, cell_bw, inputs: Sequence, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """A forward and a backward ``static_rnn``; returns ``(outputs, state_fw,
    state_bw)``, each output the depth-concatenation of both directions."""
    _check_cell(cell_fw, "cell_fw")
    _check_cell(cell_bw, "cell_bw")
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"Argument `inputs` must be a sequence. Received: {inputs}")
    if not inputs:
        raise ValueError("Argument `inputs` must not be empty.")
    graph = get_default_graph()
    with graph.atomic(), variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                             sequence_length, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            lengths = _sequence_length(sequence_length)
            reversed_inputs = _reverse_list(inputs, lengths)
            tmp, state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw, dtype,
                                       lengths, scope=bw_scope)
        output_bw = _reverse_list(tmp, lengths)
        outputs = [map_structure(lambda f, b: array.concat([f, b], 1), fw, bw)
                   for fw, bw in zip(output_fw, output_bw, strict=True)]
        return outputs, state_fw, state_bw


def _reverse_list(values: Sequence, lengths: Optional[Tensor]) -> list:
    """A list of per-step values with each sequence's valid steps reversed."""
    if lengths is None:
        return list(reversed(values))
    flat = [flatten(v) for v in values]
    columns = []
    for k in range(len(flat[0])):
        stacked = array.stack([convert_to_tensor(step[k]) for step in flat])
        columns.append(array.unstack(_reverse_sequences(stacked, lengths, 0),
                                     num=len(values)))
    return [pack_sequence_as(values[0], [column[t] for column in columns])
            for t in range(len(values))]


# ------------------------------------------------------------------ raw_rnn
def raw_rnn(cell, loop_fn: Callable, parallel_iterations: Optional[int] = None,
            swap_memory: bool = False, scope=None):
    """The most general unroller: ``loop_fn(time, cell_output, cell_state, loop_state)``
    returns ``(finished, next_input, next_cell_state, emit_output, next_loop_state)``,
    first called with ``cell_output=None`` for the initial values. Returns
    ``(emit_ta, final_state, final_loop_state)``, ``emit_ta`` a (nest of) TensorArray."""
    _check_cell(cell)
    if not callable(loop_fn):
        raise TypeError("loop_fn must be a callable")
    graph = get_default_graph()
    with graph.atomic(), variable_scope(scope or "rnn"):
        time = constant(0, dtype=dtypes.int32, name="time")
        finished, next_input, state, emit_structure, init_loop_state = loop_fn(
            time=time, cell_output=None, cell_state=None, loop_state=None)
        loop_state = init_loop_state if init_loop_state is not None else \
            constant(0, dtype=dtypes.int32)
        flat_input = [convert_to_tensor(x) for x in flatten(next_input)]
        batch_size = _batch_size(flat_input, 0)
        static_batch = batch_size if isinstance(batch_size, int) else None
        if emit_structure is not None:
            flat_emit = [convert_to_tensor(e) for e in flatten(emit_structure)]
            emit_sizes = [e.shape[1:] for e in flat_emit]
            emit_dtypes = [e.dtype for e in flat_emit]
        else:
            emit_structure = cell.output_size
            emit_sizes = [as_shape(s) for s in flatten(emit_structure)]
            emit_dtypes = [convert_to_tensor(flatten(state)[0]).dtype] * len(emit_sizes)
        emit_tas = [TensorArray(d, size=0, dynamic_size=True,
                                element_shape=TensorShape([static_batch]).concatenate(s))
                    for d, s in zip(emit_dtypes, emit_sizes, strict=True)]
        zero_emit = [array.zeros(array.concat([array.reshape(convert_to_tensor(
            batch_size, dtype=dtypes.int32), [1]), convert_to_tensor(s.as_list(),
            dtype=dtypes.int32)], 0), dtype=d) for d, s in zip(emit_dtypes, emit_sizes,
                                                               strict=True)]

        def body(time, done, current_input, tas, state, loop_state):
            output, cell_state = cell(current_input, state)
            assert_same_structure(state, cell_state, "the state vs. the cell's new state")
            next_time = time + 1
            next_finished, next_input, next_state, emit, next_loop_state = loop_fn(
                next_time, output, cell_state, loop_state)
            assert_same_structure(state, next_state, "the state vs. loop_fn's next state")
            assert_same_structure(current_input, next_input,
                                  "the input vs. loop_fn's next input")
            assert_same_structure(emit_structure, emit, "the emit structure vs. loop_fn's "
                                  "emit output")
            loop_state = loop_state if next_loop_state is None else next_loop_state
            flat = [_select_finished(done, z, convert_to_tensor(e))
                    for z, e in zip(zero_emit, flatten(emit), strict=True)]
            next_state = map_structure(
                lambda cur, new: new if isinstance(cur, TensorArray) else
                _select_finished(done, cur, new), state, next_state)
            tas = [ta.write(time, e) for ta, e in zip(tas, flat, strict=True)]
            return (next_time, math_ops.logical_or(done, next_finished), next_input, tas,
                    next_state, loop_state)

        results = while_loop(
            lambda _, done, *rest: math_ops.logical_not(math_ops.reduce_all(done)), body,
            (time, convert_to_tensor(finished), next_input, emit_tas, state, loop_state),
            parallel_iterations=parallel_iterations or 32, swap_memory=swap_memory)
        emit_tas, final_state, final_loop_state = results[3], results[4], results[5]
        return (pack_sequence_as(emit_structure, emit_tas), final_state,
                None if init_loop_state is None else final_loop_state)
