"""``gf.summary``: TF1's ``tf.summary`` (summary ops, ``FileWriter``, the protos)."""
from gradflow.summary.summary import (  # noqa: F401
    audio, histogram, image, merge, merge_all, scalar, tensor_summary,
    text)
from gradflow.summary.writer import FileWriter, FileWriterCache  # noqa: F401
from gradflow.summary.reader import summary_iterator  # noqa: F401
from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata  # noqa: F401,E501
from tensorboard.compat.proto.summary_pb2 import (  # noqa: F401
    HistogramProto, Summary, SummaryDescription, SummaryMetadata)

__all__ = ["scalar", "histogram", "image", "audio", "text", "tensor_summary", "merge",
           "merge_all", "FileWriter", "FileWriterCache", "Summary",
           "SummaryDescription", "SummaryMetadata", "HistogramProto", "Event", "SessionLog",
           "TaggedRunMetadata", "summary_iterator"]
