"""gradflow: TensorFlow 1.x-style graph-mode automatic differentiation on NumPy.

Build a graph of ops, add its derivatives with ``gradients``, run any part of it in
a ``Session``::

    import gradflow as gf
    x = gf.placeholder(gf.float64, shape=[3])
    y = gf.reduce_sum(gf.tanh(x) ** 2)
    (dy_dx,) = gf.gradients(y, [x])
    with gf.Session() as sess:
        print(sess.run(dy_dx, {x: [0.0, 0.5, 1.0]}))
"""
from gradflow.framework.dtypes import (  # noqa: F401
    DType, as_dtype, bfloat16, bool, complex64, complex128, double, float16, float32, float64,
    half, int8, int16, int32, int64, resource, string, uint8, uint16, uint32, uint64, variant,
    qint8, quint8, qint16, quint16, qint32)
from gradflow.framework.tensor_shape import Dimension, TensorShape, dimension_value  # noqa: F401
from gradflow.framework.graph import (  # noqa: F401
    Graph, GraphKeys, Operation, Tensor, add_to_collection, colocate_with,
    control_dependencies, device, get_collection, get_collection_ref, get_default_graph,
    name_scope, reset_default_graph)
from gradflow.framework.registry import (  # noqa: F401
    NotDifferentiable, RegisterGradient, no_gradient)
from gradflow.framework.constant import (  # noqa: F401
    constant, convert_to_tensor, is_tensor, register_tensor_conversion_function)
from gradflow.framework.indexed_slices import IndexedSlices, IndexedSlicesValue  # noqa: F401
from gradflow.framework import errors, nest  # noqa: F401
from gradflow.framework.device_spec import DeviceSpec  # noqa: F401
from gradflow.ops.array import *  # noqa: F401,F403
from gradflow.ops.math import *  # noqa: F401,F403
from gradflow.ops.segments import *  # noqa: F401,F403
from gradflow.ops.control import *  # noqa: F401,F403
from gradflow.ops.state import *  # noqa: F401,F403
from gradflow.ops.nn import *  # noqa: F401,F403
from gradflow.ops.linalg import *  # noqa: F401,F403
from gradflow.ops.random import *  # noqa: F401,F403
from gradflow.ops.functional import *  # noqa: F401,F403
from gradflow.ops.tensor_array import *  # noqa: F401,F403
from gradflow.ops.loops import *  # noqa: F401,F403
from gradflow.ops.numerics import *  # noqa: F401,F403
from gradflow.ops.clip import *  # noqa: F401,F403
from gradflow.ops.extra_math import *  # noqa: F401,F403
from gradflow.tools import *  # noqa: F401,F403
from gradflow.autodiff.aggregation import AggregationMethod  # noqa: F401
from gradflow.autodiff.gradients import UnconnectedGradients, gradients, gradients_v2  # noqa: F401
from gradflow.autodiff.higher_order import (  # noqa: F401
    hessian_vector_product, hessians, hessians_v2)
from gradflow.autodiff.custom import custom_gradient, recompute_grad  # noqa: F401
from gradflow.autodiff.jacobians import batch_jacobian, jacobian, jvp  # noqa: F401
from gradflow.framework.compile_scope import jit_scope  # noqa: F401
from gradflow.runtime.session import InteractiveSession, Session, get_default_session  # noqa: F401
from gradflow import test  # noqa: F401,E402
from gradflow import linalg, math, nn, tools, train  # noqa: F401,E402
# The TF1 API floor: built on the engine above, handed on here.
from gradflow.variables import *  # noqa: F401,F403,E402
from gradflow import layers, losses, metrics  # noqa: F401,E402
from gradflow import keras  # noqa: F401,E402

newaxis = None

__version__ = "0.1.0"
# Sparse tensors, sequence ops and sampling (TF1's top-level names; gf.sparse, gf.random).
from gradflow.framework.sparse_tensor import SparseTensor, SparseTensorValue  # noqa: F401,E402
from gradflow.ops.sparse_ops import (  # noqa: F401,E402
    sparse_add, sparse_placeholder, sparse_reduce_sum, sparse_tensor_dense_matmul,
    sparse_tensor_to_dense, sparse_to_dense)
from gradflow.ops.sequence_ops import reverse_sequence  # noqa: F401,E402
from gradflow.ops.manip_ops import roll  # noqa: F401,E402
from gradflow.ops.bucketing import histogram_fixed_width, searchsorted  # noqa: F401,E402
from gradflow import distributions  # noqa: F401,E402
from gradflow import sets  # noqa: F401,E402
from gradflow import manip  # noqa: F401,E402
from gradflow.ops.candidate_sampling import multinomial  # noqa: F401,E402
from gradflow import random, sparse  # noqa: F401,E402
# Input pipelines: tf.data, TFRecord files, Example parsing (tf.python_io, tf.image).
from gradflow.ops.parsing_ops import (  # noqa: F401,E402
    FixedLenFeature, FixedLenSequenceFeature, VarLenFeature, decode_csv, decode_raw,
    parse_example, parse_single_example, parse_single_sequence_example, string_split)
# Strings (tf.as_string, tf.substr...) and tf.io's file ops at the top (tf.read_file...).
from gradflow.ops.string_ops import (  # noqa: F401,E402
    as_string, fingerprint, reduce_join, regex_replace, string_join, string_strip,
    string_to_hash_bucket, string_to_hash_bucket_fast, string_to_hash_bucket_strong,
    string_to_number, substr)
from gradflow.ops.io_ops import (  # noqa: F401,E402
    decode_base64, decode_compressed, decode_json_example, deserialize_many_sparse,
    encode_base64, parse_tensor, read_file, serialize_many_sparse, serialize_sparse,
    serialize_tensor, write_file)
from gradflow.ops.reader_ops import matching_files  # noqa: F401,E402
from gradflow import data, image, python_io, strings  # noqa: F401,E402
from gradflow.ops.image_ops import extract_image_patches, random_crop  # noqa: F401,E402
from gradflow.ops.data_flow_ops import (  # noqa: F401,E402
    FIFOQueue, PaddingFIFOQueue, PriorityQueue, QueueBase, RandomShuffleQueue, count_up_to)
from gradflow.ops.accumulator_ops import (  # noqa: F401,E402
    ConditionalAccumulator, ConditionalAccumulatorBase, SparseConditionalAccumulator)
from gradflow.ops.reader_ops import (  # noqa: F401,E402
    FixedLengthRecordReader, ReaderBase, TextLineReader, TFRecordReader, WholeFileReader)
from gradflow import queue  # noqa: F401,E402
# Program plumbing, summaries and formats (TF1's tf.app, tf.flags, tf.logging, tf.gfile...).
from gradflow.ops.logging_ops import *  # noqa: F401,F403,E402
from gradflow.ops.script_ops import *  # noqa: F401,F403,E402
from gradflow import app, compat, flags, gfile, logging, summary  # noqa: F401,E402
from gradflow import io_namespace as io  # noqa: F401,E402
from gradflow.io import graph_def as _graph_def  # noqa: F401,E402
from gradflow.io.graph_import import import_graph_def  # noqa: F401,E402
from gradflow import graph_util, saved_model  # noqa: F401,E402
from gradflow.io.protos import *  # noqa: F401,F403,E402
from gradflow import debugging  # noqa: F401,E402
from gradflow.summary import Event, SessionLog, Summary  # noqa: F401,E402
from gradflow.compat import v1 as _compat_v1  # noqa: F401,E402
from gradflow import client  # noqa: F401,E402
# XLA through JAX (docs/xla.md): tf.xla.experimental, tf.contrib.compiler.jit.
from gradflow import contrib, xla  # noqa: F401,E402
# TF1 names programs still reach for (docs/api_coverage.md): deprecated aliases, version
# constants, tensor_util helpers, casts and checks.
from gradflow.framework.graph import add_to_collections  # noqa: F401,E402
from gradflow.framework.versions import *  # noqa: F401,F403,E402
from gradflow.framework.tensor_util import *  # noqa: F401,F403,E402
from gradflow.framework.errors import OpError  # noqa: F401,E402
from gradflow.framework.registry import NotDifferentiable as NoGradient  # noqa: F401,E402
from gradflow.ops.state import global_variables as all_variables  # noqa: F401,E402
from gradflow.ops.state import (  # noqa: F401,E402
    local_variables_initializer as initialize_local_variables,
    variables_initializer as initialize_variables)
from gradflow.logging import get_logger  # noqa: F401,E402
from gradflow.ops.casts import *  # noqa: F401,F403,E402
from gradflow.ops.checks import (  # noqa: F401,E402
    assert_near, assert_rank_in, assert_same_float_dtype, ensure_shape,
    verify_tensor_all_finite)
from gradflow import dtypes  # noqa: F401,E402
from gradflow.framework.dtypes import QUANTIZED_DTYPES  # noqa: F401,E402
from gradflow.ops.array.blocks import *  # noqa: F401,F403,E402
from gradflow.ops.array.partition import *  # noqa: F401,F403,E402
from gradflow.ops.array.scatter import *  # noqa: F401,F403,E402
from gradflow.ops.broadcasting import *  # noqa: F401,F403,E402
from gradflow.ops.counting import *  # noqa: F401,F403,E402
from gradflow.ops.special_math import betainc, igamma, igammac, zeta  # noqa: F401,E402
from gradflow.ops.lookup_ops import initialize_all_tables, tables_initializer  # noqa: F401,E402
from gradflow import lookup  # noqa: F401,E402
from gradflow.ops.sparse_more import *  # noqa: F401,F403,E402
from gradflow.ops.sparse_rows import (  # noqa: F401,E402
    edit_distance, sparse_fill_empty_rows, sparse_merge, sparse_reduce_max,
    sparse_reduce_max_sparse, sparse_reduce_sum_sparse, sparse_reset_shape, sparse_retain,
    sparse_to_indicator, sparse_transpose)
from gradflow.ops.math_more import sparse_matmul  # noqa: F401,E402
