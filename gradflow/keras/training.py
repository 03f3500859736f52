"""``compile``, ``fit``, ``evaluate``, ``predict`` and the ``*_on_batch`` methods of keras
models in TF1 graph mode.

``compile`` builds, as tf_keras does: a target placeholder per output
(``<output layer>_target``), the loss under ``loss/`` (the batch mean of each output's
loss, weighted, plus the layers' regularization losses) and the metrics under
``metrics/<name>/``. The first ``fit`` adds the optimizer's updates under ``training/``
and the layers' updates (batch-norm moving averages), then runs batches in keras's
session, feeding the learning phase True. Epoch logs are the batch values averaged
with the batch sizes as weights (keras's figures).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant
from gradflow.framework.graph import get_default_graph
from gradflow.keras import backend as K
from gradflow.keras import callbacks as callbacks_module
from gradflow.keras import losses as losses_module
from gradflow.keras import metrics as metrics_module
from gradflow.keras import optimizers
from gradflow.keras.engine import keras_history
from gradflow.ops import array
from gradflow.ops import math as math_ops

__all__ = ["Trainer"]

_UNSUPPORTED_COMPILE = ("sample_weight_mode", "weighted_metrics", "target_tensors",
                        "run_eagerly", "steps_per_execution", "jit_compile")


def _flat_metrics(metrics) -> list:
    """The metric identifiers of ``compile(metrics=...)`` (a list, or a dict of lists)."""
    if metrics is None:
        return []
    if isinstance(metrics, dict):
        return [m for value in metrics.values() if value is not None
                for m in (value if isinstance(value, (list, tuple)) else [value])]
    return list(metrics)


def _slices(arrays: list, order: np.ndarray, batch_size: int) -> Iterator[list]:
    """The arrays' rows in ``order``, ``batch_size`` at a time."""
    for start in range(0, len(order), batch_size):
        ids = order[start:start + batch_size]
        yield [a[ids] for a in arrays]


def _is_sequence(data) -> bool:
    """A keras ``Sequence``: batches by index, its length the batches an epoch."""
    return hasattr(data, "__getitem__") and hasattr(data, "__len__") and \
        not isinstance(data, (list, tuple, np.ndarray))


def _then(batches: Iterator[list], after: Callable) -> Iterator[list]:
    yield from batches
    after()


def _scalars(values: list):
    """``evaluate``'s result as keras gives it: one float32, or a list of them."""
    values = [np.float32(v) for v in values]
    return values[0] if len(values) == 1 else values


def _print_epoch(verbose: int, epoch: int, epochs: int, count: int, logs: dict,
                 seconds: float) -> None:
    """keras's end-of-epoch line: a full progress bar (verbose 1) or the one-line
    summary (verbose 2), with the time taken."""
    values = " - ".join(f"{key}: {value:.4f}" for key, value in logs.items())
    per_sample = f"{seconds / max(count, 1) * 1e6:.0f}us/sample"
    if verbose == 1:
        print(f"Epoch {epoch + 1}/{epochs}")
        print(f"{count}/{count} [{'=' * 30}] - {seconds:.0f}s {per_sample} - {values}")
    else:
        print(f"Epoch {epoch + 1}/{epochs}")
        print(f"{count}/{count} - {seconds:.0f}s - {values} - {seconds * 1000:.0f}ms/epoch - "
              f"{per_sample}")


class Trainer:
    """What ``Model`` adds for training; expects ``inputs``, ``outputs``,
    ``_build_from_data`` and weights from the model."""

    optimizer = None
    _compiled = False

    # ------------------------------------------------------------------- compile
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                **kwargs: Any) -> None:
        """Chooses the optimizer, the loss(es) and the metrics; the loss and metric
        tensors are built now if the model's outputs are known, else on first use."""
        for argument in _UNSUPPORTED_COMPILE:
            if kwargs.pop(argument, None) not in (None, False):
                raise ValueError(f"compile: {argument} is not supported")
        if kwargs:
            raise TypeError(f"Invalid keyword argument(s) in `compile()`: "
                            f"({sorted(kwargs)[0]!r},). Valid keyword arguments include "
                            "\"cloning\", \"experimental_run_tf_function\", \"distribute\", "
                            "\"target_tensors\", or \"sample_weight_mode\".")
        if loss is None:
            raise ValueError("compile: a `loss` is required to train the model")
        # every identifier is checked before the model changes
        for identifier in (loss.values() if isinstance(loss, dict) else
                           loss if isinstance(loss, (list, tuple)) else [loss]):
            losses_module.get(identifier)
        for identifier in _flat_metrics(metrics):
            if identifier not in ("accuracy", "acc"):
                metrics_module.get(identifier)
        self.optimizer = optimizers.get(optimizer)
        self.loss = loss
        self._metric_specs = metrics if isinstance(metrics, dict) else list(metrics or [])
        self._loss_weights = loss_weights
        self._compiled = True
        self._train_function = self._test_function = self._predict_function = None
        self.targets: list = []
        if self.outputs:
            try:
                self._compile_graph()
            except Exception:  # the graph is rolled back: so is the compilation
                self.optimizer, self._compiled, self.targets = None, False, []
                raise

    def _per_output(self, value, what: str) -> list:
        """``value`` (one for all, a list, or a dict by output layer name) per output."""
        names = self.output_names
        if isinstance(value, dict):
            unknown = sorted(set(value) - set(names))
            if unknown:
                raise ValueError(f"Unknown entries in {what} dictionary: {unknown}. Only "
                                 f"expected following keys: {names}")
            return [value.get(name) for name in names]
        if isinstance(value, (list, tuple)) and what != "metrics":
            if len(value) != len(names):
                raise ValueError(f"When passing a list as {what}, it should have one entry "
                                 f"per model outputs. The model has {len(names)} outputs, "
                                 f"but you passed {what}={value}")
            return list(value)
        return [value] * len(names)

    @property
    def output_names(self) -> list:
        return [keras_history(t)[0].name for t in self.outputs]

    @property
    def input_names(self) -> list:
        return [keras_history(t)[0].name for t in self.inputs]

    def _compile_graph(self) -> None:
        graph = get_default_graph()
        with graph.atomic():
            self._build_loss_and_metrics(graph)

    def _build_loss_and_metrics(self, graph) -> None:
        losses = self._per_output(self.loss, "loss")
        weights = self._per_output(1.0 if self._loss_weights is None else self._loss_weights,
                                   "loss_weights")
        metric_lists = self._per_output(self._metric_specs, "metrics")
        names = self.output_names
        self.targets, loss_fns = [], []
        for output, name, loss in zip(self.outputs, names, losses, strict=True):
            fn = losses_module.get(loss)
            base = loss.fn if isinstance(loss, losses_module.Loss) else fn
            sparse = base is losses_module.sparse_categorical_crossentropy
            ndims = output.shape.ndims
            with graph.name_scope(None):
                self.targets.append(array.placeholder(
                    dtypes.as_dtype(K.floatx()) if not sparse else dtypes.float32,
                    shape=[None] * (ndims if ndims is not None else 2), name=f"{name}_target"))
            loss_fns.append((fn, base))
        self._metric_tensors, self.metrics_names = [], ["loss"]
        with graph.name_scope("metrics"):
            for output, target, name, specs, (_, base) in zip(
                    self.outputs, self.targets, names, metric_lists, loss_fns, strict=True):
                specs = [] if specs is None else specs
                for spec in specs if isinstance(specs, (list, tuple)) else [specs]:
                    label, fn = metrics_module.resolve(spec, base, output.shape.as_list()
                                                       if output.shape.ndims else None)
                    label = label if len(names) == 1 else f"{name}_{label}"
                    with graph.name_scope(label):
                        self._metric_tensors.append(math_ops.reduce_mean(fn(target, output)))
                    self.metrics_names.append(label)
        with graph.name_scope("loss"):
            output_losses = []
            for output, target, name, (fn, _), weight in zip(
                    self.outputs, self.targets, names, loss_fns, weights, strict=True):
                with graph.name_scope(f"{name}_loss"):
                    value = math_ops.reduce_mean(fn(target, output), name="value")
                output_losses.append(value)
                total = value * constant(float(weight), dtype=value.dtype.base_dtype)
                self.total_loss = total if len(output_losses) == 1 else self.total_loss + total
            for regularization in self.losses:
                self.total_loss = self.total_loss + regularization
        if len(names) > 1:
            self._metric_tensors = output_losses + self._metric_tensors
            self.metrics_names[1:1] = [f"{name}_loss" for name in names]

    def _ensure_compiled_graph(self, x_arrays: list) -> None:
        if not self._compiled:
            raise RuntimeError("You must compile your model before training/testing. Use "
                               "`model.compile(optimizer, loss)`.")
        if not self.outputs:
            self._build_from_data(x_arrays)
        if not self.targets:
            self._compile_graph()

    # ----------------------------------------------------------------- functions
    def _make_function(self, kind: str) -> K.GraphFunction:
        graph = get_default_graph()
        phase = K.learning_phase()
        feeds = list(self.inputs) + (list(self.targets) if kind != "predict" else [])
        if not isinstance(phase, int):
            feeds.append(phase)
        with graph.atomic():
            if kind == "train":
                with graph.name_scope("training"):
                    updates = self.optimizer.get_updates(self.total_loss,
                                                         self.trainable_weights)
                updates += self.updates
                return K.function(feeds, [self.total_loss] + self._metric_tensors,
                                  updates=updates)
            if kind == "test":
                return K.function(feeds, [self.total_loss] + self._metric_tensors)
            return K.function(feeds, list(self.outputs))

    def _function(self, kind: str) -> K.GraphFunction:
        attribute = f"_{kind}_function"
        if getattr(self, attribute, None) is None:
            setattr(self, attribute, self._make_function(kind))
        return getattr(self, attribute)

    def _run(self, kind: str, feeds: list, training: bool) -> list:
        function = self._function(kind)
        if len(function.inputs) > len(feeds):
            feeds = feeds + [training]
        return function(feeds)

    # ---------------------------------------------------------------------- data
    @staticmethod
    def _check_arrays(data, argument: str) -> None:
        """Only arrays (or lists/tuples/dicts of them) feed keras models here."""
        items = data.values() if isinstance(data, dict) else \
            data if isinstance(data, (list, tuple)) else [data]
        for item in items:
            if not isinstance(item, (np.ndarray, list, tuple, int, float, np.generic)):
                raise ValueError(f"`{argument}` of type {type(item).__name__} is not "
                                 "supported: pass NumPy arrays (or lists or dicts of them)")

    def _standardize(self, data, tensors: list, what: str) -> list:
        """``data`` (an array, a list, or a dict by layer name) as one array per tensor,
        with 1-D targets made [n, 1] where the placeholder has two axes."""
        if data is None:
            raise ValueError(f"Please provide data for {what}.")
        if isinstance(data, dict):
            names = [keras_history(t)[0].name for t in tensors] if what == "inputs" else \
                self.output_names
            missing = [n for n in names if n not in data]
            if missing:
                raise ValueError(f"No data provided for \"{missing[0]}\". Need data for each "
                                 f"key in: {names}")
            data = [data[n] for n in names]
        arrays = [np.asarray(a) for a in (data if isinstance(data, (list, tuple))
                                          else [data])]
        if tensors and len(arrays) != len(tensors):
            raise ValueError(f"Error when checking model {what}: the list of Numpy arrays "
                             "that you are passing to your model is not the size the model "
                             f"expected. Expected to see {len(tensors)} array(s), but "
                             f"instead got {len(arrays)} arrays.")
        for i, (tensor, value) in enumerate(zip(tensors, arrays, strict=True)):
            ndims = tensor.shape.ndims
            if ndims == 2 and value.ndim == 1:
                arrays[i] = value = value.reshape(-1, 1)
            dims = tensor.shape.as_list() if ndims is not None else None
            if dims is not None and (value.ndim != len(dims) or any(
                    d is not None and d != s for d, s in zip(dims[1:], value.shape[1:],
                                                             strict=True))):
                label = keras_history(tensor)[0].name if what == "inputs" else tensor.op.name
                raise ValueError(f"Error when checking {what}: expected {label} "
                                 f"to have shape {tuple(dims[1:])} but got array with shape "
                                 f"{value.shape[1:]}")
        counts = {len(a) for a in arrays}
        if len(counts) > 1:
            raise ValueError(f"All input arrays (x) should have the same number of samples. "
                             f"Got array shapes: {[a.shape for a in arrays]}")
        return arrays

    def _prepare(self, x, y) -> tuple[list, list]:
        self._check_arrays(x, "x")
        self._check_arrays(y, "y")
        x_list = x if isinstance(x, (list, tuple)) else ([x] if not isinstance(x, dict)
                                                         else list(x.values()))
        self._ensure_compiled_graph([np.asarray(a) for a in x_list])
        xs = self._standardize(x, self.inputs, "inputs")
        ys = self._standardize(y, self.targets, "target")
        if len(xs[0]) != len(ys[0]):
            raise ValueError(f"Input arrays should have the same number of samples as target "
                             f"arrays. Found {len(xs[0])} input samples and {len(ys[0])} "
                             "target samples.")
        return xs, ys

    # ----------------------------------------------------------------------- fit
    def fit(self, x=None, y=None, batch_size: Optional[int] = None, epochs: int = 1,
            verbose: int = 1, callbacks: Optional[Sequence] = None,
            validation_split: float = 0.0, validation_data=None, shuffle=True,
            class_weight=None, sample_weight=None, initial_epoch: int = 0,
            steps_per_epoch=None, validation_steps=None, validation_freq: int = 1,
            **kwargs: Any):
        """Trains for ``epochs`` passes over (x, y) in batches; returns the History."""
        for argument, value in (("class_weight", class_weight),
                                ("sample_weight", sample_weight),
                                ("steps_per_epoch", steps_per_epoch),
                                ("validation_steps", validation_steps),
                                *kwargs.items()):
            if value is not None:
                raise ValueError(f"fit: {argument} is not supported")
        if validation_freq != 1:
            raise ValueError(f"fit: validation_freq={validation_freq} is not supported")
        if shuffle not in (True, False):
            raise ValueError(f"fit: shuffle={shuffle!r} is not supported (True or False)")
        batch_size = 32 if batch_size is None else int(batch_size)
        xs, ys = self._prepare(x, y)
        val = None
        if validation_data is not None:
            if len(validation_data) != 2:
                raise ValueError("validation_data: sample weights are not supported; pass "
                                 "(x_val, y_val)")
            val = self._standardize(validation_data[0], self.inputs, "inputs"), \
                self._standardize(validation_data[1], self.targets, "target")
        elif validation_split:
            if not 0 < validation_split < 1:
                raise ValueError(f"validation_split must be in (0, 1), got {validation_split}")
            split = int(len(xs[0]) * (1.0 - validation_split))
            val = [a[split:] for a in xs], [a[split:] for a in ys]
            xs, ys = [a[:split] for a in xs], [a[:split] for a in ys]
        count = len(xs[0])
        if verbose:
            print(f"Train on {count} samples" +
                  (f", validate on {len(val[0][0])} samples" if val is not None else ""))

        def epoch_batches() -> Iterator[list]:
            order = np.arange(count)
            if shuffle:
                np.random.shuffle(order)
            return _slices(xs + ys, order, batch_size)

        def validation() -> list:
            return self._loop("test", _slices(val[0] + val[1], np.arange(len(val[0][0])),
                                              batch_size))
        params = {"batch_size": batch_size, "epochs": epochs, "steps": None,
                  "samples": count, "verbose": verbose, "do_validation": val is not None}
        return self._train(epoch_batches, validation if val is not None else None, params,
                           callbacks, initial_epoch)

    def _train(self, epoch_batches, validation, params: dict, callbacks,
               initial_epoch: int):
        """The epochs of ``fit``: callbacks, batches, validation, History."""
        history = callbacks_module.History()
        labels = list(self.metrics_names)
        params["metrics"] = labels + [f"val_{n}" for n in labels] * (validation is not None)
        hooks = callbacks_module.CallbackList(list(callbacks or []) + [history], self,
                                              params)
        self.stop_training = False
        self._function("train")
        hooks.call("on_train_begin", None)
        epochs, verbose = params["epochs"], params["verbose"]
        for epoch in range(initial_epoch, epochs):
            started = time.time()
            hooks.call("on_epoch_begin", epoch, None)
            logs, count = self._run_batches("train", epoch_batches(), hooks)
            if validation is not None:
                logs.update({f"val_{n}": v
                             for n, v in zip(labels, validation(), strict=True)})
            if verbose:
                _print_epoch(verbose, epoch, epochs, count, logs, time.time() - started)
            hooks.call("on_epoch_end", epoch, logs)
            if self.stop_training:
                break
        hooks.call("on_train_end", None)
        self.history = history
        history.params = params
        history.model = self
        return history

    def _run_batches(self, kind: str, batches: Iterable[list], hooks=None) -> tuple:
        """Runs ``kind``'s function on each batch (a list of arrays to feed); returns
        the logs averaged with the batch sizes as weights, and the sample count."""
        totals, count = None, 0
        for index, batch in enumerate(batches):
            size = len(batch[0])
            if hooks is not None:
                hooks.call("on_train_batch_begin", index, {"batch": index, "size": size})
            outs = self._run(kind, batch, kind == "train")
            values = np.asarray([float(v) for v in outs])
            totals = values * size if totals is None else totals + values * size
            count += size
            if hooks is not None:
                batch_logs = {"batch": index, "size": size}
                batch_logs.update(zip(self.metrics_names, [float(v) for v in outs],
                                      strict=True))
                hooks.call("on_train_batch_end", index, batch_logs)
        if totals is None:
            raise ValueError("Empty training data.")
        return {name: float(np.float32(v / count))
                for name, v in zip(self.metrics_names, totals, strict=True)}, count

    def _loop(self, kind: str, batches: Iterable[list]) -> list:
        logs, _ = self._run_batches(kind, batches)
        return [logs[name] for name in self.metrics_names]

    # ------------------------------------------------------------------ generators
    def _generated(self, generator, steps: int, what: str,
                   shuffle: bool = False) -> Iterator[list]:
        """``steps`` batches of a generator (or keras ``Sequence``, its batches in random
        order with ``shuffle``) of (x, y) pairs, as lists of arrays to feed."""
        order = np.random.permutation(steps) if shuffle and _is_sequence(generator) else \
            range(steps)
        for step in order:
            item = generator[int(step)] if _is_sequence(generator) else next(generator)
            if not isinstance(item, tuple) or len(item) != 2:
                raise ValueError(f"{what}: the generator must yield (x, y) tuples (sample "
                                 f"weights are not supported); got {type(item).__name__}")
            xs, ys = self._prepare(*item)
            yield xs + ys

    @staticmethod
    def _steps(generator, steps: Optional[int], argument: str) -> int:
        if steps is None:
            if not _is_sequence(generator):
                raise ValueError(f"`{argument}=None` is only valid for a generator based on "
                                 "the `keras.utils.Sequence` class. Please specify "
                                 f"`{argument}` or use the `keras.utils.Sequence` class.")
            return len(generator)
        return int(steps)

    def fit_generator(self, generator, steps_per_epoch: Optional[int] = None,
                      epochs: int = 1, verbose: int = 1, callbacks=None,
                      validation_data=None, validation_steps: Optional[int] = None,
                      validation_freq: int = 1, class_weight=None, max_queue_size: int = 10,
                      workers: int = 1, use_multiprocessing: bool = False,
                      shuffle: bool = True, initial_epoch: int = 0):
        """Trains on batches drawn from a generator (or ``Sequence``) of (x, y):
        ``steps_per_epoch`` batches an epoch; returns the History."""
        for argument, value in (("class_weight", class_weight),
                                ("use_multiprocessing", use_multiprocessing or None)):
            if value is not None:
                raise ValueError(f"fit_generator: {argument} is not supported")
        if validation_freq != 1:
            raise ValueError(f"fit_generator: validation_freq={validation_freq} is not "
                             "supported")
        steps = self._steps(generator, steps_per_epoch, "steps_per_epoch")
        validation = None
        if validation_data is not None:
            if isinstance(validation_data, tuple):
                if len(validation_data) != 2:
                    raise ValueError("validation_data: sample weights are not supported; "
                                     "pass (x_val, y_val)")
                val_xs, val_ys = self._prepare(*validation_data)

                def validation() -> list:
                    return self._loop("test", _slices(val_xs + val_ys,
                                                      np.arange(len(val_xs[0])), 32))
            else:
                val_steps = self._steps(validation_data, validation_steps,
                                        "validation_steps")

                def validation() -> list:
                    return self._loop("test", self._generated(validation_data, val_steps,
                                                              "fit_generator"))

        def epoch_batches() -> Iterator[list]:
            batches = self._generated(generator, steps, "fit_generator", shuffle)
            if _is_sequence(generator) and hasattr(generator, "on_epoch_end"):
                return _then(batches, generator.on_epoch_end)
            return batches
        params = {"epochs": epochs, "steps": steps, "verbose": verbose,
                  "do_validation": validation is not None}
        return self._train(epoch_batches, validation, params, callbacks, initial_epoch)

    def evaluate_generator(self, generator, steps: Optional[int] = None, callbacks=None,
                           max_queue_size: int = 10, workers: int = 1,
                           use_multiprocessing: bool = False, verbose: int = 0):
        """The loss (and metrics) over ``steps`` batches of a generator of (x, y)."""
        if use_multiprocessing or callbacks is not None:
            raise ValueError("evaluate_generator: callbacks and use_multiprocessing are not "
                             "supported")
        count = self._steps(generator, steps, "steps")
        values = self._loop("test", self._generated(generator, count, "evaluate_generator"))
        return _scalars(values)

    def predict_generator(self, generator, steps: Optional[int] = None, callbacks=None,
                          max_queue_size: int = 10, workers: int = 1,
                          use_multiprocessing: bool = False, verbose: int = 0):
        """The outputs for ``steps`` batches of a generator of x (or (x, y))."""
        if use_multiprocessing or callbacks is not None:
            raise ValueError("predict_generator: callbacks and use_multiprocessing are not "
                             "supported")
        pieces = []
        for step in range(self._steps(generator, steps, "steps")):
            item = generator[step] if _is_sequence(generator) else next(generator)
            x = item[0] if isinstance(item, tuple) else item
            outs = self._run("predict", self._predict_inputs(x), False)
            pieces.append(outs)
        joined = [np.concatenate([p[i] for p in pieces]) for i in range(len(self.outputs))]
        return joined[0] if len(joined) == 1 else joined

    # ------------------------------------------------------------ evaluate/predict
    def evaluate(self, x=None, y=None, batch_size: Optional[int] = None, verbose: int = 1,
                 sample_weight=None, steps=None, callbacks=None, **kwargs: Any):
        """The loss (and metrics) over (x, y), in batches, in inference mode."""
        for argument, value in (("sample_weight", sample_weight), ("steps", steps),
                                ("callbacks", callbacks), *kwargs.items()):
            if value is not None:
                raise ValueError(f"evaluate: {argument} is not supported")
        xs, ys = self._prepare(x, y)
        values = self._loop("test", _slices(xs + ys, np.arange(len(xs[0])),
                                            32 if batch_size is None else int(batch_size)))
        return _scalars(values)

    def predict(self, x, batch_size: Optional[int] = None, verbose: int = 0, steps=None,
                callbacks=None, **kwargs: Any):
        """The outputs for ``x``, computed in batches in inference mode."""
        for argument, value in (("steps", steps), ("callbacks", callbacks), *kwargs.items()):
            if value is not None:
                raise ValueError(f"predict: {argument} is not supported")
        xs = self._predict_inputs(x)
        batch_size = 32 if batch_size is None else int(batch_size)
        pieces = [self._run("predict", [a[start:start + batch_size] for a in xs], False)
                  for start in range(0, len(xs[0]), batch_size)]
        joined = [np.concatenate([p[i] for p in pieces]) for i in range(len(self.outputs))]
        return joined[0] if len(joined) == 1 else joined

    def _predict_inputs(self, x) -> list:
        self._check_arrays(x, "x")
        if not self.outputs:
            self._build_from_data([np.asarray(a) for a in (x if isinstance(x, (list, tuple))
                                                           else [x])])
        return self._standardize(x, self.inputs, "inputs")

    def train_on_batch(self, x, y, sample_weight=None, class_weight=None,
                       reset_metrics: bool = True, return_dict: bool = False):
        """One update on one batch; returns the loss (and metrics) before the update."""
        for argument, value in (("sample_weight", sample_weight),
                                ("class_weight", class_weight),
                                ("reset_metrics", None if reset_metrics else False)):
            if value is not None:
                raise ValueError(f"train_on_batch: {argument}={value} is not supported")
        xs, ys = self._prepare(x, y)
        return self._batch_result(self._run("train", xs + ys, True), return_dict)

    def test_on_batch(self, x, y, sample_weight=None, reset_metrics: bool = True,
                      return_dict: bool = False):
        """The loss (and metrics) on one batch, in inference mode."""
        if sample_weight is not None or not reset_metrics:
            raise ValueError("test_on_batch: sample_weight and reset_metrics=False are not "
                             "supported (metrics are per batch)")
        xs, ys = self._prepare(x, y)
        return self._batch_result(self._run("test", xs + ys, False), return_dict)

    def predict_on_batch(self, x):
        outs = self._run("predict", self._predict_inputs(x), False)
        return outs[0] if len(outs) == 1 else outs

    def _batch_result(self, outs: list, return_dict: bool):
        values = [np.float32(v) for v in outs]
        if return_dict:
            return dict(zip(self.metrics_names, values, strict=True))
        return values[0] if len(values) == 1 else values
