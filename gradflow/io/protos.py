"""The protocol buffers TF1 programs build and pass to a session, as TF's own classes.

``ConfigProto``, ``GPUOptions``, ``GraphOptions``, ``OptimizerOptions``, ``RunOptions``,
``RunMetadata`` and ``GraphDef``/``NodeDef``/``AttrValue``, from the ``tensorboard``
package's copy of TensorFlow's protos.
"""
from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import (
    ConfigProto, GPUOptions, GraphOptions, OptimizerOptions, RunMetadata, RunOptions)
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.summary_pb2 import HistogramProto

__all__ = ["ConfigProto", "GPUOptions", "GraphOptions", "OptimizerOptions", "RunOptions",
           "RunMetadata", "GraphDef", "NodeDef", "AttrValue", "HistogramProto"]
