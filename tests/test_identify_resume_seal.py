"""Resume trusts a saved study only when nothing changed it: the simulated
identification seals each ``studies/<name>.json`` with a hash of its content,
reuses an untouched file exactly, and recomputes an edited one (a value
scaled after writing, an injected key, a value that is not a number) with a
warning that names the file. Real (tiny) lift studies, not stand-ins: the
file the test edits is the one the driver wrote."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from flapjax.identify.flapper import config as idc
from flapjax.identify.flapper import studies
from flapjax.runs import flapper_studies as run
from flapjax.runs.study_files import check_study_file


def _cfg() -> dict:
    """The smallest lift study: two frequencies, 50 ms each, 4 worlds a batch."""
    cfg = idc.default_config(quick=True)
    cfg["run"].update(studies=["lift"], plots=False, batch_size=4)
    cfg["lift"].update(frequencies=[40.0, 50.0], duration=0.05, discard=0.02)
    return cfg


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A folder with one finished lift study and its ``results.json``."""
    out = tmp_path_factory.mktemp("identify") / "run"
    run.run_identification(_cfg(), out_dir=out, progress=False, echo=lambda _: None)
    return out


def _rerun(finished, tmp_path, monkeypatch, edit=None):
    """Copy ``finished``, apply ``edit`` to its ``studies/lift.json`` record,
    resume into the copy; returns (lift studies run, warnings, results.json)."""
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    path = out / "studies" / "lift.json"
    if edit is not None:
        path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    calls, said = [], []
    study_lift = studies.study_lift

    def counted(cfg, **kw):
        calls.append("lift")
        return study_lift(cfg, **kw)

    monkeypatch.setattr(studies, "study_lift", counted)
    run.run_identification(_cfg(), out_dir=out, progress=False, echo=said.append)
    return calls, [s for s in said if s.startswith("warning")], json.loads((out / "results.json").read_text())


def _without_reuse_note(results: dict) -> dict:
    results = json.loads(json.dumps(results))
    results["settings"].pop("reused_studies")
    return results


def test_the_saved_study_is_sealed_by_a_content_hash(finished):
    record = json.loads((finished / "studies" / "lift.json").read_text())
    assert sorted(record) == ["config", "result", "sha256"] and re.fullmatch(r"[0-9a-f]{64}", record["sha256"])
    assert check_study_file(record, run._study_config(_cfg(), "lift")) is None
    record["result"]["values"]["k_f"] *= 1 + 1e-12  # the smallest edit breaks the seal
    assert "does not match its sha256" in check_study_file(record)


def test_an_untouched_study_is_reused_exactly(finished, tmp_path, monkeypatch):
    first = json.loads((finished / "results.json").read_text())
    calls, warnings, again = _rerun(finished, tmp_path, monkeypatch)
    assert calls == [] and warnings == []
    assert again["settings"]["reused_studies"] == ["lift"]
    assert _without_reuse_note(again) == _without_reuse_note(first)  # every key and value, bit for bit


def _scaled(record):
    record["result"]["values"]["k_f"] *= 10
    return record


def _injected(record):
    record["result"]["injected"] = {"k_f": 1.0}
    return record


def _not_a_number(record):
    record["result"]["values"]["k_f"] = "abc"
    return record


EDITS = [
    ("k_f x10", _scaled, r"studies/lift\.json: its content does not match its sha256: it was edited"),
    ("an injected key", _injected, r"studies/lift\.json: result: unknown key\(s\) \['injected'\]"),
    ("k_f = 'abc'", _not_a_number, r"studies/lift\.json: not finite numbers: values\.k_f"),
]


@pytest.mark.parametrize("label,edit,message", EDITS, ids=[e[0] for e in EDITS])
def test_an_edited_study_is_recomputed_with_a_warning_naming_the_file(label, edit, message, finished, tmp_path,
                                                                        monkeypatch):
    first = json.loads((finished / "results.json").read_text())
    calls, warnings, again = _rerun(finished, tmp_path, monkeypatch, edit)
    assert calls == ["lift"], "the edited study must be recomputed"
    assert len(warnings) == 1 and re.search(message, warnings[0]) and warnings[0].endswith("recomputed"), warnings
    assert again["settings"]["reused_studies"] == []
    assert again["identified"]["k_f"] == pytest.approx(first["identified"]["k_f"], rel=1e-9)  # not the edit
    resealed = json.loads((tmp_path / "run" / "studies" / "lift.json").read_text())
    assert check_study_file(resealed, run._study_config(_cfg(), "lift")) is None
