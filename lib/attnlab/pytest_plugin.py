"""A pytest plugin (pyproject's `-p attnlab.pytest_plugin`).

- nbval compares a claims table at its declared precision: where a stored output carries the table's
  JSON (`attnlab.core.claims.MIME`), the re-executed table must have the same rows, verdicts and words,
  and every number equal at its row's precision (`ClaimsTable.compare`), so the check holds on any
  x86-64 CPU; the table's HTML and Markdown renderings (the same cells) are not compared as text.
  Every other output is compared by nbval as before.
- nbval's kernels run with matplotlib's non-interactive Agg backend (`MPLBACKEND=agg`): every figure's
  code runs, but no figure is rasterised into a PNG the comparison would ignore anyway (nbval compares
  the claims tables only, `--nbval-lax`). `attnlab book` renders the figures the book shows, and the
  browser tests look at them. This saves about a tenth of a chapter's CPU time in `make test`.
- The head of every test run says when chapters in book/ were executed on another machine (CPU, its
  instruction set as torch sees it, torch, numpy's BLAS: `attnlab.notebooks.machine_warnings`) and what
  the checks then tolerate.
"""

from __future__ import annotations


def _data(outputs) -> list:
    from attnlab.core.claims import MIME

    return [out["data"][MIME] for out in outputs if MIME in out.get("data", {})]


def _without_claims(outputs) -> list:
    from attnlab.core.claims import MIME

    return [out for out in outputs if MIME not in out.get("data", {})]


def compare_claims_outputs(original):
    """nbval's IPyNbCell.compare_outputs, with claims tables compared by `ClaimsTable.compare`."""

    def compare_outputs(self, test, ref, skip_compare=None):
        from attnlab.core.claims import ClaimsTable

        stored = _data(ref)
        if not stored:
            return original(self, test, ref, skip_compare)
        new = _data(test)
        self.comparison_traceback = []
        if len(new) != len(stored):
            self.comparison_traceback.append(f"claims tables: {len(stored)} stored, {len(new)} from running the code")
            return False
        problems = [p for a, b in zip(stored, new) for p in ClaimsTable.compare(a, b)]
        if problems:
            self.comparison_traceback += ["The claims table differs from the stored one at its declared precision:"]
            self.comparison_traceback += [f"  {p}" for p in problems]
            return False
        return original(self, _without_claims(test), _without_claims(ref), skip_compare)

    compare_outputs.attnlab = True
    return compare_outputs


def kernel_without_figures(original):
    """nbval's IPyNbFile.setup (which starts the notebook's kernel), with MPLBACKEND=agg in the kernel's
    environment: figures are built but never rasterised."""

    def setup(self):
        import os

        before = os.environ.get("MPLBACKEND")
        os.environ["MPLBACKEND"] = "agg"
        try:
            return original(self)
        finally:
            if before is None:
                os.environ.pop("MPLBACKEND", None)
            else:
                os.environ["MPLBACKEND"] = before

    setup.attnlab = True
    return setup


def pytest_configure(config) -> None:
    try:
        from nbval.plugin import IPyNbCell, IPyNbFile
    except ImportError:  # nbval not installed: nothing to compare
        return
    if not getattr(IPyNbCell.compare_outputs, "attnlab", False):
        IPyNbCell.compare_outputs = compare_claims_outputs(IPyNbCell.compare_outputs)
    if not getattr(IPyNbFile.setup, "attnlab", False):
        IPyNbFile.setup = kernel_without_figures(IPyNbFile.setup)


def pytest_report_header(config) -> list[str]:
    from attnlab.notebooks import machine_warnings

    return [f"attnlab: warning: {line}" for line in machine_warnings()]
