"""The wing-mass override builds a thin-plate inertia MuJoCo accepts at any mass."""

import numpy as np
import pytest

from flapjax.sim.flapper import model


@pytest.mark.parametrize("mass", [1.0e-4, 1.6e-4, 2.2e-4, 3.7e-4])
def test_thin_plate_inertia_meets_the_triangle_inequality_and_compiles(mass):
    inertia = model._wing_inertia(mass, 0.07, 0.02)
    np.testing.assert_allclose(inertia, mass / 12.0 * np.array([0.07**2 + 0.02**2, 0.02**2, 0.07**2]), rtol=1e-15)
    assert inertia[0] <= inertia[1] + inertia[2]
    model.build("fixed", wing_mass=mass)  # MuJoCo refused 1.6e-4 before the clamp
