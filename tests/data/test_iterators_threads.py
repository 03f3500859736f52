"""Iterators (one-shot, initializable, reinitializable, feedable), shuffle semantics,
prefetch and parallel map threads, cache files, and what a session close stops."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from data_helpers import drain

import gradflow as gf


def _pipeline_threads() -> list:
    return [t for t in threading.enumerate() if t.name.startswith("gradflow-")]


def _shuffled(seed, graph_seed=None, reshuffle=None, epochs=2, size=20):
    with gf.Graph().as_default():
        if graph_seed is not None:
            gf.set_random_seed(graph_seed)
        dataset = gf.data.Dataset.range(size).shuffle(
            5, seed=seed, reshuffle_each_iteration=reshuffle).repeat(epochs)
        with gf.Session() as sess:
            values = drain(sess, dataset.make_one_shot_iterator().get_next())
    return [int(v) for v in values]


def test_shuffle_buffer_semantics_and_seeds():
    values = _shuffled(seed=7)
    first, second = values[:20], values[20:]
    assert sorted(first) == list(range(20)) and sorted(second) == list(range(20))
    assert first != list(range(20))
    # a buffer of 5: an element comes out at most 4 places before its position
    assert all(v <= i + 4 for i, v in enumerate(first))
    assert values == _shuffled(seed=7)              # same seed, same order
    assert first != second                          # reshuffled each iteration by default
    kept = _shuffled(seed=7, reshuffle=False)
    assert kept[:20] == kept[20:]
    assert _shuffled(seed=None, graph_seed=3) == _shuffled(seed=None, graph_seed=3)
    assert _shuffled(seed=1) != _shuffled(seed=2)


def test_reinitializable_iterator_from_structure():
    train = gf.data.Dataset.range(3)
    valid = gf.data.Dataset.range(10, 12)
    iterator = gf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    element = iterator.get_next()
    with gf.Session() as sess:
        sess.run(iterator.make_initializer(train))
        assert drain(sess, element) == [0, 1, 2]
        sess.run(iterator.make_initializer(valid))
        assert drain(sess, element) == [10, 11]


def test_feedable_iterator_switches_by_string_handle():
    a = gf.data.Dataset.range(100).make_one_shot_iterator()
    b = gf.data.make_initializable_iterator(gf.data.Dataset.range(50, 53))
    handle = gf.placeholder(gf.string, [])
    feedable = gf.data.Iterator.from_string_handle(handle, gf.int64, gf.TensorShape([]))
    element = feedable.get_next()
    with gf.Session() as sess:
        a_handle, b_handle = sess.run([a.string_handle(), b.string_handle()])
        sess.run(b.initializer)
        assert sess.run(element, {handle: a_handle}) == 0
        assert sess.run(element, {handle: b_handle}) == 50
        assert sess.run(element, {handle: a_handle}) == 1
        assert sess.run(element, {handle: b_handle}) == 51
        with pytest.raises(gf.errors.InvalidArgumentError, match="string handle"):
            sess.run(element, {handle: b"nonsense"})


def test_initializable_iterator_with_placeholder_and_one_shot_refusal():
    limit = gf.placeholder(gf.int64, [])
    dataset = gf.data.Dataset.range(limit)
    iterator = dataset.make_initializable_iterator()
    element = iterator.get_next()
    with gf.Session() as sess:
        sess.run(iterator.initializer, {limit: 2})
        assert drain(sess, element) == [0, 1]
        sess.run(iterator.initializer, {limit: 4})
        assert drain(sess, element) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="placeholder"):
        dataset.make_one_shot_iterator()


def test_training_loop_until_out_of_range_changes_variables_only_on_success():
    x = gf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(4)
    element = x.make_one_shot_iterator().get_next()
    total = gf.Variable(0.0)
    step = gf.assign_add(total, gf.reduce_sum(element))
    with gf.Session() as sess:
        sess.run(total.initializer)
        steps = 0
        try:
            while True:
                sess.run(step)
                steps += 1
        except gf.errors.OutOfRangeError:
            pass
        assert steps == 2 and sess.run(total) == 15.0  # the failed run added nothing


def test_prefetch_runs_ahead_on_a_thread_and_close_stops_it():
    produced = []

    def slow_source():
        for i in range(1000):
            produced.append(i)
            yield i

    dataset = gf.data.Dataset.from_generator(slow_source, gf.int64, gf.TensorShape([]))
    dataset = dataset.map(lambda x: x * 2, num_parallel_calls=2).prefetch(8)
    element = dataset.make_one_shot_iterator().get_next()
    sess = gf.Session()
    assert sess.run(element) == 0
    deadline = time.time() + 5
    while len(produced) < 8 and time.time() < deadline:
        time.sleep(0.01)
    assert len(produced) >= 8          # made ahead of what was asked for
    assert len(produced) < 1000        # but bounded by the buffer
    assert any(t.name == "gradflow-prefetch" for t in _pipeline_threads())
    sess.close()
    assert _pipeline_threads() == []


def test_reinitializing_stops_the_previous_prefetch_thread():
    dataset = gf.data.Dataset.range(10 ** 6).prefetch(4)
    iterator = dataset.make_initializable_iterator()
    element = iterator.get_next()
    with gf.Session() as sess:
        for _ in range(3):
            sess.run(iterator.initializer)
            assert sess.run(element) == 0
        assert sum(t.name == "gradflow-prefetch" for t in _pipeline_threads()) == 1
    assert _pipeline_threads() == []


def test_errors_in_the_pipeline_reach_get_next():
    dataset = gf.data.Dataset.from_tensor_slices([1.0, 0.0, 2.0]).map(
        lambda x: gf.check_numerics(1.0 / x, "inf!")).prefetch(2)
    element = dataset.make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        assert sess.run(element) == 1.0
        with pytest.raises(gf.errors.InvalidArgumentError, match="inf!"):
            sess.run(element)


def test_generator_checks_types_and_shapes():
    dataset = gf.data.Dataset.from_generator(lambda: iter([[1, 2], [3]]), gf.int64,
                                             gf.TensorShape([2]))
    element = dataset.make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        assert sess.run(element).tolist() == [1, 2]
        with pytest.raises(gf.errors.InvalidArgumentError, match="shape"):
            sess.run(element)


def test_file_cache_is_reused(tmp_path):
    calls = []

    def source():
        calls.append(1)
        yield from (b"a", b"b")

    path = str(tmp_path / "cache")
    for _ in range(2):
        with gf.Graph().as_default():
            dataset = gf.data.Dataset.from_generator(source, gf.string, gf.TensorShape([]))
            element = dataset.cache(path).make_one_shot_iterator().get_next()
            with gf.Session() as sess:
                assert drain(sess, element) == [b"a", b"b"]
    assert len(calls) == 1


def test_bad_calls_leave_the_graph_unchanged():
    graph = gf.Graph()
    with graph.as_default():
        dataset = gf.data.Dataset.range(5)
        floats = gf.data.Dataset.from_tensors(1.0)
        before = [op.name for op in graph.get_operations()]
        collections = {k: list(graph.get_collection(k)) for k in graph.get_all_collection_keys()}
        with pytest.raises(ValueError, match="scalar"):
            dataset.filter(lambda x: x)
        with pytest.raises(TypeError, match="Dataset"):
            dataset.flat_map(lambda x: x)
        with pytest.raises(ValueError, match="deterministic"):
            dataset.map(lambda x: x, deterministic=False)
        with pytest.raises(ValueError, match="num_parallel_calls"):
            dataset.interleave(lambda x: gf.data.Dataset.range(x), num_parallel_calls=0)
        with pytest.raises(ValueError, match="deterministic"):
            dataset.interleave(lambda x: gf.data.Dataset.range(x), num_parallel_calls=2,
                               deterministic=False)
        with pytest.raises(TypeError):
            dataset.concatenate(floats)
        with pytest.raises(ValueError, match="rank"):
            gf.data.Dataset.from_tensor_slices(1.0)
        with pytest.raises(ValueError, match="not compatible"):
            gf.data.Dataset.from_tensor_slices(([1, 2], [1, 2, 3]))
        assert [op.name for op in graph.get_operations()] == before
        assert {k: list(graph.get_collection(k)) for k in graph.get_all_collection_keys()} == \
            collections


def test_list_files_matches_sorted_or_shuffled(tmp_path):
    for name in ("b.rec", "a.rec", "c.txt"):
        (tmp_path / name).write_bytes(b"")
    pattern = str(tmp_path / "*.rec")
    with gf.Graph().as_default():
        ordered = gf.data.Dataset.list_files(pattern, shuffle=False)
        shuffled = gf.data.Dataset.list_files(pattern, seed=4)
        empty = gf.data.Dataset.list_files(str(tmp_path / "*.none"))
        with gf.Session() as sess:
            names = drain(sess, ordered.make_one_shot_iterator().get_next())
            mixed = drain(sess, shuffled.make_one_shot_iterator().get_next())
            with pytest.raises(gf.errors.InvalidArgumentError, match="No files matched"):
                sess.run(empty.make_one_shot_iterator().get_next())
    assert [n.rsplit(b"/", 1)[-1] for n in names] == [b"a.rec", b"b.rec"]
    assert sorted(mixed) == names


def _slow_inputs(active: list, peak: list, lock: threading.Lock):
    """An interleave function whose inner datasets record how many make an element at
    once (a py_func-free way: a generator dataset that sleeps)."""
    def inner(x):
        def produce(value):
            for j in range(3):
                with lock:
                    active[0] += 1
                    peak[0] = max(peak[0], active[0])
                time.sleep(0.01)
                with lock:
                    active[0] -= 1
                yield value * 10 + j
        return gf.data.Dataset.from_generator(produce, gf.int64, [], args=(x,))
    return inner


@pytest.mark.parametrize("parallel", [1, 3])
def test_parallel_interleave_reads_inputs_ahead_on_bounded_threads(parallel):
    active, peak, lock = [0], [0], threading.Lock()
    dataset = gf.data.Dataset.range(6).interleave(
        _slow_inputs(active, peak, lock), cycle_length=3, block_length=1,
        num_parallel_calls=parallel)
    element = dataset.make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        first = sess.run(element)
        assert any(t.name == "gradflow-interleave" for t in _pipeline_threads())
        values = [int(first)] + [int(v) for v in drain(sess, element)]
    # the sequential interleave's order, whatever the threads
    assert values == [0, 10, 20, 1, 11, 21, 2, 12, 22, 30, 40, 50, 31, 41, 51, 32, 42, 52]
    assert peak[0] <= parallel and (parallel == 1 or peak[0] > 1)
    assert not [t for t in _pipeline_threads() if t.name == "gradflow-interleave"]


def test_experimental_parallel_interleave_and_sloppy():
    def inner(x):
        return gf.data.Dataset.range(x * 10, x * 10 + 3)
    for sloppy in (False, True):
        dataset = gf.data.Dataset.range(5).apply(gf.data.experimental.parallel_interleave(
            inner, cycle_length=3, sloppy=sloppy, buffer_output_elements=2,
            prefetch_input_elements=1))
        with gf.Session() as sess:
            values = [int(v) for v in drain(sess, dataset.make_one_shot_iterator().get_next())]
        assert values == [0, 10, 20, 1, 11, 21, 2, 12, 22, 30, 40, 31, 41, 32, 42]
    graph = gf.get_default_graph()
    source = gf.data.Dataset.range(2)
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(TypeError, match="sloppy"):
        source.apply(gf.data.experimental.parallel_interleave(inner, cycle_length=2,
                                                              sloppy="yes"))
    with pytest.raises(ValueError, match="num_parallel_calls"):
        source.interleave(inner, cycle_length=2, num_parallel_calls=-5)
    assert [op.name for op in graph.get_operations()] == before


def test_name_arguments_become_tf_metadata_and_parallel_batch_keeps_order():
    graph = gf.Graph()
    with graph.as_default():
        dataset = gf.data.Dataset.range(10, name="foo").map(lambda x: x * 2, name="m").batch(
            3, num_parallel_calls=2, name="b").prefetch(1, name="p")
        metadata = {op.type: op.get_attr("metadata") for op in graph.get_operations()
                    if "Dataset" in op.type}
        # TF's DatasetMetadata bytes (field 1: the name), as TF 2.21 writes them
        assert metadata == {"RangeDataset": b"\n\x03foo", "MapDataset": b"\n\x01m",
                            "ParallelBatchDataset": b"\n\x01b", "PrefetchDataset": b"\n\x01p"}
        with gf.Session() as sess:
            batches = drain(sess, dataset.make_one_shot_iterator().get_next())
        assert [b.tolist() for b in batches] == [[0, 2, 4], [6, 8, 10], [12, 14, 16], [18]]
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(ValueError, match="synchronous"):
            dataset.map(lambda x: x, synchronous=True)
        with pytest.raises(ValueError, match="deterministic"):
            dataset.batch(2, num_parallel_calls=2, deterministic=False)
        with pytest.raises(TypeError, match="name"):
            dataset.take(1, name=3)
        assert [op.name for op in graph.get_operations()] == before


def test_text_lines_of_several_files_read_in_parallel(tmp_path):
    paths = []
    for index in range(3):
        path = tmp_path / f"f{index}.txt"
        path.write_text("".join(f"{index}-{line}\n" for line in range(index + 2)))
        paths.append(str(path))
    dataset = gf.data.TextLineDataset(paths, num_parallel_reads=2)
    with gf.Session() as sess:
        lines = [v.decode() for v in drain(sess, dataset.make_one_shot_iterator().get_next())]
    # two files at a time, one line from each in turn: the order TF 2.21 gives
    assert lines == ["0-0", "1-0", "0-1", "1-1", "1-2", "2-0", "2-1", "2-2", "2-3"]
