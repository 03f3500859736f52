"""TF1's standard hooks: stop at a step, save checkpoints and summaries, log tensors,
stop on NaN, count steps per second, feed values, run final ops, trace runs.

Hooks that count steps read the global step in the run they watch and, as TF1's do,
read it again from the session before acting on it, so they act on the step the run
left behind.
"""
from __future__ import annotations

import os
import time
from typing import Callable, Optional

import numpy as np

import gradflow.logging as logging
from gradflow.framework.graph import get_default_graph
from gradflow.io.graph_def import write_graph
from gradflow.io.protos import RunOptions
from gradflow.summary.timeline import Timeline
from gradflow.summary.writer import FileWriterCache
from gradflow.train.session_run_hook import SessionRunArgs, SessionRunHook
from gradflow.train.training_util import get_global_step
from tensorboard.compat.proto import event_pb2, summary_pb2

__all__ = ["SecondOrStepTimer", "StopAtStepHook", "CheckpointSaverListener",
           "CheckpointSaverHook", "SummarySaverHook", "LoggingTensorHook", "NanTensorHook",
           "NanLossDuringTrainingError", "StepCounterHook", "FeedFnHook", "FinalOpsHook",
           "ProfilerHook"]


class SecondOrStepTimer:
    """Triggers every ``every_secs`` seconds or every ``every_steps`` steps (one of them)."""

    def __init__(self, every_secs: Optional[float] = None, every_steps: Optional[int] = None):
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self) -> None:
        self._last_time: Optional[float] = None
        self._last_step: Optional[int] = None

    def should_trigger_for_step(self, step: int) -> bool:
        """Whether ``step`` is due: the first one always, never the same step twice."""
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None and time.time() >= self._last_time + self._every_secs:
            return True
        return self._every_steps is not None and step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step: int) -> tuple:
        """Marks ``step`` as triggered; returns (seconds, steps) since the last trigger
        ((None, None) the first time)."""
        now = time.time()
        elapsed = (None, None) if self._last_time is None else \
            (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed

    def last_triggered_step(self) -> Optional[int]:
        return self._last_step


def _global_step_tensor(hook: str):
    step = get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook}.")
    return step


def _as_int(value) -> int:
    return int(np.asarray(value))


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches ``last_step`` (or ``num_steps`` past
    its value when the session starts)."""

    def __init__(self, num_steps: Optional[int] = None, last_step: Optional[int] = None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._step = _global_step_tensor("StopAtStepHook")

    def after_create_session(self, session, coord) -> None:
        if self._last_step is None:
            self._last_step = _as_int(session.run(self._step)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._step)

    def after_run(self, run_context, run_values) -> None:
        if _as_int(run_values.results) + 1 >= self._last_step:
            if _as_int(run_context.session.run(self._step)) >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Called around each checkpoint save: ``begin``, ``before_save``, ``after_save``
    (returning True stops training) and ``end``."""

    def begin(self) -> None:
        pass

    def before_save(self, session, global_step_value: int) -> None:
        pass

    def after_save(self, session, global_step_value: int) -> Optional[bool]:
        return None

    def end(self, session, global_step_value: int) -> None:
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint ``<dir>/model.ckpt-<step>`` when the session starts, every
    ``save_secs`` seconds or ``save_steps`` steps, and at the end; writes the graph
    (``graph.pbtxt`` and to the directory's event file)."""

    def __init__(self, checkpoint_dir: str, save_secs: Optional[float] = None,
                 save_steps: Optional[int] = None, saver=None,
                 checkpoint_basename: str = "model.ckpt", scaffold=None, listeners=None,
                 save_graph_def: bool = True):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._saver = saver
        self._scaffold = scaffold
        self._listeners = list(listeners or [])
        self._save_graph_def = save_graph_def

    def begin(self) -> None:
        self._writer = FileWriterCache.get(self._checkpoint_dir)
        self._step = _global_step_tensor("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord) -> None:
        step = _as_int(session.run(self._step))
        if self._save_graph_def:
            graph_def = get_default_graph().as_graph_def(add_shapes=True)
            write_graph(graph_def, self._checkpoint_dir, "graph.pbtxt")
            self._writer.add_graph(None, graph_def=graph_def)
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context):
        return SessionRunArgs(self._step)

    def after_run(self, run_context, run_values) -> None:
        if self._timer.should_trigger_for_step(_as_int(run_values.results) + 1):
            step = _as_int(run_context.session.run(self._step))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session) -> None:
        step = _as_int(session.run(self._step))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = get_default_graph().get_collection("savers")
        if len(savers) != 1:
            raise RuntimeError(f"There should be exactly one saver in the 'savers' "
                               f"collection; found {len(savers)}. Pass saver= or scaffold=.")
        return savers[0]

    def _save(self, session, step: int) -> bool:
        """Saves; True when a listener asks to stop."""
        logging.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        path = self._get_saver().save(session, self._save_path, global_step=step)
        self._writer.add_session_log(event_pb2.SessionLog(
            status=event_pb2.SessionLog.CHECKPOINT, checkpoint_path=path), step)
        stop = False
        for listener in self._listeners:
            stop = bool(listener.after_save(session, step)) or stop
        return stop


class SummarySaverHook(SessionRunHook):
    """Runs ``summary_op`` (or the scaffold's) every ``save_steps`` steps or ``save_secs``
    seconds and writes it to ``output_dir`` at the global step."""

    def __init__(self, save_steps: Optional[int] = None, save_secs: Optional[float] = None,
                 output_dir: Optional[str] = None, summary_writer=None, scaffold=None,
                 summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._output_dir = output_dir
        self._writer = summary_writer
        self._scaffold = scaffold
        self._summary_op = summary_op

    def begin(self) -> None:
        if self._writer is None and self._output_dir:
            self._writer = FileWriterCache.get(self._output_dir)
        self._step = _global_step_tensor("SummarySaver")
        self._next_step: Optional[int] = None

    def _summaries(self) -> list:
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return []
        return list(op) if isinstance(op, (list, tuple)) else [op]

    def before_run(self, run_context):
        self._request = self._next_step is None or \
            self._timer.should_trigger_for_step(self._next_step)
        fetches = {"global_step": self._step}
        if self._request and self._summaries():
            fetches["summary"] = self._summaries()
        return SessionRunArgs(fetches)

    def after_run(self, run_context, run_values) -> None:
        if self._writer is None:
            return
        step = _as_int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request:
            step = _as_int(run_context.session.run(self._step))
        if self._next_step is None:
            self._writer.add_session_log(
                event_pb2.SessionLog(status=event_pb2.SessionLog.START), step)
        if self._request:
            self._timer.update_last_triggered_step(step)
            for summary in run_values.results.get("summary", []):
                self._writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session) -> None:
        if self._writer is not None:
            self._writer.flush()


class LoggingTensorHook(SessionRunHook):
    """Logs ``tensors`` (a dict tag -> tensor or name, or a list) every ``every_n_iter``
    runs or ``every_n_secs`` seconds, and/or ``at_end``, as ``tag = value, ...``."""

    def __init__(self, tensors, every_n_iter: Optional[int] = None,
                 every_n_secs: Optional[float] = None, at_end: bool = False,
                 formatter: Optional[Callable] = None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and "
                             "every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if isinstance(tensors, dict):
            self._tag_order = sorted(tensors)
            self._tensors = dict(tensors)
        else:
            self._tag_order = list(tensors)
            self._tensors = {item: item for item in tensors}
        self._timer = None if only_log_at_end else \
            SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        self._log_at_end = at_end
        self._formatter = formatter

    def begin(self) -> None:
        graph = get_default_graph()
        if self._timer is not None:
            self._timer.reset()
        self._iter_count = 0
        self._current = {tag: graph.as_graph_element(t, allow_tensor=True,
                                                     allow_operation=False)
                         for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer is not None and \
            self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current) if self._should_trigger else None

    def _log(self, values: dict) -> None:
        elapsed = self._timer.update_last_triggered_step(self._iter_count)[0] \
            if self._timer is not None else None
        if self._formatter is not None:
            logging.info(self._formatter(values))
            return
        with np.printoptions(suppress=True):
            text = ", ".join(f"{tag} = {values[tag]}" for tag in self._tag_order)
        if elapsed is not None:
            logging.info("%s (%.3f sec)", text, elapsed)
        else:
            logging.info("%s", text)

    def after_run(self, run_context, run_values) -> None:
        if self._should_trigger:
            self._log(run_values.results)
        self._iter_count += 1

    def end(self, session) -> None:
        if self._log_at_end:
            self._log(session.run(self._current))


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Fails (``NanLossDuringTrainingError``) or requests a stop when the loss is NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss: bool = True):
        self._loss = loss_tensor
        self._fail = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values) -> None:
        if np.isnan(run_values.results).any():
            message = "Model diverged with loss = NaN."
            if self._fail:
                logging.error(message)
                raise NanLossDuringTrainingError
            logging.warning(message)
            run_context.request_stop()


class StepCounterHook(SessionRunHook):
    """Measures global steps per second; logs it and writes it as the scalar
    ``<global step name>/sec`` every ``every_n_steps`` steps or ``every_n_secs``."""

    def __init__(self, every_n_steps: Optional[int] = 100,
                 every_n_secs: Optional[float] = None, output_dir: Optional[str] = None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be "
                             "provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._writer = summary_writer
        self._output_dir = output_dir

    def begin(self) -> None:
        if self._writer is None and self._output_dir:
            self._writer = FileWriterCache.get(self._output_dir)
        self._step = _global_step_tensor("StepCounterHook")
        self._tag = self._step.op.name + "/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._step)

    def after_run(self, run_context, run_values) -> None:
        if not self._timer.should_trigger_for_step(_as_int(run_values.results) + 1):
            return
        step = _as_int(run_context.session.run(self._step))
        if not self._timer.should_trigger_for_step(step):
            return
        seconds, steps = self._timer.update_last_triggered_step(step)
        if seconds is None:
            return
        rate = steps / seconds if seconds > 0 else float("inf")
        if self._writer is not None:
            self._writer.add_summary(summary_pb2.Summary(value=[
                summary_pb2.Summary.Value(tag=self._tag, simple_value=rate)]), step)
        logging.info("%s: %g", self._tag, rate)


class FeedFnHook(SessionRunHook):
    """Adds ``feed_fn()`` (a feed dict) to every run."""

    def __init__(self, feed_fn: Callable[[], dict]):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class FinalOpsHook(SessionRunHook):
    """Runs ``final_ops`` when the session ends; their values are ``final_ops_values``."""

    def __init__(self, final_ops, final_ops_feed_dict: Optional[dict] = None):
        self._final_ops = final_ops
        self._feed = final_ops_feed_dict
        self._values = None

    @property
    def final_ops_values(self):
        return self._values

    def end(self, session) -> None:
        if self._final_ops is not None:
            self._values = session.run(self._final_ops, feed_dict=self._feed)


class ProfilerHook(SessionRunHook):
    """Traces a run every ``save_steps`` steps or ``save_secs`` seconds and writes its
    Chrome trace to ``<output_dir>/timeline-<step>.json``."""

    def __init__(self, save_steps: Optional[int] = None, save_secs: Optional[float] = None,
                 output_dir: str = "", show_dataflow: bool = True, show_memory: bool = False):
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._output_dir = output_dir
        self._show_dataflow = show_dataflow
        self._show_memory = show_memory

    def begin(self) -> None:
        self._next_step: Optional[int] = None
        self._step = _global_step_tensor("ProfilerHook")

    def before_run(self, run_context):
        self._request = self._next_step is not None and \
            self._timer.should_trigger_for_step(self._next_step)
        options = RunOptions(trace_level=RunOptions.FULL_TRACE) if self._request else None
        return SessionRunArgs({"global_step": self._step}, options=options)

    def after_run(self, run_context, run_values) -> None:
        step = _as_int(run_values.results["global_step"]) + 1
        if self._next_step is None:
            self._timer.update_last_triggered_step(step)
        elif self._request:
            self._timer.update_last_triggered_step(step)
            trace = Timeline(run_values.run_metadata.step_stats).generate_chrome_trace_format(
                show_dataflow=self._show_dataflow, show_memory=self._show_memory)
            os.makedirs(self._output_dir or ".", exist_ok=True)
            with open(os.path.join(self._output_dir, f"timeline-{step}.json"), "w") as f:
                f.write(trace)
        self._next_step = step + 1


