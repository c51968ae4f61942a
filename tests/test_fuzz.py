"""Every parameter of every chapter (present and future: the registry is read at collection)
refuses bad values with a one-line ParameterError that names it (issue 12).

`Experiment.config` validates and runs nothing, so the whole registry is fuzzed in seconds:
a fixed list of bad values derived from each parameter's kind and bounds (NaN, ±inf, 10**9,
below min, above max, wrong types, empty lists, lists holding NaN, strings for numbers, bools for
ints, values outside the choices), then hypothesis draws more values outside the allowed range.
Cross-parameter checks that need several values (e.g. d_h <= d) happen in compute and are
tested by each paper. The contract: every integer parameter has a `max` (no 10**9 allocations
from a typo) and every float a `min` and a `max`, unless `choices` bound it.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnlab.core.params import COMMON, Param, ParameterError, _short
from attnlab.papers import registry

EXPERIMENTS = list(registry().values())
PARAMS = [(exp, p) for exp in EXPERIMENTS for p in COMMON + tuple(exp.params)]
NAN, INF = float("nan"), float("inf")
HUGE = 10**9  # refused by every size or count; seed values (a name with "seed") may go up to 2**31 - 1
FUZZ = settings(max_examples=30, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck))


def _id(case) -> str:
    exp, p = case
    return f"{exp.id}:{p.name}"


def _scalar_kind(p: Param) -> str:
    return {"int_list": "int", "float_list": "float", "int_rows": "int"}.get(p.kind, p.kind)


def _wrap(p: Param, bad) -> object:
    """A bad entry placed inside an otherwise valid list (or row) of parameter `p`."""
    if p.kind.endswith("_list"):
        return [_valid_entry(p), bad]
    if p.kind == "int_rows":
        return [[_valid_entry(p)] * (p.width - 1) + [bad]]
    return bad


def _valid_entry(p: Param):
    if p.choices:
        return p.choices[0]
    if _scalar_kind(p) == "int":
        return int(p.min) if p.min is not None else (int(p.max) if p.max is not None else 1)
    return p.min if p.min is not None else (p.max if p.max is not None else 0.5)


def bad_values(p: Param) -> list:
    """Values that parameter `p` must refuse, whatever the chapter (None is not one: it keeps the preset)."""
    kind = _scalar_kind(p)
    out: list = [{"a": 1}, object()]
    if kind in ("int", "float"):
        scalars = [NAN, INF, -INF, "1", "nan", True, [[1]]]
        if kind == "int":
            scalars += [2.5, 10**400, 2**63 if "seed" in p.name else HUGE]
        else:
            scalars += [10**400]
        if p.min is not None:
            scalars += [p.min - 1, p.min - max(1e-9, abs(p.min) * 1e-6) if kind == "float" else p.min - 1]
        if p.max is not None:
            scalars += [p.max + 1, p.max + max(1e-9, abs(p.max) * 1e-6) if kind == "float" else p.max + 1]
        if p.choices:
            scalars += [v for v in (-12345, 12345) if v not in p.choices]
        out += [_wrap(p, v) for v in scalars if not isinstance(v, list)]
        out += [v for v in scalars if isinstance(v, list) and p.kind == kind]
    elif kind == "str":
        out += [3, 1.5, True, ["a"]]
        if p.choices:
            out += ["no-such-choice", str(p.choices[0]).upper() + "x", ""]
        if p.sep:  # a separated list of choices (e.g. tasks = "cumsum,sort"): each entry checked, none twice
            out += [f"{p.choices[0]}{p.sep}no-such-choice", f"{p.choices[0]}{p.sep}{p.choices[0]}", p.sep,
                    [p.choices[0], 3]]
    elif kind == "bool":
        out += [1, 0, "true", "yes", NAN, [True]]
    if p.kind.endswith("_list") or p.kind == "int_rows":
        out += [[], "abc", [[]] if p.kind == "int_rows" else [[_valid_entry(p)]]]
    if p.kind == "int_rows":
        out += [[_valid_entry(p)] * p.width, [[_valid_entry(p)] * (p.width + 1)], [[NAN] * p.width],
                [[HUGE] * p.width]]
    return out


def _refused(exp, p: Param, value) -> str:
    """Call Experiment.config with `value` for `p`; return the error text (fail if accepted)."""
    try:
        if p.name == "scale":
            exp.config(value)
        else:
            exp.config("ci", **{p.name: value})
    except ParameterError as err:
        text = str(err)
    except Exception as err:  # noqa: BLE001: anything but a ParameterError is the bug this test finds
        pytest.fail(f"{exp.id}: {p.name}={_short(value)} raised {type(err).__name__}: {err}")
    else:
        pytest.fail(f"{exp.id}: {p.name}={_short(value)} was accepted")
    assert f"parameter {p.name!r}" in text, f"{exp.id}: {p.name}={_short(value)}: the error does not name it: {text}"
    assert "\n" not in text and len(text) < 400, f"{exp.id}: {p.name}: not one short line: {text!r}"
    return text


@pytest.mark.parametrize("exp", EXPERIMENTS, ids=lambda e: e.id)
def test_every_preset_is_valid(exp):
    for scale in exp.presets:
        cfg = exp.config(scale)
        assert cfg["scale"] == scale


@pytest.mark.parametrize("case", PARAMS, ids=_id)
def test_every_integer_parameter_has_a_max_and_every_float_a_min_and_max(case):
    exp, p = case
    if p.choices or _scalar_kind(p) not in ("int", "float"):
        return
    assert p.max is not None, f"{exp.id}: parameter {p.name!r} ({p.kind}) has no max: a typo could allocate terabytes"
    assert p.min is not None, f"{exp.id}: parameter {p.name!r} ({p.kind}) has no min"
    if _scalar_kind(p) == "int" and "seed" not in p.name:
        assert p.max < HUGE, f"{exp.id}: parameter {p.name!r} allows {p.max:g}: a size or count needs a real bound"


@pytest.mark.parametrize("case", PARAMS, ids=_id)
def test_bad_values_raise_a_one_line_parameter_error_naming_the_parameter(case):
    exp, p = case
    for value in bad_values(p):
        _refused(exp, p, value)
    if not p.nullable:
        with pytest.raises(ParameterError, match=f"parameter {p.name!r}.*a value is required"):
            p.validate(None)


def _allowed_text(p: Param, text: str) -> bool:
    """Whether `text` is a value of the str parameter `p`: one of its choices, or for a separated
    parameter (`sep`) one or more distinct choices separated by it (blanks around them ignored)."""
    if not p.sep:
        return text in p.choices
    entries = [t.strip() for t in text.split(p.sep) if t.strip()]
    return bool(entries) and all(t in p.choices for t in entries) and len(set(entries)) == len(entries)


def _out_of_range(p: Param) -> st.SearchStrategy | None:
    """Hypothesis: scalars outside [min, max] or the choices, or non-integral floats for ints."""
    kind = _scalar_kind(p)
    parts = []
    if kind == "int":
        if p.min is not None:
            parts.append(st.integers(max_value=math.ceil(p.min) - 1))
        if p.max is not None:
            parts.append(st.integers(min_value=math.floor(p.max) + 1))
        if p.choices:
            parts.append(st.integers().filter(lambda v: v not in p.choices))
        parts.append(st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not float(v).is_integer()))
    elif kind == "float":
        if p.min is not None:
            parts.append(st.floats(max_value=p.min, exclude_max=True, allow_nan=False))
        if p.max is not None:
            parts.append(st.floats(min_value=p.max, exclude_min=True, allow_nan=False))
        parts.append(st.sampled_from([NAN, INF, -INF]))
    elif kind == "str" and p.choices:
        parts.append(st.text(max_size=12).filter(lambda v: not _allowed_text(p, v)))
    elif kind == "bool":
        parts.append(st.one_of(st.integers(), st.floats(), st.text(max_size=5)))
    if not parts:
        return None
    scalar = st.one_of(parts)
    if p.kind.endswith("_list"):
        return st.builds(lambda good, bad, at: good[:at] + [bad] + good[at:],
                         st.lists(st.just(_valid_entry(p)), max_size=3), scalar, st.integers(0, 3))
    if p.kind == "int_rows":
        return st.builds(lambda bad, at: [[_valid_entry(p)] * p.width, [bad if j == at % p.width else _valid_entry(p)
                                                                       for j in range(p.width)]],
                         scalar, st.integers(0, 10))
    return scalar


@pytest.mark.parametrize("exp", EXPERIMENTS, ids=lambda e: e.id)
def test_hypothesis_out_of_range_values_are_refused(exp):
    strategies = [(p, s) for p in COMMON + tuple(exp.params) if (s := _out_of_range(p)) is not None]

    @FUZZ
    @given(st.data())
    def check(data):
        p, strategy = data.draw(st.sampled_from(strategies), label="parameter")
        _refused(exp, p, data.draw(strategy, label=p.name))

    check()


def test_the_fuzzer_would_catch_a_parameter_that_accepts_nan():
    """A test that cannot fail is not a test: a Param whose NaN check is bypassed is caught."""
    from attnlab.core.experiment import Experiment

    class Lax(Param):
        def validate(self, value):
            return value if isinstance(value, float) and math.isnan(value) else super().validate(value)

    lr = Lax("lr", "float", "learning rate", min=0.0, max=1.0)
    lax = Experiment(id="x/lax", label="", title="", params=(lr,), presets={"ci": {"lr": 0.1}}, compute=dict)
    with pytest.raises(pytest.fail.Exception, match="lr=nan was accepted"):
        for value in bad_values(lr):
            _refused(lax, lr, value)


PRODUCTS = [  # each value is within its own bound; together they would need far more than any machine
    ("004-memorization/fig1a-accuracy-vs-heads", dict(N=2000, d_list=[1024], H_list=[1024], chunk=4096, steps=1)),
    ("004-memorization/figs8-10-deeper", dict(N=2000, layers=64, d_list=[1024], H_list=[1024], chunk=512, steps=1)),
    ("004-memorization/lemma2-attention-rank", dict(configs=[[4096, 2, 4096, 4096, 4096]], sweep=[[2, 1, 1, 1, 1]])),
    ("004-memorization/setup-formalism", dict(configs=[[4096, 2, 4096, 4096, 4096]])),
    ("004-memorization/thm1-exact-construction", dict(configs=[[4096, 4, 4096, 4096, 4096]])),
    ("004-memorization/thm2-kl-upper-bound", dict(configs=[[100_000, 2]], n_seq=100_000)),
    ("002-counting/constructions-d-equals-T", dict(exhaustive=[[64, 64]])),
    ("002-counting/phase-diagrams-softmax", dict(T=4096, L=256, d_list=[4096], p_list=[4096], batch_size=65536)),
    ("001-positional/k-hop", dict(batch=65536, embed=1023, heads=3, seq_len=256, layers_list=[16])),
    ("001-positional/mixed-type", dict(seeds=100, batch=65536, embed=1024, hidden=4096, layers=16)),
    ("001-positional/gpt2-comparison", dict(seeds=100, pos_batch=65536, embed=1024, hidden=4096)),
]


@pytest.mark.parametrize("result_id, overrides", PRODUCTS, ids=[p[0] for p in PRODUCTS])
def test_a_product_of_sizes_that_cannot_fit_is_refused_before_anything_is_allocated(result_id, overrides, tmp_path):
    exp = registry()[result_id]
    cfg = exp.config("ci", **overrides)  # every value passes its own bound
    with pytest.raises(ParameterError, match="needs an estimated .* GiB, more than the"):
        exp.run(cfg, store_root=tmp_path, progress=False)
    assert not any(tmp_path.rglob("*.json"))


@pytest.mark.parametrize("name, text, words", [
    ("lr_start", "1e999", ["'lr_start'", "inf", "finite"]),   # the CLI reads 1e999 as inf (one process: ~5 s)
])
def test_the_cli_refuses_the_same_values_with_exit_2_and_one_line(name, text, words, tmp_path):
    from conftest import attnlab

    out = attnlab("run", "004-memorization/fig1a-accuracy-vs-heads", "--headless", "-p", name, text,
                  env={"ATTNLAB_STORE": str(tmp_path)})
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and all(w in lines[0] for w in words), out.stderr
