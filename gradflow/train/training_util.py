"""The global step: an int64 scalar variable counting training steps (TF1 helpers)."""
from __future__ import annotations

from typing import Optional


from gradflow.framework import dtypes
from gradflow.framework.graph import Graph, GraphKeys, Tensor, get_default_graph
from gradflow.ops.array import zeros
from gradflow.ops.state import Variable

__all__ = ["get_global_step", "create_global_step", "get_or_create_global_step",
           "assert_global_step", "global_step"]


def global_step(sess, global_step_tensor) -> int:
    """The current value of ``global_step_tensor`` in ``sess``, as a Python int."""
    return int(sess.run(global_step_tensor))


def assert_global_step(global_step_tensor) -> None:
    """Raises TypeError unless ``global_step_tensor`` is an integer scalar variable/tensor."""
    if not isinstance(global_step_tensor, (Variable, Tensor)):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: '
                        f"{global_step_tensor}.")
    if not global_step_tensor.dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: '
                        f"{global_step_tensor.dtype}")
    if global_step_tensor.shape.ndims != 0 and global_step_tensor.shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {global_step_tensor.shape}')


def get_global_step(graph: Optional[Graph] = None):
    """The global step of ``graph`` (collection ``global_step``, else ``global_step:0``)."""
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        return None
    if found:
        step = found[0]
    else:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    assert_global_step(step)
    return step


def create_global_step(graph: Optional[Graph] = None) -> Variable:
    """Creates the global step variable; ValueError if ``graph`` already has one."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None):
        # TF1 makes it with get_variable's zeros initializer: ``global_step/Initializer/zeros``
        return Variable(lambda: zeros([], dtypes.int64), trainable=False, name="global_step",
                        dtype=dtypes.int64,
                        collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph: Optional[Graph] = None):
    """The global step of ``graph``, created first if there is none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    return create_global_step(graph) if step is None else step
