"""benchmarks/calibration_admissible_set.py --only: the rows run replace
theirs among the saved ones, in place, and nothing else of a failed row
survives (its error would mark the new row as stopped)."""

import json

from benchmarks.calibration_admissible_set import _merged, _saved_rows


def test_rows_run_again_replace_theirs_and_keep_only_the_nominal_hover(tmp_path):
    saved = {"nominal": {"label": "nominal", "validation": 1.86},
             "#129": {"label": "#129", "error": "rate_damping", "finished_studies": ["lift"],
                      "hover_nominal_model": {"passed": False}},
             "#190": {"label": "#190", "validation": 1.47}}
    table = _merged(saved, [{"label": "#129", "validation": 3.06}, {"label": "#999", "validation": 0.5}])
    assert [r["label"] for r in table] == ["nominal", "#129", "#190", "#999"]
    assert table[1] == {"label": "#129", "validation": 3.06, "hover_nominal_model": {"passed": False}}
    assert table[0] is saved["nominal"] and table[2] is saved["#190"]


def test_the_earlier_wall_time_is_the_full_run_s(tmp_path):
    path = tmp_path / "set.json"
    assert _saved_rows(path)[0] == {}
    path.write_text(json.dumps({"meta": {"seconds": 718.0}, "rows": [{"label": "a"}]}))
    assert _saved_rows(path) == ({"a": {"label": "a"}}, 718.0)
    path.write_text(json.dumps({"meta": {"seconds": 521.0, "earlier_seconds": 718.0}, "rows": []}))
    assert _saved_rows(path)[1] == 718.0
