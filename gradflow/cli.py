"""The ``gradflow`` command: ``gradflow demo``, ``gradflow graph FILE`` and
``gradflow cluster --ps N --workers M PROGRAM [ARGS...]``."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from gradflow.distribute.launcher import launch
from gradflow.tools.demo import OPTIMIZERS, DemoConfig, run_demo
from gradflow.tools.serialization import load_graph
from gradflow.tools.visualize import graphviz_available, render, to_dot

__all__ = ["main"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    parser = _parser()
    args = parser.parse_args(None if argv is None else [str(a) for a in argv])
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except (OSError, ValueError, RuntimeError) as err:
        print(f"gradflow {args.command}: error: {err}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gradflow", description="TensorFlow 1.x-style graph-mode automatic "
        "differentiation on NumPy: a training demo and graph pictures.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_demo(commands)
    _add_graph(commands)
    _add_cluster(commands)
    return parser


def _add_demo(commands) -> None:
    defaults = DemoConfig()
    demo = commands.add_parser(
        "demo", help="train a small MLP on handwritten digits and draw its graph",
        description="Trains a 64-64-10 MLP classifier on the 1,797 8x8 handwritten digit "
        "images shipped with gradflow, with a progress bar of the running loss, prints the "
        "accuracy on a held-out 20% split, and writes the forward-and-gradient graph (DOT, "
        "plus SVG when Graphviz is installed, plus JSON+NPZ), a loss curve (SVG), a "
        "checkpoint and TensorBoard event files (tensorboard --logdir DIR/tensorboard) into "
        "the output folder.")
    demo.add_argument("--steps", type=_positive_int, default=defaults.steps,
                      help="training steps, one mini-batch of 64 images each "
                      "(default: %(default)s)")
    demo.add_argument("--learning-rate", type=float, default=None,
                      help="learning rate (default per optimizer: " +
                      ", ".join(f"{k} {v:g}" for k, v in OPTIMIZERS.items()) + ")")
    demo.add_argument("--optimizer", choices=list(OPTIMIZERS), default=defaults.optimizer,
                      help="the gf.train optimizer to use (default: %(default)s)")
    demo.add_argument("--output", metavar="DIR", default=defaults.output,
                      help="folder for the pictures and checkpoint (default: %(default)s)")
    demo.add_argument("--seed", type=int, default=defaults.seed,
                      help="seed of the data split, initial weights and batches "
                      "(default: %(default)s)")
    demo.set_defaults(run=_run_demo)


def _add_graph(commands) -> None:
    graph = commands.add_parser(
        "graph", help="draw a graph saved with gradflow.tools.save_graph",
        description="Loads a graph saved with gradflow.tools.save_graph (FILE is the .json "
        "file or its stem) and writes its picture: DOT, or SVG/PNG/PDF through Graphviz.")
    graph.add_argument("file", metavar="FILE", help="the saved graph (.json, with its .npz)")
    graph.add_argument("-o", "--output", metavar="OUT", default=None,
                       help="picture to write, by extension: .dot, .svg, .png or .pdf "
                       "(default: FILE's stem + .svg with Graphviz, else + .dot)")
    graph.set_defaults(run=_run_graph)


def _add_cluster(commands) -> None:
    cluster = commands.add_parser(
        "cluster", help="run a TF1 between-graph program on a local Ray cluster",
        description="Starts a local Ray instance (or joins --address) and runs PROGRAM once "
        "per task with --job_name, --task_index, --ps_hosts and --worker_hosts (and "
        "TF_CONFIG); ends when every worker has ended. Needs gradflow[distributed].")
    cluster.add_argument("--ps", type=int, default=1, help="ps tasks (default: %(default)s)")
    cluster.add_argument("--workers", type=_positive_int, default=2,
                         help="worker tasks (default: %(default)s)")
    cluster.add_argument("--address", default=None,
                         help="an existing Ray cluster's address (default: a new local one)")
    cluster.add_argument("program", help="the TF1 program (a Python file)")
    cluster.add_argument("args", nargs=argparse.REMAINDER, help="the program's arguments")
    cluster.set_defaults(run=_run_cluster)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _run_demo(args) -> int:
    run_demo(DemoConfig(steps=args.steps, learning_rate=args.learning_rate,
                        optimizer=args.optimizer, output=args.output, seed=args.seed))
    return 0


def _run_graph(args) -> int:
    stem = args.file[:-5] if args.file.endswith(".json") else args.file
    output = args.output or stem + (".svg" if graphviz_available() else ".dot")
    if args.output is None and not graphviz_available():
        print("Graphviz's 'dot' program is not installed: writing DOT text instead of SVG.")
    dot = to_dot(load_graph(args.file), title=os.path.basename(stem))
    if output.endswith(".dot"):
        with open(output, "w", encoding="utf-8") as f:
            f.write(dot)
    else:
        render(dot, output)
    print(f"Wrote {output}")
    return 0


def _run_cluster(args) -> int:
    try:
        return launch(args.program, args.args, ps=args.ps, workers=args.workers,
                      address=args.address)
    except ImportError as err:
        print(f"gradflow cluster: error: {err}", file=sys.stderr)
        return 1
