"""The flapper description file: the TOML a user writes about a
flapping-wing robot, read into a :class:`FlapperDescription`
(docs/flapper_robots.md).

It names the MJCF (or URDF) of the robot, the stroke and feathering joints
of each wing, the wing (a wing file or an inline table,
:mod:`flapjax.aero.wing_file`, or an outline whose integrals
:meth:`flapjax.aero.WingGeometry.from_planform` computes), the wing mass, the feathering stops, the
stroke schedule and the control channels. Every key is checked; an error
names the file and the field (``robot.toml: stroke.amplitude: must be a
number, got bool True``). :mod:`flapjax.sim.flapper.description_model`
reads the file (:func:`~flapjax.sim.flapper.description_model.load_robot_description`),
compiles the named model and checks the names against it;
:func:`flapjax.sim.flapper.make_robot` builds from a description.

Channel kinds (:mod:`flapjax.sim.flapper.channels`): ``"joint"`` (the set
point of a servo-held joint, the seed's plate angles), ``"stroke_plane"``
(the set point of a servo-held joint that carries both wings' stroke
hinges, so it tilts the stroke plane; checked against the model),
``"stroke_bias"``, ``"amplitude_difference"`` and ``"frequency"``.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Mapping

from flapjax import aero
from flapjax.aero import wing_file
from flapjax.aero.options import AeroOptions
from flapjax.sim.flapper import channels as flapper_channels
from flapjax.sim.flapper.model import ASSETS
from flapjax.validation import ConfigError, check_number

#: Highest flapping frequency accepted [Hz] (insects stay below 1 kHz).
MAX_FREQUENCY = 1000.0
#: Largest stroke amplitude accepted [rad] (beyond pi the stroke wraps around the body).
MAX_AMPLITUDE = math.pi
#: Prefix of a ``model`` path inside flapjax's own assets (``package:flapper.xml``).
PACKAGE_PREFIX = "package:"
#: Channel kinds of the schema, and those the step drives.
CHANNEL_KINDS = flapper_channels.KINDS
JOINT_KINDS = flapper_channels.JOINT_KINDS

_TOP = ("name", "model", "base", "wing", "wing_mass", "wings", "hinge", "stroke", "channels")
_TOP_REQUIRED = ("model", "wing", "wings", "hinge", "stroke", "channels")
_WING_SIDES = ("left", "right")
_WING_KEYS = ("stroke", "feathering")
_HINGE_KEYS = ("stop_angle", "stop_stiffness", "stop_width", "stiffness", "damping")
_HINGE_REQUIRED = ("stop_angle", "stop_stiffness", "stop_width")
_STROKE_KEYS = ("amplitude", "phase", "frequency_range")
_CHANNEL_KEYS = ("name", "kind", "joint")
_PLANFORM_KEYS = ("planform", "air_density", "shoulder_half_width", "stroke_plane_offset", "options")


@dataclasses.dataclass(frozen=True)
class JointNames:
    """The MJCF names the bridge looks up.

    Attributes:
      base: the body that carries the freejoint ``root`` on the free root.
      stroke: (left, right) stroke joints psi (each held by a position servo).
      feathering: (left, right) passive feathering joints theta; the wing body
        is the body each one moves.
      plate: the servo-held joints of the joint channels, in channel order.
      channel_kinds: the kind of every channel, in channel order.
    """

    base: str
    stroke: tuple[str, str]
    feathering: tuple[str, str]
    plate: tuple[str, ...]
    channel_kinds: tuple[str, ...] = flapper_channels.SEED_KINDS


@dataclasses.dataclass(frozen=True)
class Channel:
    """One named control input: ``kind`` and, for ``"joint"`` and ``"stroke_plane"``, the joint it sets."""

    name: str
    kind: str
    joint: str | None = None


@dataclasses.dataclass(frozen=True)
class FlapperDescription:
    """A flapping-wing robot as its description file gives it.

    Attributes:
      name: label of the robot (default: the file's stem).
      source: where it was read from (named in errors).
      model: path of the MJCF or URDF file.
      names: the joint and body names (:class:`JointNames`).
      wing: the per-wing kernels' wing (planform integrals, rho, d0, ds).
      aero_options: the wing file's ``options`` block, None without one.
      wing_mass: mass of each wing [kg]; None keeps the model's.
      hinge: feathering stops ``stop_angle`` [rad], ``stop_stiffness``
        [N m/rad], ``stop_width`` [rad], and optional ``stiffness``
        [N m/rad] and ``damping`` [N m s/rad] that replace the model's.
      amplitude: stroke amplitude A [rad].
      phase: stroke phase phi0 [rad].
      frequency_range: (f_min, f_max) flapping frequencies the robot is
        described for [Hz].
      channels: the control channels, in file order.
    """

    name: str
    source: str
    model: Path
    names: JointNames
    wing: aero.Wing
    aero_options: AeroOptions | None
    wing_mass: float | None
    hinge: Mapping[str, float]
    amplitude: float
    phase: float
    frequency_range: tuple[float, float]
    channels: tuple[Channel, ...]


def _table(obj: Any, where: str, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> Mapping[str, Any]:
    """``obj`` as a table with only ``allowed`` keys and every ``required``
    one; ``where`` is ``"file:"`` for the top level, else the table's field."""
    if not isinstance(obj, Mapping):
        raise ConfigError(f"{where.rstrip(':')}: must be a table, got {type(obj).__name__} {obj!r}")
    at = (lambda k: f"{where} {k}") if where.endswith(":") else (lambda k: f"{where}.{k}")  # noqa: E731
    unknown = [k for k in obj if k not in allowed]
    if unknown:
        raise ConfigError(f"{at(unknown[0])}: unknown key (allowed: {', '.join(allowed)})")
    missing = [k for k in required if k not in obj]
    if missing:
        raise ConfigError(f"{at(missing[0])}: missing (required: {', '.join(required)})")
    return obj


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: must be a non-empty name (text), got {type(value).__name__} {value!r}")
    return value


def _model_path(value: Any, folder: Path, where: str) -> Path:
    """The model file: ``package:<file>`` in flapjax's assets, else relative to ``folder``."""
    text = _name(value, where)
    if text.startswith(PACKAGE_PREFIX):
        path = ASSETS / text[len(PACKAGE_PREFIX):]
    else:
        path = folder / text
    if not path.is_file():
        raise ConfigError(f"{where}: model file {str(path)!r} does not exist or is not a file")
    if path.suffix.lower() not in (".xml", ".urdf"):
        raise ConfigError(f"{where}: must be an MJCF (.xml) or URDF (.urdf) file, got {str(path)!r}")
    return path


def _wing(value: Any, folder: Path, where: str) -> tuple[aero.Wing, AeroOptions | None]:
    """The wing of a wing-file path (relative to ``folder``) or of an inline table."""
    if isinstance(value, str):
        path = folder / value
        if not path.is_file():
            raise ConfigError(f"{where}: wing file {str(path)!r} does not exist or is not a file")
        return aero.read_wing_file(path)
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: must be a wing file name or a table of wing-file keys, got "
                          f"{type(value).__name__} {value!r}")
    if "planform" in value:
        return _planform_wing(value, where)
    v, options = wing_file.wing_values({"version": wing_file.VERSION, **value}, where=where)
    geometry = aero.WingGeometry(span=v["wing_length"], mean_chord=v["mean_chord"],
                                 r=[v[k] for k in wing_file.R_KEYS], z_cp=[v[k] for k in wing_file.Z_KEYS],
                                 z_rd=v["z_rd"])
    return aero.Wing(geometry=geometry, rho=v["air_density"], shoulder_half_width=v["shoulder_half_width"],
                     stroke_plane_offset=v["stroke_plane_offset"]), options


def _planform_wing(value: Mapping[str, Any], where: str) -> tuple[aero.Wing, AeroOptions | None]:
    """The wing of an inline ``[wing]`` table with a ``planform``: outline
    vertices ``[[r, y], ...]`` [m] (:meth:`aero.WingGeometry.from_planform`:
    r spanwise from the root, y chordwise with the leading edge at the
    larger y) and the wing file's air, shoulder and options keys."""
    table = _table(value, where, _PLANFORM_KEYS, _PLANFORM_KEYS[:4])
    outline = table["planform"]
    if not isinstance(outline, list) or not all(isinstance(p, list) and len(p) == 2 for p in outline):
        raise ConfigError(f"{where}.planform: must be a list of [r, y] vertices in m, got {outline!r}")
    vertices = [[check_number(f"{where}.planform[{i}][{j}]", x) for j, x in enumerate(p)]
                for i, p in enumerate(outline)]
    try:
        geometry = aero.WingGeometry.from_planform(vertices)
    except ConfigError as exc:
        raise ConfigError(f"{where}.planform: {str(exc).removeprefix('polygon: ')}") from None
    # The outline's integrals are consistent by construction; the wing-file
    # reader checks the other keys, given a rectangle's exact integrals.
    rectangle = dict(zip((*wing_file.R_KEYS, *wing_file.Z_KEYS, "z_rd"), (1.0, 0.5, 1 / 3, 0.25, 1.0, 0.5, 1 / 3, 1.0)))
    v, options = wing_file.wing_values({"version": wing_file.VERSION, "wing_length": 1.0, "mean_chord": 1.0,
                                        **rectangle, **{k: table[k] for k in table if k != "planform"}}, where=where)
    wing = aero.Wing(geometry=geometry, rho=v["air_density"], shoulder_half_width=v["shoulder_half_width"],
                     stroke_plane_offset=v["stroke_plane_offset"])
    return wing, options


def _stroke(obj: Any, where: str) -> tuple[float, float, tuple[float, float]]:
    """(amplitude [rad], phase [rad], (f_min, f_max) [Hz]) of the ``stroke`` table."""
    s = _table(obj, where, _STROKE_KEYS, ("amplitude", "frequency_range"))
    amplitude = check_number(f"{where}.amplitude", s["amplitude"])
    if not 0.0 < amplitude <= MAX_AMPLITUDE:
        raise ConfigError(f"{where}.amplitude: must lie in (0, pi] rad, got {amplitude:g}")
    phase = check_number(f"{where}.phase", s.get("phase", 0.0))
    rng = s["frequency_range"]
    if not isinstance(rng, list) or len(rng) != 2:
        raise ConfigError(f"{where}.frequency_range: must be [f_min, f_max] in Hz, got {rng!r}")
    lo, hi = (check_number(f"{where}.frequency_range[{i}]", v, 0.0, MAX_FREQUENCY) for i, v in enumerate(rng))
    if not 0.0 < lo < hi:
        raise ConfigError(f"{where}.frequency_range: must be in order, 0 < f_min < f_max, got [{lo:g}, {hi:g}] Hz")
    return amplitude, phase, (lo, hi)


def _hinge(obj: Any, where: str) -> dict[str, float]:
    h = _table(obj, where, _HINGE_KEYS, _HINGE_REQUIRED)
    out = {k: check_number(f"{where}.{k}", v, 0.0) for k, v in h.items()}
    if out["stop_angle"] <= 0.0 or out["stop_width"] <= 0.0:
        bad = "stop_angle" if out["stop_angle"] <= 0.0 else "stop_width"
        raise ConfigError(f"{where}.{bad}: must be > 0 rad, got {out[bad]:g}")
    return out


def _channel(item: Any, i: int, out: list[Channel], where: str) -> Channel:
    """One ``[[channels]]`` table, checked against the channels before it."""
    at = f"{where}[{i}]"
    c = _table(item, at, _CHANNEL_KEYS, ("name", "kind"))
    name = _name(c["name"], f"{at}.name")
    at = f"{where}[{i}] {name!r}"
    if name in (ch.name for ch in out):
        raise ConfigError(f"{at}: the name is given twice")
    kind = c["kind"]
    if kind not in CHANNEL_KINDS:
        raise ConfigError(f"{at}.kind: must be one of {list(CHANNEL_KINDS)}, got {kind!r}")
    if kind in JOINT_KINDS:
        if "joint" not in c:
            raise ConfigError(f"{at}.joint: missing: a {kind!r} channel must name the joint it sets")
        return Channel(name=name, kind=kind, joint=_name(c["joint"], f"{at}.joint"))
    if "joint" in c:
        raise ConfigError(f"{at}.joint: a {kind!r} channel moves the stroke, not a joint (only "
                          f"{list(JOINT_KINDS)} channels name one)")
    twin = [ch.name for ch in out if ch.kind == kind]
    if twin:
        raise ConfigError(f"{at}.kind: {kind!r} is already channel {twin[0]!r} (one channel of each stroke kind)")
    return Channel(name=name, kind=kind)


def _channels(obj: Any, where: str) -> tuple[Channel, ...]:
    """The ``[[channels]]`` list; an unsupported kind is refused by name."""
    if not isinstance(obj, list) or not obj:
        raise ConfigError(f"{where}: must be a non-empty list of [[channels]] tables, got {obj!r}")
    out: list[Channel] = []
    for i, item in enumerate(obj):
        out.append(_channel(item, i, out, where))
    return tuple(out)


def _names(cfg: Mapping[str, Any], channels: tuple[Channel, ...], where: str) -> JointNames:
    wings = _table(cfg["wings"], f"{where}: wings", _WING_SIDES, _WING_SIDES)
    sides = [_table(wings[s], f"{where}: wings.{s}", _WING_KEYS, _WING_KEYS) for s in _WING_SIDES]
    fields = {f"wings.{s}.{k}": _name(w[k], f"{where}: wings.{s}.{k}")
              for k in _WING_KEYS for w, s in zip(sides, _WING_SIDES)}
    fields.update({f"channels[{i}].joint": c.joint for i, c in enumerate(channels) if c.kind in JOINT_KINDS})
    seen: dict[str, str] = {}
    for field, joint in fields.items():
        if joint in seen:
            raise ConfigError(f"{where}: {field}: joint {joint!r} is already {seen[joint]} (each joint has one role)")
        seen[joint] = field
    pick = lambda key: tuple(fields[f"wings.{s}.{key}"] for s in _WING_SIDES)  # noqa: E731
    return JointNames(base=_name(cfg.get("base", "base"), f"{where}: base"), stroke=pick("stroke"),
                      feathering=pick("feathering"), plate=tuple(c.joint for c in channels if c.kind in JOINT_KINDS),
                      channel_kinds=tuple("joint" if c.kind in JOINT_KINDS else c.kind for c in channels))


def description_from_dict(cfg: Mapping[str, Any], *, folder: str | Path = ".",
                          source: str = "robot description") -> FlapperDescription:
    """A :class:`FlapperDescription` from a parsed description (paths in it
    relative to ``folder``); :class:`ConfigError` naming ``source`` and the
    field. The names are not yet checked against the model
    (:func:`flapjax.sim.flapper.description_model.load_robot_description`
    does that)."""
    folder = Path(folder)
    cfg = _table(cfg, f"{source}:", _TOP, _TOP_REQUIRED)
    wing, options = _wing(cfg["wing"], folder, f"{source}: wing")
    wing_mass = None
    if "wing_mass" in cfg:
        wing_mass = check_number(f"{source}: wing_mass", cfg["wing_mass"])
        if wing_mass <= 0.0:
            raise ConfigError(f"{source}: wing_mass: must be > 0 kg, got {wing_mass:g}")
    channels = _channels(cfg["channels"], f"{source}: channels")
    amplitude, phase, frequency_range = _stroke(cfg["stroke"], f"{source}: stroke")
    return FlapperDescription(
        name=_name(cfg.get("name", Path(source).stem), f"{source}: name"), source=source,
        model=_model_path(cfg["model"], folder, f"{source}: model"), names=_names(cfg, channels, source),
        wing=wing, aero_options=options, wing_mass=wing_mass, hinge=_hinge(cfg["hinge"], f"{source}: hinge"),
        amplitude=amplitude, phase=phase, frequency_range=frequency_range, channels=channels,
    )
