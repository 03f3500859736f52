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
from gradflow.ops.lrn import lrn as lrn
from gradflow.ops.manip_ops import depth_to_space as depth_to_space
from gradflow.ops.manip_ops import space_to_depth as space_to_depth
from gradflow.ops.lrn import local_response_normalization as local_response_normalization
from gradflow.nn import rnn_cell  # noqa: F401
from gradflow.nn.rnn import (  # noqa: F401
    bidirectional_dynamic_rnn, dynamic_rnn, raw_rnn, static_bidirectional_rnn, static_rnn)
from gradflow.nn.embedding import embedding_lookup, embedding_lookup_sparse  # noqa: F401
from gradflow.nn.sampled_losses import nce_loss, sampled_softmax_loss  # noqa: F401
from gradflow.ops.candidate_sampling import (  # noqa: F401
    compute_accidental_hits, fixed_unigram_candidate_sampler, learned_unigram_candidate_sampler,
    log_uniform_candidate_sampler, uniform_candidate_sampler)
from gradflow.ops.ctc_ops import ctc_beam_search_decoder, ctc_greedy_decoder, ctc_loss  # noqa: F401
