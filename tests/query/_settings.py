"""Hypothesis settings for the query-engine tests, applied per test (never globally).

`QUERY_HYPOTHESIS_PROFILE=query-dev` runs ten times more examples; the default keeps
the whole tests/query run around 15 s on 2 idle cores.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]

settings.register_profile("query-ci", max_examples=100, deadline=None, suppress_health_check=_SUPPRESS, derandomize=True)
settings.register_profile("query-dev", max_examples=1500, deadline=None, suppress_health_check=_SUPPRESS)

QUERY_SETTINGS = settings.get_profile(os.environ.get("QUERY_HYPOTHESIS_PROFILE", "query-ci"))
