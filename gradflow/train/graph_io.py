"""``gf.train.write_graph``: a graph or ``GraphDef`` to a file, binary or text format."""
from __future__ import annotations

import os

from google.protobuf import text_format
from tensorboard.compat.proto import graph_pb2

from gradflow.framework.graph import Graph

__all__ = ["write_graph"]


def write_graph(graph_or_graph_def, logdir: str, name: str, as_text: bool = True) -> str:
    """Writes the GraphDef to ``logdir/name`` (text proto by default); returns the path."""
    if isinstance(graph_or_graph_def, Graph):
        graph_def = graph_or_graph_def.as_graph_def()
    elif isinstance(graph_or_graph_def, graph_pb2.GraphDef):
        graph_def = graph_or_graph_def
    else:
        raise TypeError("graph_or_graph_def must be a Graph or a GraphDef, got "
                        f"{type(graph_or_graph_def).__name__}")
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    if as_text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text_format.MessageToString(graph_def))
    else:
        with open(path, "wb") as f:
            f.write(graph_def.SerializeToString())
    return path
