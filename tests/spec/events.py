"""Observed events of a client entity and the expectEvents assertion.

`EventRecorder` is one client's command-monitoring and connection-pool (CMAP)
listener.  It keeps the events named in the entity's `observeEvents`, leaving
out, for command events, the commands in `ignoreCommandMonitoringEvents`,
`configureFailPoint`, and the sensitive commands (authentication, and hello
with speculativeAuthenticate) unless `observeSensitiveCommands` is set.  It
also counts the connections checked out of the client's pools, whatever is
observed (for assertNumberConnectionsCheckedOut).

`check_events` compares one `expectedEventsForClient` with what was observed:
same number of events (or at least as many with `ignoreExtraEvents`), and
each in order matching its expected event.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pymongo import monitoring

from tests.spec.errors import UnsupportedByRunner
from tests.spec.matching import Matcher

COMMAND_EVENTS = ("commandStartedEvent", "commandSucceededEvent", "commandFailedEvent")
CMAP_EVENTS = ("poolCreatedEvent", "poolReadyEvent", "poolClearedEvent", "poolClosedEvent",
               "connectionCreatedEvent", "connectionReadyEvent", "connectionClosedEvent",
               "connectionCheckOutStartedEvent", "connectionCheckOutFailedEvent",
               "connectionCheckedOutEvent", "connectionCheckedInEvent")
EVENT_TYPES = {"command": COMMAND_EVENTS, "cmap": CMAP_EVENTS}
# Commands whose monitoring events a runner never reports (command monitoring spec, "Security").
SENSITIVE_COMMANDS = {"authenticate", "saslstart", "saslcontinue", "getnonce", "createuser", "updateuser",
                      "copydbgetnonce", "copydbsaslstart", "copydb"}
HELLO_COMMANDS = {"hello", "ismaster"}


@dataclass
class ObservedEvent:
    name: str  # the format's event name, e.g. commandStartedEvent, connectionCheckedOutEvent
    fields: dict = field(default_factory=dict)

    def describe(self) -> str:
        f = self.fields
        if self.name == "commandStartedEvent":
            return f"{self.name} {f['commandName']} on {f['databaseName']}: {f['command']!r}"
        if self.name == "commandSucceededEvent":
            return f"{self.name} {f['commandName']}: {f['reply']!r}"
        if self.name == "commandFailedEvent":
            return f"{self.name} {f['commandName']}: {f['failure']}"
        return f"{self.name} {f}" if f else self.name


class EventRecorder(monitoring.CommandListener, monitoring.ConnectionPoolListener):
    def __init__(self, observe: list[str], ignore: list[str], observe_sensitive: bool) -> None:
        unknown = [e for e in observe if e not in COMMAND_EVENTS + CMAP_EVENTS]
        if unknown:
            raise UnsupportedByRunner(f"unsupported observeEvents {unknown}")
        self.observe = set(observe)
        self.ignore = set(ignore) | {"configureFailPoint"}
        self.observe_sensitive = observe_sensitive
        self.events: list[ObservedEvent] = []
        self.enabled = True
        self.checked_out = 0
        self._skipped: set[tuple] = set()  # (connection, request id) of started events left out

    def of_type(self, event_type: str) -> list[ObservedEvent]:
        names = EVENT_TYPES[event_type]
        return [e for e in self.events if e.name in names]

    def _record(self, name: str, **fields: Any) -> None:
        if self.enabled and name in self.observe:
            self.events.append(ObservedEvent(name, fields))

    # -- command monitoring ----------------------------------------------------------------------
    def _ignored(self, name: str, command: dict) -> bool:
        if name in self.ignore:
            return True
        if not self.observe_sensitive:
            low = name.lower()
            if low in SENSITIVE_COMMANDS:
                return True
            # hello with speculativeAuthenticate is sensitive; the driver redacts it to an empty document
            if low in HELLO_COMMANDS and (not command or "speculativeAuthenticate" in command):
                return True
        return False

    @staticmethod
    def _common(event: Any) -> dict:
        return {"commandName": event.command_name, "databaseName": event.database_name,
                "serviceId": event.service_id, "serverConnectionId": event.server_connection_id}

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self._ignored(event.command_name, event.command):
            self._skipped.add((event.connection_id, event.request_id))
            return
        self._record("commandStartedEvent", command=copy.deepcopy(dict(event.command)), **self._common(event))

    def _reported(self, event: Any) -> bool:
        key = (event.connection_id, event.request_id)
        if key in self._skipped:
            self._skipped.discard(key)
            return False
        return event.command_name not in self.ignore

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if self._reported(event):
            self._record("commandSucceededEvent", reply=copy.deepcopy(dict(event.reply)), **self._common(event))

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        if self._reported(event):
            self._record("commandFailedEvent", failure=event.failure, **self._common(event))

    # -- connection pools (CMAP) ------------------------------------------------------------------
    def pool_created(self, event: Any) -> None:
        self._record("poolCreatedEvent")

    def pool_ready(self, event: Any) -> None:
        self._record("poolReadyEvent")

    def pool_cleared(self, event: Any) -> None:
        self._record("poolClearedEvent", serviceId=event.service_id,
                     interruptInUseConnections=event.interrupt_connections)

    def pool_closed(self, event: Any) -> None:
        self._record("poolClosedEvent")

    def connection_created(self, event: Any) -> None:
        self._record("connectionCreatedEvent")

    def connection_ready(self, event: Any) -> None:
        self._record("connectionReadyEvent")

    def connection_closed(self, event: Any) -> None:
        self._record("connectionClosedEvent", reason=event.reason)

    def connection_check_out_started(self, event: Any) -> None:
        self._record("connectionCheckOutStartedEvent")

    def connection_check_out_failed(self, event: Any) -> None:
        self._record("connectionCheckOutFailedEvent", reason=event.reason)

    def connection_checked_out(self, event: Any) -> None:
        self.checked_out += 1
        self._record("connectionCheckedOutEvent")

    def connection_checked_in(self, event: Any) -> None:
        self.checked_out -= 1
        self._record("connectionCheckedInEvent")


# Fields an expected event may assert, per event; the rest of an expected event is an error.
_ASSERTABLE = {
    "commandStartedEvent": {"command", "commandName", "databaseName", "hasServiceId", "hasServerConnectionId"},
    "commandSucceededEvent": {"reply", "commandName", "databaseName", "hasServiceId", "hasServerConnectionId"},
    "commandFailedEvent": {"commandName", "databaseName", "hasServiceId", "hasServerConnectionId"},
    "poolClearedEvent": {"hasServiceId", "interruptInUseConnections"},
    "connectionClosedEvent": {"reason"},
    "connectionCheckOutFailedEvent": {"reason"},
}


def match_event(matcher: Matcher, expected: dict, actual: ObservedEvent) -> None:
    if len(expected) != 1:
        raise UnsupportedByRunner(f"an expected event must have exactly one key: {expected!r}")
    name, body = next(iter(expected.items()))
    if name not in COMMAND_EVENTS + CMAP_EVENTS:
        raise UnsupportedByRunner(f"unsupported expected event {name!r}")
    extra = set(body) - _ASSERTABLE.get(name, set())
    if extra:
        raise UnsupportedByRunner(f"unsupported {name} fields {sorted(extra)}")
    if name != actual.name:
        raise AssertionError(f"expected a {name}, got {actual.describe()}")
    f = actual.fields
    for key, value in body.items():
        if key in ("command", "reply"):
            matcher.match(value, f[key], root=True, path=key)
        elif key == "hasServiceId":
            has = f["serviceId"] is not None and any(bytes(f["serviceId"].binary))
            if has != value:
                raise AssertionError(f"hasServiceId {has} != {value}")
        elif key == "hasServerConnectionId":
            has = isinstance(f["serverConnectionId"], int) and f["serverConnectionId"] > 0
            if has != value:
                raise AssertionError(f"hasServerConnectionId {has} != {value}")
        elif f.get(key) != value:
            raise AssertionError(f"{key} {f.get(key)!r} != {value!r}")


def check_events(matcher: Matcher, expected: dict, recorders: dict[str, EventRecorder]) -> None:
    """Assert one expectedEventsForClient against the events its client observed."""
    for key in expected:
        if key not in ("client", "events", "ignoreExtraEvents", "eventType"):
            raise UnsupportedByRunner(f"unsupported expectEvents field {key!r}")
    event_type = expected.get("eventType", "command")
    if event_type not in EVENT_TYPES:
        raise UnsupportedByRunner(f"eventType {event_type!r} not supported")
    client = expected["client"]
    if client not in recorders:
        raise UnsupportedByRunner(f"no client entity named {client!r}")
    actual = recorders[client].of_type(event_type)
    want = expected["events"]
    listing = "\n  ".join(e.describe() for e in actual) or "(none)"
    extra_ok = expected.get("ignoreExtraEvents", False)
    if len(actual) < len(want) or (len(actual) > len(want) and not extra_ok):
        raise AssertionError(f"client {client}: expected {len(want)} {event_type} events"
                             f"{' or more' if extra_ok else ''}, observed {len(actual)}:\n  {listing}")
    for i, (exp, act) in enumerate(zip(want, actual)):
        try:
            match_event(matcher, exp, act)
        except AssertionError as exc:
            raise AssertionError(f"client {client}: event {i} does not match: {exc}\nobserved:\n  {listing}") from None
