"""Device strings in every TF1 spelling, DeviceSpec, quantized dtype names and
``constant(shape=np.array(...))`` against fixtures recorded from TF 2.21."""
import importlib.util

import pytest

import gradflow as gf
from tf_fixtures import FIXTURES, load_json

_spec = importlib.util.spec_from_file_location("device_cases", FIXTURES / "device_cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

RECORDED = load_json("control_flow_devices")
ACTUAL = cases.record(gf)


@pytest.mark.parametrize("spec", cases.SPECS)
def test_device_string_parses_as_tf1(spec):
    assert ACTUAL["placed"][spec] == RECORDED["placed"][spec]


@pytest.mark.parametrize("pair", [f"{a} + {b}" for a, b in cases.MERGES])
def test_nested_devices_merge_as_tf1(pair):
    assert ACTUAL["merged"][pair] == RECORDED["merged"][pair]


def test_device_spec_as_tf1():
    assert ACTUAL["spec"] == RECORDED["spec"]
    assert ACTUAL["merged_spec"] == RECORDED["merged_spec"]
    assert ACTUAL["built_spec"] == RECORDED["built_spec"]
    spec = gf.DeviceSpec.from_string("/job:w/gpu:1")
    with gf.device(spec):
        assert gf.constant(1.0).device == "/job:w/device:GPU:1"
    assert spec.replace(task=2).to_string() == "/job:w/task:2/device:GPU:1"


def test_bad_device_string_leaves_the_scope_unchanged():
    with gf.device("/job:x"):
        with pytest.raises(ValueError, match="Unknown attribute 'bad'"):
            with gf.device("/bad:1"):
                pass
        assert gf.constant(1.0).device == "/job:x"


@pytest.mark.parametrize("name", cases.QUANTIZED)
def test_quantized_dtype_names(name):
    expected, actual = RECORDED["quantized"][name], ACTUAL["quantized"][name]
    assert {k: v for k, v in actual.items() if k != "min"} == \
        {k: v for k, v in expected.items() if k != "min"}
    assert actual["min"]["error"] == expected["min"]["error"] == "TypeError"
    assert "quantized type" in actual["min"]["message"]


def test_constant_accepts_a_numpy_shape():
    assert ACTUAL["constant_shapes"] == RECORDED["constant_shapes"]
