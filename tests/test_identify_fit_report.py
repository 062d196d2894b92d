"""The typed outcome of a measured-data fit (flapjax.identify.fit_report):
its results.json body keeps the common head and the study's keys in order,
and the stand fit's report is what run_stand_identification writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from flapjax.identify.fit_report import Estimate, FitReport

DATA = Path(__file__).resolve().parents[1] / "identification" / "data"


def _report(**details):
    return FitReport.of("stand", "table.csv", {"k_f": 1.5e-4, "k_roll": 2e-6}, {"k_f": 1e-6},
                        {"k_f": "N/Hz^2", "k_roll": "N m/rad"}, details, arrays={"time": np.arange(3.0)})


def test_json_body_is_the_common_head_then_the_details_in_order():
    rep = _report(rows=12, validation={}, notes=["a note"])
    body = rep.to_json()
    assert list(body) == ["study", "source", "k_f", "k_f_std", "k_roll", "k_roll_std", "units", "rows", "validation",
                          "notes"]
    assert body["k_roll_std"] is None and body["units"] == {"k_f": "N/Hz^2", "k_roll": "N m/rad"}
    assert "time" not in body  # the arrays are for the plots only
    assert rep.estimates["k_roll"] == Estimate(value=2e-6, std=None, unit="N m/rad")
    assert rep.notes == ("a note",) and rep.validation == {}
    json.dumps(body)  # plain JSON
    with pytest.raises(KeyError, match="no unit for k_pitch"):
        FitReport.of("stand", "t.csv", {"k_pitch": 1.0}, {}, {}, {})
    with pytest.raises(AttributeError):
        rep.study = "other"  # frozen


def test_correlation_is_found_at_the_top_or_under_fit():
    corr = {"names": ["a", "b"], "matrix": [[1.0, -0.3], [-0.3, 1.0]]}
    for rep in (_report(correlation=corr), _report(fit={"correlation": corr})):
        names, matrix = rep.correlation
        assert names == ["a", "b"] and matrix[0, 1] == -0.3 and matrix.shape == (2, 2)
    assert _report(rows=1).correlation is None


def test_summary_has_the_table_the_held_out_error_and_the_notes():
    val = {"fz_n": {"rms": 1e-3, "rms_over_sigma": 1.1, "rms_over_measured": 0.02}}
    text = _report(validation=val, notes=["check the unit"]).summary(channel_units={"fz_n": "N"})
    lines = text.splitlines()
    assert lines[0].split() == ["parameter", "value", "std", "unit"]
    assert lines[2].split() == ["k_roll", "2.00000e-06", "held", "N", "m/rad"]
    assert any(line.startswith("held-out fz_n") and "1.10 sigma" in line and " N " in line for line in lines)
    assert lines[-1] == "note: check the unit"
    assert _report(validation={}).summary().endswith("\n")  # no hold-out: an empty line, as the reports print


def test_stand_report_is_what_the_stand_identification_writes(tmp_path):
    from flapjax.data.stand_table import load_stand_table
    from flapjax.runs import stand as S
    from flapjax.identify.flapper.stand_fit import fit_stand

    written = S.run_stand_identification(DATA / "stand_sample.csv", out_dir=tmp_path, echo=lambda s: None).to_json()
    data = load_stand_table(DATA / "stand_sample.csv")
    rep = S.stand_report(DATA / "stand_sample.csv", data, fit_stand(data))
    body = json.loads(json.dumps(rep.to_json()))
    assert list(body) == [k for k in written if k not in ("files", "seconds", "versions")]
    assert body == {k: v for k, v in written.items() if k not in ("files", "seconds", "versions")}
    assert rep.values["k_f"] == written["k_f"] and rep.std["k_roll_cross"] == written["k_roll_cross_std"]
    names, matrix = rep.correlation
    assert names == written["correlation"]["names"] and np.allclose(np.diag(matrix), 1.0)
