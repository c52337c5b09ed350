"""Per-connection authentication state (the server's AuthenticationSession + AuthorizationSession).

One `ConnState` per client connection, created by `AuthManager.new_connection`
when the connection is accepted and dropped with it. It holds:

- `is_localhost`: whether the peer is the local host (loopback address or a
  unix socket), which the localhost exception needs;
- `user`: the authenticated user (one per connection since MongoDB 6.0), or None;
- `sasl`: the SASL conversation in progress (saslStart or speculative hello
  until done or failed), or None;
- `localhost_bypass`: the localhost-exception latch; it starts true and turns
  false for good the first time a request finds that users exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mongosim.router.auth.names import UserName

__all__ = ["ConnState", "SaslSession"]


@dataclass
class SaslSession:
    mechanism: str
    db: str
    conversation: Any  # ScramServerConversation
    speculative: bool = False
    payload_as_base64: bool = False


@dataclass
class ConnState:
    is_localhost: bool = False
    remote: str | None = None  # the client's "host:port"
    local: str | None = None  # the server's "host:port" it connected to
    user: UserName | None = None
    sasl: SaslSession | None = None
    localhost_bypass: bool = True

    @property
    def authenticated(self) -> bool:
        return self.user is not None
