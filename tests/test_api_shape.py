"""The public entry points have one shape: the subject positional, every
option keyword-only, a typed report as the result; no public function of
the package returns a bare ``dict``, and those returning a ``dict[...]`` are
name -> value mappings (or JSON bodies), listed here with the reason."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pathlib
import typing

import pytest

from flapjax.evaluate_report import Episodes, EvaluationReport, RunStatistics
from flapjax.identify.fit_report import FitReport
from flapjax.identify.losses import Uncertainty

ROOT = pathlib.Path(__file__).resolve().parent.parent / "flapjax"

# (module, function, subject, result type)
ENTRY_POINTS = [
    ("flapjax.evaluate", "evaluate", "task", EvaluationReport),
    ("flapjax.evaluate", "run_episodes", "env", Episodes),
    ("flapjax.runs.from_file", "identify_from_file", "path", FitReport),
    ("flapjax.runs.stand", "run_stand_identification", "path", FitReport),
    ("flapjax.runs.waveform", "run_waveform_identification", "path", FitReport),
    ("flapjax.runs.flight_log", "run_flight_identification", "path", FitReport),
    ("flapjax.runs.hover", "run_hover_identification", "path", FitReport),
    ("flapjax.runs.flapper_studies", "run_identification", "cfg", "IdentificationResult"),
    ("flapjax.identify.flapper.waveform", "fit_waveform", "data", FitReport),
    ("flapjax.identify.flapper.flight_fit", "identify_flight_log", "log", FitReport),
    ("flapjax.identify.flapper.stand_physical", "fit_physical_to_stand", "data", FitReport),
]


def shape_problems(func, subject: str, result) -> list[str]:
    """What keeps ``func`` from the entry-point shape (empty: none)."""
    problems = []
    params = list(inspect.signature(func).parameters.values())
    if not params or params[0].name != subject or params[0].kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
        problems.append(f"the first parameter must be the subject {subject!r}, positional")
    by_keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)
    loose = [p.name for p in params[1:] if p.kind not in by_keyword]
    if loose:
        problems.append(f"options not keyword-only: {loose}")
    returned = typing.get_type_hints(func).get("return")
    name = result if isinstance(result, str) else result.__name__
    if getattr(returned, "__name__", None) != name:
        problems.append(f"returns {returned!r}, not {name}")
    return problems


@pytest.mark.parametrize("module, name, subject, result", ENTRY_POINTS, ids=[e[1] for e in ENTRY_POINTS])
def test_entry_point_takes_the_subject_positional_and_options_by_keyword(module, name, subject, result):
    func = getattr(importlib.import_module(module), name)
    assert shape_problems(func, subject, result) == []


def test_the_shape_check_sees_a_positional_option_and_a_dict_result():
    def old(path, out_dir, *, quick=False) -> dict:
        """The shape before."""

    problems = shape_problems(old, "path", FitReport)
    assert any("out_dir" in p for p in problems) and any("not FitReport" in p for p in problems)
    assert shape_problems(old, "task", FitReport)[0].startswith("the first parameter")


@pytest.mark.parametrize("report", [EvaluationReport, RunStatistics, FitReport, Episodes, Uncertainty])
def test_results_are_frozen_dataclasses(report):
    assert dataclasses.is_dataclass(report) and report.__dataclass_params__.frozen


def test_fit_report_from_its_json_body_gives_the_same_body_in_order():
    body = {"study": "stand", "source": "t.csv", "k_f": 1.5e-4, "k_f_std": 1e-6, "k_roll": 2e-6, "k_roll_std": None,
            "units": {"k_f": "N/Hz^2", "k_roll": "N m/rad"}, "rows": 12, "notes": ["n"], "files": ["a.png"]}
    rep = FitReport.from_record(body)
    assert rep.to_json() == body and list(rep.to_json()) == list(body)
    assert rep.values == {"k_f": 1.5e-4, "k_roll": 2e-6} and rep.std["k_roll"] is None
    assert rep.files == ["a.png"] and rep.notes == ("n",)
    with pytest.raises(KeyError, match="k_roll_std"):
        FitReport.from_record({k: v for k, v in body.items() if k != "k_roll_std"})


# Public functions that return a ``dict[...]``, each a name -> value mapping
# or the JSON body of a typed record (one reason per group).
MAPPINGS = {
    # JSON bodies of typed records, and the untyped study configs
    "flapjax.aero.cycle_averaged.to_dict", "flapjax.identify.flapper.results.to_dict",
    "flapjax.identify.results.to_dict", "flapjax.identify.fit_report.to_json",
    "flapjax.evaluate_report.to_json", "flapjax.tasks.config.config_to_dict", "flapjax.runs.study_files.seal",
    "flapjax.rotor.profile_files.profile_to_dict", "flapjax.identify.flapper.config.default_config",
    "flapjax.identify.flapper.config.load_config", "flapjax.identify.flapper.config.validate_config",
    "flapjax.identify.flapper.robot_config.robot_defaults", "flapjax.runs.flapper_studies.extra",
    "flapjax.identify.flapper.config.fit_uncertainty", "flapjax.identify.flapper.channel_validation.compare",
    "flapjax.rotor.identified.chain_table", "flapjax.identify.fit_report.data_record",
    "flapjax.identify.flapper.calibration.calibration_record",
    "flapjax.identify.flapper.calibration.read_calibration_record",
    "flapjax.identify.flapper.robot_config.load_robot_config",
    "flapjax.safe_io.read_settings",
    # name -> value (parameters, gains, versions, counts, shares)
    "flapjax.control.design.altitude_gains", "flapjax.identify.fit_report.values", "flapjax.identify.fit_report.std",
    "flapjax.identify.fit_report.units", "flapjax.identify.fit_report.validation",
    "flapjax.identify.flapper.damping.coupling_slopes", "flapjax.identify.flapper.fidelity.wrong_models",
    "flapjax.identify.flapper.flight_parameters.start_values", "flapjax.identify.flapper.flight_parameters.decode",
    "flapjax.identify.flapper.flight_parameters.std_physical", "flapjax.sim.flapper.stand.nominal_physical",
    "flapjax.sim.flapper.stand.nominal_stops",
    "flapjax.identify.flapper.stand_fit.reported", "flapjax.identify.flapper.stand_fit.nominal_gains",
    "flapjax.identify.flapper.stand_prediction.physical_values", "flapjax.identify.multirotor.model.initial_values",
    "flapjax.data.hover_log.read_scene", "flapjax.identify.multirotor.run.excitation",
    "flapjax.identify.multirotor.fit_checks.correlated_parameters", "flapjax.identify.fit_report.with_std",
    "flapjax.identify.results.versions", "flapjax.identify.solve.held_out_errors",
    "flapjax.sim.flapper.floquet.group_shares", "flapjax.sim.flapper.health.count_reasons",
    "flapjax.sim.flapper.sweep.compiler_options", "flapjax.sim.tree.compiler_options",
    "flapjax.identify.flapper.calibration.calibration_values", "flapjax.identify.flapper.fidelity.fidelity_table",
    "flapjax.sim.flapper.floquet.jacobian_check", "flapjax.data.columns.check_columns",
    # column or field name -> array / slice
    "flapjax.data.flight_log.read_flight_log", "flapjax.identify.flapper.stand_prediction.regressors",
    "flapjax.data.raw_files.load_npz", "flapjax.safe_io.load_npz",
    "flapjax.sim.flapper.description_model.joint_indices",
    "flapjax.sim.tree_kinematics.kinematics", "flapjax.tasks.base.observation_spec", "flapjax.tasks.base.summarize",
    "flapjax.tasks.base.scenario", "flapjax.tasks.base.trace", "flapjax.tasks.observation.observation_spec",
    "flapjax.tasks.rl_brax.observation_spec", "flapjax.tasks.view.world_model_fields",
    "flapjax.tasks.learning.env_overrides", "flapjax.tasks.learning.brax_kwargs",
    "flapjax.data.tables.read_table", "flapjax.data.sampling.with_dropouts",
    "flapjax.sim.flapper.averaged_body.synthetic_flight_log",
    "flapjax.sim.multirotor.synthetic_logs.simulate_hover_flight",
    "flapjax.sim.multirotor.hover_flight.fly_plan",
}
# Returning a bare ``dict`` (a record with no declared shape): to be typed.
BARE_PENDING: set[str] = set()


def dict_returners(source: str, module: str) -> dict[str, bool]:
    """``{module.function: bare}`` of the public functions and methods in
    ``source`` annotated to return ``dict`` (``bare``) or ``dict[...]``
    (nested functions are not public API)."""
    found = {}

    def visit(node, public: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, public and not child.name.startswith("_"))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                ret = child.returns
                bare = isinstance(ret, ast.Name) and ret.id == "dict"
                sub = isinstance(ret, ast.Subscript) and getattr(ret.value, "id", None) == "dict"
                if public and not child.name.startswith("_") and (bare or sub):
                    found[f"{module}.{child.name}"] = bare

    visit(ast.parse(source), True)
    return found


def package_dict_returners() -> dict[str, bool]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out.update(dict_returners(path.read_text(), module))
    return out


def test_no_public_function_returns_a_bare_dict():
    bare = sorted(k for k, is_bare in package_dict_returners().items() if is_bare and k not in BARE_PENDING)
    assert not bare, f"return a typed record (a frozen dataclass with to_json), or make these private: {bare}"


def test_public_dict_results_are_name_to_value_mappings():
    known = MAPPINGS
    unlisted = sorted(k for k, is_bare in package_dict_returners().items() if not is_bare and k not in known)
    assert not unlisted, (f"public functions returning dict[...]: {unlisted}. A record gets a typed result; "
                          "a name -> value mapping goes into MAPPINGS in tests/test_api_shape.py")


def test_the_dict_check_sees_bare_and_subscripted_results_and_skips_private_and_nested_ones():
    source = ("def a() -> dict: ...\n"
              "def b() -> dict[str, float]: ...\n"
              "def _c() -> dict: ...\n"
              "def d() -> list: ...\n"
              "class E:\n    def f(self) -> dict: ...\n"
              "class _G:\n    def h(self) -> dict: ...\n"
              "def outer() -> int:\n    def inner() -> dict: ...\n    return 1\n")
    assert dict_returners(source, "m") == {"m.a": True, "m.b": False, "m.f": True}
