"""Saved study files (``studies/<name>.json`` of :mod:`flapjax.runs.flapper_studies`),
trusted on resume only when nothing changed them: :func:`seal` adds a hash of
their content, :func:`check_study_file` says why one must not be reused and
:func:`load_study_file` reads one through :func:`flapjax.safe_io.read_text`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from flapjax import safe_io
from flapjax.validation import ConfigError, loads_json

__all__ = ["RECORD_KEYS", "check_study_file", "content_hash", "load_study_file", "seal"]

#: The keys a saved study file holds, all of them written by :func:`seal`.
RECORD_KEYS = ("config", "result", "sha256")
#: The keys of a saved ``result`` (:meth:`flapjax.identify.results.StudyResult.to_dict`).
RESULT_KEYS = ("name", "values", "std", "metrics", "data", "loss", "notes", "converged", "seconds")


def content_hash(config: Any, result: Any) -> str:
    """SHA-256 (hex) of ``config`` and ``result`` as canonical JSON (sorted
    keys, no spaces), so that any edit of either changes it."""
    text = json.dumps({"config": config, "result": result}, sort_keys=True, separators=(",", ":"),
                      allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seal(config: Mapping, result: Mapping) -> dict[str, Any]:
    """The record to save: ``config``, ``result`` and their ``sha256``."""
    config, result = json.loads(json.dumps(config)), json.loads(json.dumps(result))  # plain JSON types
    return {"config": config, "result": result, "sha256": content_hash(config, result)}


def _not_numbers(group: str, values: Any) -> list[str]:
    """``group.name`` of each entry of ``values`` that is not a finite number
    or a list of them (a boolean or a string is not a number; ``null`` is a
    held value)."""
    if not isinstance(values, Mapping):
        return [group]
    bad = []
    for name, value in values.items():
        flat = value if isinstance(value, list) else [value]
        ok = all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))
                 for v in flat)
        if not ok or (group == "values" and any(v is None for v in flat)):
            bad.append(f"{group}.{name}")
    return bad


def check_study_file(saved: Any, expect: Mapping | None = None) -> str | None:
    """Why the parsed study file ``saved`` must not be reused, or None.

    ``expect``: the settings this run would save the study with (None: any)."""
    if not isinstance(saved, Mapping):
        return f"expected a JSON object, got {type(saved).__name__}"
    unknown = sorted(set(saved) - set(RECORD_KEYS))
    if unknown:
        return f"unknown key(s) {unknown}; a study file holds {list(RECORD_KEYS)}"
    missing = [k for k in RECORD_KEYS if k not in saved]
    if missing:
        return f"missing {missing} (written by another version, or edited)"
    result = saved["result"]
    if not isinstance(result, Mapping):
        return f"result: expected an object, got {type(result).__name__}"
    extra = sorted(set(result) - set(RESULT_KEYS))
    if extra:
        return f"result: unknown key(s) {extra}"
    bad = _not_numbers("values", result.get("values")) + _not_numbers("std", result.get("std") or {})
    if bad:
        return f"not finite numbers: {', '.join(bad)}"
    try:
        digest = content_hash(saved["config"], result)
    except (TypeError, ValueError) as exc:
        return f"cannot hash its content ({exc})"
    if saved["sha256"] != digest:
        return "its content does not match its sha256: it was edited after it was written"
    if expect is not None and saved["config"] != json.loads(json.dumps(expect)):
        return "it was computed with other settings"
    return None


def load_study_file(path: str | Path, expect: Mapping | None,
                    echo: Callable[[str], None] = print) -> dict[str, Any] | None:
    """The sealed record saved at ``path`` when it may be reused, else None
    (no file, or a warning through ``echo`` naming the file and why, and
    that the study is recomputed). Settings other than ``expect`` are not
    warned about: a changed config recomputes by design."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        saved = loads_json(safe_io.read_text(path, what="study file"), where=str(path))
    except ConfigError as exc:
        echo(f"warning: {exc}; the study file is ignored and the study recomputed")
        return None
    why = check_study_file(saved, expect)
    if why is None:
        return dict(saved)
    if why != "it was computed with other settings":
        echo(f"warning: {path}: {why}; the study file is ignored and the study recomputed")
    return None
