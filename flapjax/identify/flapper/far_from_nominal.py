"""Is an identified gain that of a flapping-wing robot like the nominal one?
A unit slip (forces in mN, moments in N mm, frequencies in rad/s or rpm)
moves ``k_f``, ``k_roll`` or ``k_pitch`` by orders of magnitude while the
fit itself looks fine; :func:`far_from_nominal` notes it."""

from __future__ import annotations

#: How far from the nominal robot's (a factor) an identified gain may lie before a note asks about units [-].
FAR_FACTOR = 10.0

#: The gains compared.
GAINS = ("k_f", "k_roll", "k_pitch")


def far_from_nominal(values: dict[str, float], nominal: dict[str, float], skip=(), *, units: str,
                     factor: float = FAR_FACTOR) -> list[str]:
    """A note naming the gains of :data:`GAINS` in ``values`` more than
    ``factor`` times above or below their ``nominal`` values (the nominal
    robot's), naming the ``units`` to check; ``skip``: names already noted
    (or absent from ``values``)."""
    far = [n for n in GAINS if n in values and n not in skip and nominal.get(n, 0.0) > 0 and values[n] > 0
           and not 1.0 / factor <= values[n] / nominal[n] <= factor]
    if not far:
        return []
    text = ", ".join(f"{n} {values[n]:.3g} ({values[n] / nominal[n]:.3g}x the nominal robot's)" for n in far)
    return [f"{text}: far from the nominal flapping-wing robot; check the units ({units}), or, if the robot "
            "differs this much from the nominal one, ignore this note"]
