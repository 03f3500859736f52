"""``Timeline``: a traced run's ``RunMetadata.step_stats`` as a Chrome trace (TF1's
``tensorflow.python.client.timeline``; open the JSON in chrome://tracing or Perfetto).

One process per device, one complete event (``"ph": "X"``) per op with its start and
duration in microseconds, flow arrows from each op to the ops that read its outputs
(``show_dataflow``) and a running total of output bytes per device (``show_memory``).
"""
from __future__ import annotations

import json
from typing import Optional

__all__ = ["Timeline"]


class Timeline:
    """Turns ``step_stats`` (``RunMetadata.step_stats``) into Chrome's trace format."""

    def __init__(self, step_stats, graph=None):
        if not hasattr(step_stats, "dev_stats"):
            raise TypeError(f"step_stats must be a StepStats proto, got "
                            f"{type(step_stats).__name__}")
        self._step_stats = step_stats
        self._graph = graph

    def _op_args(self, stats) -> tuple[str, dict]:
        label = stats.timeline_label
        op_type, inputs = "unknown", []
        if " = " in label and "(" in label:
            op_type = label.split(" = ", 1)[1].split("(", 1)[0]
            inside = label[label.index("(") + 1:label.rindex(")")]
            inputs = [i.strip() for i in inside.split(",") if i.strip()]
        args = {"name": stats.node_name, "op": op_type}
        args.update({f"input{i}": name for i, name in enumerate(inputs)})
        return op_type, args

    def generate_chrome_trace_format(self, show_dataflow: bool = True,
                                     show_memory: bool = False,
                                     op_time: Optional[str] = None) -> str:
        """The trace as a JSON string (``{"traceEvents": [...]}``)."""
        if op_time not in (None, "schedule", "gpu"):
            raise ValueError(f"op_time must be None, 'schedule' or 'gpu', got {op_time!r}")
        events: list[dict] = []
        produced: dict = {}  # node name -> (pid, tid, end time)
        flow_id = 0
        for pid, device in enumerate(self._step_stats.dev_stats):
            events.append({"name": "process_name", "ph": "M", "pid": pid,
                           "args": {"name": f"{device.device} Compute"}})
            total = 0
            for stats in sorted(device.node_stats, key=lambda s: s.all_start_micros):
                op_type, args = self._op_args(stats)
                start, duration = stats.all_start_micros, stats.op_end_rel_micros
                tid = stats.thread_id
                events.append({"name": op_type, "cat": "Op", "ph": "X", "pid": pid,
                               "tid": tid, "ts": start, "dur": duration, "args": args})
                if show_dataflow:
                    for key, value in args.items():
                        source = produced.get(value.split(":")[0]) if \
                            key.startswith("input") else None
                        if source is not None:
                            events.append({"name": value, "cat": "DataFlow", "ph": "s",
                                           "id": flow_id, "pid": source[0], "tid": source[1],
                                           "ts": source[2]})
                            events.append({"name": value, "cat": "DataFlow", "ph": "t",
                                           "id": flow_id, "pid": pid, "tid": tid, "ts": start})
                            flow_id += 1
                produced[stats.node_name] = (pid, tid, start + duration)
                if show_memory:
                    total += sum(m.total_bytes for m in stats.memory)
                    events.append({"name": "Output bytes", "ph": "C", "pid": pid,
                                   "ts": start + duration, "args": {"cpu": total}})
        return json.dumps({"traceEvents": events}, indent=1)
