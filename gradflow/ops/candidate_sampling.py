"""Candidate samplers, accidental hits and categorical sampling, seeded as in TF1.

A sampler op draws ``num_sampled`` class ids from ``[0, range_max)`` under its
distribution (log-uniform, uniform, learned or fixed unigram) and reports each true and
sampled class's expected count: ``num_sampled * p`` when sampling with replacement, and
with ``unique=True`` (no repeats) ``1 - (1 - p) ** num_tries``, ``num_tries`` being how
many draws it took to find ``num_sampled`` distinct ids (TF's convention: exactly
``num_tries * p`` when no draw repeated). The learned sampler starts from counts of one
and adds each run's true classes after drawing. Random streams are numpy's, not TF's:
the distributions, not the numbers, match TF.
"""
from __future__ import annotations

import itertools
from typing import NamedTuple, Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import FLOATING, apply_op, check_dtype_in, graph_for, static_ints
from gradflow.ops.random import get_seed

__all__ = ["log_uniform_candidate_sampler", "uniform_candidate_sampler",
           "learned_unigram_candidate_sampler", "fixed_unigram_candidate_sampler",
           "compute_accidental_hits", "multinomial", "categorical", "CandidateSamples",
           "AccidentalHits"]

_MAXINT32 = 2 ** 31 - 1
# Names each sampler's state in a session; unique for the life of the process.
_streams = itertools.count()


class CandidateSamples(NamedTuple):
    sampled_candidates: Tensor
    true_expected_count: Tensor
    sampled_expected_count: Tensor


class AccidentalHits(NamedTuple):
    indices: Tensor
    ids: Tensor
    weights: Tensor


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _seed_attrs(seed: Optional[int]) -> dict:
    graph_seed, op_seed = get_seed(seed)
    return {"seed": graph_seed or 0, "seed2": op_seed or 0, "stream": next(_streams)}


def _generator(ctx, seed: int, seed2: int, stream: int) -> tuple[np.random.PCG64, tuple]:
    """This op's bit generator in the session (fresh from the seeds on first use)."""
    key = ("candidate_sampler", stream)
    bits = np.random.PCG64([seed, seed2] if seed or seed2 else None)
    if ctx.is_initialized(key):
        bits.state = ctx.read_variable(key, "candidate_sampler")
    return bits, key


# ----------------------------------------------------------------- distributions
def _log_uniform(range_max: int) -> np.ndarray:
    """P(k) = log((k + 2) / (k + 1)) / log(range_max + 1): Zipf-like, for sorted vocabularies."""
    k = np.arange(range_max, dtype=np.float64)
    return (np.log(k + 2.0) - np.log(k + 1.0)) / np.log(range_max + 1.0)


def _unigram_weights(attrs: dict) -> np.ndarray:
    """The fixed sampler's weights: reserved ids (weight 0), then the unigrams (each raised to
    ``distortion``), keeping only the ids of this shard."""
    counts = attrs["unigrams"] if attrs["unigrams"] else _read_vocab(attrs["vocab_file"])
    weights = np.concatenate([np.zeros(attrs["num_reserved_ids"]),
                              np.asarray(counts, dtype=np.float64) ** attrs["distortion"]])
    ids = np.arange(len(weights))
    return weights[ids % attrs["num_shards"] == attrs["shard"]]


def _read_vocab(path: str) -> list:
    """The counts in a vocabulary file: the last comma-separated field of each line."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = [line.rstrip("\n") for line in handle if line.strip()]
    except OSError as err:
        raise errors.NotFoundError(None, None, f"{path}; {err.strerror}") from None
    try:
        return [float(line.split(",")[-1]) for line in lines]
    except ValueError:
        raise _invalid(f"Wrong vocabulary format in {path}: each line must end with "
                       "',<count>'") from None


# ---------------------------------------------------------------------- drawing
def _expected(p: np.ndarray, num_tries: int, num_sampled: int, unique: bool) -> np.ndarray:
    if not unique or num_tries == num_sampled:
        return (p * num_tries).astype(np.float32)
    return (-np.expm1(num_tries * np.log1p(-p))).astype(np.float32)


def _draw(gen: np.random.Generator, p: np.ndarray, num_sampled: int,
          unique: bool) -> tuple[np.ndarray, int]:
    """``num_sampled`` ids drawn by ``p``; with ``unique``, draws until that many distinct
    ids came up (in the order they first came). Returns them and the number of draws."""
    cumulative = np.cumsum(p)
    cumulative /= cumulative[-1]

    def draw(count: int) -> np.ndarray:
        return np.minimum(np.searchsorted(cumulative, gen.random(count), side="right"),
                          len(p) - 1)

    if not unique:
        return draw(num_sampled), num_sampled
    seen: dict = {}
    tries = 0
    while len(seen) < num_sampled:
        for value in draw(max(num_sampled - len(seen), 1)):
            tries += 1
            seen.setdefault(int(value), None)
            if len(seen) == num_sampled:
                break
    return np.fromiter(seen, dtype=np.int64, count=num_sampled), tries


def _sample(ctx, true_classes: np.ndarray, p: np.ndarray, attrs: dict):
    num_sampled, unique = attrs["num_sampled"], attrs["unique"]
    if unique and num_sampled > np.count_nonzero(p):
        raise _invalid("Sampler's range is too small.")
    if true_classes.ndim != 2 or true_classes.shape[1] != attrs["num_true"]:
        raise _invalid(f"true_classes must be a matrix with num_true={attrs['num_true']} "
                       f"columns, got shape {list(true_classes.shape)}")
    if true_classes.size and (true_classes.min() < 0 or true_classes.max() >= len(p)):
        raise _invalid(f"true_classes must lie in [0, {len(p)}) (range_max), got "
                       f"{int(true_classes.min())}..{int(true_classes.max())}")
    bits, key = _generator(ctx, attrs["seed"], attrs["seed2"], attrs["stream"])
    sampled, tries = _draw(np.random.Generator(bits), p, num_sampled, unique)
    ctx.write_variable(key, bits.state)
    return (sampled.astype(np.int64), _expected(p[true_classes], tries, num_sampled, unique),
            _expected(p[sampled], tries, num_sampled, unique))


def _fixed_kernel(p_of):
    def kernel(ctx, true_classes, **attrs):
        return _sample(ctx, true_classes, p_of(attrs), attrs)
    return kernel


def _learned_kernel(ctx, true_classes, **attrs):
    """Samples by the counts seen so far (one each to start), then counts ``true_classes``."""
    key = ("learned_unigram", attrs["stream"])
    counts = ctx.read_variable(key, "learned_unigram") if ctx.is_initialized(key) else \
        np.ones(attrs["range_max"], dtype=np.float64)
    result = _sample(ctx, true_classes, counts / counts.sum(), attrs)
    updated = counts.copy()
    np.add.at(updated, true_classes.reshape(-1), 1.0)
    ctx.write_variable(key, updated)
    return result


def _infer_sampler(inputs, attrs):
    (true_classes,) = inputs
    if true_classes.dtype is not dtypes.int64:
        raise TypeError(f"Value passed to parameter 'true_classes' has DataType "
                        f"{true_classes.dtype.name} not in list of allowed values: int64 "
                        f"({true_classes.name})")
    dims = true_classes.shape.as_tuple()
    if dims is not None:
        if len(dims) != 2:
            raise ValueError(f"Shape must be rank 2 but is rank {len(dims)} for true_classes "
                             f"({true_classes.name} with shape {true_classes.shape})")
        if dims[1] is not None and dims[1] != attrs["num_true"]:
            raise ValueError(f"true_classes ({true_classes.name}) has {dims[1]} columns but "
                             f"num_true is {attrs['num_true']}")
    batch = None if dims is None else dims[0]
    num = attrs["num_sampled"]
    return [(dtypes.int64, TensorShape([num])),
            (dtypes.float32, TensorShape([batch, attrs["num_true"]])),
            (dtypes.float32, TensorShape([num]))]


def _define_sampler(op_type: str, kernel) -> None:
    define_op(op_type, infer=_infer_sampler, kernel=kernel, stateful=True, needs_context=True)
    NotDifferentiable(op_type)


_define_sampler("LogUniformCandidateSampler",
                _fixed_kernel(lambda attrs: _log_uniform(attrs["range_max"])))
_define_sampler("UniformCandidateSampler",
                _fixed_kernel(lambda attrs: np.full(attrs["range_max"],
                                                    1.0 / attrs["range_max"])))
_define_sampler("LearnedUnigramCandidateSampler", _learned_kernel)


def _fixed_unigram_p(attrs: dict) -> np.ndarray:
    weights = _unigram_weights(attrs)
    if len(weights) != attrs["range_max"]:
        raise _invalid(f"range_max must be equal to the number of (sharded) unigram weights: "
                       f"{attrs['range_max']} vs. {len(weights)}")
    return weights / weights.sum()


_define_sampler("FixedUnigramCandidateSampler", _fixed_kernel(_fixed_unigram_p))


def _check_sampler_args(num_true, num_sampled, range_max) -> None:
    for value, arg in ((num_true, "num_true"), (num_sampled, "num_sampled"),
                       (range_max, "range_max")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{arg} must be a positive int, got {value!r}")


def _sampler(op_type: str, true_classes, num_true, num_sampled, unique, range_max, seed, name,
             **extra) -> CandidateSamples:
    _check_sampler_args(num_true, num_sampled, range_max)
    graph = graph_for([true_classes])
    with graph.as_default(), graph.atomic(), graph.name_scope(name or op_type) as scope:
        classes = convert_to_tensor(true_classes, name="true_classes",
                                    dtype=None if isinstance(true_classes, Tensor)
                                    else dtypes.int64)
        outputs = apply_op(op_type, [classes], name=scope, num_true=int(num_true),
                           num_sampled=int(num_sampled), unique=bool(unique),
                           range_max=int(range_max), **extra, **_seed_attrs(seed))
        return CandidateSamples(*outputs)


def log_uniform_candidate_sampler(true_classes, num_true: int, num_sampled: int, unique: bool,
                                  range_max: int, seed: Optional[int] = None,
                                  name: Optional[str] = None) -> CandidateSamples:
    """Samples ids of ``[0, range_max)`` by a log-uniform (Zipfian) distribution."""
    return _sampler("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name)


def uniform_candidate_sampler(true_classes, num_true: int, num_sampled: int, unique: bool,
                              range_max: int, seed: Optional[int] = None,
                              name: Optional[str] = None) -> CandidateSamples:
    """Samples ids of ``[0, range_max)`` uniformly."""
    return _sampler("UniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name)


def learned_unigram_candidate_sampler(true_classes, num_true: int, num_sampled: int,
                                      unique: bool, range_max: int, seed: Optional[int] = None,
                                      name: Optional[str] = None) -> CandidateSamples:
    """Samples ids by how often each came up as a true class so far (in this session)."""
    return _sampler("LearnedUnigramCandidateSampler", true_classes, num_true, num_sampled,
                    unique, range_max, seed, name)


def fixed_unigram_candidate_sampler(true_classes, num_true: int, num_sampled: int,
                                    unique: bool, range_max: int, vocab_file: str = "",
                                    distortion: float = 1.0, num_reserved_ids: int = 0,
                                    num_shards: int = 1, shard: int = 0, unigrams=(),
                                    seed: Optional[int] = None,
                                    name: Optional[str] = None) -> CandidateSamples:
    """Samples ids by given counts (``unigrams``, or the last field of each line of
    ``vocab_file``) raised to ``distortion``; ``num_reserved_ids`` leading ids never come
    up, and with ``num_shards > 1`` only ids ``i`` with ``i % num_shards == shard`` are
    kept (numbered within the shard)."""
    if bool(vocab_file) == bool(len(unigrams)):
        raise ValueError("fixed_unigram_candidate_sampler needs exactly one of vocab_file "
                         "and unigrams")
    if not isinstance(num_shards, int) or num_shards < 1 or not 0 <= shard < num_shards:
        raise ValueError(f"shard must be in [0, num_shards) and num_shards >= 1, got "
                         f"shard={shard!r}, num_shards={num_shards!r}")
    if num_reserved_ids < 0:
        raise ValueError(f"num_reserved_ids must be >= 0, got {num_reserved_ids!r}")
    weights = [float(w) for w in unigrams]
    if any(w < 0 for w in weights):
        raise ValueError("unigrams must be non-negative counts")
    return _sampler("FixedUnigramCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name, vocab_file=str(vocab_file),
                    distortion=float(distortion), num_reserved_ids=int(num_reserved_ids),
                    num_shards=int(num_shards), shard=int(shard), unigrams=tuple(weights))


# ------------------------------------------------------------- accidental hits
def _infer_accidental_hits(inputs, attrs):
    true_classes, sampled = inputs
    for t, arg in ((true_classes, "true_classes"), (sampled, "sampled_candidates")):
        if t.dtype is not dtypes.int64:
            raise TypeError(f"Value passed to parameter '{arg}' has DataType {t.dtype.name} "
                            f"not in list of allowed values: int64 ({t.name})")
    if true_classes.shape.ndims not in (None, 2):
        raise ValueError(f"Shape must be rank 2 but is rank {true_classes.shape.ndims} for "
                         f"true_classes ({true_classes.name})")
    if sampled.shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {sampled.shape.ndims} for "
                         f"sampled_candidates ({sampled.name})")
    unknown = TensorShape([None])
    return [(dtypes.int32, unknown), (dtypes.int64, unknown), (dtypes.float32, unknown)]


def _accidental_hits_kernel(true_classes, sampled, *, num_true, seed, seed2):
    if true_classes.shape[1] != num_true:
        raise _invalid(f"true_classes must have num_true columns, expected: "
                       f"{true_classes.shape[1]} was: {num_true}")
    # As TF: a candidate sampled more than once is found at its last position only, and a
    # true class listed twice in a row hits twice.
    position = {int(candidate): j for j, candidate in enumerate(sampled)}
    rows, ids = [], []
    for i, row in enumerate(true_classes):
        for label in row:
            if int(label) in position:
                rows.append(i)
                ids.append(position[int(label)])
    weights = np.full(len(rows), np.finfo(np.float32).min, dtype=np.float32)
    return np.asarray(rows, dtype=np.int32), np.asarray(ids, dtype=np.int64), weights


define_op("ComputeAccidentalHits", infer=_infer_accidental_hits, kernel=_accidental_hits_kernel)
NotDifferentiable("ComputeAccidentalHits")


def compute_accidental_hits(true_classes, sampled_candidates, num_true: int,
                            seed: Optional[int] = None,
                            name: Optional[str] = None) -> AccidentalHits:
    """Where a sampled candidate equals one of its row's true classes: the row
    (``indices``), the candidate's position (``ids``) and a weight of -FLT_MAX to add
    to that logit, as sampled losses do."""
    graph = graph_for([true_classes, sampled_candidates])
    with graph.as_default(), graph.atomic():
        classes = convert_to_tensor(true_classes, name="true_classes")
        sampled = convert_to_tensor(sampled_candidates, name="sampled_candidates")
        graph_seed, op_seed = get_seed(seed)
        outputs = apply_op("ComputeAccidentalHits", [classes, sampled],
                           name=name or "ComputeAccidentalHits", num_true=int(num_true),
                           seed=graph_seed or 0, seed2=op_seed or 0)
        return AccidentalHits(*outputs)


# ---------------------------------------------------------------- multinomial
def _infer_multinomial(inputs, attrs):
    logits, num_samples = inputs
    check_dtype_in(logits, FLOATING, "Multinomial", "logits")
    if logits.shape.ndims not in (None, 2):
        raise ValueError(f"logits should be a matrix, got {logits.name} with shape "
                         f"{logits.shape}")
    if num_samples.shape.ndims not in (None, 0):
        raise ValueError(f"num_samples should be a scalar, got {num_samples.name} with shape "
                         f"{num_samples.shape}")
    known = static_ints(num_samples)
    batch = logits.shape.as_tuple()[0] if logits.shape.ndims == 2 else None
    return [(attrs["output_dtype"], TensorShape([batch, None if known is None else known[0]]))]


def _multinomial_kernel(ctx, logits, num_samples, *, output_dtype, seed, seed2, stream):
    count = int(num_samples)
    if count < 0:
        raise _invalid(f"num_samples should be nonnegative, got {count}")
    if logits.shape[1] == 0 and count:
        raise _invalid("num_classes should be positive, got 0")
    bits, key = _generator(ctx, seed, seed2, stream)
    gen = np.random.Generator(bits)
    # Rows are softmax(logits); -inf logits never come up, a row of NaN gives class 0.
    shifted = logits.astype(np.float64) - np.max(logits, axis=1, keepdims=True)
    probs = np.exp(shifted)
    cumulative = np.cumsum(probs, axis=1)
    draws = gen.random((logits.shape[0], count)) * cumulative[:, -1:]
    out = np.empty((logits.shape[0], count), dtype=output_dtype.as_numpy_dtype)
    for row in range(logits.shape[0]):
        picked = np.searchsorted(cumulative[row], draws[row], side="right")
        out[row] = np.minimum(picked, logits.shape[1] - 1)
    ctx.write_variable(key, bits.state)
    return out


define_op("Multinomial", infer=_infer_multinomial, kernel=_multinomial_kernel, stateful=True,
          needs_context=True)
NotDifferentiable("Multinomial")


def _multinomial(logits, num_samples, seed, output_dtype, name, default: str) -> Tensor:
    output_dtype = dtypes.int64 if output_dtype is None else dtypes.as_dtype(output_dtype)
    if output_dtype not in (dtypes.int32, dtypes.int64):
        raise ValueError(f"output_dtype must be int32 or int64, got {output_dtype.name}")
    graph = graph_for([logits, num_samples])
    with graph.as_default(), graph.atomic(), name_scope(name, default, [logits]):
        logits_t = convert_to_tensor(logits, name="logits")
        with graph.name_scope("Multinomial") as scope:
            count = convert_to_tensor(num_samples, name="num_samples",
                                      dtype=None if isinstance(num_samples, Tensor)
                                      else dtypes.int32)
            return apply_op("Multinomial", [logits_t, count], name=scope,
                            output_dtype=output_dtype, **_seed_attrs(seed))


def multinomial(logits, num_samples, seed: Optional[int] = None, name: Optional[str] = None,
                output_dtype=None) -> Tensor:
    """``num_samples`` class ids per row of ``logits`` ([batch, classes], unnormalized log
    probabilities), drawn with replacement."""
    return _multinomial(logits, num_samples, seed, output_dtype, name, "multinomial")


def categorical(logits, num_samples, dtype=None, seed: Optional[int] = None,
                name: Optional[str] = None) -> Tensor:
    """``gf.random.categorical``: ``multinomial`` under its TF2 name."""
    return _multinomial(logits, num_samples, seed, dtype, name, "categorical")
