"""``gf.nn``: the neural-network ops under their ``tf.nn`` names."""
from gradflow.ops.math import sigmoid, softplus, softsign, tanh  # noqa: F401
from gradflow.ops.nn import (  # noqa: F401
    avg_pool, avg_pool2d, batch_normalization, bias_add, conv1d, conv2d, conv2d_backprop_filter,
    conv2d_backprop_input, conv2d_transpose, depthwise_conv2d, dropout, elu,
    fused_batch_norm, gelu, l2_loss, l2_normalize, leaky_relu, log_softmax, max_pool, max_pool2d,
    moments, relu, relu6, selu, sigmoid_cross_entropy_with_logits, silu, softmax,
    softmax_cross_entropy_with_logits, softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits, swish, top_k, weighted_cross_entropy_with_logits,
    xw_plus_b)
from gradflow.ops.nn_more import (  # noqa: F401
    avg_pool1d, avg_pool3d, conv3d, conv3d_backprop_filter_v2, conv3d_transpose, max_pool1d,
    max_pool3d, pool, separable_conv2d)
from gradflow.ops.in_top_k import in_top_k as in_top_k
from gradflow.ops.math import zero_fraction  # noqa: F401
from gradflow.nn import rnn_cell  # noqa: F401
from gradflow.nn.rnn import (  # noqa: F401
    bidirectional_dynamic_rnn, dynamic_rnn, raw_rnn, static_bidirectional_rnn, static_rnn)
from gradflow.nn.embedding import (  # noqa: F401
    embedding_lookup, embedding_lookup_sparse, safe_embedding_lookup_sparse)
from gradflow.nn.sampled_losses import nce_loss, sampled_softmax_loss  # noqa: F401
from gradflow.ops.candidate_sampling import (  # noqa: F401
    compute_accidental_hits, fixed_unigram_candidate_sampler, learned_unigram_candidate_sampler,
    log_uniform_candidate_sampler, uniform_candidate_sampler)
from gradflow.ops.ctc_ops import ctc_beam_search_decoder, ctc_greedy_decoder, ctc_loss  # noqa: F401
from gradflow.ops.nn.local import (  # noqa: F401
    crelu, local_response_normalization, lrn, max_pool_with_argmax, relu_layer)
from gradflow.ops.nn.statistics import (  # noqa: F401
    log_poisson_loss, normalize_moments, sufficient_statistics, weighted_moments)
from gradflow.ops.nn.convolution_more import (  # noqa: F401
    atrous_conv2d, atrous_conv2d_transpose, conv1d_transpose, convolution,
    depthwise_conv2d_native, depthwise_conv2d_native_backprop_filter,
    depthwise_conv2d_native_backprop_input)
from gradflow.ops.nn.convolution_more import (  # noqa: F401
    depthwise_conv2d_native_backprop_filter as depthwise_conv2d_backprop_filter,
    depthwise_conv2d_native_backprop_input as depthwise_conv2d_backprop_input)
from gradflow.ops.array.blocks import (  # noqa: F401
    depth_to_space, space_to_batch, space_to_depth)
from gradflow.ops.nn.dispatch import (  # noqa: F401
    avg_pool_v2, batch_norm_with_global_normalization, compute_average_loss, conv_transpose,
    max_pool_v2, scale_regularization_loss, with_space_to_batch)
