"""A long identification run killed mid-way resumes from what it finished."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

TINY = """
[run]
studies = ["lift", "moments", "validation"]
batch_size = 2
plots = false

[lift]
frequencies = [40.0, 50.0]
duration = 0.05
discard = 0.02

[moments]
frequencies = [40.0]
tilts = [-0.2, 0.2]
duration = 0.05
discard = 0.02

[validation]
duration = 0.2
step_start = 0.1
step_length = 0.05
tail = 0.05
"""


def _identify(cfg, out):
    return [sys.executable, "-m", "flapjax.cli", "identify", "--config", str(cfg), "--out", str(out), "--no-progress"]


@pytest.mark.slow  # a whole identification run in a subprocess, killed and rerun
def test_killed_identification_resumes_from_finished_studies(tmp_path):
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY)
    out = tmp_path / "out"
    proc = subprocess.Popen(_identify(cfg, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    first = out / "studies" / "lift.json"
    deadline = time.monotonic() + 240
    while not first.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first.exists(), "the first study never finished"
    os.killpg(proc.pid, signal.SIGKILL)  # hard kill: no chance to clean up
    proc.wait()
    assert not (out / "results.json").exists()  # the run really was cut short
    saved = json.loads(first.read_text())
    stamp = first.stat().st_mtime_ns

    rerun = subprocess.run(_identify(cfg, out), capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "reused from a previous run: lift" in rerun.stdout
    assert first.stat().st_mtime_ns == stamp  # not recomputed
    results = json.loads((out / "results.json").read_text())
    assert set(results["identified"]) >= {"k_f", "k_roll", "k_pitch"}
    assert json.loads(first.read_text()) == saved


@pytest.mark.slow  # an identification run in a subprocess, interrupted three times over
def test_ctrl_c_ends_identify_with_130_and_a_resumable_folder(tmp_path):
    """SIGINT (Ctrl-C) mid-run: exit code 130 and one line, never an abort of
    the process (an ordinary exit could tear XLA's threads down under a
    running step)."""
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY)
    for attempt in range(3):
        out = tmp_path / f"out{attempt}"
        proc = subprocess.Popen(_identify(cfg, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 240
        while not (out / "studies").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5 * attempt)  # at the start, while compiling, while stepping
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, (proc.returncode, err[-2000:])
        assert "interrupted" in err and "Traceback" not in err and "pure virtual" not in err
