"""MongoDB's localhost exception.

With access control on and no user (nor role) defined yet, a client connected over the
loopback interface (or a unix socket) may create the first user: until then it
holds exactly these privileges and nothing else (AuthorizationSession's
default privileges in the server):

- ``createUser`` and ``grantRole`` on the ``admin`` database (so the first user
  is an ``admin`` user whose roles are ``admin`` roles, e.g. ``root`` or
  ``userAdminAnyDatabase``),
- ``createUser`` on ``$external``,
- ``addShard``, ``replSetConfigure``, ``replSetGetStatus`` on the cluster.

The check runs at the start of every request. Once a request on a connection
finds that users (or user-defined roles) exist, the exception is gone for that connection for good,
even if every user is dropped later (new connections get it back then). It
can be switched off (the server's ``enableLocalhostAuthBypass`` parameter).
An unauthenticated client under the exception does not get "requires
authentication" errors; its commands are checked against the privileges
above and fail with the usual "not authorized" message.
"""

from __future__ import annotations

import ipaddress

from mongosim.router.auth.privileges import CLUSTER, Privilege, Resource, merge_privileges
from mongosim.router.auth.state import ConnState

__all__ = ["LOCALHOST_EXCEPTION_PRIVILEGES", "is_localhost_address", "localhost_bypass_active"]

LOCALHOST_EXCEPTION_PRIVILEGES = merge_privileges(
    [
        Privilege.of(Resource.database("admin"), "createUser", "grantRole"),
        Privilege.of(Resource.database("$external"), "createUser"),
        Privilege.of(CLUSTER, "addShard", "replSetConfigure", "replSetGetStatus"),
    ]
)


def is_localhost_address(host: str | None) -> bool:
    """True for loopback addresses, ``localhost`` and unix socket paths (the server's isLocalHost)."""
    if not host:
        return False
    if host.startswith("/") or host.endswith(".sock"):
        return True
    if host == "localhost":
        return True
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def localhost_bypass_active(conn: ConnState, *, auth_enabled: bool, has_users: bool, allowed: bool = True) -> bool:
    """Evaluate (and latch) the exception for this request on `conn`."""
    if not auth_enabled:
        return False
    if not conn.localhost_bypass:
        return False
    if not allowed or not conn.is_localhost or has_users:
        conn.localhost_bypass = False
        return False
    return True
