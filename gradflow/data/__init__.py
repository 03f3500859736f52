"""``gf.data``: TF1's ``tf.data`` input pipelines (datasets and iterators).

The package also holds the bundled digits data of ``gradflow demo`` (``digits.npz``).
"""
from gradflow.data import experimental  # noqa: F401
from gradflow.data.dataset import (  # noqa: F401
    AUTOTUNE, Dataset, Iterator, get_output_classes, get_output_shapes, get_output_types,
    make_initializable_iterator, make_one_shot_iterator)
from gradflow.data.readers import (  # noqa: F401
    FixedLengthRecordDataset, TextLineDataset, TFRecordDataset)

__all__ = ["Dataset", "Iterator", "TFRecordDataset", "TextLineDataset",
           "FixedLengthRecordDataset", "make_one_shot_iterator", "make_initializable_iterator",
           "get_output_types", "get_output_shapes", "get_output_classes", "experimental"]
