"""``tf.keras.callbacks``: hooks ``fit`` calls around epochs and batches (History,
EarlyStopping, ModelCheckpoint, LambdaCallback, TensorBoard)."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from gradflow.summary import FileWriter, Summary

__all__ = ["Callback", "History", "EarlyStopping", "ModelCheckpoint", "LambdaCallback",
           "TensorBoard", "CallbackList"]


class Callback:
    """Base class: override the ``on_*`` methods; ``self.model`` is the model trained."""

    def __init__(self):
        self.model = None
        self.params: dict = {}

    def set_model(self, model) -> None:
        self.model = model

    def set_params(self, params: dict) -> None:
        self.params = params

    def on_train_begin(self, logs=None) -> None:
        """Called once before the first epoch."""

    def on_train_end(self, logs=None) -> None:
        """Called once after the last epoch."""

    def on_epoch_begin(self, epoch: int, logs=None) -> None:
        """Called before each epoch."""

    def on_epoch_end(self, epoch: int, logs=None) -> None:
        """Called after each epoch with its averaged ``logs`` (and validation values)."""

    def on_train_batch_begin(self, batch: int, logs=None) -> None:
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch: int, logs=None) -> None:
        self.on_batch_end(batch, logs)

    def on_batch_begin(self, batch: int, logs=None) -> None:
        """Called before each training batch."""

    def on_batch_end(self, batch: int, logs=None) -> None:
        """Called after each training batch with its ``logs``."""


class CallbackList:
    """Calls each callback in turn."""

    def __init__(self, callbacks: list, model, params: dict):
        self.callbacks = list(callbacks)
        for callback in self.callbacks:
            callback.set_model(model)
            callback.set_params(params)

    def call(self, method: str, *args) -> None:
        for callback in self.callbacks:
            getattr(callback, method)(*args)


class History(Callback):
    """Records each epoch's logs: ``history`` maps 'loss', 'acc', 'val_loss'... to lists."""

    def __init__(self):
        super().__init__()
        self.history: dict = {}
        self.epoch: list = []

    def on_train_begin(self, logs=None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs=None) -> None:
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)


class EarlyStopping(Callback):
    """Stops training when ``monitor`` has not improved by ``min_delta`` for ``patience``
    epochs (optionally restoring the best weights)."""

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: Optional[float] = None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping mode {mode} is unknown")
        self.monitor = monitor
        self.patience = int(patience)
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = bool(restore_best_weights)
        self.start_from_epoch = int(start_from_epoch)
        maximize = mode == "max" or (mode == "auto" and ("acc" in monitor or
                                                         monitor.startswith("fmeasure")))
        self.monitor_op = np.greater if maximize else np.less
        self.min_delta = abs(min_delta) if maximize else -abs(min_delta)
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None

    def on_train_begin(self, logs=None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf if self.monitor_op is np.less else -np.inf
        self.best_weights = None

    def on_epoch_end(self, epoch: int, logs=None) -> None:
        current = (logs or {}).get(self.monitor)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self.monitor_op(current - self.min_delta, self.best):
            self.best = current
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self.monitor_op(current - self.min_delta,
                                                        self.baseline):
                self.wait = 0
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


class ModelCheckpoint(Callback):
    """Saves the model's weights after each epoch to ``filepath`` (formatted with
    ``epoch`` and the logs); with ``save_best_only``, only when ``monitor`` improves."""

    def __init__(self, filepath: str, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq="epoch", **kwargs):
        super().__init__()
        if kwargs:
            raise ValueError(f"ModelCheckpoint: argument {sorted(kwargs)[0]!r} is not "
                             "supported")
        if save_freq != "epoch":
            raise ValueError(f"ModelCheckpoint: save_freq={save_freq!r} is not supported "
                             "(only 'epoch')")
        if not save_weights_only:
            raise ValueError("ModelCheckpoint: saving whole models is not supported; pass "
                             "save_weights_only=True")
        self.filepath = filepath
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = bool(save_best_only)
        maximize = mode == "max" or (mode == "auto" and "acc" in monitor)
        self.monitor_op = np.greater if maximize else np.less
        self.best = -np.inf if maximize else np.inf

    def on_epoch_end(self, epoch: int, logs=None) -> None:
        logs = logs or {}
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None or not self.monitor_op(current, self.best):
                return
            self.best = current
        self.model.save_weights(path, overwrite=True)


class LambdaCallback(Callback):
    """A callback from functions: ``on_epoch_end=lambda epoch, logs: ...`` and so on."""

    def __init__(self, on_epoch_begin: Optional[Callable] = None,
                 on_epoch_end: Optional[Callable] = None,
                 on_batch_begin: Optional[Callable] = None,
                 on_batch_end: Optional[Callable] = None,
                 on_train_begin: Optional[Callable] = None,
                 on_train_end: Optional[Callable] = None):
        super().__init__()
        for name, fn in (("on_epoch_begin", on_epoch_begin), ("on_epoch_end", on_epoch_end),
                         ("on_batch_begin", on_batch_begin), ("on_batch_end", on_batch_end),
                         ("on_train_begin", on_train_begin), ("on_train_end", on_train_end)):
            if fn is not None:
                setattr(self, name, fn)


class TensorBoard(Callback):
    """Writes each epoch's logs as scalar summaries to an event file in ``log_dir``
    (through gradflow's summary FileWriter)."""

    def __init__(self, log_dir: str = "logs", histogram_freq: int = 0,
                 write_graph: bool = True, update_freq="epoch", **kwargs):
        super().__init__()
        if histogram_freq:
            raise ValueError("TensorBoard: histogram_freq is not supported")
        if update_freq != "epoch":
            raise ValueError(f"TensorBoard: update_freq={update_freq!r} is not supported "
                             "(only 'epoch')")
        unsupported = sorted(k for k, v in kwargs.items() if v)
        if unsupported:
            raise ValueError(f"TensorBoard: argument {unsupported[0]!r} is not supported")
        self.log_dir = log_dir
        self.write_graph = bool(write_graph)
        self.writer: Optional[FileWriter] = None

    def set_model(self, model) -> None:
        super().set_model(model)
        graph = model.inputs[0].graph if getattr(model, "inputs", None) else None
        self.writer = FileWriter(self.log_dir, graph=graph if self.write_graph else None)

    def on_epoch_end(self, epoch: int, logs=None) -> None:
        values = [Summary.Value(tag=key, simple_value=float(value))
                  for key, value in (logs or {}).items()]
        self.writer.add_summary(Summary(value=values), epoch)
        self.writer.flush()

    def on_train_end(self, logs=None) -> None:
        self.writer.close()
