import pytest

from attnlab.core.params import Param, ParameterError, resolve

PARAMS = (Param("d_list", "int_list", "dims", min=1), Param("lr", "float", "lr", min=0.0),
          Param("mode", "str", "mode", choices=("a", "b")))
PRESETS = {"ci": {"d_list": [2, 3], "lr": 0.1, "mode": "a"}}


def test_preset_and_overrides():
    cfg = resolve(PARAMS, PRESETS, "ci", {"d_list": 4, "lr": None})
    assert cfg == {"scale": "ci", "device": "auto", "d_list": [4], "lr": 0.1, "mode": "a"}


@pytest.mark.parametrize("overrides, words", [
    ({"d_list": [-1]}, ["'d_list'", "[-1]", ">= 1"]),
    ({"d_list": [2.5]}, ["'d_list'", "integer"]),
    ({"mode": "c"}, ["'mode'", "'c'", "a, b"]),
    ({"lr": "fast"}, ["'lr'", "'fast'", "number"]),
    ({"bogus": 1}, ["unknown parameter 'bogus'", "allowed"]),
    ({"device": "tpu"}, ["'device'", "'tpu'", "auto, cpu, cuda"]),
])
def test_bad_values_name_parameter_value_and_what_is_allowed(overrides, words):
    with pytest.raises(ParameterError) as err:
        resolve(PARAMS, PRESETS, "ci", overrides)
    assert all(w in str(err.value) for w in words), str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_scale():
    with pytest.raises(ParameterError, match="'scale'.*'huge'.*ci"):
        resolve(PARAMS, PRESETS, "huge", {})
