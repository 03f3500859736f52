"""``gf.train``: optimizers, global step and checkpoints (TF1's ``tf.train``)."""
from gradflow.train.optimizer import Optimizer
from gradflow.train.gradient_descent import GradientDescentOptimizer
from gradflow.train.momentum import MomentumOptimizer
from gradflow.train.adagrad import AdagradOptimizer
from gradflow.train.rmsprop import RMSPropOptimizer
from gradflow.train.adam import AdamOptimizer
from gradflow.train.adadelta import AdadeltaOptimizer
from gradflow.train.adagrad_da import AdagradDAOptimizer
from gradflow.train.ftrl import FtrlOptimizer
from gradflow.train.proximal_adagrad import ProximalAdagradOptimizer
from gradflow.train.proximal_gradient_descent import ProximalGradientDescentOptimizer
from gradflow.train.training_util import (
    assert_global_step, create_global_step, get_global_step, get_or_create_global_step,
    global_step)
from gradflow.train.learning_rate_decay import (
    cosine_decay, cosine_decay_restarts, exponential_decay, inverse_time_decay,
    linear_cosine_decay, natural_exp_decay, noisy_linear_cosine_decay, piecewise_constant,
    piecewise_constant_decay, polynomial_decay)
from gradflow.train.moving_averages import ExponentialMovingAverage
from gradflow.train.saver import (
    CheckpointReader, CheckpointState, NewCheckpointReader, Saver, checkpoint_exists,
    export_meta_graph, get_checkpoint_state, import_meta_graph, latest_checkpoint)
from gradflow.train.checkpoint_utils import (
    init_from_checkpoint, list_variables, load_checkpoint, load_variable)
from gradflow.train.session_run_hook import (
    SessionRunArgs, SessionRunContext, SessionRunHook, SessionRunValues)
from gradflow.train.basic_session_run_hooks import (
    CheckpointSaverHook, CheckpointSaverListener, FeedFnHook, FinalOpsHook, LoggingTensorHook,
    NanLossDuringTrainingError, NanTensorHook, ProfilerHook, SecondOrStepTimer,
    StepCounterHook, StopAtStepHook, SummarySaverHook)
from gradflow.train.monitored_session import (
    ChiefSessionCreator, MonitoredSession, MonitoredTrainingSession, Scaffold, SessionCreator,
    SingularMonitoredSession, WorkerSessionCreator)
from gradflow.train.session_manager import SessionManager
from gradflow.train.device_setter import (
    GreedyLoadBalancingStrategy, byte_size_load_fn, replica_device_setter)
from gradflow.train.sync_replicas_optimizer import SyncReplicasOptimizer
from gradflow.train.supervisor import Supervisor
from gradflow.summary.writer import FileWriterCache as SummaryWriterCache
from gradflow.summary.reader import summary_iterator
from gradflow.io.graph_def import write_graph
from gradflow.framework.example_proto import (
    BytesList, Example, Feature, FeatureList, FeatureLists, Features, FloatList, Int64List,
    SequenceExample)
from gradflow.train import queue_runner
from gradflow.train.coordinator import Coordinator
from gradflow.train.input import (
    batch, batch_join, input_producer, limit_epochs, match_filenames_once,
    range_input_producer, shuffle_batch, shuffle_batch_join, slice_input_producer,
    string_input_producer)
from gradflow.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners
from gradflow.distribute import ClusterSpec, Server

__all__ = [
    "Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdagradOptimizer",
    "RMSPropOptimizer", "AdamOptimizer", "AdadeltaOptimizer", "AdagradDAOptimizer",
    "FtrlOptimizer", "ProximalAdagradOptimizer", "ProximalGradientDescentOptimizer",
    "assert_global_step", "create_global_step",
    "get_global_step", "get_or_create_global_step", "global_step", "CheckpointState", "Saver",
    "checkpoint_exists", "get_checkpoint_state", "latest_checkpoint", "CheckpointReader",
    "NewCheckpointReader", "list_variables", "load_checkpoint", "load_variable", "write_graph",
    "init_from_checkpoint", "export_meta_graph", "import_meta_graph",
    "exponential_decay", "inverse_time_decay", "natural_exp_decay", "polynomial_decay",
    "piecewise_constant", "piecewise_constant_decay", "cosine_decay", "cosine_decay_restarts",
    "linear_cosine_decay", "noisy_linear_cosine_decay", "ExponentialMovingAverage",
    "SessionRunArgs", "SessionRunContext", "SessionRunHook", "SessionRunValues",
    "CheckpointSaverHook", "CheckpointSaverListener", "FeedFnHook", "FinalOpsHook",
    "LoggingTensorHook", "NanLossDuringTrainingError", "NanTensorHook", "ProfilerHook",
    "SecondOrStepTimer", "StepCounterHook", "StopAtStepHook", "SummarySaverHook",
    "ChiefSessionCreator", "MonitoredSession", "MonitoredTrainingSession", "Scaffold",
    "SessionCreator", "SingularMonitoredSession", "SummaryWriterCache", "summary_iterator",
    "WorkerSessionCreator", "SessionManager", "GreedyLoadBalancingStrategy",
    "byte_size_load_fn", "replica_device_setter", "SyncReplicasOptimizer", "Supervisor",
    "write_graph",
    "BytesList", "Example", "Feature", "FeatureList", "FeatureLists", "Features", "FloatList",
    "Int64List", "SequenceExample", "queue_runner", "Coordinator", "QueueRunner",
    "add_queue_runner", "start_queue_runners", "batch", "batch_join", "input_producer",
    "limit_epochs", "match_filenames_once", "range_input_producer", "shuffle_batch",
    "shuffle_batch_join", "slice_input_producer", "string_input_producer",
]
__all__ += ["ClusterSpec", "Server"]
