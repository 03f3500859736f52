"""``gf.io``: TF1's ``tf.io`` names, exactly those TF has (where gradflow has them).

gradflow's own file-format modules (``graph_def``, ``tensor_bundle``, ``tfrecord``...)
live in the package ``gradflow.io`` and are imported from there; this module is what
``gf.io`` (and ``gf.compat.v1.io``) shows. The image codecs are ``gf.image``'s, handed
on as far as ``gf.image`` has them.
"""
import gradflow.image as _image
from gradflow.io import gfile  # noqa: F401
from gradflow.io.graph_def import write_graph  # noqa: F401
from gradflow.io.tfrecord import (  # noqa: F401
    TFRecordCompressionType, TFRecordOptions, TFRecordWriter, tf_record_iterator)
from gradflow.ops.data_flow_ops import (  # noqa: F401
    PaddingFIFOQueue, PriorityQueue, QueueBase, RandomShuffleQueue)
from gradflow.ops.io_ops import (  # noqa: F401
    decode_base64, decode_compressed, decode_json_example, deserialize_many_sparse,
    encode_base64, parse_tensor, read_file, serialize_many_sparse, serialize_sparse,
    serialize_tensor, write_file)
from gradflow.ops.parsing_ops import (  # noqa: F401
    FixedLenFeature, FixedLenSequenceFeature, VarLenFeature, decode_csv, decode_raw,
    parse_example, parse_sequence_example, parse_single_example, parse_single_sequence_example)
from gradflow.ops.reader_ops import matching_files  # noqa: F401
from gradflow.train.input import match_filenames_once  # noqa: F401

_IMAGE_CODECS = ("decode_and_crop_jpeg", "decode_bmp", "decode_gif", "decode_image",
                 "decode_jpeg", "decode_png", "decode_webp", "encode_jpeg", "encode_png",
                 "extract_jpeg_shape", "is_jpeg")
globals().update({name: getattr(_image, name) for name in _IMAGE_CODECS
                  if hasattr(_image, name)})
