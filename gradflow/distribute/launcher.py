"""``gradflow cluster``: runs a TF1 between-graph program once per task of a local cluster.

Each task's process gets TF1's usual flags (``--job_name``, ``--task_index``,
``--ps_hosts``, ``--worker_hosts``) after the program's own arguments, and the same
description as JSON in ``TF_CONFIG`` (``{"cluster": ..., "task": {"type", "index"}}``).
All processes join the Ray cluster the launcher starts (or the one given by
``--address``) through ``GRADFLOW_RAY_ADDRESS``. The program ends when every worker has
ended; the ps tasks, blocked in ``server.join()``, are then stopped.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from typing import Optional, Sequence

from gradflow.distribute import ray_tasks

__all__ = ["launch", "local_addresses"]


def local_addresses(count: int) -> list[str]:
    """``count`` distinct ``localhost:port`` task addresses (ports free just now)."""
    probes = []
    try:
        for _ in range(count):
            probe = socket.socket()
            probe.bind(("localhost", 0))
            probes.append(probe)
        return [f"localhost:{probe.getsockname()[1]}" for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def _task_command(program: str, args: Sequence[str], job: str, index: int,
                  cluster: dict) -> list[str]:
    return [sys.executable, program, *args, f"--job_name={job}", f"--task_index={index}",
            f"--ps_hosts={','.join(cluster['ps'])}",
            f"--worker_hosts={','.join(cluster['worker'])}"]


def launch(program: str, args: Sequence[str] = (), ps: int = 1, workers: int = 2,
           address: Optional[str] = None) -> int:
    """Runs ``program`` as every task of a ``ps``/``workers`` cluster; returns the first
    failing worker's exit code (0 when every worker succeeded)."""
    if ps < 0 or workers < 1:
        raise ValueError(f"a cluster needs at least one worker and no negative ps count, "
                         f"got --ps {ps} --workers {workers}")
    if not os.path.isfile(program):
        raise ValueError(f"program {program!r} is not a file")
    ray = ray_tasks.connect(address)
    addresses = local_addresses(ps + workers)
    cluster = {"ps": addresses[:ps], "worker": addresses[ps:]}
    env = dict(os.environ, GRADFLOW_RAY_ADDRESS=ray.get_runtime_context().gcs_address)
    processes: dict = {}
    try:
        for job, count in (("ps", ps), ("worker", workers)):
            for index in range(count):
                env["TF_CONFIG"] = json.dumps({"cluster": cluster,
                                               "task": {"type": job, "index": index}})
                processes[job, index] = subprocess.Popen(
                    _task_command(program, args, job, index, cluster), env=dict(env))
        return _wait_for_workers(processes)
    finally:
        _stop(processes)


def _wait_for_workers(processes: dict) -> int:
    """Waits until every worker has ended (or one failed, or a ps ended early)."""
    status = 0
    while True:
        running = False
        for (job, index), process in processes.items():
            code = process.poll()
            if code is None:
                running = running or job == "worker"
            elif code != 0 and status == 0:
                print(f"gradflow cluster: task /job:{job}/task:{index} exited with code "
                      f"{code}", file=sys.stderr)
                status = code
        if status or not running:
            return status
        time.sleep(0.2)


def _stop(processes: dict) -> None:
    for process in processes.values():
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + 10
    for process in processes.values():
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
