"""A pytest plugin (pyproject's `-p attnlab.pytest_plugin`): the head of every test run says when chapters
in book/ were executed on another CPU or torch than this machine's, the one reason nbval fails on an
untouched book (`attnlab.notebooks.machine_warnings`; `attnlab book --force` re-executes them here)."""

from __future__ import annotations


def pytest_report_header(config) -> list[str]:
    from attnlab.notebooks import machine_warnings

    return [f"attnlab: warning: {line}" for line in machine_warnings()]
