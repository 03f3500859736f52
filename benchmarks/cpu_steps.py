"""CPU time per training step (all threads of the process), gradflow vs TensorFlow.

On an oversubscribed machine a wall time measures the scheduler's share more than the
work: each runnable thread gets a slice of a core, and a step spread over many
threads gets more slices. CPU time (``time.process_time``, every thread of the
process counted) compares the work itself. Steps alternate between the libraries;
medians of single steps after 3 warm-up steps and a 50 ms pause before each.

    PYTHONPATH=. /opt/tfenv/bin/python benchmarks/cpu_steps.py [--repeats 7]
    OPENBLAS_NUM_THREADS=1 GRADFLOW_BLAS_THREADS=fixed python benchmarks/cpu_steps.py \\
        --tree /path/to/other/checkout --only gradflow     # one BLAS thread, another tree
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

STEPS = ("deep_mnist_step", "vgg_block_step", "cnn_step")


def builders() -> dict:
    """name -> (module -> step callable), for the models of the CNN benchmarks."""
    import cnn_step
    import conv_models
    import deep_mnist_step
    import vgg_block_step
    from models import batch, graph_train_step

    def adam(module):
        return module.train.AdamOptimizer(1e-4)

    def momentum(module):
        return module.train.MomentumOptimizer(0.01, 0.9)
    return {
        "deep_mnist_step": lambda m: conv_models.graph_step(
            m, deep_mnist_step.deep_mnist_layers(), *batch((28, 28, 1), 10, 50), adam),
        "vgg_block_step": lambda m: conv_models.graph_step(
            m, vgg_block_step.vgg_layers(), *batch((32, 32, 3), 10, 32), momentum),
        "cnn_step": lambda m: graph_train_step(m, cnn_step.cnn_layers(),
                                               *batch((28, 28, 1), 10, 64)),
    }


def cpu_ms(steps: dict, repeats: int) -> dict:
    """Median CPU milliseconds of one call of each step, alternating."""
    samples: dict = {name: [] for name in steps}
    for step in steps.values():
        for _ in range(3):
            step()
    for _ in range(repeats):
        for name, step in steps.items():
            time.sleep(0.05)
            start = time.process_time()
            step()
            samples[name].append(time.process_time() - start)
    return {name: statistics.median(values) * 1e3 for name, values in samples.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--tree", type=Path, help="import gradflow from this checkout")
    parser.add_argument("--only", choices=["gradflow", "tensorflow"])
    parser.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS))
    args = parser.parse_args(argv)
    from common import load  # puts this checkout first on sys.path
    if args.tree is not None:
        sys.path.insert(0, str(args.tree.resolve()))  # ahead of it
    libraries = [args.only] if args.only else ["gradflow", "tensorflow"]
    modules = {name: load(name) for name in libraries if load(name) is not None}
    print(f"gradflow from {Path(modules['gradflow'].__file__).parent.parent}"
          if "gradflow" in modules else "gradflow not measured", flush=True)
    build = builders()
    for name in args.steps:
        times = cpu_ms({lib: build[name](module) for lib, module in modules.items()},
                       args.repeats)
        cells = ", ".join(f"{lib} {ms:.1f}" for lib, ms in times.items())
        ratio = (f", gradflow/tensorflow {times['gradflow'] / times['tensorflow']:.2f}x"
                 if len(times) == 2 else "")
        print(f"{name}: CPU ms per step (median of {args.repeats}): {cells}{ratio}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
