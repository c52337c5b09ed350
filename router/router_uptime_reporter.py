"""The router's uptime reporter: every 10 s a mongos upserts its `config.mongos` document.

As the server's RouterUptimeReporter: `{_id: "<host>:<port>", ping: <now>,
up: <seconds since start>, waiting: true, mongoVersion, advisoryHostFQDNs,
created: <start time>}` (`$set`, upsert), so `config.mongos` lists the routers
and when each was last alive.  A stopped router's document stays, with its
last ping.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import trio
from bson import Int64

from mongosim.router.handshake import SERVER_VERSION
from mongosim.router.sharding import config_write

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

REPORT_INTERVAL_S = 10.0  # kUptimeReportInterval
_EPOCH = datetime(1970, 1, 1)


def _date(router: Router, at: float) -> datetime:
    """The cluster's wall-clock date (naive UTC, milliseconds) at trio time `at`."""
    secs = router.config.wall.now() - (trio.current_time() - at)
    return _EPOCH + timedelta(milliseconds=int(secs * 1000))


async def report_status(router: Router) -> None:
    """One ping: this router's config.mongos document, up to date."""
    now = trio.current_time()
    doc = {"created": _date(router, router.started_at), "ping": _date(router, now),
           "up": Int64(int(now - router.started_at)), "waiting": True, "mongoVersion": SERVER_VERSION,
           "advisoryHostFQDNs": []}
    await config_write(router, {"update": "mongos", "updates": [
        {"q": {"_id": router.identity.address}, "u": {"$set": doc}, "upsert": True}]})


async def run(router: Router) -> None:
    """Report until cancelled (the router stops); best effort, as the server's."""
    while True:
        try:
            await report_status(router)
        except Exception:  # noqa: BLE001 - a failed ping is retried at the next interval
            pass
        await trio.sleep(REPORT_INTERVAL_S)
