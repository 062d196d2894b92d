"""Turn ``benchmarks/results/*.json`` into the README tables and the plot.

    python -m benchmarks.report

Rewrites the part of ``benchmarks/README.md`` between the ``<!-- results -->``
markers and ``benchmarks/results/throughput.png``. Numbers are copied from
the JSON files as measured; nothing is estimated here except the
worlds-that-fit columns, which divide a memory budget by the measured bytes
per world (and say so).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import common as C
from benchmarks.crazyflow_bench import table as crazyflow_devices_table
from benchmarks.roofline import table as roofline_table

README = C.ROOT / "README.md"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
LABELS = {
    "flapper_fixed_wing": "flapper, fixed base, per-wing aero",
    "flapper_free_averaged": "flapper, free, cycle-averaged aero",
    "multirotor_mjx": "X-quad, full chain near a wall, MJX",
    "multirotor_mjx_contact": "X-quad, full chain pressed into a wall, MJX (in contact)",
    "multirotor_rigid": "X-quad, full chain near a wall, rigid backend",
    "multirotor_rigid_exact": "X-quad, full chain near a wall, rigid backend, no sensor-noise draws",
}
CRAZYFLOW_GOAL_WORLDS = (1024, 4096)  # the rigid backend must match so_rpy_rotor_drag here


def load(name: str):
    p = C.RESULTS / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def rate(x):
    return C.fmt_rate(x)


def yes(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _table(header, rows) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def section_run(res) -> list[str]:
    anyenv = next((r["env"] for r in res.values() if r and "env" in r), None)
    if anyenv is None:
        return ["No results yet: run `python -m benchmarks.run --quick`."]
    run = load("run") or {}
    lines = [
        f"Measured {anyenv['date']} on `{anyenv['device_kind']}` ({anyenv['platform']}, "
        f"{anyenv['cpu_count']} cores, {anyenv['n_devices']} JAX device(s)); JAX {anyenv['jax']}, "
        f"MuJoCo {anyenv['mujoco']}, MJX {anyenv['mujoco_mjx']}, float32 "
        f"(x64 {'on' if anyenv['x64'] else 'off'}).",
        "",
        "Machine load (1/5/15-min load average) when each section started: "
        + ", ".join(f"{k} {v['env']['load_average']}" for k, v in res.items() if v and "env" in v) + ".",
    ]
    if run:
        secs = ", ".join(f"{k} {v:.0f} s" for k, v in run.get("section_s", {}).items())
        cmds = "; ".join(f"`{h['command']}` ({h['wall_s']:.0f} s)" for h in run.get("history", []))
        lines += ["", f"Produced by {cmds}. Time per section: {secs}; "
                  f"sum {run.get('wall_s', float('nan')):.0f} s."]
    return lines


def section_throughput(tp, base, cf) -> list[str]:
    if not tp:
        return ["(throughput not run)"]
    serial = base["baseline_steps_per_s"] if base else None
    cf_rate = {(r["dynamics"], r["n_worlds"]): r["steps_per_s"] for r in (cf or {}).get("rows", []) if "dynamics" in r}
    rows = []
    for r in tp["rows"]:
        if r["workload"].startswith("flapper_fixed") and serial:
            ref, label = serial, "FlapSim serial (C MuJoCo + NumPy)"
        elif r["workload"].startswith("multirotor") and ("so_rpy_rotor_drag", r["n_worlds"]) in cf_rate:
            ref, label = cf_rate[("so_rpy_rotor_drag", r["n_worlds"])], "crazyflow so_rpy_rotor_drag"
        else:
            ref, label = None, "-"
        rows.append([LABELS.get(r["workload"], r["workload"]), r["n_worlds"], r["n_steps"], f"{r['compile_s']:.1f}",
                     rate(r["steps_per_s"]), f"{r['total_mb']:.1f}", label, rate(ref) if ref else "-",
                     f"{r['steps_per_s'] / ref:.2f}x" if ref else "-"])
    return _table(["workload", "worlds", "steps", "compile [s]", "world-steps/s", "XLA memory [MiB]",
                   "baseline (same run)", "baseline world-steps/s", "ratio"], rows)


def section_share(ks) -> list[str]:
    if not ks or not ks.get("kernel_share"):
        return ["(kernel share not run)"]
    rows = []
    for e in ks["kernel_share"]:
        per = lambda s: 1e6 * s / (e["n_steps"])  # noqa: E731  us per batched step
        rows.append([LABELS.get(e["workload"], e["workload"]), e["kernels"], e["n_worlds"],
                     f"{per(e['bare_step_s']):.0f}", f"{per(e['kernel_only_s']):.1f}",
                     f"{100 * e['kernel_share']:.1f} %", f"{per(e['full_step_s']):.0f}",
                     f"{100 * e['bridge_overhead']:+.1f} %", "<= 10 %", yes(e["goal_met"])])
    return _table(["workload", "kernels", "worlds", "bare mjx.step [us/step]", "kernels alone [us/step]",
                   "kernel share", "full step [us/step]", "full vs bare", "goal", "goal"], rows)


def section_gradient(g) -> list[str]:
    if not g:
        return ["(gradient not run)"]
    rows = []
    for c in g["cases"]:
        f, a, b = c["forward"], c["gradient_checkpoint"], c.get("gradient_no_checkpoint")
        nb = lambda fmt, key: "-" if b is None else format(b[key], fmt)  # noqa: E731 (--quick: not measured)
        rows.append([c["case"], c["n_worlds"], c["n_steps"], f"{f['steady_s']:.3f}", f"{a['steady_s']:.3f}",
                     f"{a['ratio']:.2f}x", nb(".3f", "steady_s"), "-" if b is None else f"{b['ratio']:.2f}x",
                     f"{f['temp_mb']:.1f}", f"{a['temp_mb']:.1f}", nb(".1f", "temp_mb"),
                     f"{f['compile_s']:.0f} / {a['compile_s']:.0f} / {nb('.0f', 'compile_s')}",
                     "yes" if a["finite"] and (b is None or b["finite"]) else "no: " + ", ".join(a["nonfinite_leaves"][:4]),
                     yes(c["goal_met"])])
    return _table(["rollout", "worlds", "steps", "forward [s]", "grad, checkpoint [s]", "ratio", "grad, no checkpoint [s]",
                   "ratio", "XLA temp fwd [MiB]", "temp grad ckpt [MiB]", "temp grad no ckpt [MiB]",
                   "compile fwd / ckpt / no ckpt [s]", "all grads finite", "goal <= 4x"], rows)


# A per-kernel profile of the rigid step, taken outside the suite (jax.profiler
# trace of the compiled program, 4096 worlds, one device, 2026-12-04).
RIGID_PROFILE = (
    "Where the rigid step's time goes (`jax.profiler` trace of the compiled step with sensor noise, 4096 worlds, "
    "one device, the lowest fifth of each kernel's durations summed to filter out other load: about 2.1-2.3 ms per "
    "step over some 110 fusions): the counter-based draws (Threefry over 16 lanes and the inverse error function) "
    "about 14 %, the concatenation of thrusts and lateral wall forces that feeds the rotor-wrench product about "
    "10 %, some 20 batched 3 x 3, 4 x 3 and 6 x 16 products about a quarter, 13 sums and minima over 3 or 4 "
    "entries (norms, the control margin, the health checks) about a seventh, and about a hundred small "
    "elementwise kernels the rest. Writing the products and sums out term by term does not help on XLA:CPU: it "
    "then fuses the upstream chain into every component of each result (and into every select of the divergence "
    "guard) and the step got slower in A/B runs; the draws are near the vector units' speed and cannot change "
    "without changing the random streams.")


def duration_text(run: dict) -> str:
    """The paragraph on how long ``--quick`` took and what it leaves out."""
    from benchmarks.baseline_flapsim import QUICK_BASELINE_SUBSET
    from benchmarks.throughput import CPU_WORLDS, QUICK_CPU_WORLDS, WORKLOADS

    per = ", ".join(f"{name} {sec:.0f} s" for name, sec in run.get("section_s", {}).items())
    worlds = lambda ws: ", ".join(str(n) for n in ws)  # noqa: E731
    return (f"**Duration of `--quick`.** The sections took {run['wall_s']:.0f} s in all ({per}; each section's "
            "time is that of the run that last produced its results). Most of it is compilation. To stay well "
            f"under 10 minutes, `--quick` on a CPU runs the throughput and crazyflow sections at {worlds(QUICK_CPU_WORLDS)} "
            f"worlds ({len(WORKLOADS) * len(QUICK_CPU_WORLDS)} throughput programs; the full run: {worlds(CPU_WORLDS)}, "
            f"{len(WORKLOADS) * len(CPU_WORLDS)} programs), times the serial FlapSim-style baseline on "
            f"{QUICK_BASELINE_SUBSET} of the 64 frequencies and scales it linearly (the loop is serial), and leaves "
            "the MJX robot's reference cases out of the identification gradients, as well as the comparisons "
            "whose programs compile longest (the flapper's gradient without checkpointing and the reverse mode "
            "of the rollout losses the identification differentiates forward); it also leaves out the scaling "
            "section (`--only scaling` measures it; the report keeps its last results), and its kernel share takes "
            "the full step's time from the throughput section, which has just timed the same program. "
            "`--skip crazyflow` or `--only ...` shorten a rerun. In `--quick` the MJX multirotor runs 25 k "
            "world-steps per timed call (at least 20 steps), the free flapper 100 k, the rigid backend and "
            "crazyflow 1 M, the others 200 k.")


def section_identification_gradient(g) -> list[str]:
    cases = (g or {}).get("identification", [])
    if not cases:
        return []
    rows = []
    for c in cases:
        f, a, r = c["forward"], c["gradient_auto"], c.get("gradient_reverse")
        ms = lambda x: "-" if x is None else f"{1e3 * x['steady_s']:.2f}"  # noqa: E731 (--quick: no reverse)
        rows.append([c["case"], c["n_params"], c["n_steps"] or "-", ms(f), f"{a['mode']}: {ms(a)}", f"{a['ratio']:.2f}x",
                     ms(r), "-" if r is None else f"{r['ratio']:.2f}x",
                     f"{f['compile_s']:.0f} / {a['compile_s']:.0f} / {'-' if r is None else format(r['compile_s'], '.0f')}",
                     "reference" if c.get("reference") else yes(c["goal_met"])])
    return ["Identification losses, each with the gradient mode the fit uses (`flapjax.identify.fit.value_and_grad`, "
            "`auto`: forward mode for up to 8 parameters, the value from the same pass) beside reverse mode. "
            "`physical_*`: cycle-mean F_z of fixed-base per-wing worlds at 20/30/40 Hz through the rollout the "
            "identification runs, on the pure-JAX joint tree (`*_mjx_robot`, full run only: the same through the "
            "MJX robot, a reference) (steps = physics steps summed over the worlds); `lift_k_f`, `moments_*`: the averaged model's "
            "closed-form prediction on the sweep's measurements (no rollout is differentiated).", "",
            *_table(["loss", "parameters", "steps", "forward [ms]", "gradient as fitted [ms]", "ratio",
                     "reverse [ms]", "ratio", "compile fwd / fitted / reverse [s]", "goal <= 3x"], rows)]


def section_baseline_a(b) -> list[str]:
    if not b:
        return ["(baseline A not run)"]
    measured = (f"{b['baseline_s']:.1f} s" if b["baseline_measured_all"] else
                f"{b['baseline_s_for_all']:.1f} s (measured {b['baseline_s']:.1f} s on "
                f"{b['baseline_frequencies_measured']} frequencies, scaled linearly: the loop is serial)")
    rows = [[f"{b['n_frequencies']} frequencies x {b['duration_s']} s ({b['n_steps']} steps)",
             f"{b['flapjax_cold_s']:.1f} s", f"{b['flapjax_warm_s']:.2f} s", measured,
             f"{b['speedup_with_compile']:.1f}x", f"{b['speedup_warm']:.0f}x", f">= {b.get('goal', 5.0):g}x (with compile)",
             yes(b["goal_met"]), f"{100 * b['max_rel_diff_fz']:.3g} %",
             b["flapjax_recompilations_on_new_frequencies"]]]
    if "mjx_cold_s" in b:
        rows.append(["the same on the MJX robot (same run)", f"{b['mjx_cold_s']:.1f} s", f"{b['mjx_warm_s']:.2f} s",
                     "", f"{b['mjx_speedup_with_compile']:.1f}x", f"{b['mjx_speedup_warm']:.0f}x", "", "",
                     f"{100 * b['max_rel_diff_fz_tree_vs_mjx']:.2g} % vs the tree", ""])
    return _table(["sweep", "flapjax, cold (build + compile + run)", "flapjax, warm",
                   "baseline: C MuJoCo + NumPy, serial", "speed-up incl. compile", "speed-up warm", "goal", "goal",
                   "max F_z difference", "recompiles on new frequencies"], rows)


def section_quadrotor(tp, cf) -> list[str]:
    if not cf:
        return ["(crazyflow not run)"]
    if not cf.get("available"):
        return [f"crazyflow SKIPPED: {cf.get('message')}"]
    fj = {(r["workload"], r["n_worlds"]): r for r in (tp or {}).get("rows", [])}
    cfr = {(r["dynamics"], r["n_worlds"]): r for r in cf["rows"] if "dynamics" in r}
    worlds = sorted({n for (_, n) in cfr})
    rows = []
    for n in worlds:
        mjx_r, rig = fj.get(("multirotor_mjx", n)), fj.get(("multirotor_rigid", n))
        exact = fj.get(("multirotor_rigid_exact", n))
        a, b = cfr.get(("so_rpy_rotor_drag", n)), cfr.get(("first_principles", n))
        g = lambda r: rate(r["steps_per_s"]) if r else "-"  # noqa: E731
        ratio = lambda x, y: f"{x['steps_per_s'] / y['steps_per_s']:.2f}x" if x and y else "-"  # noqa: E731
        rows.append([n, g(a), g(b), g(exact), ratio(exact, a), ratio(exact, b), g(rig), ratio(rig, a), g(mjx_r),
                     ratio(mjx_r, a), f"{a['compile_s']:.1f} / {b['compile_s']:.1f}" if a and b else "-"])
    return _table(["worlds", "crazyflow so_rpy_rotor_drag", "crazyflow first_principles",
                   "flapjax rigid, no sensor-noise draws", "ratio to so_rpy_rotor_drag", "ratio to first_principles",
                   "flapjax rigid, sensor noise drawn", "ratio to so_rpy_rotor_drag", "flapjax MJX",
                   "ratio to so_rpy_rotor_drag", "crazyflow compile [s]"], rows) + [
        "", f"crazyflow {cf.get('crazyflow_version', '?')} (its own venv, JAX {cf.get('crazyflow_jax_version', '?')}), "
        f"dt = {cf['dt']} s for all columns; world-steps/s, steady state, same step counts as the throughput table. "
        "Like for like: crazyflow has no sensor noise, and the benchmark worlds have none either (zero standard "
        "deviations); `MultirotorWorld(sensor_noise=False)` skips the draws and hands the controller the exact state, "
        "`sensor_noise=True` (the default) draws 12 normals per step and multiplies them by zero."]


def section_retrace(rt, tp, g) -> list[str]:
    rows = []
    for c in (rt or {}).get("checks", []):
        rows.append([c["entry_point"], f"{c['first_call_s']:.1f}", c["compilations_first"],
                     f"{c['second_call_s']:.2f}", c["recompilations_second"], "<= 20 s, no retrace", yes(c["goal_met"])])
    out = _table(["entry point (16 worlds, 50 steps)", "first call incl. compile [s]", "compilations",
                  "second call, new values [s]", "recompilations", "goal", "goal"], rows) if rows else ["(retrace not run)"]
    if tp:
        comp = {}
        for r in tp["rows"]:
            comp.setdefault(r["workload"], []).append(r["compile_s"])
        out += ["", "Compile time of the batched rollouts in the throughput table (min - max over world counts):", ""]
        out += _table(["rollout", "compile [s]", "goal <= 20 s"],
                      [[LABELS.get(k, k), f"{min(v):.1f} - {max(v):.1f}", yes(max(v) <= 20.0)] for k, v in comp.items()])
    if g:
        out += ["", "Compile time of the gradient functions: see the gradient table (goal applies to rollouts)."]
    return out


def section_memory(tp) -> list[str]:
    if not tp or not tp.get("memory"):
        return ["(memory not measured)"]
    rows = []
    for m in tp["memory"]:
        rows.append([LABELS.get(m["workload"], m["workload"]), f"{m['bytes_per_world'] / 1024:.1f}",
                     f"{m['measured_from'][0]} -> {m['measured_from'][1]}",
                     f"{m['worlds_in_host RAM 24 GB']:,}", f"{m['worlds_in_GPU 80 GB']:,}"])
    return _table(["workload", "KiB per world (XLA args + outputs + temps)", "slope between worlds",
                   "worlds in 24 GB RAM (measured slope)", "worlds in 80 GB GPU (on paper: same slope)"], rows) + [
        "", f"Peak resident set of the throughput process: {tp.get('peak_rss_mb', float('nan')):.0f} MiB."]


def section_scaling(sc) -> list[str]:
    if not sc:
        return ["(scaling not run)"]
    rows = [[LABELS.get(r["workload"], r["workload"]), r["n_worlds"], r["devices"], rate(r["steps_per_s"]),
             f"{r.get('speedup', 1.0):.2f}x", r.get("identical_to_1_device", "-"),
             f"{r['max_abs_qpos_diff']:.2g}" if "max_abs_qpos_diff" in r else "-"] for r in sc["rows"]]
    return _table(["workload", "worlds", "devices", "world-steps/s", "vs 1 device", "bitwise identical",
                   "max |qpos diff|"], rows)


def plot(tp, cf, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in LABELS:
        rs = sorted((r for r in (tp or {}).get("rows", []) if r["workload"] == name), key=lambda r: r["n_worlds"])
        if rs:
            ax.plot([r["n_worlds"] for r in rs], [r["steps_per_s"] for r in rs], "o-", label=f"flapjax: {LABELS[name]}")
    for dyn in ("so_rpy_rotor_drag", "first_principles"):
        rs = sorted((r for r in (cf or {}).get("rows", []) if r.get("dynamics") == dyn), key=lambda r: r["n_worlds"])
        if rs:
            ax.plot([r["n_worlds"] for r in rs], [r["steps_per_s"] for r in rs], "s--", label=f"crazyflow {dyn}")
    base = load("baseline_flapsim")
    if base:
        ax.axhline(base["baseline_steps_per_s"], color="k", ls=":", label="FlapSim serial (C MuJoCo + NumPy)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("worlds")
    ax.set_ylabel("world-steps per second")
    env = (tp or {}).get("env", {})
    ax.set_title(f"throughput on {env.get('device_kind', '?')}, {env.get('date', '')[:10]}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# Default use (flapjax on every device, crazyflow as installed), 4096 worlds:
# flapjax's rigid X-quad with sensor noise drawn over each crazyflow model.
DEFAULT_USE_GOALS = {"so_rpy_rotor_drag": 1.8, "first_principles": 1.5}


def default_use_goals(cf) -> list[list[str]]:
    """Goal rows: each engine as a user runs it, same run, 4096 worlds."""
    if not cf or not cf.get("flapjax_rows"):
        return []
    fj = [r for r in cf["flapjax_rows"] if r["workload"] == "multirotor_rigid" and r["n_worlds"] == 4096]
    if not fj:
        return []
    best = max(fj, key=lambda r: r["devices"])  # the default: every device
    rows = []
    for model, goal in DEFAULT_USE_GOALS.items():
        c = next((r for r in cf["rows"] if r.get("dynamics") == model and r["n_worlds"] == 4096
                  and r.get("devices", 1) == 1 and "error" not in r), None)
        if c is not None:
            ratio = best["steps_per_s"] / c["steps_per_s"]
            rows.append([f"default use, 4096 worlds: flapjax rigid with sensor noise ({best['devices']} devices) >= "
                         f"{goal}x crazyflow {model} (1 device)",
                         f"{ratio:.2f}x ({rate(best['steps_per_s'])} vs {rate(c['steps_per_s'])})", yes(ratio >= goal)])
    return rows


def section_goals(tp, ks, g, base, cf, rt, run) -> list[str]:
    rows = []
    for e in (ks or {}).get("kernel_share", []):
        rows.append([f"kernels <= 10 % of bare mjx.step at 1024 worlds: {LABELS.get(e['workload'], e['workload'])}",
                     f"{100 * e['kernel_share']:.1f} %", yes(e["goal_met"])])
    for c in (g or {}).get("cases", []):
        a, b = c["gradient_checkpoint"], c.get("gradient_no_checkpoint")
        rows.append([f"gradient <= 4x forward: {c['case']}, {c['n_worlds']} worlds",
                     f"{a['ratio']:.2f}x" + ("" if b is None else f" (no checkpoint {b['ratio']:.2f}x)"),
                     yes(c["goal_met"])])
        if b is None:  # --quick: the rollout without checkpointing is not compiled
            continue
        bounded = a["temp_mb"] < b["temp_mb"]
        rows.append([f"memory bounded with checkpointing: {c['case']}, {c['n_worlds']} worlds",
                     f"XLA temp {a['temp_mb']:.1f} MiB with vs {b['temp_mb']:.1f} MiB without", yes(bounded)])
    for c in (g or {}).get("identification", []):
        if c.get("reference"):
            continue
        rows.append([f"identification gradient <= 3x forward: {c['case']} ({c['n_params']} parameter{'s' if c['n_params'] != 1 else ''})",
                     f"{c['gradient_auto']['ratio']:.2f}x ({c['gradient_auto']['mode']} mode"
                     + (f"; reverse {c['gradient_reverse']['ratio']:.2f}x)" if "gradient_reverse" in c else ")"),
                     yes(c["goal_met"])])
    if cf and cf.get("available") and tp:
        cfr = {(r["dynamics"], r["n_worlds"]): r["steps_per_s"] for r in cf["rows"] if "dynamics" in r}
        fj = {(r["workload"], r["n_worlds"]): r["steps_per_s"] for r in tp["rows"]}
        for n in CRAZYFLOW_GOAL_WORLDS:
            for name in ("multirotor_rigid_exact", "multirotor_rigid"):
                if ("so_rpy_rotor_drag", n) in cfr and (name, n) in fj:
                    r = fj[(name, n)] / cfr[("so_rpy_rotor_drag", n)]
                    what = "no sensor-noise draws" if name == "multirotor_rigid_exact" else "sensor noise drawn"
                    rows.append([f"rigid backend ({what}) >= crazyflow so_rpy_rotor_drag at {n} worlds",
                                 f"{r:.2f}x ({rate(fj[(name, n)])} vs {rate(cfr[('so_rpy_rotor_drag', n)])})",
                                 yes(r >= 1.0) if name == "multirotor_rigid_exact" else
                                 ("met" if r >= 1.0 else "below (like-for-like row above)")])
    rows += default_use_goals(cf)
    if base:
        rows.append([f"vmapped sweep of {base['n_frequencies']} frequencies >= {base.get('goal', 5.0):g}x the serial baseline, "
                     "compile included",
                     f"{base['speedup_with_compile']:.2f}x ({base['speedup_warm']:.0f}x without compile)",
                     yes(base["goal_met"])])
    if tp:
        for name in LABELS:
            cs = [r["compile_s"] for r in tp["rows"] if r["workload"] == name]
            if cs:
                rows.append([f"compile < 20 s: {LABELS[name]}", f"{max(cs):.1f} s (max over world counts)",
                             yes(max(cs) < 20.0)])
    for c in (rt or {}).get("checks", []):
        rows.append([f"no retrace on new values: {c['entry_point']}", f"{c['recompilations_second']} recompilations",
                     yes(c["recompilations_second"] == 0)])
    if run:
        total = run.get("wall_s", float("nan"))
        rows.append(["`python -m benchmarks.run --quick` under 10 minutes", f"{total:.0f} s (sum of sections)",
                     yes(total < 600)])
    return _table(["goal", "measured", "status"], rows) if rows else ["(no results)"]


def section_analysis(tp, ks, g, base, cf, rt, sc, run) -> list[str]:
    """Explanations of the numbers above, with the numbers filled in from the results."""
    out = []
    envs = [r["env"] for r in (tp, ks, g, base, cf, rt, sc) if r and "env" in r]
    if envs:
        loads = [e["load_average"][0] for e in envs]
        cores = envs[0]["cpu_count"]
        # The 1-min load at a section's start counts the benchmark's own
        # previous section, which keeps up to all cores busy.
        busy = max(loads) > cores + 0.5
        out += [f"**Conditions.** Load average (1 min) {min(loads):.1f}-{max(loads):.1f} across the sections on "
                f"{cores} cores. " + ("The machine was shared with other work while this ran: every time here is "
                                      "inflated by that load and repeated timings scatter more than on a quiet "
                                      "machine (each JSON keeps the individual times). " if busy else
                                      "Apart from the benchmark itself (whose previous section the load "
                                      "average still counts) the machine was quiet; repeated runs on it still "
                                      "scattered by up to ~20 % in wall time (each JSON keeps the individual "
                                      "times). ")
                + "[`docs/mjx_notes.md`](../docs/mjx_notes.md#cost-and-throughput) reports 4-8 s per rollout "
                "compilation on the quiet machine. "
                "To measure again, run `python -m benchmarks.run --quick`: it rewrites every table, this text and "
                "the plot.", ""]
    if ks:
        e = {x["workload"]: x for x in ks["kernel_share"]}
        parts = [f"{e[k]['kernels']} {100 * e[k]['kernel_share']:.1f} % of the bare `mjx.step` of "
                 f"the {LABELS.get(k, k)}" for k in e]
        met = all(x["goal_met"] for x in e.values())
        text = (f"**Kernel share ({'met' if met else 'missed'}).** At {ks['kernel_share'][0]['n_worlds']} worlds: "
                + "; ".join(parts) + ". The \"full vs bare\" column is larger because a bridge step does more than "
                "call the kernels: the flapper bridge computes servo feed-forward and feathering-stop torques, runs "
                "MuJoCo's pipeline as split stages and masks diverged worlds.")
        if "multirotor_mjx" in e and e["multirotor_mjx"]["full_step_s"] > 1.3 * e["multirotor_mjx"]["bare_step_s"]:
            m = e["multirotor_mjx"]
            text += (f" For the multirotor the full step took {m['full_step_s'] / m['bare_step_s']:.1f}x the bare "
                     "step, and that gap is not in the kernels. An experiment outside the suite (2026-12-01, 1024 "
                     "worlds, 100 steps, measured once under load) that removed the divergence mask from "
                     "`MultirotorWorld.step` changed throughput only within noise (16.1 k vs 18.5 k world-steps/s), "
                     "so the mask is not the cause; where the rest goes needs a profile of `MultirotorWorld.step`.")
        out += [text, ""]
    if tp:
        mj = [r["steps_per_s"] for r in tp["rows"] if r["workload"] == "multirotor_mjx"]
        rg = [r["steps_per_s"] for r in tp["rows"] if r["workload"] == "multirotor_rigid"]
        if mj and rg:
            out += [f"**MJX multirotor throughput.** The MJX X-quad ran at {rate(min(mj))}-{rate(max(mj))} "
                    f"world-steps/s, the rigid backend at {rate(min(rg))}-{rate(max(rg))}. The MJX model has 22 "
                    "contact pairs (hull box, four hub spheres and the arm capsule against ground and wall), 88 "
                    "pyramidal constraint rows, which MJX's solver processes every step even while nothing "
                    "touches. For flight that never touches a surface the rigid backend is the fast path; MJX is "
                    "for contact.", ""]
    if g:
        cs = g["cases"]
        desc = "; ".join(f"{c['case']} at {c['n_worlds']} worlds {c['gradient_checkpoint']['ratio']:.1f}x with "
                         "checkpointing" + (f", {c['gradient_no_checkpoint']['ratio']:.1f}x without"
                                            if "gradient_no_checkpoint" in c else "") for c in cs)
        met = all(c["goal_met"] for c in cs)
        text = (f"**Gradient <= 4x forward ({'met' if met else 'missed'}).** Gradient time / forward time: {desc}. ")
        flap = next((c for c in cs if c["case"].startswith("flapper")), None)
        if not met:
            rig = sorted((c for c in cs if c["case"].startswith("multirotor_rigid")), key=lambda c: c["n_worlds"])
            missed = [c for c in cs if not c["goal_met"]]
            text += "Missed by: " + ", ".join(f"{c['case']} at {c['n_worlds']} worlds" for c in missed) + ". "
            if rig and all(c["goal_met"] for c in rig):
                text += ("The pure-JAX rigid backend meets the goal, so what is left is MJX's reverse pass. What "
                         "got the rigid backend there: its noise draws no longer run JAX's rolled Threefry loops, "
                         "its inertia matrices are computed once per rollout instead of in every reverse step, and "
                         "the checkpointed step uses `prevent_cse=False` inside the scan and keeps the matrix "
                         "products without batch dimensions for the reverse pass "
                         "(`flapjax.sim.rollout.REMAT_POLICY`: 3.8-3.9x against 4.1-4.2x in A/B runs). ")
            elif len(rig) >= 2:
                lo, hi = rig[0]["gradient_checkpoint"]["ratio"], rig[-1]["gradient_checkpoint"]["ratio"]
                text += (f"The rigid backend's ratio {'falls' if hi < lo else 'does not fall'} with the batch "
                         f"({lo:.1f}x at {rig[0]['n_worlds']} worlds, {hi:.1f}x at {rig[-1]['n_worlds']}). ")
            elif rig:
                r0 = rig[-1]["gradient_checkpoint"]["ratio"]
                fwd = rig[-1]["forward"]["steps_per_s"]
                grad = rig[-1]["gradient_checkpoint"]["steps_per_s"]
                text += (f"The rigid backend reads {r0:.2f}x here (forward {fwd / 1e6:.2f} M, checkpointed "
                         f"gradient {grad / 1e3:.0f} k world-steps/s). Earlier runs read 3.7-4.9x with a forward "
                         "of about 1.9 M and the same gradient speed: writing the step's small products out "
                         "(`flapjax.rotor.unrolled`) made the forward about 1.7x faster and left the reverse "
                         "pass where it was, so the ratio grew with the forward's speed, not with the "
                         "gradient's cost. The gradient came down from 10x when its noise draws stopped running JAX's "
                         "rolled Threefry loops, its inertia matrices moved out of the reverse step (computed once "
                         "per rollout), the checkpointed step got `prevent_cse=False` and keeps the matrix products "
                         "without batch dimensions (`flapjax.sim.rollout.REMAT_POLICY`; 3.8-3.9x against "
                         "4.1-4.2x when nothing is kept, in A/B runs; keeping transcendental results as well "
                         "was no better, keeping divisions or powers worse). A profile of the "
                         "gradient shows the rematerialized steps and the per-step saving of the carried state "
                         "(including the step's noise draws) as the remaining cost. ")
            text += ("The flapper's reverse pass runs many more small kernels per step than its forward pass")
            if flap and flap["forward"].get("hlo_ops"):
                f0, f1 = flap["forward"]["hlo_ops"], flap["gradient_checkpoint"]["hlo_ops"]
                text += (f": the optimized flapper program has {f0['scatter']} scatter and {f0['gather']} gather "
                         f"ops forward, {f1['scatter']} and {f1['gather']} in the checkpointed gradient (the "
                         "transposes of MJX's indexing become scatter-adds)")
            text += (", and at 4 worlds each of them is a few microseconds of fixed cost. Larger batches and a "
                     "GPU are where the ratio may approach the goal (not measured here). ")
        bounded = next((c for c in cs if "gradient_no_checkpoint" in c), None)  # --quick: the rigid multirotor
        if bounded:
            text += (f"Checkpointing bounds memory: XLA temporaries of the {bounded['case']} gradient are "
                     f"{bounded['gradient_checkpoint']['temp_mb']:.1f} MiB with checkpointing vs "
                     f"{bounded['gradient_no_checkpoint']['temp_mb']:.0f} MiB without ({bounded['n_steps']} steps, "
                     f"{bounded['n_worlds']} worlds; one rollout length measured). ")
        text += ("The MJX multirotor gradient (full mode only: its compilation alone takes minutes on this CPU) "
                 "needs one constraint-solver iteration, because reverse mode cannot pass MJX's iterative solver "
                 "loop; in a development run (2 worlds, 50 steps) some of its gradient leaves were not finite, and "
                 "the full run lists which (`nonfinite_leaves` in `gradient.json`).")
        out += [text, ""]
    if base:
        cold, warm, b = base["flapjax_cold_s"], base["flapjax_warm_s"], base["baseline_s_for_all"]
        out += [f"**Baseline A, FlapSim-style sweep ({'met' if base['goal_met'] else 'missed'} with compile).** The "
                f"serial baseline (C MuJoCo + NumPy per-wing model, float64) took {b:.0f} s for the "
                f"{base['n_frequencies']}-frequency sweep; flapjax "
                + ("(its default fixed-base robot, the pure-JAX joint tree) " if "mjx_cold_s" in base else "")
                + f"took {cold:.1f} s from a cold start, of which about "
                f"{cold - warm:.0f} s is building and compiling the sweep function (a second sweep with new "
                f"frequencies ran in {warm:.1f} s with {base['flapjax_recompilations_on_new_frequencies']} "
                f"recompilations): {base['speedup_with_compile']:.1f}x including compile, "
                f"{base['speedup_warm']:.0f}x without."
                + (f" On the MJX robot the same sweep took {base['mjx_cold_s']:.1f} s cold and "
                   f"{base['mjx_warm_s']:.1f} s warm ({base['mjx_speedup_with_compile']:.1f}x with compile); the two "
                   f"robots' F_z differ by at most {100 * base['max_rel_diff_fz_tree_vs_mjx']:.2g} %."
                   if "mjx_cold_s" in base else "")
                + ("" if base["goal_met"] else f" The {base.get('goal', 5.0):g}x goal with compile needs the compile time to "
                   "shrink. For "
                   "repeated sweeps, JAX's persistent compilation cache "
                   "(`jax.config.update(\"jax_compilation_cache_dir\", path)`) removes it from every run after the "
                   "first (not measured here).")
                + f" Both computed the same sweep: their cycle-mean F_z differ by at most "
                f"{100 * base['max_rel_diff_fz']:.3g} % (flapjax float32, baseline float64).", ""]
    if cf and cf.get("available") and tp:
        cfr = {(r["dynamics"], r["n_worlds"]): r["steps_per_s"] for r in cf["rows"] if "dynamics" in r}
        fj = {(r["workload"], r["n_worlds"]): r["steps_per_s"] for r in tp["rows"]}
        common = sorted(n for (d, n) in cfr if d == "so_rpy_rotor_drag" and ("multirotor_rigid_exact", n) in fj)
        if common:
            n = common[-1]
            a, b2 = cfr[("so_rpy_rotor_drag", n)], cfr.get(("first_principles", n), float("nan"))
            e_ = fj[("multirotor_rigid_exact", n)]
            r_ = fj.get(("multirotor_rigid", n), float("nan"))
            m_ = fj.get(("multirotor_mjx", n), float("nan"))
            out += [f"**Baseline B, crazyflow (ratio as measured).** At {n} worlds crazyflow's `so_rpy_rotor_drag` "
                    f"ran {rate(a)} and `first_principles` {rate(b2)} world-steps/s. flapjax's quadrotor with the "
                    f"full chain on the rigid backend ran {rate(e_)} without sensor-noise draws ({e_ / a:.2f}x and "
                    f"{e_ / b2:.2f}x of them), {rate(r_)} drawing sensor noise ({r_ / a:.2f}x), and {rate(m_)} on "
                    "MJX. Every flapjax step runs the geometric SE(3) controller, the weighted allocation with its "
                    "unreachable residual, saturation, actuator lag and rate limit, per-rotor ray casts to ground "
                    "and wall, the ground and near-wall effects with their lateral forces, body drag, wind with "
                    "gusts and OU turbulence (one counter-based draw per step), quaternion integration, contact "
                    "flags and divergence masking; crazyflow's `so_rpy_rotor_drag` integrates a fitted low-order "
                    "attitude and thrust model (and `first_principles` a rigid body driven by four rotor speeds) "
                    "behind a position controller at 100 Hz and an attitude controller at 500 Hz, with no surfaces "
                    "and no random numbers. What made the rigid backend 2.3x faster than in the first measurement "
                    "(1.23 M world-steps/s at 4096 worlds): the noise draws, once four splits and draws of JAX "
                    "keys per step that XLA:CPU runs as rolled loops, are now one unrolled Threefry evaluation per "
                    "step over whole vector lanes (`flapjax.rng`), and the rigid step applies a closed-form inverse "
                    "inertia instead of a linear solve. Drawing sensor noise (12 normals and a noisy attitude per "
                    f"step) made the step {100 * (1 - r_ / e_):.0f} % slower here; the airframes differ too (a 27 g Crazyflie vs the "
                    "1.6 kg X-quad with arm), which does not change the cost of a step. " + RIGID_PROFILE, ""]
    if tp:
        slow = sorted({LABELS.get(r["workload"], r["workload"]) for r in tp["rows"] if r["compile_s"] >= 20.0})
        out += ["**Compile time.** "
                + ("Every rollout compiled in under 20 s. " if not slow else
                   "Over 20 s: " + ", ".join(slow) + " (at some world counts; see the throughput table). ")
                + "No entry point in the retrace table recompiled when called again with new parameter values of "
                  "the same shapes.", ""]
    if run:
        out += [duration_text(run), ""]
    if sc:
        rows = [r for r in sc["rows"] if "speedup" in r]
        if rows:
            desc = "; ".join(f"{LABELS.get(r['workload'], r['workload'])} {r['speedup']:.2f}x, max |qpos| difference "
                             f"{r['max_abs_qpos_diff']:.2g}" for r in rows)
            out += [f"**Sharding.** {rows[0]['n_worlds']} worlds over {rows[0]['devices']} forced host devices vs "
                    f"one device: {desc}. ([`docs/mjx_notes.md`](../docs/mjx_notes.md#sharding) measured 1.4-1.8x with 2 "
                    "forced devices on the "
                    "quiet machine.) The float32 differences presumably come from XLA vectorising a half-size "
                    "slice differently; the float64 test in `tests/test_sharding.py` is bit-for-bit.", ""]
    out += ["**Memory per world.** The slope of XLA's buffer total from 1 to 4096 worlds (state in and out plus the "
            "temporaries of the whole scanned rollout). Dividing 24 GB and 80 GB by it gives the worlds-that-fit "
            "columns: the host figure applies to this CPU build; the GPU figure is the same arithmetic on paper "
            "(same dtypes and buffers, not measured on a GPU). A rollout that records a per-step trace needs the "
            "trace on top (`n_steps x` its size per world)."]
    return out


def build() -> str:
    names = ("throughput", "kernel_share", "gradient", "baseline_flapsim", "crazyflow", "retrace", "scaling")
    res = {n: load(n) for n in names}
    tp, ks, g, base, cf, rt, sc = (res[n] for n in names)
    parts = ["## Results", "", *section_run(res), "",
             "### Goals", "", *section_goals(tp, ks, g, base, cf, rt, load("run")), "",
             "![throughput vs worlds](results/throughput.png)", "",
             "### 1. Throughput vs worlds", "", *section_throughput(tp, base, cf), "",
             "### 2. Kernel share at 1024 worlds", "", *section_share(ks), "",
             "### 3. Gradient cost", "", *section_gradient(g), "", *section_identification_gradient(g), "",
             "### 4. Baseline A: FlapSim-style serial sweep", "", *section_baseline_a(base), "",
             "### 5. Baseline B: crazyflow quadrotors vs flapjax's quadrotor", "", *section_quadrotor(tp, cf), "",
             *crazyflow_devices_table(cf), "",
             "### 6. Compile time and retrace checks", "", *section_retrace(rt, tp, g), "",
             "### Memory per world", "", *section_memory(tp), "",
             "### Sharding over devices", "", *section_scaling(sc), "",
             "### 7. Roofline: distance from this machine's peak", "", *roofline_table(load("roofline"), LABELS), "",
             "## Reading the numbers", "", *section_analysis(tp, ks, g, base, cf, rt, sc, load("run"))]
    return "\n".join(parts) + "\n"


def write() -> None:
    text = build()
    readme = README.read_text() if README.exists() else ""
    if BEGIN in readme and END in readme:
        head, rest = readme.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        readme = head + BEGIN + "\n" + text + END + tail
    else:
        readme = readme.rstrip() + "\n\n" + BEGIN + "\n" + text + END + "\n"
    README.write_text(readme)
    tp, cf = load("throughput"), load("crazyflow")
    if tp or cf:
        C.RESULTS.mkdir(parents=True, exist_ok=True)
        plot(tp, cf, C.RESULTS / "throughput.png")
    C.log(f"wrote {README} and {C.RESULTS / 'throughput.png'}")


if __name__ == "__main__":
    write()
