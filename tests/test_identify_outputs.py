"""The form every identification from measured data writes and prints."""

import json
import time

import numpy as np
import pytest

from flapjax.identify.fit_report import data_record, held_out_lines, parameter_table, with_std
from flapjax.runs.outputs import write_record


def test_data_record_head_has_study_source_values_stds_and_one_unit_each():
    rec = data_record("stand", "t.csv", {"k_f": 1.6e-4, "k_roll": 5e-4}, {"k_f": 1e-7},
                      {"k_f": "N/Hz^2", "k_roll": "N m/rad", "unused": "-"})
    assert list(rec) == ["study", "source", "k_f", "k_f_std", "k_roll", "k_roll_std", "units"]
    assert rec["k_roll_std"] is None  # held, not fitted
    assert rec["units"] == {"k_f": "N/Hz^2", "k_roll": "N m/rad"}
    with pytest.raises(KeyError, match="no unit for k_v"):
        data_record("flight_log", "f.csv", {"k_v": 0.04}, {"k_v": 0.001}, {})


def test_parameter_table_aligns_values_and_marks_held_ones():
    text = parameter_table({"k_f": 1.61939e-4, "wall_range": 3.7}, {"k_f": 1.65e-7, "wall_range": None},
                           {"k_f": "N/Hz^2", "wall_range": "rotor radii"})
    header, k_f, wall = text.splitlines()
    assert header.split() == ["parameter", "value", "std", "unit"]
    assert k_f.split() == ["k_f", "1.61939e-04", "1.65e-07", "N/Hz^2"]
    assert wall.split() == ["wall_range", "3.70000e+00", "held", "rotor", "radii"]
    assert header.index("value") + len("value") == k_f.index("1.61939e-04") + len("1.61939e-04")  # right-aligned


def test_held_out_lines_state_rms_in_sigma_and_percent():
    line = held_out_lines({"fz_n": {"rms": 1.2e-3, "rms_over_sigma": 1.27, "rms_over_measured": 0.0066}},
                          {"fz_n": "N"})
    header, line = line.splitlines()
    assert header == ("held-out prediction error (sigma: the fit's residual standard deviation, 1 sigma = the noise "
                      "level)")
    assert line == "held-out fz_n  rms 1.200e-03 N (1.27 sigma, 0.66 % of the measured RMS)"
    assert held_out_lines({}, {}) == ""


def test_write_record_adds_files_time_versions_and_returns_the_file_content(tmp_path):
    rec = data_record("hover", "h.npz", {"ground_coeff": np.float64(1.35)}, {"ground_coeff": np.float32(0.007)},
                      {"ground_coeff": "-"})
    rec["validation"] = {"rms": np.array([0.1, 0.2])}
    line = write_record(tmp_path, rec, [tmp_path / "residuals.png", "proximity.png"], time.perf_counter() - 2.0)
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk == rec  # the caller holds plain JSON types, as the file does
    assert rec["files"] == ["residuals.png", "proximity.png"]
    assert rec["seconds"] >= 2.0 and "jax" in rec["versions"]
    assert line == f"written: {tmp_path / 'results.json'}, residuals.png, proximity.png"


def test_with_std_keeps_order():
    assert list(with_std({"a": 1.0, "b": 2.0}, {"a": 0.1, "b": 0.2})) == ["a", "a_std", "b", "b_std"]
