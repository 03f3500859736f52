"""The TF1-style example program (examples/tf1_digits_layers.py) trains and saves."""
import importlib.util
import pathlib

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "tf1_digits_layers.py"


def test_example_program_learns_the_digits(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("tf1_digits_layers", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    accuracy = module.main(steps=200, save_path=str(tmp_path / "digits.ckpt"))
    assert accuracy > 0.9
    assert "saved to" in capsys.readouterr().out
    assert list(tmp_path.glob("digits.ckpt-200*"))
