"""``gf.io``: file formats (GraphDef, event files) and ``gf.io.gfile``."""
from gradflow.io import gfile  # noqa: F401
from gradflow.io.graph_def import write_graph  # noqa: F401
from gradflow.io.tfrecord import (  # noqa: F401
    TFRecordCompressionType, TFRecordOptions, TFRecordWriter, tf_record_iterator)
from gradflow.ops.parsing_ops import (  # noqa: F401
    FixedLenFeature, FixedLenSequenceFeature, VarLenFeature, decode_csv, decode_raw,
    parse_example, parse_single_example, parse_single_sequence_example)
