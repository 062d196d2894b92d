"""Frames with MuJoCo's own renderer (the MuJoCo side of :mod:`flapjax.render`).

Headless machines render through EGL: set ``MUJOCO_GL=egl`` before Python
starts. When ``MUJOCO_GL`` is unset and there is no display, :class:`FrameRenderer`
builds its own OpenGL context with EGL (only for its renderer; MuJoCo's
choice for everything else is left alone).

    with FrameRenderer(mj_model, width=320, height=240) as r:
        image = r.frame(qpos, lookat=qpos[0:3])              # (240, 320, 3) uint8

A world's own geometry (randomized wall pose, ground height, box size,
colours) reaches the renderer through ``model_fields``: arrays of the
per-world MJX model (``geom_pos``, ``geom_quat``, ``geom_size``,
``geom_rgba``) copied into the renderer's ``MjModel``.

Models without a floor of their own (the flapping-wing robot) can be drawn
over one: ``ground=z`` adds a visual-only plane at height ``z`` [m] to each
frame's scene (it is not part of the model and touches no physics).
"""

from __future__ import annotations

import copy
import os
from typing import Mapping

import mujoco
import numpy as np

#: Per-world model arrays a frame may replace (see the module docstring).
MODEL_FIELDS = ("geom_pos", "geom_quat", "geom_size", "geom_rgba", "body_pos", "body_quat")
#: Colour of the visual-only ground plane (``ground=``).
GROUND_RGBA = (0.55, 0.5, 0.42, 1.0)
#: Half-size of the visual-only ground plane [m].
GROUND_HALF_SIZE = 5.0


def _headless_without_gl_choice() -> bool:
    return not os.environ.get("MUJOCO_GL") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")


def _make_renderer(model: mujoco.MjModel, height: int, width: int) -> mujoco.Renderer:
    if not _headless_without_gl_choice():
        return mujoco.Renderer(model, height=height, width=width)
    # MuJoCo picked GLFW at import, which needs a display: give this renderer
    # an EGL context, swapping MuJoCo's context class only while it is built.
    from mujoco.egl import GLContext as EglContext
    from mujoco.rendering.classic import gl_context

    previous = gl_context.GLContext
    gl_context.GLContext = EglContext
    try:
        return mujoco.Renderer(model, height=height, width=width)
    finally:
        gl_context.GLContext = previous


class FrameRenderer:
    """MuJoCo's offscreen renderer of one model, for a sequence of frames.

    Args:
      model: the ``MjModel`` (copied; the copy takes per-frame model fields).
      width, height: image size [px] (at most the model's offscreen buffer,
        640 x 480 by default).
      ground: height [m] of a visual-only ground plane added to every frame
        (for models without a floor); ``None``: none.
    """

    def __init__(self, model: mujoco.MjModel, *, width: int = 320, height: int = 240,
                 ground: float | None = None):
        width, height = int(width), int(height)
        if width < 16 or height < 16:
            raise ValueError(f"width, height: must be >= 16 px, got {width} x {height}")
        self.model = copy.deepcopy(model)
        self.model.vis.global_.offwidth = max(self.model.vis.global_.offwidth, width)
        self.model.vis.global_.offheight = max(self.model.vis.global_.offheight, height)
        # Models without lights of their own (the multirotor scene) get a brighter headlight.
        if self.model.nlight == 0:
            self.model.vis.headlight.ambient[:] = 0.45
            self.model.vis.headlight.diffuse[:] = 0.6
        self.data = mujoco.MjData(self.model)
        self._renderer = _make_renderer(self.model, height, width)
        self.camera = mujoco.MjvCamera()
        self.camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        self.ground = None if ground is None else float(ground)

    def set_model_fields(self, fields: Mapping[str, np.ndarray]) -> None:
        """Copy per-world arrays (names in :data:`MODEL_FIELDS`) into the model."""
        for name, value in fields.items():
            if name not in MODEL_FIELDS:
                raise ValueError(f"model field {name!r}: must be one of {MODEL_FIELDS}")
            getattr(self.model, name)[...] = np.asarray(value, dtype=np.float64).reshape(getattr(self.model, name).shape)

    def frame(self, qpos: np.ndarray, *, lookat=None, distance: float = 1.5, azimuth: float = 35.0,
              elevation: float = -15.0) -> np.ndarray:
        """(height, width, 3) uint8 image of the model at ``qpos`` (nq,), the
        free camera looking at ``lookat`` (3,) [m] (default: the model's
        centre) from ``distance`` [m], ``azimuth`` and ``elevation`` [deg]."""
        self.data.qpos[:] = np.asarray(qpos, dtype=np.float64)
        mujoco.mj_forward(self.model, self.data)
        cam = self.camera
        cam.lookat[:] = self.model.stat.center if lookat is None else np.asarray(lookat, dtype=np.float64)
        cam.distance, cam.azimuth, cam.elevation = float(distance), float(azimuth), float(elevation)
        self._renderer.update_scene(self.data, camera=cam)
        if self.ground is not None:
            self._add_ground(self._renderer.scene)
        return self._renderer.render().copy()

    def _add_ground(self, scene: mujoco.MjvScene) -> None:
        """Append the visual-only ground plane (a thin box, so it also shows
        from below) to an updated scene."""
        if scene.ngeom >= scene.maxgeom:
            return
        g = scene.geoms[scene.ngeom]
        half = GROUND_HALF_SIZE
        mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_BOX, np.array([half, half, 0.002]),
                            np.array([0.0, 0.0, self.ground - 0.002]), np.eye(3).ravel(),
                            np.asarray(GROUND_RGBA, np.float32))
        scene.ngeom += 1

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def __enter__(self) -> "FrameRenderer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def frames(model: mujoco.MjModel, qpos: np.ndarray, *, model_fields: Mapping[str, np.ndarray] | None = None,
           track: int | None = 0, width: int = 320, height: int = 240, distance: float = 1.5,
           azimuth: float = 35.0, elevation: float = -15.0, ground: float | None = None) -> np.ndarray:
    """(T, height, width, 3) uint8 frames of ``qpos`` (T, nq) of one world.

    ``track``: the camera follows ``qpos[t, track:track + 3]`` (a free
    joint's position; ``None``: fixed at the model's centre). ``ground``: a
    visual-only ground plane at that height [m] (see :class:`FrameRenderer`).
    """
    qpos = np.asarray(qpos)
    if qpos.ndim != 2 or qpos.shape[1] != model.nq:
        raise ValueError(f"qpos: must have shape (T, {model.nq}), got {qpos.shape}")
    out = np.empty((qpos.shape[0], int(height), int(width), 3), np.uint8)
    with FrameRenderer(model, width=width, height=height, ground=ground) as r:
        if model_fields:
            r.set_model_fields(model_fields)
        for t, q in enumerate(qpos):
            lookat = None if track is None else q[track:track + 3]
            out[t] = r.frame(q, lookat=lookat, distance=distance, azimuth=azimuth, elevation=elevation)
    return out
