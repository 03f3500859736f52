"""Candidate samplers, accidental hits and multinomial against TF 2.21.

Random streams differ from TF's, so sampled ids are compared by their frequencies over
many runs; expected counts are compared exactly where TF's are deterministic.
"""
import numpy as np
import pytest
from sequence_fixture import DATA

import gradflow as gf

CASES = DATA["samplers"]
TRUE_CLASSES = np.array([[1, 2], [3, 3]], np.int64)
SAMPLERS = [k for k in CASES if "fn" in CASES[k]]


def build(case, seed=7):
    fn = getattr(gf.nn, case["fn"])
    return fn(TRUE_CLASSES, 2, 3, case["unique"], case["range_max"], seed=seed, **case["extra"])


def frequencies(sample, runs, range_max):
    counts = np.zeros(range_max)
    with gf.Session() as sess:
        for _ in range(runs):
            np.add.at(counts, sess.run(sample.sampled_candidates), 1)
    return counts


@pytest.mark.parametrize("key", [k for k in SAMPLERS if k != "learned"])
def test_sampled_ids_follow_tfs_distribution(key):
    case = CASES[key]
    runs = case["runs"]
    ours = frequencies(build(case), runs, case["range_max"]) / runs
    theirs = np.asarray(case["counts"]) / runs
    # Per-id rates of two independent runs: within 5 standard errors of each other.
    spread = np.sqrt((ours * (1 - ours / 3) + theirs * (1 - theirs / 3)) / runs) + 1e-3
    assert np.all(np.abs(ours - theirs) <= 5 * spread), (ours, theirs)
    assert np.all(ours[theirs == 0] == 0)


@pytest.mark.parametrize("key", [k for k in SAMPLERS if not CASES[k]["unique"]])
def test_expected_counts_without_unique_match_tf(key, sess):
    case = CASES[key]
    sample = build(case)
    np.testing.assert_allclose(sess.run(sample.true_expected_count),
                               case["true_expected_first"], rtol=1e-6)


@pytest.mark.parametrize("key", [k for k in SAMPLERS if CASES[k]["unique"]])
def test_unique_samples_are_distinct_with_expected_counts_of_their_tries(key, sess):
    case = CASES[key]
    sample = build(case)
    ids, true_counts, sampled_counts = sess.run(sample)
    assert len(set(ids.tolist())) == 3
    recorded = np.asarray(case["true_expected_first"])
    # Both follow 1 - (1 - p)^tries (or tries * p when nothing repeated): same p per class.
    assert true_counts.shape == recorded.shape
    assert true_counts[1, 0] == true_counts[1, 1] and recorded[1, 0] == recorded[1, 1]
    assert np.all((sampled_counts > 0) & (sampled_counts <= 3))


def test_learned_unigram_counts_true_classes_as_tf(sess):
    case = CASES["learned"]
    sample = build(case)
    got = [sess.run(sample.true_expected_count).tolist() for _ in range(case["runs"])]
    np.testing.assert_allclose(got, case["true_expected_runs"], rtol=1e-6)


def test_learned_unigram_is_per_session():
    sample = build(CASES["learned"])
    firsts = []
    for _ in range(2):
        with gf.Session() as sess:
            firsts.append(sess.run(sample.true_expected_count))
            sess.run(sample)
    np.testing.assert_array_equal(firsts[0], firsts[1])


def test_sampler_op_names_and_shapes():
    sample = build(CASES["log_uniform"])
    assert [op.type for op in gf.get_default_graph().get_operations()][-1] == \
        CASES["log_uniform"]["ops"][-1][1]
    assert sample.sampled_candidates.name == "LogUniformCandidateSampler:0"
    assert sample.true_expected_count.shape.as_list() == [2, 2]
    assert sample.sampled_expected_count.shape.as_list() == [3]


def test_same_seed_same_samples():
    results = []
    for _ in range(2):
        with gf.Graph().as_default():
            gf.set_random_seed(1)
            sample = gf.nn.uniform_candidate_sampler(TRUE_CLASSES, 2, 4, True, 10)
            with gf.Session() as sess:
                results.append([sess.run(sample.sampled_candidates).tolist() for _ in range(3)])
    assert results[0] == results[1]


def test_fixed_unigram_reads_a_vocab_file(tmp_path, sess):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("the,0\ncat,5\nsat,0\n")
    sample = gf.nn.fixed_unigram_candidate_sampler([[0, 2]], 2, 4, False, 3,
                                                   vocab_file=str(vocab))
    assert set(sess.run(sample.sampled_candidates).tolist()) == {1}


def test_sampler_errors_leave_graph_unchanged(sess):
    graph = gf.get_default_graph()
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(ValueError, match="num_sampled"):
        gf.nn.uniform_candidate_sampler(TRUE_CLASSES, 2, 0, True, 5)
    with pytest.raises(ValueError, match="exactly one of vocab_file and unigrams"):
        gf.nn.fixed_unigram_candidate_sampler(TRUE_CLASSES, 2, 1, True, 5)
    with pytest.raises(ValueError, match="num_true"):
        gf.nn.log_uniform_candidate_sampler(TRUE_CLASSES, 3, 2, True, 5)
    assert [op.name for op in graph.get_operations()] == before
    too_few = gf.nn.uniform_candidate_sampler(TRUE_CLASSES, 2, 6, True, 5)
    with pytest.raises(gf.errors.InvalidArgumentError, match="range is too small"):
        sess.run(too_few)


def test_compute_accidental_hits_matches_tf(sess):
    case = CASES["accidental_hits"]
    hits = gf.nn.compute_accidental_hits(gf.constant([[1, 2], [3, 1], [0, 0]], gf.int64),
                                         gf.constant([1, 5, 3, 2, 1, 0], gf.int64), 2)
    value = sess.run(hits)
    assert value.indices.tolist() == case["indices"] and value.ids.tolist() == case["ids"]
    np.testing.assert_array_equal(value.weights, np.float32(case["weights"]))
    assert value.indices.dtype == np.int32 and value.ids.dtype == np.int64


def test_multinomial_frequencies_names_and_dtypes(sess):
    case = CASES["multinomial"]
    gf.set_random_seed(5)
    draws = gf.multinomial([[0.0, 1.0, 2.0], [3.0, -1.0, -np.inf]], 4000, seed=3)
    categorical = gf.random.categorical([[0.0, 1.0, 2.0]], 5, dtype=gf.int32)
    assert draws.name == case["name"] and categorical.name == case["cat_name"]
    assert categorical.dtype.name == case["cat_dtype"]
    assert draws.shape.as_list() == case["shape"]
    value = sess.run(draws)
    ours = np.array([np.bincount(row, minlength=3) for row in value]) / 4000
    theirs = np.asarray(case["freq"]) / 4000
    np.testing.assert_allclose(ours, theirs, atol=0.04)
    assert np.all(value[1] != 2)  # a -inf logit never comes up
    assert gf.gradients(gf.cast(draws, gf.float32), []) == []
