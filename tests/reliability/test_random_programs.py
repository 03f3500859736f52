"""Random programs: every gradient matches central differences (see program_generator)."""
import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from program_generator import ProgramBuilder, check_program

_COMMON = dict(deadline=None, database=None, print_blob=True,
               phases=[Phase.explicit, Phase.generate, Phase.shrink],
               suppress_health_check=list(HealthCheck))


def _run_one(data, second_order_every: int) -> None:
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    builder = ProgramBuilder(data.draw, seed)
    program = builder.build(num_ops=data.draw(st.integers(1, 12), label="num_ops"))
    check_program(program, seed, second_order=seed % second_order_every == 0)


@settings(max_examples=int(os.environ.get("GRADFLOW_RANDOM_PROGRAMS", "300")),
          derandomize=True, **_COMMON)
@given(st.data())
def test_random_programs(data):
    _run_one(data, second_order_every=4)


@pytest.mark.soak
@settings(max_examples=int(os.environ.get("GRADFLOW_SOAK_PROGRAMS", "20000")), **_COMMON)
@given(st.data())
def test_random_programs_soak(data):
    _run_one(data, second_order_every=3)
