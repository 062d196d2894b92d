"""Running the studies: ``flapjax identify``'s driver, with resume.

:func:`run_identification` runs the configured studies in order (lift,
moments, damping, physical, validation), writes each finished one at once to
``<out>/studies/<name>.json`` with the settings it ran with, and reuses it on
a rerun whose settings (and upstream values: the damping runs' frequency,
the validated model) are unchanged. A run killed at any point resumes from
the studies it finished.

The output folder is checked and held for the run before anything is
simulated (:func:`flapjax.identify.results.lock_output_dir`: a second run
into the same folder is refused). A run of some studies (``--study``) into a
folder that holds others merges: ``results.json`` and
``cycle_averaged.json`` keep the studies saved there earlier (listed as
``kept_studies``). Plots of an earlier run that this run did not redraw are
removed, so no plot disagrees with ``results.json``.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any, Callable, Mapping

import equinox as eqx
import jax

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.identify.flapper.config import STUDIES, validate_config
from flapjax.identify.flapper.damping import damping_frequency, study_damping
from flapjax.identify.flapper.lift import study_lift
from flapjax.identify.flapper.moments import study_moments
from flapjax.identify.flapper.physical import study_physical
from flapjax.identify.flapper.report import summary_table, write_plots
from flapjax.identify.flapper.results import IdentificationResult
from flapjax.identify.flapper.validation import study_validation
from flapjax.identify.results import StudyResult, lock_output_dir, to_jsonable, write_json
from flapjax.sim import flapper as fl
from flapjax.validation import ConfigError


def _study_config(cfg: Mapping, name: str, extra: Mapping | None = None) -> dict:
    """What a saved study must match to be reused on resume."""
    out = {"section": copy.deepcopy(cfg.get(name, {})), "float64": cfg["run"]["float64"]}
    if extra:
        out.update(extra)
    return json.loads(json.dumps(out))


#: File names of the plots :func:`write_plots` may draw.
PLOTS = ("lift_fz_vs_f2.png", "moments_fit.png", "damping_fit.png", "physical_fit.png", "loss_curves.png",
         "validation_flights.png")


def _non_finite(result: StudyResult) -> list[str]:
    """Names of the identified values (or uncertainties) that are NaN or inf."""
    bad = []
    for group in ("values", "std"):
        for key, value in to_jsonable(getattr(result, group)).items():
            flat = value if isinstance(value, list) else [value]
            if any(v is None or (isinstance(v, float) and not math.isfinite(v)) for v in flat):
                bad.append(f"{group}.{key}")
    return bad


def _load_saved(path: Path, expect: Mapping | None, echo: Callable[[str], None]) -> StudyResult | None:
    """The study saved at ``path`` if it exists, is readable, holds finite
    values and (unless ``expect`` is None) ran with the settings ``expect``;
    a damaged file is reported by name and ignored."""
    if not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        if expect is not None and saved.get("config") != expect:
            return None
        result = StudyResult.from_dict(saved["result"])
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, ConfigError, TypeError, ValueError, AttributeError) as exc:
        echo(f"warning: {path}: damaged study file ignored ({type(exc).__name__}: {exc})")
        return None
    bad = _non_finite(result)
    if bad:
        echo(f"warning: {path}: non-finite {', '.join(bad)}; the study file is ignored")
        return None
    return result


def _load_done(path: Path, expect: Mapping, echo: Callable[[str], None] = print) -> StudyResult | None:
    return _load_saved(path, expect, echo)  # None: recompute


def _save_done(path: Path, config: Mapping, result: StudyResult) -> None:
    write_json(path, {"config": config, "result": result.to_dict()})


def run_identification(
    cfg: Mapping,
    out_dir: str | Path,
    *,
    fresh: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] = print,
) -> IdentificationResult:
    """Run the configured studies into ``out_dir``.

    Each finished study is written at once to ``out_dir/studies/<name>.json``
    together with the settings it ran with; a rerun reuses every study whose
    settings (and upstream values) are unchanged, unless ``fresh``. Then
    ``results.json``, ``cycle_averaged.json`` (loads with
    :meth:`CycleAveragedParams.from_json`) and the PNG plots are written,
    with the studies saved in ``out_dir`` by earlier runs merged in. Raises
    :class:`ConfigError` when ``out_dir`` is a file, is not writable or is
    held by another run, before anything is simulated.
    """
    cfg = validate_config(copy.deepcopy(dict(cfg)))
    out = Path(out_dir)
    lock = lock_output_dir(out, name="out")
    try:
        return _run(cfg, out, fresh=fresh, progress=progress, echo=echo)
    finally:
        lock.release()


def _run(cfg: Mapping, out: Path, *, fresh: bool, progress: bool, echo: Callable[[str], None]) -> IdentificationResult:
    from tqdm.auto import tqdm

    jax.config.update("jax_enable_x64", bool(cfg["run"]["float64"]))
    (out / "studies").mkdir(parents=True, exist_ok=True)
    wanted = [s for s in STUDIES if s in cfg["run"]["studies"]]
    done: dict[str, StudyResult] = {}
    skipped = []
    bar = tqdm(total=len(wanted), desc="identify", unit="study", disable=not progress)
    nominal_avg = CycleAveragedParams.from_json(fl.AVERAGED_PATH)
    driven: list = []  # one driven-base robot for the moments and damping studies (one compiled program)

    def driven_robot():
        if not driven:
            driven.append(fl.make_driven_robot(cfg["damping"]["armature"]))
        return driven[0]

    def upstream(study: str) -> StudyResult | None:
        """A study this run did, or else the one an earlier run saved here
        (the same merge as the final results', so a partial run builds on it)."""
        if study in done:
            return done[study]
        return _load_saved(out / "studies" / f"{study}.json", None, echo)

    for name in wanted:
        extra: dict[str, Any] = {}
        if name == "moments":
            extra["armature"] = cfg["damping"]["armature"]  # the moments run on the driven base, held at rest
        if name == "damping":
            lift = upstream("lift")
            k_f = float(lift.values["k_f"]) if lift is not None else None
            if k_f is None and float(cfg["damping"]["frequency"]) == 0:
                k_f = float(nominal_avg.lift_coefficient)
            extra["frequency"] = damping_frequency(cfg, k_f)
        if name == "validation":
            model = {n: r for n in STUDIES if n != "validation" and (r := upstream(n)) is not None}
            partial = IdentificationResult.from_studies(model)
            avg = partial.to_cycle_averaged_params(nominal_avg)
            extra["identified"] = avg.to_dict()
        expect = _study_config(cfg, name, extra)
        path = out / "studies" / f"{name}.json"
        result = None if fresh else _load_done(path, expect, echo)
        if result is not None:
            skipped.append(name)
            bar.set_description(f"identify ({name}: reused)")
        else:
            bar.set_description(f"identify ({name})")
            if name == "lift":
                result = study_lift(cfg, bar=bar)
            elif name == "moments":
                result = study_moments(cfg, bar=bar, robot=driven_robot())
            elif name == "damping":
                result = study_damping(cfg, frequency=extra["frequency"], bar=bar, robot=driven_robot())
            elif name == "physical":
                result = study_physical(cfg, bar=bar)
            else:
                result = study_validation(cfg, avg, bar=bar)
            _save_done(path, expect, result)
        done[name] = result
        bar.update(1)
    bar.close()
    kept = []
    for name in STUDIES:  # a partial run keeps the studies an earlier run saved here
        if name not in done:
            saved = _load_saved(out / "studies" / f"{name}.json", None, echo)
            if saved is not None:
                done[name] = saved
                kept.append(name)
    done = {name: done[name] for name in STUDIES if name in done}
    validation = done.pop("validation", None)
    settings = {**json.loads(json.dumps(cfg)), "reused_studies": skipped}
    if kept:
        settings["kept_studies"] = kept
    final = IdentificationResult.from_studies(
        done,
        validation=validation.metrics if validation is not None else None,
        settings=settings,
    )
    if validation is not None:
        final = eqx.tree_at(lambda r: r.studies, final, {**final.studies, "validation": validation})
    final.save(out / "results.json")
    write_json(out / "cycle_averaged.json", {
        "comment": "Cycle-averaged model identified by flapjax identify (seed section 10); load with "
        "CycleAveragedParams.from_json.",
        **final.to_cycle_averaged_params(nominal_avg).to_dict(),
    })
    drawn = [Path(p).name for p in write_plots(final, out)] if cfg["run"]["plots"] else []
    stale = [name for name in PLOTS if name not in drawn and (out / name).is_file()]
    for name in stale:
        (out / name).unlink()
    lines = [summary_table(final, skipped=skipped, out_dir=None)]
    if kept:
        lines.append(f"  kept from earlier runs in {out}: {', '.join(kept)} (their studies/*.json)")
    lines.append(f"  written: {out / 'results.json'}, cycle_averaged.json"
                 + (f", {', '.join(drawn)}" if drawn else " (plots off)"))
    if stale:
        lines.append(f"  removed plots of an earlier run: {', '.join(stale)}")
    echo("\n".join(lines))
    return final
