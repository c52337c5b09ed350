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

Stored only once valid (`validated`, the server's getRawAuthenticationRestrictions
in address_restriction.cpp): each document is the strict IDL struct `address
restriction` (clientSource, serverAddress: arrays of strings, at least one of
them) and each range a CIDR as the server's parser reads it (`parse_cidr`).

The environment is the connection's: the client's address and the server's
address it connected to (an in-process connection counts as the loopback
address on both ends).  Checked when the user
authenticates (unmet: AuthenticationFailed, as addAndAuthorizeUser answers)
and again at each command (a change that leaves them unmet logs the user out,
as the server's user cache refresh does).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.idl_errors import wrong_type

__all__ = ["address_of", "parse_cidr", "restrictions_met", "validated"]

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


# std::stoi of the length after "/": leading C whitespace, a sign, digits -- and nothing after them
_LENGTH = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")


def parse_cidr(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """An IP address or a CIDR range as the server's CIDR constructor reads it (util/net/cidr.cpp): the
    address by inet_pton (no zone index), the length by std::stoi with nothing after it; host bits
    are allowed.  Its errors (UnsupportedFormat) carry the server's reasons."""
    ip, slash, length = text.partition("/")
    try:
        if "%" in ip:  # (Python's parser takes a zone index; inet_pton does not)
            raise ValueError(ip)
        address = ipaddress.ip_address(ip)
    except ValueError:
        raise MongoError("UnsupportedFormat", "Invalid IP address in CIDR string") from None
    bits = address.max_prefixlen
    if slash:
        m = _LENGTH.match(length)
        if m is None or m.end() != len(length):
            raise MongoError("UnsupportedFormat", "Non-numeric length in CIDR string")
        n = int(m.group(1))
        if not 0 <= n <= bits:  # (beyond an int it is std::out_of_range: the same message)
            raise MongoError("UnsupportedFormat", "Invalid length in CIDR string")
        bits = n
    return ipaddress.ip_network((address, bits), strict=False)


@lru_cache(maxsize=1024)
def _network(text: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The range of a stored entry (`parse_cidr`); None if it does not parse (only a document stored
    before validation, e.g. restored from an older file, can hold one: it meets nothing)."""
    if not isinstance(text, str):
        return None
    try:
        return parse_cidr(text)
    except MongoError:
        return None


def validated(value: Iterable[Any]) -> list[dict]:
    """`authenticationRestrictions` as the server stores them (getRawAuthenticationRestrictions): each
    document parsed as the strict IDL struct `address restriction` and re-serialized (clientSource,
    then serverAddress; nothing else), each range checked by `parse_cidr`.  A document that is not
    one: UnsupportedFormat; a parse error: BadValue with the parser's reason; a document with
    neither field: CollectionIsEmpty."""
    out = []
    for doc in value:
        if not isinstance(doc, dict):
            raise MongoError("UnsupportedFormat", "'authenticationRestrictions' array sub-documents must be "
                                                  "address restriction objects")
        try:
            for name, ranges in doc.items():
                if name not in _FIELDS:
                    raise MongoError("IDLUnknownField", f"BSON field 'address restriction.{name}' is an unknown field.")
                if not isinstance(ranges, (list, tuple)):
                    raise wrong_type(f"address restriction.{name}", ranges, "array")
                for i, text in enumerate(ranges):
                    if not isinstance(text, str):
                        raise wrong_type(f"address restriction.{name}.{i}", text, "string")
            for name in _FIELDS:
                for text in doc.get(name, ()):
                    parse_cidr(text)
        except MongoError as exc:
            raise MongoError("BadValue", exc.errmsg) from None
        if not any(name in doc for name in _FIELDS):
            raise MongoError("CollectionIsEmpty", "At least one of 'clientSource' and/or 'serverAddress' must be set")
        out.append({name: list(doc[name]) for name in _FIELDS if name in doc})
    return out


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
