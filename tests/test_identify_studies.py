"""The registry of simulated studies: each study reads only studies that run
before it, and what it reads from them reaches its saved settings and its run
(the damping runs at the hover frequency of the lift study's k_f, the checks
run on the model the other studies identified, plate_motion weighs by the
damping study's D_w uncertainty). No rollout: the upstream studies are stand-ins."""

from __future__ import annotations

import math

import jax.numpy as jnp
import pytest

from flapjax.identify.flapper import config as idc
from flapjax.identify.flapper import studies
from flapjax.runs.flapper_studies import _Upstream
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl


def _study(name: str, values: dict, std: dict | None = None) -> StudyResult:
    return StudyResult(name=name, values={k: jnp.asarray(v) for k, v in values.items()},
                       std={k: jnp.asarray(v) for k, v in (std or {}).items()}, metrics={}, data={}, loss=jnp.zeros(0))


def _upstream(tmp_path, **done) -> _Upstream:
    cfg = idc.validate_config(idc.default_config(quick=True))
    up = _Upstream(cfg, tmp_path, print)
    up.done.update(done)
    return up


def test_the_registry_runs_every_study_after_the_ones_it_reads():
    assert tuple(studies.STUDY_RUNS) == idc.STUDIES
    for name, study in studies.STUDY_RUNS.items():
        earlier = idc.STUDIES[:idc.STUDIES.index(name)]
        assert set(study.depends_on) <= set(earlier), name
    assert "lift" in studies.STUDY_RUNS["damping"].depends_on
    assert "damping" in studies.STUDY_RUNS["plate_motion"].depends_on


def test_the_damping_runs_at_the_hover_frequency_of_the_lift_studys_k_f(tmp_path):
    """f_hover = sqrt(m g / k_f): four times the lift halves the frequency."""
    mass, g = fl.robot_weight()
    k_f = 1.7e-4
    one = _upstream(tmp_path, lift=_study("lift", {"k_f": k_f})).extra("damping")["frequency"]
    four = _upstream(tmp_path, lift=_study("lift", {"k_f": 4 * k_f})).extra("damping")["frequency"]
    assert one == pytest.approx(math.sqrt(mass * g / k_f), rel=1e-12)
    assert four == pytest.approx(one / 2, rel=1e-12)


def test_the_checks_run_on_the_model_the_other_studies_identified(tmp_path, monkeypatch):
    """validation's settings and its run see the lift study's k_f; the
    check studies never feed the model."""
    k_f = 2.3e-4
    handed = []
    monkeypatch.setattr(studies, "study_validation", lambda cfg, avg, *, bar=None: handed.append(avg))
    up = _upstream(tmp_path, lift=_study("lift", {"k_f": k_f}), fidelity=_study("fidelity", {"k_f": 9.0}))
    extra = up.extra("validation")
    studies.STUDY_RUNS["validation"].run(up, extra, None)
    assert extra["identified"]["lift_coefficient"] == pytest.approx(k_f, rel=1e-12)
    assert float(handed[0].lift_coefficient) == pytest.approx(k_f, rel=1e-12)
    nominal = float(up.nominal_avg.lift_coefficient)
    assert _upstream(tmp_path).extra("fidelity")["identified"]["lift_coefficient"] == pytest.approx(nominal, rel=1e-12)


def test_plate_motion_is_handed_the_damping_studys_rate_damping_std(tmp_path, monkeypatch):
    handed = []
    monkeypatch.setattr(studies, "study_plate_motion",
                        lambda cfg, avg, *, bar=None, rate_damping_std=None: handed.append(rate_damping_std))
    damping = _study("damping", {}, std={"D_w": [1e-7, 2e-7, 3e-7]})
    for up in (_upstream(tmp_path, damping=damping), _upstream(tmp_path)):
        studies.STUDY_RUNS["plate_motion"].run(up, up.extra("plate_motion"), None)
    assert jnp.array_equal(handed[0], jnp.asarray([1e-7, 2e-7, 3e-7])) and handed[1] is None
