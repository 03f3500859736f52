"""app.run, flags (absl's), logging levels and compat conversions against TF 2.21."""
import logging

import pytest

import gradflow as gf
from tf_fixtures import load_json

FIXTURE = load_json("plumbing")


def test_app_run_parses_known_flags_and_hands_on_the_rest():
    flags = gf.app.flags
    for name in ("fx_name", "fx_steps", "fx_rate", "fx_flag", "fx_list"):
        if name in flags.FLAGS:
            delattr(flags.FLAGS, name)
    flags.DEFINE_string("fx_name", "default", "a name")
    flags.DEFINE_integer("fx_steps", 3, "steps")
    flags.DEFINE_float("fx_rate", 0.5, "rate")
    flags.DEFINE_boolean("fx_flag", False, "a switch")
    flags.DEFINE_list("fx_list", ["a"], "a list")
    seen = {}

    def main(argv):
        f = gf.flags.FLAGS
        seen.update(argv=argv, name=f.fx_name, steps=f.fx_steps, rate=f.fx_rate,
                    flag=f.fx_flag, list=f.fx_list)

    with pytest.raises(SystemExit) as exit_:
        gf.app.run(main=main, argv=["prog", "--fx_name=abc", "--fx_steps=7", "--fx_flag",
                                    "--fx_list=x,y", "--unknown=1", "rest"])
    seen["exit_code"] = exit_.value.code
    assert seen == FIXTURE["flags"]
    assert gf.flags.FLAGS is gf.app.flags.FLAGS


def test_logging_levels_and_verbosity(caplog):
    assert {name: getattr(gf.logging, name) for name in FIXTURE["logging_levels"]} == \
        FIXTURE["logging_levels"]
    previous = gf.logging.get_verbosity()
    try:
        gf.logging.set_verbosity(gf.logging.INFO)
        assert gf.logging.get_verbosity() == gf.logging.INFO
        with caplog.at_level(logging.INFO, logger="gradflow"):
            gf.logging.info("step %d", 3)
            gf.logging.debug("hidden")
            for i in range(5):
                gf.logging.log_every_n(gf.logging.INFO, "every %d", 2, i)
            for i in range(5):
                gf.logging.log_first_n(gf.logging.WARN, "first %d", 2, i)
        messages = [r.getMessage() for r in caplog.records]
        assert messages == ["step 3", "every 0", "every 2", "every 4", "first 0", "first 1"]
        with pytest.raises(ValueError, match="n must be a positive integer"):
            gf.logging.log_every_n(gf.logging.INFO, "x", 0)
    finally:
        gf.logging.set_verbosity(previous)


def test_compat_conversions_match_tf():
    recorded = FIXTURE["compat"]
    assert list(gf.compat.as_bytes("héllo")) == recorded["as_bytes"]
    assert gf.compat.as_text(b"h\xc3\xa9llo") == recorded["as_text"]
    assert gf.compat.as_str(b"h\xc3\xa9llo") == recorded["as_text"]
    assert gf.compat.as_str_any(12) == recorded["as_str_any"]
    with pytest.raises(TypeError, match="Expected binary or unicode string"):
        gf.compat.as_bytes(3)
