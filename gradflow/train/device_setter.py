"""``replica_device_setter``: TF1's placement of a replicated model's ops.

Variables (and the other ops in ``ps_ops``) go to the parameter-server tasks, one task
after another by default (round robin) or as a ``ps_strategy`` chooses (e.g.
:class:`GreedyLoadBalancingStrategy` with :func:`byte_size_load_fn`); every other op goes
to ``worker_device``. A device set by an inner ``tf.device`` scope is kept field by
field, as TF1 merges it (``merge_devices=True``).
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from gradflow.framework.device_spec import DeviceSpec
from gradflow.framework.graph import Operation
from gradflow.framework.tensor_shape import TensorShape
import gradflow.logging as tf_logging

__all__ = ["replica_device_setter", "RoundRobinStrategy", "GreedyLoadBalancingStrategy",
           "byte_size_load_fn", "STANDARD_PS_OPS"]

# The op types TF1 places on parameter servers by default: variables, mutable hash
# tables, conditional accumulators and other long-lived resources.
STANDARD_PS_OPS = (
    "Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
    "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
    "MutableDenseHashTableV2", "VarHandleOp", "BoostedTreesEnsembleResourceHandleOp",
    "BoostedTreesQuantileStreamResourceHandleOp", "ResourceConditionalAccumulator",
    "DecisionTreeResource")


class RoundRobinStrategy:
    """Places ps ops on tasks 0, 1, ..., ``num_tasks - 1``, 0, ... (TF1's default)."""

    def __init__(self, num_tasks: int):
        self._num_tasks = _positive_tasks(num_tasks)
        self._next_task = 0

    def __call__(self, unused_op: Operation) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class GreedyLoadBalancingStrategy:
    """Places each ps op on the task with the least load so far (the lowest index on a
    tie), then adds ``load_fn(op)`` to that task's load (TF1 contrib's strategy)."""

    def __init__(self, num_tasks: int, load_fn: Callable[[Operation], float]):
        if not callable(load_fn):
            raise TypeError(f"load_fn must be callable, got {type(load_fn).__name__}")
        self._loads = [0] * _positive_tasks(num_tasks)
        self._load_fn = load_fn

    def __call__(self, op: Operation) -> int:
        task = min(range(len(self._loads)), key=self._loads.__getitem__)
        self._loads[task] += self._load_fn(op)
        return task


def _positive_tasks(num_tasks) -> int:
    if isinstance(num_tasks, bool) or not isinstance(num_tasks, int) or num_tasks < 1:
        raise ValueError(f"num_tasks must be a positive int, got {num_tasks!r}")
    return num_tasks


def byte_size_load_fn(op: Operation) -> int:
    """The bytes of ``op``'s first output (a variable's declared shape where the output's
    is not known yet); ValueError when the shape is not fully defined."""
    if not op.outputs:
        raise ValueError(f"byte_size_load_fn needs an op with an output, got {op.name} "
                         f"({op.type})")
    output = op.outputs[0]
    shape = output.shape
    if not shape.is_fully_defined() and "shape" in op.attrs:
        shape = TensorShape(op.attrs["shape"])
    if not shape.is_fully_defined():
        raise ValueError(f"byte_size_load_fn needs a fully defined shape, but {op.name} has "
                         f"shape {shape}")
    return shape.num_elements() * output.dtype.base_dtype.size


class _ReplicaDeviceChooser:
    """The device function ``replica_device_setter`` returns (see the module docstring)."""

    def __init__(self, ps_tasks: int, ps_device: str, worker_device: str,
                 merge_devices: bool, ps_ops: Sequence[str], ps_strategy: Callable):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = frozenset(ps_ops)
        self._ps_strategy = ps_strategy

    def __call__(self, op: Operation) -> str:
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if self._ps_tasks and self._ps_device and op.type in self._ps_ops:
            ps_device = DeviceSpec.from_string(self._ps_device)
            # A task is chosen only where the op is not pinned to another job.
            if ps_device.job and current.job in (None, ps_device.job):
                ps_device = ps_device.replace(task=self._ps_strategy(op))
            return ps_device.make_merged_spec(current).to_string()
        worker = DeviceSpec.from_string(self._worker_device or "")
        return worker.make_merged_spec(current).to_string()


def _cluster_dict(cluster) -> dict:
    if isinstance(cluster, dict):
        return cluster
    as_dict = getattr(cluster, "as_dict", None)
    if not callable(as_dict):
        raise TypeError(f"cluster must be a dict or a ClusterSpec (an object with as_dict()), "
                        f"got {type(cluster).__name__}")
    return as_dict()


def _checked_device(value, argument: str) -> str:
    if value is None:
        return ""
    if isinstance(value, DeviceSpec):
        return value.to_string()
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a device string or DeviceSpec, got "
                        f"{type(value).__name__}")
    DeviceSpec.from_string(value)  # a ValueError names the part it cannot read
    return value


def replica_device_setter(ps_tasks: int = 0, ps_device: str = "/job:ps",
                          worker_device: str = "/job:worker", merge_devices: bool = True,
                          cluster=None, ps_ops: Optional[Sequence[str]] = None,
                          ps_strategy: Optional[Callable] = None) -> Optional[Callable]:
    """A device function for ``tf.device``: ``ps_ops`` to the ps tasks, the rest to
    ``worker_device``. ``cluster`` (a dict of job -> tasks or a ClusterSpec) gives the
    number of ps tasks. Returns None when there is no ps task (nothing to place)."""
    ps_device = _checked_device(ps_device, "ps_device")
    worker_device = _checked_device(worker_device, "worker_device")
    if cluster is not None:
        cluster_spec = _cluster_dict(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job
        if cluster_spec.get(ps_job) is None:
            return None
        ps_tasks = len(cluster_spec[ps_job])
    if isinstance(ps_tasks, bool) or not isinstance(ps_tasks, int) or ps_tasks < 0:
        raise ValueError(f"ps_tasks must be a non-negative int, got {ps_tasks!r}")
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    elif isinstance(ps_ops, str) or not all(isinstance(t, str) for t in ps_ops):
        raise TypeError(f"ps_ops must be a list of op type names, got {ps_ops!r}")
    if not merge_devices:
        tf_logging.warning("DEPRECATION: It is recommended to set merge_devices=true in "
                           "replica_device_setter")
    if ps_strategy is None:
        ps_strategy = RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    return _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, bool(merge_devices),
                                 ps_ops, ps_strategy)
