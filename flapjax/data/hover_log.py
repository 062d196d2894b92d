"""Multirotor hover logs: columns, scene description, checked reading, writing.

A hover log is a table (CSV or NPZ, :mod:`flapjax.data.tables`) with one
row per logged instant of a flight in which the robot hovers at several
heights above the ground and distances from a wall, and moves between those
points (docs/data_formats.md, "Multirotor hover logs"):

- ``time_s``: time [s], strictly increasing, on a uniform grid (the
  flight controller's logging rate, 100-2000 Hz) from which rows may
  be missing (dropped samples; the rows after a gap wait for the replayed
  actuator to settle before they count);
- ``x_m``, ``y_m``, ``z_m``: motion-capture position of the centre of mass,
  world frame (z up, ground plane ``z = ground_z_m``) [m];
- ``qw``, ``qx``, ``qy``, ``qz``: motion-capture attitude, unit quaternion
  body-to-world (dimensionless, hence no unit suffix);
- ``ax_mps2``, ``ay_mps2``, ``az_mps2``: accelerometer specific force in the
  body frame at the centre of mass (``R^T (a - g)``; reads ``+9.81`` on z in
  hover) [m/s^2], bias included;
- ``thrust0_n`` ... ``thrust{n-1}_n``: the per-rotor thrust commands the
  flight controller sent this instant (its mixer output mapped to newtons
  with the thrust-stand curve, before the motor's lag) [N], rotor order of
  the robot profile;
- optional ``vx_mps``, ``vy_mps``, ``vz_mps``: world-frame velocity from the
  motion-capture system [m/s]; when absent it is estimated from the
  positions (a centred local line fit over about +-50 ms).

The scene (where the ground and the wall are) is not a per-row quantity. It
comes from, in order of precedence: the ``scene`` argument; ``# scene.KEY =
VALUE`` comment lines of a CSV log; a sidecar JSON file next to the log
(``<log stem>.scene.json``). Keys: ``ground_z_m`` (default 0),
``wall_x_m`` (where the wall plane crosses ``wall_anchor_z_m``; the robot
flies at ``x < wall_x_m``; omit it, or give ``inf`` in a comment line,
for no wall), ``wall_anchor_z_m`` (default 0), ``wall_pitch_rad`` (default
0). Every value is a number: a boolean, a string, ``2_0``, ``-inf`` or a
key given twice is refused with a :class:`DataError` naming the file.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from flapjax import safe_io
from flapjax import scene as sc
from flapjax.data.tables import Column, DataError, column_names, read_table
from flapjax.math import GRAVITY
from flapjax.validation import ConfigError, check_number, loads_json
from flapjax.data.hover_log_checks import (
    check_hover_specific_force,
    check_position_units,
    check_positions_match_velocities,
    check_sample_rate,
    estimate_velocity,
)
from flapjax.data.sampling import sample_grid

#: Scene keys of a hover log (header comments or sidecar), with defaults.
SCENE_KEYS = {"ground_z_m": 0.0, "wall_x_m": math.inf, "wall_anchor_z_m": 0.0, "wall_pitch_rad": 0.0}

#: How far a time step may be from a whole number of sample periods (a
#: flight controller's logging jitter) [periods].
GRID_TOLERANCE = 0.25

#: A wall this far away (or none) is out of reach of every rotor [m].
NO_WALL_X = 1.0e4

#: Band of the median total thrust command over the robot's weight [-]: a
#: hover log, near the ground and walls too, carries the weight on average.
THRUST_WEIGHT_RANGE = (0.5, 2.0)


def thrust_column(i: int) -> str:
    """Name of rotor ``i``'s thrust-command column (``thrust0_n``)."""
    return f"thrust{i}_n"


def thrust_rotor(name: str) -> int | None:
    """The rotor index of a thrust-command column name, None for any other name."""
    m = re.fullmatch(r"thrust(\d+)_n", name)
    return int(m.group(1)) if m else None


def hover_columns(n_rotors: int) -> list[Column]:
    """The columns a hover log of an ``n_rotors`` robot holds."""
    cols = [
        Column("time_s", True, "log time"),
        Column("x_m", True, "motion-capture position x, world"),
        Column("y_m", True, "motion-capture position y, world"),
        Column("z_m", True, "motion-capture position z, world (up)"),
        Column("qw", True, "attitude quaternion w (body to world)"),
        Column("qx", True, "attitude quaternion x"),
        Column("qy", True, "attitude quaternion y"),
        Column("qz", True, "attitude quaternion z"),
        Column("ax_mps2", True, "accelerometer specific force x, body frame"),
        Column("ay_mps2", True, "accelerometer specific force y, body frame"),
        Column("az_mps2", True, "accelerometer specific force z, body frame"),
    ]
    cols += [Column(thrust_column(i), True, f"thrust command of rotor {i}") for i in range(n_rotors)]
    cols += [Column(f"v{a}_mps", False, f"motion-capture velocity {a}, world") for a in "xyz"]
    return cols


@dataclasses.dataclass(frozen=True)
class HoverLog:
    """A checked hover log (numpy, float64).

    Attributes:
      path: the file it came from.
      time: (N,) [s].
      position: (N, 3) world [m].
      quat: (N, 4) unit quaternions [w, x, y, z] body to world.
      specific_force: (N, 3) accelerometer, body frame [m/s^2].
      thrust_command: (N, n) per-rotor thrust commands [N].
      velocity: (N, 3) world velocity [m/s] (logged or estimated).
      velocity_logged: whether the velocity came from the file.
      scene: the scene keys (:data:`SCENE_KEYS`).
    """

    path: str
    time: np.ndarray
    position: np.ndarray
    quat: np.ndarray
    specific_force: np.ndarray
    thrust_command: np.ndarray
    velocity: np.ndarray
    velocity_logged: bool
    scene: dict[str, float]

    @property
    def n_samples(self) -> int:
        return int(self.time.shape[0])

    @property
    def dt(self) -> float:
        """Median sample spacing [s]."""
        return float(np.median(np.diff(self.time)))

    def scene_model(self) -> sc.Scene:
        """The :class:`flapjax.scene.Scene` of this log (a far wall when it has none)."""
        s = self.scene
        wall_x = s["wall_x_m"] if math.isfinite(s["wall_x_m"]) else NO_WALL_X
        return sc.Scene(ground_height=s["ground_z_m"], wall_x=wall_x, wall_anchor_z=s["wall_anchor_z_m"],
                        wall_pitch=s["wall_pitch_rad"])


def _scene_from_comments(path: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    if path.suffix.lower() == ".npz":
        return out
    try:
        text = safe_io.read_bytes(path, what="data file").decode("utf-8-sig")
    except (ConfigError, UnicodeDecodeError):
        return out  # read_table reports unreadable files
    for lineno, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s.startswith("#"):
            continue
        body = s.lstrip("#").strip()
        if not body.startswith("scene."):
            continue
        key, sep, value = body[len("scene."):].partition("=")
        if not sep:
            raise DataError(f"{path}: line {lineno}: scene comment must read '# scene.KEY = VALUE', got {s!r}")
        key = key.strip()
        if key in out:
            raise DataError(f"{path}: line {lineno}: scene.{key} is given twice")
        out[key] = _scene_value(path, key, _scene_text(path, key, value.strip(), f"line {lineno}"), f"line {lineno}")
    return out


_PLAIN_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _scene_text(path: Path, key: str, text: str, where: str) -> float:
    """A scene comment's value: a plain decimal number (``2_0`` or ``0x10``
    are refused), or ``inf`` for ``wall_x_m`` (no wall)."""
    if key == "wall_x_m" and text.lower() in ("inf", "+inf"):
        return math.inf
    if not _PLAIN_NUMBER.fullmatch(text):
        raise DataError(f"{path}: {where}: scene.{key} must be a number, written as a plain decimal (as in -1.5e-3), "
                        f"got {text!r}")
    return float(text)


def _scene_value(path: Path | str, key: str, value: Any, where: str) -> float:
    """A scene value: a number (not a boolean or a string), finite but for
    ``wall_x_m = +inf`` (no wall)."""
    if key not in SCENE_KEYS:
        raise DataError(f"{path}: {where}: unknown scene key {key!r}; known: {sorted(SCENE_KEYS)}")
    try:
        v = check_number(f"scene.{key}", value, allow_nonfinite=key == "wall_x_m")
    except ConfigError as exc:
        raise DataError(f"{path}: {where}: {exc}") from None
    if v == -math.inf:
        raise DataError(f"{path}: {where}: scene.wall_x_m must be a finite distance or +inf (no wall), got -inf")
    if math.isfinite(v) and abs(v) > sc.MAX_EXTENT:
        raise DataError(f"{path}: {where}: scene.{key} must lie within +-{sc.MAX_EXTENT:g} m, got {v:g}")
    if key == "wall_pitch_rad" and abs(v) > sc.MAX_PITCH:
        raise DataError(f"{path}: {where}: scene.wall_pitch_rad must be within +-{sc.MAX_PITCH:.4f} rad, got {v:g}")
    return v


def sidecar_path(path: str | Path) -> Path:
    """Where a log's scene sidecar lives: ``<stem>.scene.json`` next to it."""
    p = Path(path)
    return p.with_name(p.stem + ".scene.json")


def read_scene(path: str | Path, scene: Mapping[str, Any] | None = None) -> dict[str, float]:
    """The scene of a log: defaults, then the sidecar, then CSV comments, then ``scene``."""
    p = Path(path)
    out = dict(SCENE_KEYS)
    side = sidecar_path(p)
    if side.exists() or side.is_symlink():  # a FIFO, a folder or a dangling link there is named, not skipped
        try:
            data = loads_json(safe_io.read_text(side, what="scene sidecar"), where=str(side),
                              allow_infinity=True)  # wall_x_m = Infinity: no wall (json.dumps writes inf so)
        except ConfigError as exc:
            raise DataError(f"cannot read the scene sidecar: {exc}") from None
        if not isinstance(data, Mapping):
            raise DataError(f"{side}: expected a JSON object of scene keys {sorted(SCENE_KEYS)}")
        for k, v in data.items():
            out[k] = _scene_value(side, k, v, "sidecar")
    out.update(_scene_from_comments(p))
    for k, v in (scene or {}).items():
        out[k] = _scene_value(p, k, v, "scene argument")
    return out


def scene_sources(path: str | Path, scene: Mapping[str, Any] | None = None) -> list[str]:
    """Where :func:`read_scene` finds a log's scene, in order of precedence
    (lowest first); empty when nothing gives one (the defaults: ground at
    z = 0, no wall)."""
    p = Path(path)
    out = []
    if sidecar_path(p).is_file():
        out.append(f"sidecar {sidecar_path(p).name}")
    if _scene_from_comments(p):
        out.append("'# scene.' lines of the log")
    if scene:
        out.append("the scene argument")
    return out


def describe_scene(scene: Mapping[str, float]) -> str:
    """One line: ground height, wall position and pitch."""
    ground = f"ground at z = {scene['ground_z_m']:g} m"
    if not math.isfinite(scene["wall_x_m"]):
        return f"{ground}, no wall"
    return (f"{ground}, wall at x = {scene['wall_x_m']:g} m (at z = {scene['wall_anchor_z_m']:g} m, "
            f"pitch {scene['wall_pitch_rad']:g} rad)")


def check_thrust_carries_weight(log: HoverLog, mass: float, robot: str) -> None:
    """Refuse thrust commands that cannot carry the robot: the median over
    the log of the summed thrust columns [N] over the weight ``mass`` [kg]
    times g outside :data:`THRUST_WEIGHT_RANGE` is a unit mistake (gram-force,
    percent or a 0-1 fraction under ``_n``) or a log of another robot.
    :class:`DataError` names the file (``log.path``), the columns, the
    ratio and the mass of ``robot`` (its name)."""
    weight = mass * GRAVITY
    total = float(np.median(np.sum(log.thrust_command, axis=1)))
    ratio = total / weight
    lo, hi = THRUST_WEIGHT_RANGE
    if not lo <= ratio <= hi:
        n = log.thrust_command.shape[1]
        raise DataError(f"{log.path}: columns {thrust_column(0)!r}...{thrust_column(n - 1)!r}: the median total "
                        f"thrust command is {total:.4g} N, {ratio:.3g} times the weight of robot {robot!r} (mass "
                        f"{mass:.4g} kg, m g = {weight:.4g} N); a hover log carries its weight on average (ratio "
                        f"{lo:g}-{hi:g}): give the thrust commands in newtons (N; not gram-force, percent or a 0-1 "
                        "fraction) and the robot that flew the log (--robot)")


def read_hover_log(path: str | Path, n_rotors: int, *, scene: Mapping[str, Any] | None = None) -> HoverLog:
    """Read and check a hover log of an ``n_rotors`` robot.

    Raises :class:`~flapjax.data.tables.DataError` naming the file, the
    column and the row: the table checks of
    :func:`~flapjax.data.tables.read_table`, plus a quaternion far from
    unit norm, a negative thrust command, a log shorter than 2 s, rows off a
    uniform time grid or more than half of it dropped, a sample rate outside
    :data:`~flapjax.data.hover_log_checks.SAMPLE_RATE_RANGE`, positions too noisy or too fast for metres
    (:func:`~flapjax.data.hover_log_checks.check_position_units`) or off their logged velocities, a
    position below the ground or beyond the wall, and a median specific
    force far from g. The thrust commands against the robot's weight are
    checked by :func:`check_thrust_carries_weight`.
    """
    p = Path(path)
    extra = sorted(i for i in map(thrust_rotor, column_names(p)) if i is not None and i >= n_rotors)
    if extra:
        raise DataError(f"{p}: column {thrust_column(extra[0])!r} (header): the log holds thrust commands of "
                        f"{extra[-1] + 1} rotors, the robot has {n_rotors}; pass the robot the log was flown with "
                        "(--robot)")
    table = read_table(p, hover_columns(n_rotors), time_column="time_s")
    time = table["time_s"]
    n = time.shape[0]
    if n < 3 or time[-1] - time[0] < 2.0:
        raise DataError(f"{p}: column 'time_s': the log spans {time[-1] - time[0]:.3g} s in {n} rows; "
                        "a hover identification needs at least 2 s")
    dt, grid = sample_grid(time, str(p), tolerance=GRID_TOLERANCE, max_missing=0.5)
    check_sample_rate(p, dt)
    quat = np.stack([table[k] for k in ("qw", "qx", "qy", "qz")], axis=1)
    norm = np.linalg.norm(quat, axis=1)
    bad = np.nonzero(np.abs(norm - 1.0) > 1e-2)[0]
    if bad.size:
        r = int(bad[0]) + 1
        raise DataError(f"{p}: columns 'qw','qx','qy','qz', row {r}: quaternion norm {norm[bad[0]]:.4g}, expected 1 "
                        "(a unit quaternion body to world)")
    quat = quat / norm[:, None]
    thrust = np.stack([table[thrust_column(i)] for i in range(n_rotors)], axis=1)
    neg = np.argwhere(thrust < 0.0)
    if neg.size:
        r, i = int(neg[0, 0]) + 1, int(neg[0, 1])
        raise DataError(f"{p}: column {thrust_column(i)!r}, row {r}: negative thrust command {thrust[r - 1, i]:g} N")
    position = np.stack([table[c] for c in ("x_m", "y_m", "z_m")], axis=1)
    logged = all(f"v{a}_mps" in table for a in "xyz")
    velocity = (np.stack([table[f"v{a}_mps"] for a in "xyz"], axis=1) if logged
                else estimate_velocity(time, position))
    if logged:
        check_positions_match_velocities(p, time, position, velocity)
    check_position_units(p, time, position, grid)
    sc_keys = read_scene(p, scene)
    below = np.nonzero(position[:, 2] <= sc_keys["ground_z_m"])[0]
    if below.size:
        r = int(below[0]) + 1
        raise DataError(f"{p}: column 'z_m', row {r}: {position[r - 1, 2]:g} m is at or below the ground "
                        f"(scene.ground_z_m = {sc_keys['ground_z_m']:g} m)")
    if math.isfinite(sc_keys["wall_x_m"]) and sc_keys["wall_pitch_rad"] == 0.0:
        beyond = np.nonzero(position[:, 0] >= sc_keys["wall_x_m"])[0]
        if beyond.size:
            r = int(beyond[0]) + 1
            raise DataError(f"{p}: column 'x_m', row {r}: {position[r - 1, 0]:g} m is at or beyond the wall "
                            f"(scene.wall_x_m = {sc_keys['wall_x_m']:g} m; the robot flies at x < wall_x_m)")
    accel = np.stack([table[k] for k in ("ax_mps2", "ay_mps2", "az_mps2")], axis=1)
    check_hover_specific_force(p, accel)
    return HoverLog(path=str(p), time=time, position=position, quat=quat, specific_force=accel,
                    thrust_command=thrust, velocity=velocity, velocity_logged=logged, scene=sc_keys)


def write_hover_log(path: str | Path, columns: Mapping[str, np.ndarray], scene: Mapping[str, float], *,
                    header: str = "") -> Path:
    """Write a hover log that :func:`read_hover_log` reads back: ``.npz``
    (float32 columns, float64 ``time_s``, ``scene`` in the sidecar
    :func:`sidecar_path`) or CSV (``header`` lines as comments first, then
    ``scene`` as ``# scene.KEY = VALUE`` lines, values to 7 significant
    digits). ``columns``: ``{name: (T,) array}`` in the units of
    :func:`hover_columns`; ``scene``: ``{key: value}`` of :data:`SCENE_KEYS`
    [m, rad]. Returns ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".npz":
        arrays = {k: (np.asarray(v, dtype=np.float64) if k == "time_s" else np.asarray(v, dtype=np.float32))
                  for k, v in columns.items()}
        np.savez_compressed(path, **arrays)
        sidecar_path(path).write_text(json.dumps(dict(scene), indent=2) + "\n")
        return path
    names = list(columns)
    lines = [f"# {h}" for h in header.splitlines()]
    lines += [f"# scene.{k} = {v!r}" for k, v in scene.items()]
    lines.append(",".join(names))
    data = np.stack([np.asarray(columns[k], dtype=float) for k in names], axis=1)
    lines += [",".join(f"{x:.7g}" for x in row) for row in data]
    path.write_text("\n".join(lines) + "\n")
    return path
