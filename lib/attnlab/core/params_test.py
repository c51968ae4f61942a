import numpy as np
import pytest

from attnlab.core.params import Param, ParameterError, available_memory, require_memory, resolve

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


NUMERIC = (Param("n", "int", "size", min=1, max=4096), Param("lr", "float", "rate", min=0.0, max=1.0),
           Param("lrs", "float_list", "rates"), Param("ns", "int_list", "sizes", min=0, max=10),
           Param("rows", "int_rows", "configs", width=2, min=0, max=10), Param("free", "float", "unbounded"))


@pytest.mark.parametrize("param", NUMERIC, ids=lambda p: p.kind + "-" + p.name)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")], ids=repr)
def test_nan_and_inf_are_refused_by_every_numeric_kind_even_without_bounds(param, bad):
    value = {"int_rows": [[1, bad]], "float_list": [0.5, bad], "int_list": [1, bad]}.get(param.kind, bad)
    with pytest.raises(ParameterError) as err:
        param.validate(value)
    text = str(err.value)
    assert text.startswith(f"parameter {param.name!r}: value ") and "expected a finite number" in text, text
    assert "\n" not in text and repr(bad) in text
    if param.kind in ("int_rows", "float_list", "int_list"):  # the entry is named, not only the whole list
        assert text.endswith(f"every entry: expected a finite number; {bad!r} is not"), text


@pytest.mark.parametrize("param, value, words", [
    (NUMERIC[0], 10**9, ["'n'", "1000000000", "<= 4096"]),
    (NUMERIC[0], 10**400, ["'n'", "<= 4096"]),         # int too large for a float: no OverflowError
    (NUMERIC[1], 10**400, ["'lr'", "finite"]),
    (NUMERIC[0], True, ["'n'", "True", "integer"]),
    (NUMERIC[0], "3", ["'n'", "'3'", "integer"]),
    (NUMERIC[1], np.bool_(True), ["'lr'", "number"]),
    (NUMERIC[3], [], ["'ns'", "non-empty list"]),
    (NUMERIC[3], list(range(10**5)), ["'ns'", "<= 10", " ..."]),   # one short line, not 10**5 numbers
    (NUMERIC[4], [[1, 2, 3]], ["'rows'", "lists of 2 integers"]),
])
def test_other_bad_values_fail_with_one_short_line(param, value, words):
    with pytest.raises(ParameterError) as err:
        param.validate(value)
    text = str(err.value)
    assert all(w in text for w in words) and "\n" not in text and len(text) < 300, text


def test_numpy_numbers_are_accepted_and_normalised():
    assert NUMERIC[0].validate(np.int64(5)) == 5 and type(NUMERIC[0].validate(np.int64(5))) is int
    assert NUMERIC[1].validate(np.float32(0.5)) == 0.5 and type(NUMERIC[1].validate(np.float32(0.5))) is float
    assert NUMERIC[0].validate(7.0) == 7


def test_a_misdeclared_param_fails_at_definition():
    with pytest.raises(TypeError, match="unknown kind"):
        Param("x", "integer", "typo in the kind")
    with pytest.raises(TypeError, match="width"):
        Param("x", "int_rows", "no width")


def test_require_memory_refuses_an_estimate_beyond_the_machine_and_names_the_parameters():
    require_memory(1024, "a tiny table", {"N": 4})
    huge = 64 * available_memory()
    with pytest.raises(ParameterError) as err:
        require_memory(huge, "the attention scores (N**2 * S float64)", {"N": 4096, "S": 10**6})
    text = str(err.value)
    assert "N=4096, S=1000000" in text and "GiB" in text and "attention scores" in text and "\n" not in text


TASKS = Param("tasks", "str", "tasks", choices=("cumsum", "cummin", "cummedian", "sort", "maxsub"), sep=",")


@pytest.mark.parametrize("value, normalised", [
    ("cumsum", "cumsum"), (" cumsum, sort", "cumsum,sort"), ("sort,", "sort"), (["maxsub", "cummin"], "maxsub,cummin"),
])
def test_a_separated_parameter_takes_distinct_choices_and_is_normalised(value, normalised):
    assert TASKS.validate(value) == normalised


@pytest.mark.parametrize("value, words", [
    ("cumsum,sortt", ["'tasks'", "'cumsum,sortt'", "'sortt' is unknown (did you mean 'sort'?)", "cumsum, cummin, "
                      "cummedian, sort, maxsub", "separated by ','"]),
    ("cumsum,cumsum", ["'cumsum' is given twice"]),
    ("", ["value ''", "give one or more distinct entries among cumsum"]),
    (" , ", ["give one or more"]),
    (3, ["value 3", "expected a string"]),
    (["sort", 1], ["expected a string"]),
    (["cumsum,sort"], ["'cumsum,sort' is unknown"]),
])
def test_a_separated_parameter_refuses_unknown_repeated_or_no_entries_in_one_line(value, words):
    with pytest.raises(ParameterError) as err:
        TASKS.validate(value)
    text = str(err.value)
    assert all(w in text for w in words) and "\n" not in text, text


def test_a_misspelt_choice_is_answered_with_the_closest_one():
    sched = Param("scheduler", "str", "lr schedule", choices=("plateau", "onecycle", "constant"))
    with pytest.raises(ParameterError, match="value 'onecycel' is not allowed; did you mean 'onecycle'\\? choose one of "
                                             "plateau, onecycle, constant$"):
        sched.validate("onecycel")
    with pytest.raises(ParameterError, match="value 'zzz' is not allowed; choose one of plateau"):  # nothing close
        sched.validate("zzz")
    heads = Param("heads", "int_list", "heads", choices=(1, 2, 4))
    with pytest.raises(ParameterError, match=r"value \[1, 3\] is not allowed; every entry: choose one of 1, 2, 4; 3 is not$"):
        heads.validate([1, 3])


@pytest.mark.parametrize("param, text, expected", [
    (NUMERIC[2], "0.5, 2", [0.5, 2.0]), (NUMERIC[2], "[1e-3]", [0.001]), (NUMERIC[3], "1,2,3", [1, 2, 3]),
    (NUMERIC[3], "7", [7]),
])
def test_a_list_parameter_parses_a_comma_separated_string(param, text, expected):
    assert param.validate(text) == expected


@pytest.mark.parametrize("param, text, words", [
    (NUMERIC[2], "1,nan", ["'lrs'", "'1,nan'", "expected a finite number; nan is not"]),
    (NUMERIC[2], "[1, inf]", ["'lrs'", "'[1, inf]'", "expected a finite number; inf is not"]),
    (NUMERIC[2], "1,-inf", ["expected a finite number; -inf is not"]),
    (NUMERIC[3], "1, 2.5", ["'ns'", "expected an integer; 2.5 is not"]),
    (NUMERIC[3], "1,x", ["'ns'", "'1,x'", "expected a list of integers, e.g. [1, 2] or '1,2'; 'x' is not a number"]),
    (NUMERIC[2], "", ["'lrs'", "non-empty list of numbers"]),
    (NUMERIC[2], "1,,2", ["'lrs'", "non-empty list of numbers"]),
    (NUMERIC[4], "[[1, 2]]", ["'rows'", "lists of 2 integers, e.g. [[1, 1]]"]),
])
def test_a_list_parameter_refuses_a_bad_string_naming_the_bad_entry(param, text, words):
    with pytest.raises(ParameterError) as err:
        param.validate(text)
    message = str(err.value)
    assert all(w in message for w in words) and "\n" not in message, message


def test_sep_is_only_for_str_parameters():
    with pytest.raises(TypeError, match="sep"):
        Param("x", "int_list", "numbers", sep=",")
