"""``gradients()`` cost in a growing graph: 8 replicas of a 500-step model, one call each.

Each replica is the build_chain model on its own placeholder, added to the same graph
as the ones before it, then differentiated with one ``gradients()`` call. The time per
call must stay flat as the graph grows (TF1's gradients walks the whole graph). JAX
traces each replica as its own function and PyTorch runs it eagerly (forward +
``backward()``), so their columns are flat by construction: they are shown for scale.

    python benchmarks/build_repeat.py [--replicas 8] [--steps 500] [--repeats 3]
"""
from __future__ import annotations

import argparse
import functools
import statistics
import sys

from build_chain import build_chain, chain
from common import Table, load, print_tables, timed, verdict

FLATNESS_LIMIT = 1.2  # later calls may cost at most this much more than the early ones


def graph_call_times(module, replicas: int, steps: int) -> list[float]:
    """Seconds of each ``gradients()`` call as replicas accumulate in one graph."""
    graph = module.Graph()
    times = []
    with graph.as_default():
        for _ in range(replicas):
            x, loss = build_chain(steps, module)
            seconds, _ = timed(functools.partial(module.gradients, loss, [x]))
            times.append(seconds)
    return times


def jax_call_times(replicas: int, steps: int) -> list[float]:
    jax = load("jax")
    jnp = jax.numpy

    def f(x):
        return jnp.sum(chain(x, steps, jnp.tanh, jnp.sin))

    x = jnp.ones(64, jnp.float32)
    return [timed(lambda: jax.make_jaxpr(jax.grad(f))(x))[0] for _ in range(replicas)]


def torch_call_times(replicas: int, steps: int) -> list[float]:
    torch = load("torch")

    def run():
        x = torch.ones(64, requires_grad=True)
        torch.sum(chain(x, steps, torch.tanh, torch.sin)).backward()
    return [timed(run)[0] for _ in range(replicas)]


_TIMERS = {"gradflow": lambda r, s: graph_call_times(load("gradflow"), r, s),
           "tensorflow": lambda r, s: graph_call_times(load("tensorflow"), r, s),
           "jax": jax_call_times, "torch": torch_call_times}


def median_call_times(timer, replicas: int, steps: int, repeats: int) -> list[float]:
    timer(1, steps)  # warm up: first-call costs (imports, caches) are not the graph's size
    runs = [timer(replicas, steps) for _ in range(repeats)]
    return [statistics.median(run[i] for run in runs) for i in range(replicas)]


def flatness(times: list[float]) -> float:
    """Median of the later half of the calls over the median of the earlier half."""
    half = len(times) // 2
    return statistics.median(times[half:]) / statistics.median(times[:half])


def tables(replicas: int = 8, steps: int = 500, repeats: int = 3) -> list[Table]:
    table = Table(f"build_repeat: ms per gradients() call, {replicas} replicas of a "
                  f"{steps}-step model in one graph (median of {repeats} runs)",
                  ["library", *(f"call {i + 1}" for i in range(replicas)), "later/earlier",
                   f"<={FLATNESS_LIMIT}x"],
                  note="later/earlier: median of the second half of the calls over the "
                       "median of the first half (1.0 = flat). JAX traces each replica "
                       "separately and PyTorch runs eagerly: flat by construction.")
    for library, timer in _TIMERS.items():
        if load(library) is None:
            continue
        times = median_call_times(timer, replicas, steps, repeats)
        ratio = flatness(times)
        table.add(library, *(t * 1e3 for t in times), f"{ratio:.2f}x",
                  verdict(ratio <= FLATNESS_LIMIT) if library == "gradflow" else None)
    return [table]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print_tables(tables(args.replicas, args.steps, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
