"""Authentication restrictions: where a user may authenticate from, and to which server address.

A user's and a role's ``authenticationRestrictions`` is an array of documents
``{clientSource: [<IP or CIDR>, ...], serverAddress: [<IP or CIDR>, ...]}``.
How the server combines them (src/mongo/db/auth/restriction_set.h):

- a field is met when the address is in any of its ranges (AddressRestriction);
- a document is met when all of its fields are (RestrictionSet: allOf);
- an array is met when any of its documents is, or when it is empty
  (RestrictionDocument: anyOf);
- a user must meet its own array and the array of every role it holds,
  directly or by inheritance (RestrictionDocuments: allOf), so roles with
  incompatible restrictions make a user unusable.

The environment is the connection's: the client's address and the server's
address it connected to (an in-process connection counts as the loopback
address on both ends).  An address or range that does not parse meets
nothing (the server cannot acquire such a user).  Checked when the user
authenticates (unmet: AuthenticationFailed, as addAndAuthorizeUser answers)
and again at each command (a change that leaves them unmet logs the user out,
as the server's user cache refresh does).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

__all__ = ["address_of", "restrictions_met"]

_LOOPBACK = ipaddress.ip_address("127.0.0.1")
_FIELDS = ("clientSource", "serverAddress")


def address_of(endpoint: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The IP address of a "host:port" endpoint ("[v6]:port" too); the loopback address for an
    in-process connection (no socket)."""
    if not endpoint or ":" not in endpoint:
        return _LOOPBACK
    host = endpoint.rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return _LOOPBACK


@lru_cache(maxsize=1024)
def _network(text: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """An IP or CIDR range (host bits allowed, as the server's CIDR parser does); None if it does not parse."""
    if not isinstance(text, str):
        return None
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _in_any(address, ranges: Any) -> bool:
    if not isinstance(ranges, (list, tuple)):
        return False
    for text in ranges:
        network = _network(text)
        if network is not None and network.version == address.version and address in network:
            return True
    return False


def _document_met(doc: Any, client, server) -> bool:
    if not isinstance(doc, dict):
        return False
    where = {"clientSource": client, "serverAddress": server}
    return all(_in_any(where[field], doc[field]) for field in _FIELDS if field in doc)


def restrictions_met(arrays: Iterable[Any], client: str | None, server: str | None) -> bool:
    """Whether a connection from `client` to `server` ("host:port" endpoints) meets every one of
    `arrays` (a user's own authenticationRestrictions and each of its roles')."""
    c, s = address_of(client), address_of(server)
    for array in arrays:
        if array and not any(_document_met(doc, c, s) for doc in array):
            return False
    return True
