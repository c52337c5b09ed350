"""Hypothesis profiles for the query-engine tests (the whole suite stays well under a minute)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "query-ci",
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    derandomize=True,
)
settings.register_profile(
    "query-dev",
    max_examples=1500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("QUERY_HYPOTHESIS_PROFILE", "query-ci"))
