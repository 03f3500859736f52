"""What ``Session`` does with TF1's protos: ``ConfigProto`` checks, ``RunOptions`` tracing
into ``RunMetadata.step_stats``, and ``log_device_placement`` lines.

A traced run (``RunOptions(trace_level=FULL_TRACE)``, or SOFTWARE/HARDWARE_TRACE) runs
its plan interpreted and records, per executed op, its start time, duration and output
sizes as TF's ``NodeExecStats`` on the one device gradflow runs on. The protos are only
touched through their fields, so this module needs no proto imports of its own.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Optional

from gradflow.framework.tensor_proto import datatype_enum, shape_proto

__all__ = ["DEVICE", "checked_config", "checked_trace", "fill_step_stats", "log_placement"]

DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
_NO_TRACE = 0  # RunOptions.NO_TRACE


def _is_proto(value, name: str) -> bool:
    """Whether ``value`` is TF's message ``name`` (the tensorboard package's copy, or
    TensorFlow's own: both carry the same fields)."""
    descriptor = getattr(value, "DESCRIPTOR", None)
    full_name = getattr(descriptor, "full_name", "")
    return full_name in (f"tensorflow.{name}", f"tensorboard.{name}")


def checked_config(config):
    """``config`` if it is a ``ConfigProto`` (or None); TypeError otherwise.

    Its GPU, placement and thread-pool settings have nothing to act on in a NumPy engine
    (one CPU device, NumPy's own threads) and are accepted as TF accepts them on a
    machine without GPUs; ``log_device_placement`` is honoured.
    """
    if config is not None and not _is_proto(config, "ConfigProto"):
        raise TypeError(f"config must be a tf.ConfigProto, but got {type(config)}")
    return config


def checked_trace(options, run_metadata) -> Optional[list]:
    """A list to collect a trace into when ``options`` asks for one, else None.

    Raises ValueError for run options gradflow cannot honour.
    """
    if options is None:
        return None
    if not _is_proto(options, "RunOptions"):
        raise TypeError(f"options must be a tf.RunOptions, but got {type(options)}")
    if options.timeout_in_ms:
        raise ValueError("RunOptions.timeout_in_ms is not supported: gradflow runs "
                         "cannot be interrupted")
    if options.inter_op_thread_pool:
        raise ValueError("RunOptions.inter_op_thread_pool is not supported: gradflow has "
                         "one thread pool")
    if options.debug_options.debug_tensor_watch_opts:
        raise ValueError("RunOptions.debug_options tensor watches are not supported")
    if run_metadata is not None and not _is_proto(run_metadata, "RunMetadata"):
        raise TypeError(f"run_metadata must be a tf.RunMetadata, but got {type(run_metadata)}")
    if options.trace_level == _NO_TRACE or run_metadata is None:
        return None
    return []


def _byte_size(value) -> int:
    return int(getattr(value, "nbytes", 0))


def fill_step_stats(run_metadata, trace: list) -> None:
    """Adds one ``NodeExecStats`` per traced op to ``run_metadata.step_stats``."""
    offset_us = time.time() * 1e6 - time.perf_counter_ns() / 1e3  # perf clock -> epoch
    device = run_metadata.step_stats.dev_stats.add(device=DEVICE)
    thread = threading.get_ident() & 0x7FFFFFFF
    for op, start, end, outputs in trace:
        start_us = int(start / 1e3 + offset_us)
        duration_us = max(0, int((end - start) / 1e3))
        inputs = ", ".join(t.op.name if t.value_index == 0 else
                           f"{t.op.name}:{t.value_index}" for t in op.inputs)
        stats = device.node_stats.add(
            node_name=op.name, all_start_micros=start_us, op_start_rel_micros=0,
            op_end_rel_micros=duration_us, all_end_rel_micros=duration_us,
            all_start_nanos=int(start_us * 1000), op_end_rel_nanos=end - start,
            all_end_rel_nanos=end - start, thread_id=thread,
            timeline_label=f"{op.name} = {op.type}({inputs})")
        for slot, (tensor, value) in enumerate(zip(op.outputs, outputs, strict=False)):
            output = stats.output.add(slot=slot)
            description = output.tensor_description
            description.dtype = datatype_enum(tensor.dtype)
            description.shape.CopyFrom(shape_proto(getattr(value, "shape", tensor.shape)))
            description.allocation_description.requested_bytes = _byte_size(value)
            description.allocation_description.allocated_bytes = _byte_size(value)
            description.allocation_description.allocator_name = "cpu"
            stats.memory.add(allocator_name="cpu", total_bytes=_byte_size(value))


def log_placement(ops, compiled: Optional[dict] = None) -> None:
    """``log_device_placement``: one line per op, as TF logs its device mapping; an op
    compiled in a cluster names the cluster's device (``compiled``: op name -> device)."""
    compiled = compiled or {}
    for op in ops:
        sys.stderr.write(f"{op.name}: ({op.type}): {compiled.get(op.name, DEVICE)}\n")
