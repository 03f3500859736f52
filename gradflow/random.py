"""``gf.random``: random ops and candidate samplers under their ``tf.random`` names."""
from gradflow.ops.candidate_sampling import (  # noqa: F401
    categorical, fixed_unigram_candidate_sampler, learned_unigram_candidate_sampler,
    log_uniform_candidate_sampler, multinomial, uniform_candidate_sampler)
from gradflow.ops.random import (  # noqa: F401
    get_seed, random_normal as normal, random_shuffle as shuffle,
    random_uniform as uniform, set_random_seed, truncated_normal)
from gradflow.ops.random import random_gamma as gamma, random_poisson as poisson  # noqa: F401
from gradflow.ops.random import (  # noqa: F401
    stateless_categorical, stateless_random_normal as stateless_normal,
    stateless_random_uniform as stateless_uniform, stateless_truncated_normal)
