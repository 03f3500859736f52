"""``gf.python_io``: TF1's TFRecord writing and reading (names handed on)."""
from gradflow.io.tfrecord import (  # noqa: F401
    TFRecordCompressionType, TFRecordOptions, TFRecordWriter, tf_record_iterator)
