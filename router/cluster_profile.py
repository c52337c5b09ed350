"""profile through mongos: mongos keeps no system.profile, only the slow-operation settings.

mongos's ProfileCmd accepts `profile: 0` (to change `slowms`, `sampleRate` or
`filter`, which govern its slow-query log) and `-1` (to read them); any other
level is refused.  The reply is the settings replaced: `{was, slowms, sampleRate}`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.request import Request

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

_SETTINGS: dict[str, Any] = {"slowms": 100, "sampleRate": 1.0}


@router_command("profile")
async def cmd_profile(router: Router, req: Request) -> dict:
    level = req.cmd["profile"]
    if isinstance(level, bool) or not isinstance(level, (int, float)):
        raise MongoError("TypeMismatch", "BSON field 'profile.profile' is the wrong type, expected type 'int'")
    rate = req.cmd.get("sampleRate")
    if rate is not None and not 0.0 <= float(rate) <= 1.0:
        raise MongoError("BadValue", "'sampleRate' must be between 0.0 and 1.0 inclusive")
    if int(level) not in (-1, 0):
        raise MongoError("BadValue", "Profiling is not permitted on mongoS: the 'profile' field should be 0 to change "
                                     "'slowms', 'sampleRate', or 'filter' settings for logging, or -1 to view current "
                                     "values")
    reply: dict[str, Any] = {"was": 0, "slowms": _SETTINGS["slowms"], "sampleRate": _SETTINGS["sampleRate"]}
    if "slowms" in req.cmd:
        _SETTINGS["slowms"] = int(req.cmd["slowms"])
    if rate is not None:
        _SETTINGS["sampleRate"] = float(rate)
    reply["ok"] = 1.0
    return reply
