"""Placeholder until the router merge lands (replaced in a later commit)."""

from oplog.errors import MongoError


async def open_cluster_change_stream(router, req):
    raise MongoError("CommandNotSupported", "change streams are not implemented yet")
