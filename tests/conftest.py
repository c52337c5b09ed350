"""Shared test settings: hypothesis profiles.

`ci` (the default) is derandomized: every run draws the same examples, so a CI verdict
depends on the code alone. `nightly` (``make fuzz``) draws fresh random examples, many
more of them; what it finds becomes an ``@example`` so `ci` keeps it.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("nightly", deadline=None, max_examples=2000, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
