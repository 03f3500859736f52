"""``gf.distributions``: TF1's probability distributions (``tf.distributions``)."""
from gradflow.distributions.core import (FULLY_REPARAMETERIZED, NOT_REPARAMETERIZED, Bernoulli,
                                         Categorical, Distribution, Normal, RegisterKL,
                                         ReparameterizationType, Uniform, kl_divergence)

__all__ = ["Bernoulli", "Categorical", "Distribution", "FULLY_REPARAMETERIZED",
           "NOT_REPARAMETERIZED", "Normal", "RegisterKL", "ReparameterizationType", "Uniform",
           "kl_divergence"]
