"""The head every ``results.json`` of a data study shares (see
:mod:`flapjax.runs.outputs`), checked against the folder it was written to."""

from __future__ import annotations

import json
from pathlib import Path


def assert_common_record(out: Path, study: str, source: Path, values: tuple[str, ...]) -> dict:
    """Assert ``out/results.json`` names ``study`` and ``source``, holds each of
    ``values`` with a positive standard deviation and a unit, lists files
    that exist, and carries time and versions; returns the record."""
    rec = json.loads((Path(out) / "results.json").read_text())
    assert rec["study"] == study and rec["source"] == str(source)
    for name in values:
        assert isinstance(rec[name], float) and rec[f"{name}_std"] > 0, name
        assert rec["units"][name], name
    assert set(rec["units"]) == {k for k in rec if f"{k}_std" in rec}  # one unit per value, no more
    assert rec["files"] and all((Path(out) / f).is_file() for f in rec["files"])
    assert rec["seconds"] > 0 and rec["versions"]["jax"]
    assert "validation" in rec
    return rec
