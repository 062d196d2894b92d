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

So that heights and distances read off a frame, every frame's scene also gets
(visual only) a checker of :data:`TILE` [m] squares on the floor (the
model's upward-facing plane, or ``ground``) around the camera's target and a
directional light from above that casts shadows onto it; ``checker=False``
leaves the floor plain. :func:`annotate` writes lines of text (time,
height) into a frame's corner.
"""

from __future__ import annotations

import copy
import os
from typing import Mapping, Sequence

import mujoco
import numpy as np

#: Per-world model arrays a frame may replace (see the module docstring).
MODEL_FIELDS = ("geom_pos", "geom_quat", "geom_size", "geom_rgba", "body_pos", "body_quat")
#: Colour of the visual-only ground plane (``ground=``).
GROUND_RGBA = (0.55, 0.5, 0.42, 1.0)
#: Half-size of the visual-only ground plane [m].
GROUND_HALF_SIZE = 5.0
#: Side of a floor checker square [m] and the checker's half-width [m].
TILE, CHECKER_HALF_SIZE = 0.1, 1.5
#: Colours of the floor checker's two squares.
CHECKER_RGBA = ((0.62, 0.6, 0.55, 1.0), (0.45, 0.43, 0.38, 1.0))
#: Direction of the shadow-casting light (world, pointing down and slightly sideways).
LIGHT_DIR = (0.3, 0.4, -1.0)


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
      checker: draw the floor checker and the shadow-casting light.
    """

    def __init__(self, model: mujoco.MjModel, *, width: int = 320, height: int = 240,
                 ground: float | None = None, checker: bool = True):
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
        self.checker = bool(checker)

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
        if self.checker:
            floor = self.floor_height()
            if floor is not None:
                self._add_checker(self._renderer.scene, np.asarray(cam.lookat), floor)
            self._add_light(self._renderer.scene)
        return self._renderer.render().copy()

    def floor_height(self) -> float | None:
        """z [m] of the floor: ``ground`` if set, else the model's first plane
        facing up (after :meth:`set_model_fields`), else ``None``."""
        if self.ground is not None:
            return self.ground
        m = self.model
        for g in range(m.ngeom):
            if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE and m.geom_bodyid[g] == 0:
                q = m.geom_quat[g]
                up = 1.0 - 2.0 * (q[1] ** 2 + q[2] ** 2)  # z of the plane's normal
                if up > 0.999:
                    return float(m.geom_pos[g, 2])
        return None

    def _add_checker(self, scene: mujoco.MjvScene, centre: np.ndarray, floor: float) -> None:
        """Dark squares of the checker (thin boxes just above the floor) around ``centre``'s x, y."""
        n = int(round(CHECKER_HALF_SIZE / TILE))
        i0, j0 = int(np.floor(centre[0] / TILE)), int(np.floor(centre[1] / TILE))
        size = np.array([TILE / 2, TILE / 2, 0.0005])
        rgba = np.asarray(CHECKER_RGBA[1], np.float32)
        for i in range(i0 - n, i0 + n):
            for j in range(j0 - n, j0 + n):
                if (i + j) % 2 or scene.ngeom >= scene.maxgeom:
                    continue
                g = scene.geoms[scene.ngeom]
                pos = np.array([(i + 0.5) * TILE, (j + 0.5) * TILE, floor + 0.0005])
                mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_BOX, size, pos, np.eye(3).ravel(), rgba)
                scene.ngeom += 1

    def _add_light(self, scene: mujoco.MjvScene) -> None:
        """A directional light from above that casts shadows (the headlight is dimmed to keep them visible)."""
        if scene.nlight >= len(scene.lights):
            return
        light = scene.lights[scene.nlight]
        d = np.asarray(LIGHT_DIR, np.float32)
        light.dir[:] = d / np.linalg.norm(d)
        light.pos[:] = -3.0 * light.dir
        light.type = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
        light.castshadow = 1
        light.headlight = 0
        light.ambient[:] = 0.15
        light.diffuse[:] = 0.6
        light.specular[:] = 0.1
        scene.nlight += 1
        for k in range(scene.nlight - 1):
            if scene.lights[k].headlight:
                scene.lights[k].diffuse[:] = np.minimum(scene.lights[k].diffuse, 0.35)

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
           azimuth: float = 35.0, elevation: float = -15.0, ground: float | None = None,
           lookat=None, checker: bool = True) -> np.ndarray:
    """(T, height, width, 3) uint8 frames of ``qpos`` (T, nq) of one world.

    ``track``: the camera follows ``qpos[t, track:track + 3]`` (a free
    joint's position); ``None``: it looks at ``lookat`` (3,) [m], fixed
    (default: the model's centre). ``ground``: a visual-only ground plane at
    that height [m]; ``checker``: the floor checker and shadows (see
    :class:`FrameRenderer`).
    """
    qpos = np.asarray(qpos)
    if qpos.ndim != 2 or qpos.shape[1] != model.nq:
        raise ValueError(f"qpos: must have shape (T, {model.nq}), got {qpos.shape}")
    out = np.empty((qpos.shape[0], int(height), int(width), 3), np.uint8)
    with FrameRenderer(model, width=width, height=height, ground=ground, checker=checker) as r:
        if model_fields:
            r.set_model_fields(model_fields)
        for t, q in enumerate(qpos):
            lookat_t = lookat if track is None else q[track:track + 3]
            out[t] = r.frame(q, lookat=lookat_t, distance=distance, azimuth=azimuth, elevation=elevation)
    return out


def annotate(image: np.ndarray, lines: Sequence[str]) -> np.ndarray:
    """A copy of ``image`` (H, W, 3) uint8 with ``lines`` of text in its
    top-left corner (white on a dark band; Pillow, which comes with
    matplotlib; without Pillow the image is returned unchanged)."""
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        return np.array(image)
    im = Image.fromarray(np.asarray(image, np.uint8))
    draw = ImageDraw.Draw(im)
    band = 4 + 11 * len(lines)
    draw.rectangle([0, 0, min(im.width - 1, 150), band], fill=(20, 20, 20))
    for k, line in enumerate(lines):
        draw.text((4, 2 + 11 * k), line, fill=(255, 255, 255))
    return np.asarray(im)
