"""Other engines a graph can run on: ``xla`` (compilation through JAX)."""
