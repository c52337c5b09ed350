"""A command's Stable API parameters, checked as the server's initializeAPIParameters does.

`apiVersion` (a string), `apiStrict` and `apiDeprecationErrors` (bools: the IDL's TypeMismatch
otherwise) are generic arguments of every command.  The checks, in the server's order: apiStrict or
apiDeprecationErrors (even false) without an apiVersion is error 4886600; an apiVersion other than "1" is
APIVersionError (322) — "2" has its own message, as acceptApiVersion2 (a test parameter) is off.
The handshake and authentication commands skip them (`skipApiVersionCheck`: a driver declares its
API version on every command, the handshake included).  Which commands API version 1 holds is not
enforced: `apiStrict: true` is accepted with any command.
"""

from __future__ import annotations

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.idl_errors import wrong_type

__all__ = ["API_VERSIONS", "check"]

API_VERSIONS = ("1",)
_SKIP = frozenset({"hello", "isMaster", "ismaster", "saslStart", "saslContinue", "authenticate", "logout",
                   "getnonce"})
_STRUCT = "APIParametersFromClient"


def check(name: str, cmd: dict) -> None:
    """Raise the server's error for bad API parameters on command `name`."""
    version = cmd.get("apiVersion")
    if version is not None and not isinstance(version, str):
        raise wrong_type(f"{_STRUCT}.apiVersion", version, "string")
    for flag in ("apiStrict", "apiDeprecationErrors"):
        if flag in cmd and not isinstance(cmd[flag], bool):
            raise wrong_type(f"{_STRUCT}.{flag}", cmd[flag], "bool")
    if name in _SKIP:
        return
    if ("apiStrict" in cmd or "apiDeprecationErrors" in cmd) and version is None:  # (given at all, even false)
        raise MongoError(4886600, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion")
    if version is not None and version not in API_VERSIONS:
        raise MongoError("APIVersionError", "Cannot accept API version 2" if version == "2"
                         else 'API version must be "1"')
