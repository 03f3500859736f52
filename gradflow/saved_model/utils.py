"""``gf.saved_model.utils``: tensors as ``TensorInfo`` protos and back."""
from __future__ import annotations

from typing import Optional

from tensorboard.compat.proto import meta_graph_pb2

from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.tensor_proto import datatype_enum, shape_proto

__all__ = ["build_tensor_info", "get_tensor_from_tensor_info"]


def build_tensor_info(tensor: Tensor) -> meta_graph_pb2.TensorInfo:
    """``tensor``'s name, dtype and static shape as a ``TensorInfo``."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"build_tensor_info needs a Tensor, got {tensor!r}")
    return meta_graph_pb2.TensorInfo(name=tensor.name, dtype=datatype_enum(tensor.dtype),
                                     tensor_shape=shape_proto(tensor.shape))


def get_tensor_from_tensor_info(tensor_info: meta_graph_pb2.TensorInfo, graph=None,
                                import_scope: Optional[str] = None) -> Tensor:
    """The tensor a ``TensorInfo`` names in ``graph`` (default graph), under
    ``import_scope`` if given."""
    if tensor_info.WhichOneof("encoding") != "name":
        raise ValueError(f"Invalid TensorInfo.encoding: {tensor_info.WhichOneof('encoding')}"
                         " (only dense tensors by name are supported)")
    graph = graph or get_default_graph()
    name = f"{import_scope}/{tensor_info.name}" if import_scope else tensor_info.name
    return graph.get_tensor_by_name(name)
