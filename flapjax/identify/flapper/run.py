"""Running the studies: ``flapjax identify``'s driver, with resume.

:func:`run_identification` runs the configured studies in order (lift,
moments, damping, physical, validation), writes each finished one at once to
``<out>/studies/<name>.json`` with the settings it ran with, and reuses it on
a rerun whose settings (and upstream values: the damping runs' frequency,
the validated model) are unchanged. A run killed at any point resumes from
the studies it finished.
"""

from __future__ import annotations

import copy
import json
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
from flapjax.identify.results import StudyResult, write_json
from flapjax.sim import flapper as fl
from flapjax.validation import ConfigError


def _study_config(cfg: Mapping, name: str, extra: Mapping | None = None) -> dict:
    """What a saved study must match to be reused on resume."""
    out = {"section": copy.deepcopy(cfg.get(name, {})), "float64": cfg["run"]["float64"]}
    if extra:
        out.update(extra)
    return json.loads(json.dumps(out))


def _load_done(path: Path, expect: Mapping) -> StudyResult | None:
    if not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text())
        if saved.get("config") != expect:
            return None
        return StudyResult.from_dict(saved["result"])
    except (json.JSONDecodeError, KeyError, ConfigError, TypeError, ValueError):
        return None  # a damaged file is recomputed


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
    :meth:`CycleAveragedParams.from_json`) and the PNG plots are written.
    """
    from tqdm.auto import tqdm

    cfg = validate_config(copy.deepcopy(dict(cfg)))
    jax.config.update("jax_enable_x64", bool(cfg["run"]["float64"]))
    out = Path(out_dir)
    (out / "studies").mkdir(parents=True, exist_ok=True)
    wanted = [s for s in STUDIES if s in cfg["run"]["studies"]]
    done: dict[str, StudyResult] = {}
    skipped = []
    bar = tqdm(total=len(wanted), desc="identify", unit="study", disable=not progress)
    nominal_avg = CycleAveragedParams.from_json(fl.AVERAGED_PATH)
    for name in wanted:
        extra: dict[str, Any] = {}
        if name == "damping":
            k_f = float(done["lift"].values["k_f"]) if "lift" in done else None
            if k_f is None and float(cfg["damping"]["frequency"]) == 0:
                k_f = float(nominal_avg.lift_coefficient)
            extra["frequency"] = damping_frequency(cfg, k_f)
        if name == "validation":
            partial = IdentificationResult.from_studies(done)
            avg = partial.to_cycle_averaged_params(nominal_avg)
            extra["identified"] = avg.to_dict()
        expect = _study_config(cfg, name, extra)
        path = out / "studies" / f"{name}.json"
        result = None if fresh else _load_done(path, expect)
        if result is not None:
            skipped.append(name)
            bar.set_description(f"identify ({name}: reused)")
        else:
            bar.set_description(f"identify ({name})")
            if name == "lift":
                result = study_lift(cfg, bar=bar)
            elif name == "moments":
                result = study_moments(cfg, bar=bar)
            elif name == "damping":
                result = study_damping(cfg, frequency=extra["frequency"], bar=bar)
            elif name == "physical":
                result = study_physical(cfg, bar=bar)
            else:
                result = study_validation(cfg, avg, bar=bar)
            _save_done(path, expect, result)
        done[name] = result
        bar.update(1)
    bar.close()
    validation = done.pop("validation", None)
    final = IdentificationResult.from_studies(
        done,
        validation=validation.metrics if validation is not None else None,
        settings={**json.loads(json.dumps(cfg)), "reused_studies": skipped},
    )
    if validation is not None:
        final = eqx.tree_at(lambda r: r.studies, final, {**final.studies, "validation": validation})
    final.save(out / "results.json")
    write_json(out / "cycle_averaged.json", {
        "comment": "Cycle-averaged model identified by flapjax identify (seed section 10); load with "
        "CycleAveragedParams.from_json.",
        **final.to_cycle_averaged_params(nominal_avg).to_dict(),
    })
    if cfg["run"]["plots"]:
        write_plots(final, out)
    echo(summary_table(final, skipped=skipped, out_dir=out))
    return final
