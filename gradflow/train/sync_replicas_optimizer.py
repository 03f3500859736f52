"""``SyncReplicasOptimizer``: synchronous data-parallel training, as TF1 builds it.

Each replica's train op puts its gradients into one conditional accumulator per
variable (tagged with the replica's local step, so a gradient computed before the last
update is dropped as stale), then waits for a token from the ``sync_token_q`` queue. The
chief's queue runner takes ``replicas_to_aggregate`` gradients from every accumulator,
applies their mean with the wrapped optimizer (incrementing the global step) and puts
one token per replica, holding the new global step, into the queue. The graph's op and
variable names are TF1's.

gradflow commits a run's variable writes when the run ends and its variable reads are
snapshots (TF's ref reads alias the variable, so the tokens see the incremented step),
so the chief's queue runner runs each aggregation as two runs: the update (fetching the
new global step), then the token enqueue fed with tokens holding that step. A released
replica thus always reads the updated variables and carries the new step. Running the
chief's ``sync_op`` directly would put tokens holding the old step.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework.graph import GraphKeys, Operation, Tensor
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.ops import control
from gradflow.ops.accumulator_ops import ConditionalAccumulator, SparseConditionalAccumulator
from gradflow.ops.array import fill
from gradflow.ops.data_flow_ops import FIFOQueue
from gradflow.ops.state import (Variable, assign, global_variables,
                                report_uninitialized_variables)
import gradflow.logging as tf_logging
from gradflow.train.optimizer import Optimizer
from gradflow.train.queue_runner import QueueRunner
from gradflow.train.session_manager import ready_or_message
from gradflow.train.session_run_hook import SessionRunHook

__all__ = ["SyncReplicasOptimizer"]


def _positive_int(value, argument: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{argument} must be a positive int, got {value!r}")
    return value


class SyncReplicasOptimizer(Optimizer):
    """Wraps ``opt`` so that ``replicas_to_aggregate`` replicas' gradients are averaged
    before each update (see the module docstring)."""

    def __init__(self, opt: Optimizer, replicas_to_aggregate: int,
                 total_num_replicas: Optional[int] = None, variable_averages=None,
                 variables_to_average=None, use_locking: bool = False,
                 name: str = "sync_replicas"):
        if not isinstance(opt, Optimizer):
            raise TypeError(f"opt must be a tf.train.Optimizer, got {type(opt).__name__}")
        replicas_to_aggregate = _positive_int(replicas_to_aggregate, "replicas_to_aggregate")
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        total_num_replicas = _positive_int(total_num_replicas, "total_num_replicas")
        super().__init__(use_locking, name)
        tf_logging.info(f"SyncReplicasV2: replicas_to_aggregate={replicas_to_aggregate}; "
                        f"total_num_replicas={total_num_replicas}")
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._gradients_applied = False
        self._global_step = None
        self._sync_token_queue: Optional[FIFOQueue] = None
        self._chief_queue_runner: Optional[QueueRunner] = None
        self._accumulator_list: list = []
        self.local_step_init_op: Optional[Tensor] = None
        self.chief_init_op: Optional[Operation] = None
        self.ready_for_local_init_op: Optional[Tensor] = None

    def compute_gradients(self, *args, **kwargs) -> list:
        """The wrapped optimizer's gradients (this replica's, not yet aggregated)."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None,
                        name: Optional[str] = None) -> Tensor:
        """Adds this replica's train op (accumulate, then wait for a token) and the
        chief's aggregate-and-apply op; returns the train op."""
        pairs = list(grads_and_vars or ())
        if not pairs:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        graph = pairs[0][1].graph
        with graph.atomic(), graph.as_default():
            train_op = self._build(graph, pairs, global_step)
        self._global_step = global_step
        self._gradients_applied = True
        return train_op

    def _build(self, graph, pairs: list, global_step) -> Tensor:
        local_anchor = control.no_op()
        with graph.colocate_with(local_anchor):  # each replica keeps its own step
            local_step = Variable(0, trainable=False, dtype=global_step.dtype.base_dtype,
                                  collections=[GraphKeys.LOCAL_VARIABLES],
                                  name="sync_rep_local_step")
        with graph.colocate_with(local_step.op):  # assigns sit with their ref, as TF1's
            local_step_init_op = assign(local_step, global_step)
        chief_init_ops = [local_step_init_op]
        ready_for_local_init_op = report_uninitialized_variables(global_variables())
        accumulators, train_ops, aggregated = [], [], []
        with graph.name_scope(self._name):
            for grad, var in pairs:
                with graph.device(var.device):
                    if grad is None:
                        aggregated.append(None)
                        continue
                    accumulator, apply_op, taken = self._accumulate(grad, var, local_step)
                accumulators.append((accumulator, var.device))
                train_ops.append(apply_op)
                aggregated.append(taken)
            with graph.device(global_step.device), graph.name_scope(""):
                update_op = self._opt.apply_gradients(
                    list(zip(aggregated, [v for _, v in pairs], strict=True)), global_step)
                queue = FIFOQueue(-1, global_step.dtype.base_dtype, shapes=(),
                                  name="sync_token_q", shared_name="sync_token_q")
                with graph.control_dependencies(train_ops):
                    token = queue.dequeue()
                with graph.colocate_with(local_step.op):
                    train_op = assign(local_step, token)
                with graph.control_dependencies([update_op]):
                    tokens = fill([self._tokens_per_step], global_step)
                    sync_op = queue.enqueue_many((tokens,))
                if self._variable_averages is not None:
                    with graph.control_dependencies([sync_op]):
                        sync_op = self._variable_averages.apply(self._variables_to_average)
                runner = _ChiefQueueRunner(queue, sync_op, update_op, tokens, global_step)
            for accumulator, device in accumulators:
                with graph.device(device):
                    chief_init_ops.append(accumulator.set_global_step(global_step,
                                                                      name="SetGlobalStep"))
            chief_init_op = control.group(*chief_init_ops)
        self._sync_token_queue = queue
        self._chief_queue_runner = runner
        self._accumulator_list = accumulators
        self.local_step_init_op = local_step_init_op
        self.chief_init_op = chief_init_op
        self.ready_for_local_init_op = ready_for_local_init_op
        return train_op

    def _accumulate(self, grad, var: Variable, local_step: Variable) -> tuple:
        shared_name = var.name + "/grad_accum"
        if isinstance(grad, IndexedSlices):
            accumulator = SparseConditionalAccumulator(grad.dtype, shape=(),
                                                       shared_name=shared_name)
            return (accumulator,
                    accumulator.apply_indexed_slices_grad(grad, local_step=local_step),
                    accumulator.take_indexed_slices_grad(self._replicas_to_aggregate))
        if not isinstance(grad, Tensor):
            raise ValueError("Unknown grad type!")
        accumulator = ConditionalAccumulator(grad.dtype, shape=var.get_shape(),
                                             shared_name=shared_name)
        return (accumulator, accumulator.apply_grad(grad, local_step=local_step),
                accumulator.take_grad(self._replicas_to_aggregate))

    def get_chief_queue_runner(self) -> QueueRunner:
        """The queue runner the chief starts: aggregate, apply, release the replicas."""
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens: int = -1) -> Operation:
        """Puts ``num_tokens`` tokens (default ``replicas_to_aggregate``) in the queue so
        the replicas can start; at least ``replicas_to_aggregate - total_num_replicas``."""
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < needed:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) "
                             f"vs {needed} (needed)")
        graph = self._global_step.graph
        with graph.atomic(), graph.as_default(), graph.device(self._global_step.device), \
                graph.name_scope(""):
            if num_tokens <= 0:
                return control.no_op(name="no_init_tokens")
            tokens = fill([num_tokens], self._global_step)
            return self._sync_token_queue.enqueue_many((tokens,))

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> SessionRunHook:
        """The hook a MonitoredSession needs: local init, the chief's tokens and runner."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs) -> list:
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list:
        """The wrapped optimizer's variables."""
        return self._opt.variables()


class _ChiefQueueRunner(QueueRunner):
    """The chief's runner: its threads run each aggregation as the update, then the
    token enqueue (see the module docstring)."""

    def __init__(self, queue: FIFOQueue, sync_op, update_op, tokens: Tensor, global_step):
        super().__init__(queue, [sync_op])
        self._steps = (sync_op, update_op, tokens, global_step)

    def create_threads(self, sess, coord=None, daemon: bool = False,
                       start: bool = False) -> list:
        return super().create_threads(_UpdateFirstSession(sess, *self._steps),
                                      coord=coord, daemon=daemon, start=start)


class _UpdateFirstSession:
    """A session whose ``run(sync_op)`` commits the update, then enqueues tokens
    holding the new global step."""

    def __init__(self, session, sync_op, update_op, tokens: Tensor, global_step):
        self._session = session
        self._sync_op = sync_op
        self._update_op = update_op
        self._tokens = tokens
        self._global_step = global_step

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if fetches is not self._sync_op:
            return self._session.run(fetches, feed_dict, options, run_metadata)
        _, step = self._session.run([self._update_op, self._global_step])
        count = self._tokens.shape[0]
        tokens = np.full([count], step, dtype=self._tokens.dtype.as_numpy_dtype)
        return self._session.run(fetches, {self._tokens: tokens}, options, run_metadata)

    def resource(self, key, factory=None):
        return self._session.resource(key, factory)

    @property
    def graph(self):
        return self._session.graph


class _SyncReplicasOptimizerHook(SessionRunHook):
    """Runs the local init after the session is ready for it; on the chief, also the
    chief init, the initial tokens, and the chief's queue runner."""

    def __init__(self, sync_optimizer: SyncReplicasOptimizer, is_chief: bool,
                 num_tokens: int):
        self._sync_optimizer = sync_optimizer
        self._is_chief = bool(is_chief)
        self._num_tokens = num_tokens

    def begin(self) -> None:
        optimizer = self._sync_optimizer
        if not optimizer._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before "
                             "using the hook.")
        self._ready_for_local_init_op = optimizer.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = optimizer.chief_init_op
            self._q_runner = optimizer.get_chief_queue_runner()
            self._init_tokens_op = optimizer.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = optimizer.local_step_init_op
            self._q_runner = None
            self._init_tokens_op = None

    def after_create_session(self, session, coord) -> None:
        ready, message = ready_or_message(self._ready_for_local_init_op, session,
                                          "Model is not ready for SyncReplicasOptimizer "
                                          "local init.")
        if not ready:
            raise RuntimeError(f"Init operations did not make model ready for "
                               f"SyncReplicasOptimizer local_init. Init op: "
                               f"{self._local_init_op.name}, error: {message}")
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)

