"""setFeatureCompatibilityVersion on a mongos or a replica-set member
(db/commands/set_feature_compatibility_version_command.cpp, db/commands/feature_compatibility_version.cpp).

mongosim runs FCV 8.0 only (getParameter's `featureCompatibilityVersion` says so).
The request is checked in the server's order: its fields (IDL: the version a
string, `confirm` a bool, no unknown field); the version one an 8.0 binary knows
('7.0', '7.3', '8.0': 4926900 otherwise); `confirm: true` (7369100, with the
downgrade text for a version not above the current one: every valid one, 8.0 too);
then 8.0 is a no-op success; 7.3 is not a permitted transition (5147403); 7.0, a
real downgrade, is refused as one mongosim does not emulate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.request import Request
from mongosim.shardsim.generic_args import GENERIC_ARGUMENTS
from mongosim.shardsim.query.values import type_name

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

CURRENT = "8.0"
VALID = ("7.0", "7.3", "8.0")  # lastLTS, lastContinuous, latest of an 8.0 binary
_NAME = "setFeatureCompatibilityVersion"
_FIELDS = {"confirm": "bool", "fromConfigServer": "bool", "phase": "string", "changeTimestamp": "timestamp"}
_DOWNGRADE = ("Once you have downgraded the FCV, if you choose to downgrade the binary version, it will require "
              "support assistance. Please re-run this command with 'confirm: true' to acknowledge this and continue "
              "with the FCV downgrade.")


def _check_fields(cmd: dict) -> None:
    version = cmd[_NAME]
    if not isinstance(version, str):
        raise MongoError("TypeMismatch", f"BSON field '{_NAME}.{_NAME}' is the wrong type '{type_name(version)}', "
                                         "expected type 'string'")
    for k, v in list(cmd.items())[1:]:
        if k in GENERIC_ARGUMENTS:
            continue
        kind = _FIELDS.get(k)
        if kind is None:
            raise MongoError(40415, f"BSON field '{_NAME}.{k}' is an unknown field.")
        if type_name(v) != kind:
            raise MongoError("TypeMismatch", f"BSON field '{_NAME}.{k}' is the wrong type '{type_name(v)}', expected "
                                             f"type '{kind}'")


def set_feature_compatibility_version(cmd: dict) -> dict:
    _check_fields(cmd)
    version = cmd[_NAME]
    if version not in VALID:
        raise MongoError(4926900, f"Invalid feature compatibility version value '{version}'; expected "
                                  + " or ".join(f"'{v}'" for v in VALID)
                                  + ". See https://docs.mongodb.com/master/release-notes/8.0-compatibility/"
                                    "#feature-compatibility.")
    if not cmd.get("confirm") and not cmd.get("fromConfigServer"):
        raise MongoError(7369100, _DOWNGRADE)  # (no valid version is above 8.0: the downgrade text)
    if version == CURRENT:
        return {"ok": 1.0}
    if version == "7.3":  # (lastContinuous is reached from 8.0 by no transition)
        raise MongoError(5147403, f"cannot set featureCompatibilityVersion to '{version}' while "
                                  f"featureCompatibilityVersion is '{CURRENT}'")
    raise MongoError("CommandNotSupported", f"mongosim runs featureCompatibilityVersion {CURRENT} only: it does not "
                                            f"emulate a downgrade to {version}")


@router_command(_NAME)
async def cmd_set_feature_compatibility_version(router: Router, req: Request) -> dict:
    if req.db != "admin":
        raise MongoError("Unauthorized", f"{_NAME} may only be run against the admin database.")
    return set_feature_compatibility_version(req.cmd)
