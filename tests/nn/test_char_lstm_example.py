"""The character-level LSTM example (examples/char_lstm.py) trains, saves, restores and
samples."""
import importlib.util
import pathlib

import pytest

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "char_lstm.py"


@pytest.mark.slow
def test_char_lstm_trains_restores_and_samples(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("char_lstm", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(steps=40, seq_len=20, save_path=str(tmp_path / "model.ckpt"),
                         sample_length=30)
    losses = result["losses"]
    assert sum(losses[-5:]) / 5 < losses[0] - 0.8  # it learns (starts near log(vocab))
    assert result["restored_loss"] == pytest.approx(result["trained_loss"], rel=1e-6)
    generated = result["sample"]
    assert generated.startswith("Shall I ") and len(generated) == len("Shall I ") + 30
    assert set(generated) <= set(result["chars"])
    assert list(tmp_path.glob("model.ckpt-40*"))
    assert "saved to" in capsys.readouterr().out
