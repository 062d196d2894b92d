"""Data tables: CSV/NPZ reading and one test per bad-data case, each asserting
that the message names the file, the column and the row."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from flapjax.data.tables import Column, ConvertedUnitsWarning, DataError, UnusedColumnsWarning, column_names, read_table
from flapjax.validation import ConfigError

STAND = [Column("frequency_hz"), Column("fz_n"), Column("mx_nm", required=False)]
LOG = [Column("time_s"), Column("x_m")]
DATA = pathlib.Path(__file__).resolve().parent.parent / "identification" / "data"


def _write(tmp_path, text, name="table.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_reads_csv_with_comments_and_optional_columns(tmp_path):
    p = _write(tmp_path, "# stand run 3\nfrequency_hz, fz_n, extra_x\n# warm-up done\n20,0.066,1\n\n30,0.149,2\n")
    with pytest.warns(UnusedColumnsWarning, match=r"table.csv: column\(s\) \['extra_x'\] are not read"):
        t = read_table(p, STAND)
    assert set(t) == {"frequency_hz", "fz_n"}  # optional absent, undeclared left out (and named)
    np.testing.assert_array_equal(t["frequency_hz"], [20.0, 30.0])
    assert t["fz_n"].dtype == np.float64
    assert column_names(p) == ["frequency_hz", "fz_n", "extra_x"]


def test_reads_npz_with_the_same_keys(tmp_path):
    p = tmp_path / "table.npz"
    np.savez(p, time_s=np.array([0.0, 0.1, 0.2]), x_m=np.array([1, 2, 3]))
    t = read_table(p, LOG, time_column="time_s")
    np.testing.assert_array_equal(t["x_m"], [1.0, 2.0, 3.0])
    assert sorted(column_names(p)) == ["time_s", "x_m"]


def test_unused_npz_keys_are_named(tmp_path):
    p = tmp_path / "log.npz"
    np.savez(p, time_s=np.array([0.0, 0.1]), x_m=np.array([1.0, 2.0]), battery_v=np.array([4.1, 4.0]))
    with pytest.warns(UnusedColumnsWarning, match=r"log.npz: column\(s\) \['battery_v'\].*reads \['time_s', 'x_m'\]"):
        t = read_table(p, LOG, time_column="time_s")
    assert set(t) == {"time_s", "x_m"}


@pytest.mark.parametrize("name", ["stand_sample.csv", "seed_table_11_2.csv", "stand_waveform_sample.csv",
                                  "flight_log.csv", "hover_quad_x.npz"])
def test_samples_hold_only_columns_their_study_reads(name):
    import warnings

    from flapjax.data.flight_log import read_flight_log
    from flapjax.data.stand_table import load_stand_table
    from flapjax.data.stand_record import load_stand_waveform
    from flapjax.data.hover_log import read_hover_log

    path = DATA / name
    load = {"stand_sample.csv": load_stand_table, "seed_table_11_2.csv": load_stand_table,
            "stand_waveform_sample.csv": load_stand_waveform, "flight_log.csv": read_flight_log,
            "hover_quad_x.npz": lambda p: read_hover_log(p, 4)}[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnusedColumnsWarning)
        load(path)
    assert not [w for w in caught if issubclass(w.category, UnusedColumnsWarning)], [str(w.message) for w in caught]


def test_identify_from_file_says_data_notes(tmp_path):
    from flapjax.runs.from_file import _data_notes

    p = _write(tmp_path, "frequency_hz,fz_n,temperature_c\n20,0.066,25\n")
    said = []
    with _data_notes(said.append):
        read_table(p, STAND)
        read_table(p, STAND)
    assert len(said) == 2 and said[0].startswith("note: ") and "['temperature_c']" in said[0]
    q = _write(tmp_path, "frequency_hz,fz_mn\n20,66\n", name="milli.csv")
    said.clear()
    with _data_notes(said.append):
        assert read_table(q, STAND)["fz_n"][0] == pytest.approx(0.066)
    assert said == [f"note: {q}: converted fz_mn -> fz_n (x 0.001)"]


def test_data_error_is_a_config_error():
    assert issubclass(DataError, ConfigError)


def _raises(path, columns=STAND, **kw):
    with pytest.raises(DataError) as info:
        read_table(path, columns, **kw)
    msg = str(info.value)
    assert str(path) in msg, msg
    return msg


@pytest.mark.parametrize("text, expect", [
    pytest.param("frequency_hz,mx_nm\n20,0.1\n",
                 ["missing required column 'fz_n'", "(header, line 1)", "['frequency_hz', 'mx_nm']"], id="missing column"),
    pytest.param("# rig B\nfrequency_hz,fz_kg\n20,0.0067\n",  # a mass is not a force
                 ["(header, line 2)", "column 'fz_n'", "given in 'kg', expected 'n' (converted on reading: ['mn', 'g'])",
                  "'fz_kg'"], id="unit not converted"),
    pytest.param("frequency_hz,fz_n,mx_kgm\n20,0.066,0.1\n", ["'mx_nm'", "given in 'kgm', expected 'nm'"],
                 id="unit not converted, optional column"),
    pytest.param("frequency_hz,fz_mn,fz_g\n20,66,6.7\n",
                 ["column 'fz_n'", "gives it 2 times, as ['fz_mn', 'fz_g']; keep one"], id="quantity given twice"),
    pytest.param("frequency_hz,fz_n,fz_n\n20,1,1\n", ["column 'fz_n' appears twice"], id="duplicate header column"),
    pytest.param("frequency_hz,fz_n\n20,0.066\n# note\n30,abc\n",
                 ["column 'fz_n', row 2 (line 4)", "not a number", "'abc'"], id="non-numeric cell"),
    pytest.param("frequency_hz,fz_n\n20,0.066\n30,0.149\nnan,0.26\n", ["column 'frequency_hz', row 3 (line 4)", "NaN"],
                 id="NaN row"),
    pytest.param("frequency_hz,fz_n\n20,\n", ["column 'fz_n', row 1 (line 2)", "empty cell"], id="empty cell"),
    pytest.param("frequency_hz,fz_n\n# nothing measured\n", ["empty table", "row 1", "frequency_hz"],
                 id="header without rows"),
    pytest.param("frequency_hz,fz_n,mx_nm\n20,0.066,0.0\n30,0.149\n",
                 ["row 2 (line 3) has 2 cells", "column 'mx_nm' missing"], id="ragged row, short"),
    pytest.param("frequency_hz,fz_n\n20,0.066,7\n", ["row 1 (line 2) has 3 cells", "'fz_n'"], id="ragged row, long"),
])
def test_bad_csv_table_names_file_column_and_row(tmp_path, text, expect):
    msg = _raises(_write(tmp_path, text))
    for fragment in expect:
        assert fragment in msg, (fragment, msg)


def test_units_of_the_table_are_converted_and_said(tmp_path):
    p = _write(tmp_path, "time_ms,x_mm,roll_deg,fz_g,mx_mnm,ax_g\n0,1000,180,100,2,1\n10,-5,-90,0,0,0\n")
    cols = [Column("time_s"), Column("x_m"), Column("roll_rad"), Column("fz_n"), Column("mx_nm"), Column("ax_mps2")]
    with pytest.warns(ConvertedUnitsWarning) as caught:
        t = read_table(p, cols, time_column="time_s")
    np.testing.assert_allclose(t["time_s"], [0.0, 0.01], rtol=1e-15)
    np.testing.assert_allclose(t["x_m"], [1.0, -0.005], rtol=1e-15)
    np.testing.assert_allclose(t["roll_rad"], [np.pi, -np.pi / 2], rtol=1e-15)
    np.testing.assert_allclose(t["fz_n"], [0.980665, 0.0], rtol=1e-15)  # gram-force
    np.testing.assert_allclose(t["mx_nm"], [2e-3, 0.0], rtol=1e-15)
    np.testing.assert_allclose(t["ax_mps2"], [9.80665, 0.0], rtol=1e-15)  # standard gravity
    msg = str(caught[0].message)
    assert msg.startswith(f"{p}: converted time_ms -> time_s (x 0.001), x_mm -> x_m (x 0.001), roll_deg -> roll_rad")
    assert not [w for w in caught if issubclass(w.category, UnusedColumnsWarning)]  # converted columns are read


def test_npz_units_are_converted_and_bad_values_name_the_file_column(tmp_path):
    p = tmp_path / "log.npz"
    np.savez(p, time_s=np.array([0.0, 0.1]), x_cm=np.array([10.0, np.nan]))
    with pytest.warns(ConvertedUnitsWarning, match="x_cm -> x_m"):
        with pytest.raises(DataError, match="column 'x_cm', row 2: NaN"):
            read_table(p, LOG)
    np.savez(p, time_s=np.array([0.0, 0.1]), x_cm=np.array([10.0, 20.0]))
    with pytest.warns(ConvertedUnitsWarning):
        np.testing.assert_allclose(read_table(p, LOG)["x_m"], [0.1, 0.2])


def test_nan_row_npz(tmp_path):
    p = tmp_path / "t.npz"
    np.savez(p, frequency_hz=np.array([20.0, 30.0]), fz_n=np.array([0.066, np.inf]))
    msg = _raises(p)
    assert "column 'fz_n', row 2" in msg and "NaN or inf" in msg


def test_non_monotonic_time(tmp_path):
    p = _write(tmp_path, "time_s,x_m\n0.0,1\n0.1,1\n0.1,1\n0.3,1\n")
    msg = _raises(p, LOG, time_column="time_s")
    assert "column 'time_s', row 3 (line 4)" in msg and "strictly increasing" in msg


def test_non_monotonic_time_npz(tmp_path):
    p = tmp_path / "log.npz"
    np.savez(p, time_s=np.array([0.0, 0.2, 0.1]), x_m=np.zeros(3))
    msg = _raises(p, LOG, time_column="time_s")
    assert "column 'time_s', row 3" in msg


def test_time_column_is_required(tmp_path):
    p = _write(tmp_path, "x_m\n1\n")
    msg = _raises(p, [Column("x_m")], time_column="time_s")
    assert "missing required column 'time_s'" in msg


def test_empty_file(tmp_path):
    p = _write(tmp_path, "# only a comment\n\n")
    msg = _raises(p)
    assert "empty file" in msg and "header" in msg
    with pytest.raises(DataError, match="empty file"):
        column_names(p)


def test_ragged_npz(tmp_path):
    p = tmp_path / "t.npz"
    np.savez(p, frequency_hz=np.array([20.0, 30.0]), fz_n=np.array([0.066]))
    msg = _raises(p)
    assert "column 'fz_n' has 1 rows" in msg and "row 2" in msg


def test_unreadable_missing_file(tmp_path):
    msg = _raises(tmp_path / "nope.csv")
    assert "cannot read" in msg and "no such file" in msg


def test_unreadable_binary_file(tmp_path):
    p = tmp_path / "stand.csv"
    p.write_bytes(b"\xff\xfe\x00\x81binary")
    msg = _raises(p)
    assert "cannot read" in msg and "UTF-8" in msg


def test_unreadable_npz(tmp_path):
    p = tmp_path / "broken.npz"
    p.write_bytes(b"not a zip")
    msg = _raises(p)
    assert "cannot read" in msg and ".npz" in msg


def test_written_tables_read_back(tmp_path):
    from flapjax.data.tables import write_table

    cols = {"frequency_hz": np.array([20.0, 30.5]), "phase_rad": np.array([0.1, 6.2]),
            "fz_n": np.array([0.0661234567891, -1.5e-4])}
    path = tmp_path / "t.csv"
    write_table(path, cols, comment="made here\nsecond line")
    text = path.read_text()
    assert text.startswith("# made here\n# second line\nfrequency_hz,phase_rad,fz_n\n")
    back = read_table(path, [Column("frequency_hz"), Column("phase_rad"), Column("fz_n")])
    for k, v in cols.items():
        np.testing.assert_allclose(back[k], v, rtol=1e-8)


def test_arrays_are_checked_like_files():
    from flapjax.data.tables import check_arrays

    assert check_arrays("here", [("a_s", np.zeros(3)), ("b_m", np.ones(3))]) == 3
    with pytest.raises(DataError, match=r"here: column 'b_m' has 2 rows, column 'a_s' has 3"):
        check_arrays("here", [("a_s", np.zeros(3)), ("b_m", np.ones(2))])
    with pytest.raises(DataError, match=r"here: column 'b_m', row 2: NaN or inf"):
        check_arrays("here", [("a_s", np.zeros(3)), ("b_m", np.array([0.0, np.inf, 1.0]))])
    with pytest.raises(DataError, match=r"here: empty table: column 'a_s', row 1 missing"):
        check_arrays("here", [("a_s", np.zeros(0))])


@pytest.mark.parametrize("text, match", [
    pytest.param("frequency_hz,fz_N\n20,0.066\n",
                 r"table.csv: column 'fz_N' \(header, line 1\): column names are lowercase quantity_unit.*"
                 r"write 'fz_n'", id="capital unit"),
    pytest.param("# rig B\nFrequency_Hz,fz_n\n20,0.066\n",
                 r"column 'Frequency_Hz' \(header, line 2\): column names are lowercase.*write 'frequency_hz'",
                 id="capital quantity"),
    pytest.param("frequency_hz,fz_n,fz_mn\n20,0.066,66\n",
                 r"column 'fz_n' .*\(header, line 1\): the file gives it 2 times, as \['fz_n', 'fz_mn'\]; keep one",
                 id="quantity given twice, once in SI"),
    pytest.param("frequency_hz,fz\n20,0.066\n",
                 r"column 'fz_n' .*\(header, line 1\): the file's column 'fz' has no unit suffix.*name it 'fz_n' "
                 r"with the values in 'n'", id="no unit suffix"),
    pytest.param("frequency_hz,fz_n\n20,0.066\n1_000,0.2\n",
                 r"column 'frequency_hz', row 2 \(line 3\): not a plain decimal number .*\('1_000'\)",
                 id="underscore in a number"),
    pytest.param("frequency_hz,fz_n\n20,infinity\n", r"column 'fz_n', row 1 \(line 2\): NaN or inf.*\('infinity'\)",
                 id="infinity spelt out"),
    pytest.param("frequency_hz,fz_n\n\u0662\u0660,0.066\n",
                 r"column 'frequency_hz', row 1 \(line 2\): not a plain decimal number", id="other script's digits"),
])
def test_header_and_cell_spellings_are_refused(tmp_path, text, match):
    p = _write(tmp_path, text)
    with pytest.raises(DataError, match=match):
        read_table(p, STAND)


def test_plain_decimal_numbers_are_read(tmp_path):
    p = _write(tmp_path, "frequency_hz,fz_n\n+20,1e-3\n.5,-1.5E-3\n30.,2e+2\n")
    t = read_table(p, STAND)
    np.testing.assert_array_equal(t["frequency_hz"], [20.0, 0.5, 30.0])
    np.testing.assert_array_equal(t["fz_n"], [1e-3, -1.5e-3, 200.0])


def test_column_names_refuse_capitals(tmp_path):
    p = _write(tmp_path, "# stand\nFrequency_Hz,fz_n\n20,0.066\n")
    with pytest.raises(DataError, match=r"table.csv: column 'Frequency_Hz' \(header, line 2\).*write 'frequency_hz'"):
        column_names(p)
    q = tmp_path / "t.npz"
    np.savez(q, frequency_hz=np.array([20.0]), FZ_N=np.array([0.066]))
    with pytest.raises(DataError, match=r"t.npz: column 'FZ_N': column names are lowercase.*write 'fz_n'"):
        column_names(q)


def test_npz_that_is_no_zip_archive_says_what_it_is(tmp_path):
    text = tmp_path / "table.npz"
    text.write_text("frequency_hz,fz_n\n20,0.066\n")
    with pytest.raises(DataError, match=r"table.npz: cannot read the data file as an .npz archive: it is not one "
                                        r"\(a zip archive.*found text beginning 'frequency_hz,fz_n'; a CSV table "
                                        r"must be named .csv") as info:
        read_table(text, STAND)
    assert "pickle" not in str(info.value)
    npy = tmp_path / "array.npz"
    with npy.open("wb") as f:
        np.save(f, np.arange(3.0))
    with pytest.raises(DataError, match=r"array.npz: .*found a single .npy array \(numpy.save\)"):
        column_names(npy)
    objects = tmp_path / "objects.npz"
    np.savez(objects, frequency_hz=np.array([20.0]), fz_n=np.array([{"a": 1}], dtype=object))
    with pytest.raises(DataError, match=r"objects.npz: column 'fz_n': holds Python objects") as info:
        read_table(objects, STAND)
    assert "allow_pickle" not in str(info.value)


RANGED = [Column("frequency_hz", positive=True), Column("fz_n"), Column("pitch_plate_rad", False, bounds=(-0.6, 0.6))]


@pytest.mark.parametrize("text, match", [
    pytest.param("frequency_hz,fz_n,pitch_plate_rad\n20,0.066,0\n# next\n30,0.149,30\n",
                 r"table.csv: column 'pitch_plate_rad', row 2 \(line 4\): value 30 outside \[-0.6, 0.6\] \(degrees\? "
                 r".*\) \('30'\)",
                 id="outside bounds"),
    pytest.param("frequency_hz,fz_n,pitch_plate_deg\n20,0.066,40\n",
                 r"column 'pitch_plate_deg', row 1 \(line 2\): value 0.698132 outside \[-0.6, 0.6\] \(read as "
                 r"'pitch_plate_rad'\) \('40'\)", id="outside bounds after conversion"),
    pytest.param("frequency_hz,fz_n\n20,0.066\n-40,0.1\n",
                 r"column 'frequency_hz', row 2 \(line 3\): must be > 0, got -40 \('-40'\)", id="not positive"),
])
@pytest.mark.filterwarnings("ignore::flapjax.data.tables.ConvertedUnitsWarning")
def test_values_outside_a_columns_range_name_file_column_row_and_line(tmp_path, text, match):
    with pytest.raises(DataError, match=match):
        read_table(_write(tmp_path, text), RANGED)


def test_ranges_of_npz_and_of_arrays(tmp_path):
    from flapjax.data.tables import check_values

    p = tmp_path / "t.npz"
    np.savez(p, frequency_hz=np.array([20.0, 30.0]), fz_n=np.zeros(2), pitch_plate_rad=np.array([0.6, -0.7]))
    with pytest.raises(DataError, match=r"t.npz: column 'pitch_plate_rad', row 2: value -0.7 outside \[-0.6, 0.6\]"):
        read_table(p, RANGED)
    check_values("here", RANGED[2], np.array([-0.6, 0.0, 0.6]))  # both ends allowed
    with pytest.raises(DataError, match=r"here: column 'frequency_hz', row 3: must be > 0, got 0"):
        check_values("here", RANGED[0], np.array([20.0, 30.0, 0.0]))


def test_a_semicolon_or_tab_table_is_told_its_separator(tmp_path):
    """A table a spreadsheet saved with ';' or tabs reads as one column: the
    message says so, whichever study reads it."""
    cols = [Column("frequency_hz"), Column("fz_n")]
    for sep, said in ((";", "';'"), ("\t", "tabs")):
        path = tmp_path / "t.csv"
        path.write_text(f"# bench 3\nfrequency_hz{sep}fz_n\n30{sep}0,15\n")
        match = (rf"t.csv: the header \(line 2\) is one column .*\. The file seems to be separated by {said}; "
                 r"flapjax reads comma-separated values")
        with pytest.raises(DataError, match=match):
            read_table(path, cols)
        with pytest.raises(DataError, match=match):
            column_names(path)
    path.write_text("Frequency_Hz;Fz_N\n30;0,15\n")  # the separator is the first thing to fix
    with pytest.raises(DataError, match=r"separated by ';'"):
        column_names(path)


@pytest.mark.parametrize(("text", "column", "hint"), [
    pytest.param("roll_rad\n0.1\n57.3\n", Column("roll_rad", bounds=(-0.6, 0.6)),
                 r"column 'roll_rad', row 2 \(line 3\): value 57.3 outside \[-0.6, 0.6\] \(degrees\? the column is "
                 r"in radians; name it roll_deg to have it converted\)", id="degrees within bounds once converted"),
    pytest.param("roll_rad\n90\n", Column("roll_rad", bounds=(-1.0, 1.0)),
                 r"column 'roll_rad', row 1 \(line 2\): value 90 outside \[-1, 1\] \(degrees\? the column",
                 id="degrees above 2 pi"),
    pytest.param("frequency_hz\n1800\n", Column("frequency_hz", bounds=(0.0, 100.0)),
                 r"column 'frequency_hz', row 1 \(line 2\): value 1800 outside \[0, 100\] \(rpm\? the column is in Hz; "
                 r"name it frequency_rpm to have it converted\)", id="rpm"),
    pytest.param("frequency_hz\n1200\n", Column("frequency_hz", bounds=(0.0, 500.0)),
                 r"column 'frequency_hz', row 1 \(line 2\): value 1200 outside \[0, 500\] \(rpm or rad/s\? the "
                 r"column is in Hz; name it frequency_rpm .* divide rad/s by 2 pi\)",
                 id="rpm or rad/s"),
    pytest.param("frequency_hz\n\"0,0370630545\"\n", Column("frequency_hz"),
                 r"column 'frequency_hz', row 1 \(line 2\): not a number \(a decimal comma\? write '.' as the "
                 r"decimal point\) \('0,0370630545'\)", id="decimal comma"),
])
def test_range_and_number_errors_hint_at_the_likely_unit(tmp_path, text, column, hint):
    p = _write(tmp_path, text)
    with pytest.raises(DataError, match=rf"{p.name}: {hint}"):
        read_table(p, [column])


@pytest.mark.filterwarnings("ignore::flapjax.data.tables.ConvertedUnitsWarning")
def test_no_unit_hint_where_the_value_is_no_likely_slip(tmp_path):
    for text, column in (("roll_rad\n0.7\n", Column("roll_rad", bounds=(-0.6, 0.6))),
                         ("frequency_hz\n600\n", Column("frequency_hz", bounds=(0.0, 500.0))),
                         ("frequency_hz\n1e6\n", Column("frequency_hz", bounds=(0.0, 500.0))),
                         ("roll_deg\n57.3\n", Column("roll_rad", bounds=(-0.6, 0.6)))):
        with pytest.raises(DataError) as err:
            read_table(_write(tmp_path, text), [column])
        assert "?" not in str(err.value), str(err.value)


def test_trailing_separators_on_every_line_are_no_column(tmp_path):
    # a spreadsheet's export: "a,b," on every line, the header included
    p = _write(tmp_path, "# comment\nfrequency_hz,fz_n,,\n20,0.066,,\n30,0.15,,\n", name="excel.csv")
    t = read_table(p, STAND)
    assert sorted(t) == ["frequency_hz", "fz_n"] and t["fz_n"].tolist() == [0.066, 0.15]
    # one row without them: the header's empty name is an error, named
    q = _write(tmp_path, "frequency_hz,fz_n,\n20,0.066,\n30,0.15\n", name="ragged.csv")
    with pytest.raises(DataError, match=r"ragged.csv: the header \(header, line 1\) has an empty column name \(column 3\)"):
        read_table(q, STAND)


def test_each_experiment_gets_the_options_it_takes_and_refuses_the_others(tmp_path, monkeypatch):
    import dataclasses

    from flapjax.runs import from_file as FF

    seen = {}
    for study, experiment in FF.EXPERIMENTS.items():
        fake = lambda path, study=study, out_dir=None, echo=None, **kw: seen.update({study: kw})  # noqa: E731
        monkeypatch.setitem(FF.EXPERIMENTS, study, dataclasses.replace(experiment, run=fake))
    said = []

    def run(header, **options):
        FF.identify_from_file(_write(tmp_path, header + "\n1,2\n"), out_dir=tmp_path / "o", echo=said.append, **options)

    run("frequency_hz,fz_n", robot="quad_x", quick=True, progress=False, physical=True)
    assert seen.pop("stand") == {"physical": True}
    assert said[:2] == ["note: --robot quad_x is ignored for a stand table (flapping-wing robot)",
                        "note: --quick is ignored for a stand table (its fit has no shorter form)"]
    run("frequency_hz,phase_rad,fz_n", fit=["lift_scale"])
    assert seen.pop("waveform") == {"fit": ["lift_scale"]}
    run("time_s,x_m", robot="quad_x", quick=True, progress=False)
    assert seen.pop("hover") == {"robot": "quad_x", "quick": True, "progress": False}
    run("time_s,frequency_hz", mass=0.03, command_delay="auto")
    assert seen.pop("flight") == {"quick": False, "progress": True, "mass": 0.03, "command_delay": "auto"}
    for header, options, message in [
        ("time_s,x_m", {"robot": "quad_x", "mass": 0.03}, r"--mass applies to flapper flight logs only \(this file is "
         r"a multirotor hover log, whose fit uses the robot profile's \(--robot\)\)"),
        ("time_s,frequency_hz", {"physical": True}, r"--physical applies to stand tables only \(this file is a flapper "
         r"flight log\)"),
        ("frequency_hz,fz_n", {"command_delay": 0}, "--command-delay applies to flapper flight logs only"),
        ("frequency_hz,fz_n", {"fit": []}, "--fit applies to phase-resolved stand records only")]:
        with pytest.raises(DataError, match=message):
            run(header, **options)
    assert not seen
