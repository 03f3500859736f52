"""SparseTensor components of dataset elements: parsed VarLenFeatures batched, iterators
made from a structure with SparseTensor classes, and the transformations that refuse
them (atomically)."""
from __future__ import annotations

import numpy as np
import pytest
from data_helpers import drain

import gradflow as gf


def _example(tags: list, label: int) -> bytes:
    return gf.train.Example(features=gf.train.Features(feature={
        "tags": gf.train.Feature(int64_list=gf.train.Int64List(value=tags)),
        "label": gf.train.Feature(int64_list=gf.train.Int64List(value=[label]))}
    )).SerializeToString()


def test_var_len_parses_batch_into_sparse_tensors(tmp_path):
    path = str(tmp_path / "tags.tfrecord")
    rows = [[3, 1], [], [7, 8, 9], [2]]
    with gf.python_io.TFRecordWriter(path) as writer:
        for label, tags in enumerate(rows):
            writer.write(_example(tags, label))
    spec = {"tags": gf.VarLenFeature(gf.int64), "label": gf.FixedLenFeature([], gf.int64)}
    dataset = gf.data.TFRecordDataset(path).map(
        lambda record: gf.parse_single_example(record, spec)).batch(3)
    assert dataset.output_classes == {"label": gf.Tensor, "tags": gf.SparseTensor}
    assert dataset.output_shapes["tags"].as_list() == [None, None]
    element = dataset.make_one_shot_iterator().get_next()
    assert isinstance(element["tags"], gf.SparseTensor)
    with gf.Session() as sess:
        first, second = drain(sess, element)
    np.testing.assert_array_equal(first["tags"].indices,
                                  [[0, 0], [0, 1], [2, 0], [2, 1], [2, 2]])
    np.testing.assert_array_equal(first["tags"].values, [3, 1, 7, 8, 9])
    np.testing.assert_array_equal(first["tags"].dense_shape, [3, 3])
    np.testing.assert_array_equal(first["label"], [0, 1, 2])
    np.testing.assert_array_equal(second["tags"].dense_shape, [1, 1])


def test_iterator_from_structure_with_sparse_classes():
    sparse = gf.SparseTensor([[0, 1], [1, 0]], [1.5, 2.5], [2, 2])
    dataset = gf.data.Dataset.from_tensor_slices(sparse)
    iterator = gf.data.Iterator.from_structure(dataset.output_types, dataset.output_shapes,
                                               output_classes=dataset.output_classes)
    assert iterator.output_classes is gf.SparseTensor
    dense = gf.sparse.to_dense(iterator.get_next())
    with gf.Session() as sess:
        sess.run(iterator.make_initializer(dataset))
        np.testing.assert_array_equal(drain(sess, dense), [[0.0, 1.5], [2.5, 0.0]])
    with pytest.raises(TypeError, match="output types"):
        iterator.make_initializer(gf.data.Dataset.from_tensor_slices([[1.0, 2.0]]))


def test_transformations_without_sparse_support_refuse_atomically():
    graph = gf.Graph()
    with graph.as_default():
        dataset = gf.data.Dataset.from_tensor_slices(
            gf.SparseTensor([[0, 0]], [1], [2, 3]))
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(ValueError, match="padded_batch: .*SparseTensor"):
            dataset.padded_batch(2)
        with pytest.raises(ValueError, match="unbatch: .*SparseTensor"):
            dataset.batch(2).unbatch()
        after_batch = [op.name for op in graph.get_operations()]
        with pytest.raises(ValueError, match="cache to a file: .*SparseTensor"):
            dataset.cache("/tmp/never")
        assert [op.name for op in graph.get_operations()] == after_batch
        assert after_batch[:len(before)] == before
