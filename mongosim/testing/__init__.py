"""Testing tools: an in-process async client for virtual time, strategies and assertions."""

from mongosim.testing.client import AsyncChangeStream, AsyncClient, CommandError  # noqa: F401
