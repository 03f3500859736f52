"""CPU time per training step (all threads of the process), gradflow vs TensorFlow, beside
each step's FLOP bound and gradflow's peak memory per step.

On an oversubscribed machine a wall time measures the scheduler's share more than the
work: each runnable thread gets a slice of a core, and a step spread over many
threads gets more slices. CPU time (``time.process_time``, every thread of the
process counted) compares the work itself. Steps alternate between the libraries and
a 1024^3 float32 NumPy GEMM, whose CPU time in the same rounds gives the GEMM rate;
the FLOP bound is the step's matrix-product FLOPs (convolutions as im2col GEMMs) at
that rate. Medians of 7 samples, after 3 warm-up steps and a 50 ms pause before each
sample; a sample is one step, or as many as last 5 ms for short steps. Peak:
gradflow's NumPy allocations during one step (tracemalloc), after warm-up steps.

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

STEPS = ("deep_mnist_step", "vgg_block_step", "cnn_step", "mlp_step", "mlp_adam_step")
RATE_SIZE = 1024


def models() -> dict:
    """name -> (layers in conv_models' form, batch shape, classes, batch, optimizer)."""
    import cnn_step
    import deep_mnist_step
    import vgg_block_step
    from models import mlp_layers

    def adam(module):
        return module.train.AdamOptimizer(1e-4)

    def momentum(module):
        return module.train.MomentumOptimizer(0.01, 0.9)

    def sgd(module):
        return module.train.GradientDescentOptimizer(0.01)

    def mlp_adam(module):
        return module.train.AdamOptimizer(1e-3)
    # cnn_step's convolutions are each followed by 2x2 pooling
    cnn = [layer + (True,) if layer[0] == "conv" else layer for layer in cnn_step.cnn_layers()]
    mlp = mlp_layers((64, 64, 64, 10))
    return {
        "deep_mnist_step": (deep_mnist_step.deep_mnist_layers(), (28, 28, 1), 10, 50, adam),
        "vgg_block_step": (vgg_block_step.vgg_layers(), (32, 32, 3), 10, 32, momentum),
        "cnn_step": (cnn, (28, 28, 1), 10, 64, sgd),
        "mlp_step": (mlp, (64,), 10, 32, sgd),
        "mlp_adam_step": (mlp, (64,), 10, 32, mlp_adam),
    }


def cpu_ms(steps: dict, repeats: int, min_sample_s: float = 0.005) -> dict:
    """Median CPU milliseconds of one call of each step, alternating; a sample loops a
    short step enough times to last ``min_sample_s`` (one cold call of a 0.1 ms step
    measures the pause before it more than the step)."""
    samples: dict = {name: [] for name in steps}
    loops = {}
    for name, step in steps.items():
        for _ in range(3):
            step()
        start = time.process_time()
        step()
        loops[name] = max(1, int(min_sample_s / max(time.process_time() - start, 1e-6)))
    for _ in range(repeats):
        for name, step in steps.items():
            time.sleep(0.05)
            start = time.process_time()
            for _ in range(loops[name]):
                step()
            samples[name].append((time.process_time() - start) / loops[name])
    return {name: statistics.median(values) * 1e3 for name, values in samples.items()}


def gemm():
    """The reference GEMM (float32, ``RATE_SIZE`` cubed) and its FLOPs."""
    import numpy as np
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((RATE_SIZE, RATE_SIZE)).astype(np.float32) for _ in range(2))
    return (lambda: np.matmul(a, b)), 2 * RATE_SIZE ** 3


def step_flops(layers: list, input_shape: tuple) -> int:
    """The FLOPs of one step's matrix products (conv_models' count; an MLP's as
    mlp_step counts them)."""
    import conv_models
    import mlp_step
    if len(input_shape) == 4:
        return conv_models.step_flops(layers, input_shape)
    sizes = [layers[0][1].shape[0]] + [layer[1].shape[1] for layer in layers]
    return sum(2 * rows * inner * cols
               for rows, inner, cols, _, _ in mlp_step.matmul_shapes(sizes, input_shape[0]))


def report(name: str, times: dict, flops: int, gemm_flops: int, peak: int) -> str:
    """One line: CPU ms per library, gradflow/TensorFlow, the FLOP bound, peak MiB."""
    bound_ms = flops / gemm_flops * times["gemm"]
    cells = ", ".join(f"{lib} {ms:.2f}" for lib, ms in times.items() if lib != "gemm")
    ratio = (f", gradflow/tensorflow {times['gradflow'] / times['tensorflow']:.2f}x"
             if "gradflow" in times and "tensorflow" in times else "")
    bound = (f"; FLOP bound {bound_ms:.2f} ({flops / 1e9:.3f} GFLOP at "
             f"{gemm_flops / times['gemm'] / 1e6:.0f} GFLOP/s per CPU second)")
    if "gradflow" in times:
        bound += f", gradflow/bound {times['gradflow'] / bound_ms:.2f}x"
    memory = f"; gradflow peak {peak / 2 ** 20:.2f} MiB per step" if peak is not None else ""
    return f"{name}: CPU ms per step: {cells}{ratio}{bound}{memory}"


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
    import conv_models
    from models import batch
    libraries = [args.only] if args.only else ["gradflow", "tensorflow"]
    modules = {name: load(name) for name in libraries if load(name) is not None}
    print(f"gradflow from {Path(modules['gradflow'].__file__).parent.parent}"
          if "gradflow" in modules else "gradflow not measured", flush=True)
    reference, gemm_flops = gemm()
    for name in args.steps:
        layers, shape, classes, size, optimizer = models()[name]
        x, y = batch(shape, classes, size)
        steps = {lib: conv_models.graph_step(module, layers, x, y, optimizer)
                 for lib, module in modules.items()}
        peak = None
        if "gradflow" in steps:  # past the plan's compilation and the update buffers' first use
            for _ in range(3):
                steps["gradflow"]()
            peak = conv_models.peak_bytes(steps["gradflow"])
        times = cpu_ms({**steps, "gemm": reference}, args.repeats)
        print(report(name, times, step_flops(layers, x.shape), gemm_flops, peak),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
