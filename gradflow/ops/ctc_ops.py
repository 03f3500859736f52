"""Connectionist temporal classification: ``ctc_loss`` (with its gradient) and the greedy
and beam-search decoders, as TF1's ``tf.nn`` has them.

Inputs are unnormalized logits ``[max_time, batch, num_classes]`` (time major); the
last class is the blank. The loss is ``-log p(labels | inputs)`` summed over all
alignments by the forward-backward recursion in log space; its kernel also yields the
gradient with respect to the logits, which the gradient rule scales by the incoming
gradient (a second derivative is not available, as in TF).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.sparse_tensor import SparseTensor
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops.common import apply_op, check_dtype_in, graph_for

__all__ = ["ctc_loss", "ctc_greedy_decoder", "ctc_beam_search_decoder"]

_CTC_TYPES = (dtypes.float32, dtypes.float64)
_NO_SECOND_DERIVATIVE = ("Currently there is no way to take the second derivative of ctc_loss "
                         "due to the fused implementation's interaction with tf.gradients()")


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def _logsumexp(*terms: np.ndarray) -> np.ndarray:
    stacked = np.stack(terms)
    top = np.max(stacked, axis=0)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.sum(np.exp(stacked - safe), axis=0))


def _check_inputs_shapes(inputs: Tensor, lengths: Tensor, what: str) -> Optional[int]:
    if inputs.shape.ndims not in (None, 3):
        raise ValueError(f"Shape must be rank 3 but is rank {inputs.shape.ndims} for '{what}' "
                         f"(inputs: {inputs.name} with shape {inputs.shape})")
    if lengths.shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {lengths.shape.ndims} for '{what}' "
                         f"(sequence_length: {lengths.name} with shape {lengths.shape})")
    batch = inputs.shape.as_tuple()[1] if inputs.shape.ndims == 3 else None
    count = lengths.shape.as_tuple()[0] if lengths.shape.ndims == 1 else None
    if batch is not None and count is not None and batch != count:
        raise ValueError(f"Dimensions must be equal, but are {batch} and {count} for '{what}': "
                         f"inputs {inputs.name} has batch size {batch} but sequence_length "
                         f"{lengths.name} has {count} entries")
    return batch


def _check_lengths(lengths: np.ndarray, max_time: int, batch: int) -> None:
    if len(lengths) != batch:
        raise _invalid(f"len(sequence_length) != batch_size.  len(sequence_length):  "
                       f"{len(lengths)} batch_size: {batch}")
    for b, length in enumerate(lengths):
        if length > max_time:
            raise _invalid(f"sequence_length({b}) <= {max_time}")


# ------------------------------------------------------------------------ CTCLoss
def _labels_of(indices: np.ndarray, values: np.ndarray, batch: int) -> list[list[int]]:
    """Each batch entry's label sequence (indices rows [b, position], in order)."""
    labels: list[list[int]] = [[] for _ in range(batch)]
    order = np.lexsort((indices[:, 1], indices[:, 0])) if len(indices) else []
    for i in order:
        b = int(indices[i, 0])
        if not 0 <= b < batch:
            raise _invalid(f"labels batch index must be between 0 and {batch - 1} but saw: {b}")
        labels[b].append(int(values[i]))
    return labels


def _collapsed(labels: list[int]) -> list[int]:
    return [c for i, c in enumerate(labels) if i == 0 or c != labels[i - 1]]


def _lattice(labels: list[int], blank: int) -> np.ndarray:
    """blank, l1, blank, l2, ..., blank."""
    extended = np.full(2 * len(labels) + 1, blank, dtype=np.int64)
    extended[1::2] = labels
    return extended


def _transitions(extended: np.ndarray, blank: int, merge_repeated: bool):
    """Masks of the allowed moves into each lattice state: stay, from one back, skip two.
    Without ``merge_repeated`` a label state has no self loop (each frame is a new label)
    and the blank between two equal labels may be skipped."""
    size = len(extended)
    stay = np.full(size, True) if merge_repeated else extended == blank
    step = np.arange(size) > 0
    skip = np.zeros(size, dtype=bool)
    skip[2:] = (extended[2:] != blank) & (~merge_repeated | (extended[2:] != extended[:-2]))
    return stay, step, skip


def _forward_backward(log_probs: np.ndarray, extended: np.ndarray, blank: int,
                      merge_repeated: bool) -> tuple[float, np.ndarray]:
    """log p(labels) and d(-log p)/d logits for one sequence ([time, classes])."""
    steps, size = len(log_probs), len(extended)
    stay, step, skip = _transitions(extended, blank, merge_repeated)
    emit = log_probs[:, extended]  # [time, states]
    minus_inf = np.full(size, -np.inf)
    alpha = np.full((steps, size), -np.inf)
    alpha[0, :min(2, size)] = emit[0, :min(2, size)]
    for t in range(1, steps):
        previous = alpha[t - 1]
        alpha[t] = emit[t] + _logsumexp(np.where(stay, previous, -np.inf),
                                        np.where(step, np.roll(previous, 1), -np.inf),
                                        np.where(skip, np.roll(previous, 2), -np.inf))
    beta = np.full((steps, size), -np.inf)
    beta[-1, max(size - 2, 0):] = emit[-1, max(size - 2, 0):]
    # Moves out of state u: stay (stay[u]), to u+1 (step[u+1]), to u+2 (skip[u+2]).
    step_out = np.append(step[1:], False)
    skip_out = np.append(skip[2:], [False, False])[:size]
    for t in range(steps - 2, -1, -1):
        following = beta[t + 1]
        beta[t] = emit[t] + _logsumexp(np.where(stay, following, -np.inf),
                                       np.where(step_out, np.roll(following, -1), minus_inf),
                                       np.where(skip_out, np.roll(following, -2), minus_inf))
    log_p = float(_logsumexp(alpha[-1, -1], alpha[-1, -2] if size > 1 else -np.inf))
    grad = np.exp(log_probs)
    if np.isfinite(log_p):
        occupancy = np.exp(alpha + beta - emit - log_p)  # [time, states]
        for state, label in enumerate(extended):
            grad[:, label] -= occupancy[:, state]
    return log_p, grad


def _required_time(labels: list[int], merge_repeated: bool) -> int:
    repeats = sum(1 for i in range(1, len(labels)) if labels[i] == labels[i - 1])
    return len(labels) + (repeats if merge_repeated else 0)


def _ctc_loss_kernel(inputs, label_indices, label_values, lengths, *,
                     preprocess_collapse_repeated, ctc_merge_repeated,
                     ignore_longer_outputs_than_inputs):
    max_time, batch, classes = inputs.shape
    _check_lengths(lengths, max_time, batch)
    blank = classes - 1
    loss = np.zeros(batch, dtype=inputs.dtype)
    gradient = np.zeros_like(inputs)
    for b, labels in enumerate(_labels_of(label_indices, label_values, batch)):
        if preprocess_collapse_repeated:
            labels = _collapsed(labels)
        if not labels:
            raise _invalid(f"Labels length is zero in batch {b}")
        for label in labels:
            # TF computes an unspecified value for these; refuse them instead.
            if not 0 <= label < blank:
                raise _invalid(f"labels must lie in [0, num_classes - 1) = [0, {blank}) (the "
                               f"last class is the blank), batch {b} has {label}")
        length = int(lengths[b])
        required = _required_time(labels, ctc_merge_repeated)
        if length < required:
            if ignore_longer_outputs_than_inputs:
                continue
            raise _invalid(f"Not enough time for target transition sequence (required: "
                           f"{required}, available: {length})0You can turn this error into "
                           "a warning by using the flag ignore_longer_outputs_than_inputs")
        log_probs = _log_softmax(inputs[:length, b].astype(np.float64))
        log_p, grad = _forward_backward(log_probs, _lattice(labels, blank), blank,
                                        ctc_merge_repeated)
        loss[b] = -log_p
        gradient[:length, b] = grad if np.isfinite(log_p) else 0.0
    return loss, gradient


def _infer_ctc_loss(inputs, attrs):
    logits, label_indices, label_values, lengths = inputs
    check_dtype_in(logits, _CTC_TYPES, "CTCLoss", "inputs")
    if label_indices.dtype is not dtypes.int64:
        raise TypeError(f"labels_indices of CTCLoss must be int64, got "
                        f"{label_indices.dtype.name} ({label_indices.name})")
    if label_values.dtype is not dtypes.int32:
        raise TypeError(f"labels_values of CTCLoss must be int32, got {label_values.dtype.name} "
                        f"({label_values.name})")
    if lengths.dtype is not dtypes.int32:
        raise TypeError(f"sequence_length of CTCLoss must be int32, got {lengths.dtype.name} "
                        f"({lengths.name})")
    batch = _check_inputs_shapes(logits, lengths, "CTCLoss")
    return [(logits.dtype, TensorShape([batch])), (logits.dtype, logits.shape)]


define_op("CTCLoss", infer=_infer_ctc_loss, kernel=_ctc_loss_kernel)


@RegisterGradient("CTCLoss")
def _ctc_loss_grad(op, grad_loss, _):
    """The kernel's gradient, each sequence's scaled by its incoming loss gradient."""
    per_logit = array.prevent_gradient(op.outputs[1], message=_NO_SECOND_DERIVATIVE)
    return [array.expand_dims(grad_loss, -1) * per_logit, None, None, None]


def ctc_loss(labels, inputs=None, sequence_length=None,
             preprocess_collapse_repeated: bool = False, ctc_merge_repeated: bool = True,
             ignore_longer_outputs_than_inputs: bool = False, time_major: bool = True,
             logits=None) -> Tensor:
    """Per-sequence CTC loss ``-log p(labels | inputs)``: ``labels`` a SparseTensor of int32
    class ids, ``inputs`` logits ``[max_time, batch, num_classes]`` (``[batch, max_time,
    num_classes]`` if not ``time_major``) whose last class is the blank."""
    if not isinstance(labels, SparseTensor):
        raise TypeError("Expected labels (first argument) to be a SparseTensor")
    if inputs is not None and logits is not None:
        raise ValueError("Cannot specify both 'inputs' and 'logits'")
    inputs = logits if inputs is None else inputs
    if inputs is None or sequence_length is None:
        raise ValueError("ctc_loss needs inputs (the logits) and sequence_length")
    graph = graph_for([labels.values, inputs, sequence_length])
    with graph.as_default(), graph.atomic():
        inputs_t = convert_to_tensor(inputs, name="inputs")
        if not time_major:
            inputs_t = array.transpose(inputs_t, [1, 0, 2])
        with graph.name_scope("CTCLoss") as scope:
            lengths = _lengths(sequence_length)
        loss, _ = apply_op("CTCLoss", [inputs_t, labels.indices, labels.values, lengths],
                           name=scope,
                           preprocess_collapse_repeated=bool(preprocess_collapse_repeated),
                           ctc_merge_repeated=bool(ctc_merge_repeated),
                           ignore_longer_outputs_than_inputs=bool(
                               ignore_longer_outputs_than_inputs))
        return loss


# ---------------------------------------------------------------------- decoders
def _sparse_outputs(paths: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indices, values, dense_shape) of the batch of decoded label sequences ``paths``."""
    indices = [(b, j) for b, path in enumerate(paths) for j in range(len(path))]
    values = [c for path in paths for c in path]
    longest = max((len(p) for p in paths), default=0)
    return (np.asarray(indices, dtype=np.int64).reshape(-1, 2),
            np.asarray(values, dtype=np.int64), np.asarray([len(paths), longest], np.int64))


def _greedy_kernel(inputs, lengths, *, merge_repeated, blank_index):
    max_time, batch, classes = inputs.shape
    _check_lengths(lengths, max_time, batch)
    blank = blank_index if blank_index >= 0 else blank_index + classes
    log_probability = np.zeros((batch, 1), dtype=inputs.dtype)
    paths = []
    for b in range(batch):
        frames = inputs[:int(lengths[b]), b]
        best = np.argmax(frames, axis=1) if len(frames) else np.zeros(0, np.int64)
        log_probability[b, 0] = -np.sum(np.max(frames, axis=1)) if len(frames) else 0
        path, previous = [], -1
        for label in best:
            if label != blank and not (merge_repeated and label == previous):
                path.append(int(label))
            previous = label
        paths.append(path)
    return (*_sparse_outputs(paths), log_probability)


def _infer_decoder(inputs, attrs, top_paths: int = 1):
    logits, lengths = inputs[:2]
    check_dtype_in(logits, _CTC_TYPES, "CTCDecoder", "inputs")
    if lengths.dtype is not dtypes.int32:
        raise TypeError(f"sequence_length of a CTC decoder must be int32, got "
                        f"{lengths.dtype.name} ({lengths.name})")
    batch = _check_inputs_shapes(logits, lengths, "CTCDecoder")
    specs = [(dtypes.int64, TensorShape([None, 2])) for _ in range(top_paths)]
    specs += [(dtypes.int64, TensorShape([None])) for _ in range(top_paths)]
    specs += [(dtypes.int64, TensorShape([2])) for _ in range(top_paths)]
    return specs + [(logits.dtype, TensorShape([batch, top_paths if top_paths else 1]))]


define_op("CTCGreedyDecoder", infer=_infer_decoder, kernel=_greedy_kernel)
NotDifferentiable("CTCGreedyDecoder")


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated: bool = True,
                       blank_index: Optional[int] = None):
    """Best path decoding: the most likely class at each step, repeats merged (if
    ``merge_repeated``) and blanks dropped. Returns ``([decoded], neg_sum_logits)``."""
    graph = graph_for([inputs, sequence_length])
    with graph.as_default(), graph.atomic():
        inputs_t = convert_to_tensor(inputs, name="inputs")
        with graph.name_scope("CTCGreedyDecoder") as scope:
            lengths = _lengths(sequence_length)
        blank = -1 if blank_index is None else int(blank_index)
        indices, values, shape, log_probability = apply_op(
            "CTCGreedyDecoder", [inputs_t, lengths], name=scope,
            merge_repeated=bool(merge_repeated), blank_index=blank)
        return [SparseTensor(indices, values, shape)], log_probability


def _lengths(sequence_length) -> Tensor:
    return convert_to_tensor(sequence_length, name="sequence_length",
                             dtype=None if isinstance(sequence_length, Tensor) else dtypes.int32)


def _extend(grown: dict, prefix: tuple, blank_part=-np.inf, label_part=-np.inf) -> None:
    """Adds probability (in logs) of ending in a blank / in a label to ``prefix``."""
    old_blank, old_label = grown.get(prefix, (-np.inf, -np.inf))
    grown[prefix] = (np.logaddexp(old_blank, blank_part), np.logaddexp(old_label, label_part))


def _beam_search(log_probs: np.ndarray, beam_width: int, top_paths: int,
                 blank: int) -> list[tuple[tuple, float]]:
    """Prefix beam search: each prefix's probability split into ending in a blank and
    ending in its last label; the ``beam_width`` most likely prefixes survive each step."""
    beam = {(): (0.0, -np.inf)}  # prefix -> (log p ending blank, log p ending label)
    labels = [c for c in range(log_probs.shape[1]) if c != blank]
    for frame in log_probs:
        grown: dict = {}
        for prefix, (p_blank, p_label) in beam.items():
            total = np.logaddexp(p_blank, p_label)
            _extend(grown, prefix, blank_part=total + frame[blank])
            if prefix:
                _extend(grown, prefix, label_part=p_label + frame[prefix[-1]])
            for label in labels:
                previous = p_blank if prefix and prefix[-1] == label else total
                _extend(grown, prefix + (label,), label_part=previous + frame[label])
        ranked = sorted(grown.items(), key=lambda item: -np.logaddexp(*item[1]))
        beam = dict(ranked[:beam_width])
    ranked = sorted(beam.items(), key=lambda item: -np.logaddexp(*item[1]))
    return [(prefix, float(np.logaddexp(*parts))) for prefix, parts in ranked[:top_paths]]


def _beam_kernel(inputs, lengths, *, beam_width, top_paths, merge_repeated):
    max_time, batch, classes = inputs.shape
    _check_lengths(lengths, max_time, batch)
    paths = [[[] for _ in range(batch)] for _ in range(top_paths)]
    log_probabilities = np.full((batch, top_paths), -np.inf, dtype=inputs.dtype)
    for b in range(batch):
        log_probs = _log_softmax(inputs[:int(lengths[b]), b].astype(np.float64))
        found = _beam_search(log_probs, beam_width, top_paths, classes - 1)
        for k, (prefix, score) in enumerate(found):
            labels = list(prefix)
            paths[k][b] = _collapsed(labels) if merge_repeated else labels
            log_probabilities[b, k] = score
    parts = [_sparse_outputs(p) for p in paths]
    return (*[p[0] for p in parts], *[p[1] for p in parts], *[p[2] for p in parts],
            log_probabilities)


define_op("CTCBeamSearchDecoder",
          infer=lambda inputs, attrs: _infer_decoder(inputs, attrs, attrs["top_paths"]),
          kernel=_beam_kernel)
NotDifferentiable("CTCBeamSearchDecoder")


def ctc_beam_search_decoder(inputs, sequence_length, beam_width: int = 100,
                            top_paths: int = 1, merge_repeated: bool = True):
    """The ``top_paths`` most likely labelings by prefix beam search of width
    ``beam_width``. Returns ``(decoded, log_probabilities)``: a list of ``top_paths``
    SparseTensors and their log probabilities ``[batch, top_paths]``."""
    if int(beam_width) < 1:
        raise ValueError(f"beam_width must be >= 1, got {beam_width}")
    if not 1 <= int(top_paths) <= int(beam_width):
        raise ValueError(f"top_paths must be between 1 and beam_width ({beam_width}), got "
                         f"{top_paths}")
    graph = graph_for([inputs, sequence_length])
    with graph.as_default(), graph.atomic():
        inputs_t = convert_to_tensor(inputs, name="inputs")
        with graph.name_scope("CTCBeamSearchDecoder") as scope:
            lengths = _lengths(sequence_length)
        outputs = apply_op("CTCBeamSearchDecoder", [inputs_t, lengths], name=scope,
                           beam_width=int(beam_width), top_paths=int(top_paths),
                           merge_repeated=bool(merge_repeated))
        k = int(top_paths)
        decoded = [SparseTensor(outputs[i], outputs[k + i], outputs[2 * k + i])
                   for i in range(k)]
        return decoded, outputs[3 * k]

