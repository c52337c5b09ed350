"""The trio TCP server: moves bytes between sockets and the sans-IO wire codec.

One task per connection (in the server's nursery).  Each request is parsed by
`router.wire`, answered by the *service* (the mongos `Router`, or the
replica-set front door in replica-set mode) and the reply written back.  A
frame that cannot be delimited closes that connection only; a request that
fails in any other way gets an error reply.  Nothing a client sends can take
the server down.

Awaitable `hello` (streaming monitoring): a `hello` carrying the server's
current `topologyVersion` and `maxAwaitTimeMS` waits that long before
answering; with `exhaustAllowed` the server keeps answering on its own with
moreToCome set, as mongod/mongos do.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.router import handshake, wire
from mongosim.router.failpoints import CloseConnection
from mongosim.router.wire.messages import MORE_TO_COME
from mongosim.shardsim.operation_context import CLIENT_CONNECTION

log = logging.getLogger("mongosim.server")

_conn_ids = itertools.count(1)
_request_ids = itertools.count(1)


@dataclass
class ConnState:
    """What the server knows about one client connection."""

    id: int
    peer: str
    is_localhost: bool = True
    local: str | None = None  # the server's "host:port" the client connected to (None: in process)
    client: dict | None = None
    auth: Any = None  # per-connection authentication state
    closing: bool = False
    extra: dict = field(default_factory=dict)
    after_reply: list = field(default_factory=list)  # callables run once the current reply is sent


def run_after_reply(conn: ConnState) -> None:
    """Run what waited for the reply to leave (e.g. a router restarting itself: mongosimFault)."""
    while conn.after_reply:
        conn.after_reply.pop(0)()


class Service(Protocol):
    async def run_command(self, db: str, cmd: dict, conn: ConnState) -> dict: ...

    def decorate(self, reply: dict, db: str, cmd: dict, conn: ConnState) -> dict: ...


def _peer_of(stream: trio.abc.Stream) -> tuple[str, bool, str | None]:
    """The client's "host:port", whether it is the local host, and the server's "host:port"."""
    while getattr(stream, "socket", None) is None and getattr(stream, "transport_stream", None) is not None:
        stream = stream.transport_stream  # a TLS stream: the peer is that of the TCP stream below it
    sock = getattr(stream, "socket", None)
    if sock is None:
        return "memory", True, None
    try:
        host, port = sock.getpeername()[:2]
        local_host, local_port = sock.getsockname()[:2]
    except (OSError, ValueError):
        return "unknown", False, None
    return f"{host}:{port}", host in ("127.0.0.1", "::1", "localhost"), f"{local_host}:{local_port}"


def error_reply(err: MongoError, service: Service, db: str, cmd: dict, conn: ConnState) -> dict:
    reply = err.to_reply()
    try:
        return service.decorate(reply, db, cmd, conn)
    except Exception:  # decoration must never hide the original error
        return reply


async def _answer(service: Service, db: str, cmd: dict, conn: ConnState) -> dict:
    counters = getattr(service, "counters", None)  # (serverStatus: router/server_status.py)
    if counters is not None:
        counters.requests += 1
        if cmd:
            counters.note_command(next(iter(cmd)), cmd)
    token = CLIENT_CONNECTION.set(conn)  # (the operations it starts know their client: $currentOp)
    try:
        reply = await service.run_command(db, cmd, conn)
    except MongoError as err:
        if counters is not None:
            counters.user_asserts += 1
        return error_reply(err, service, db, cmd, conn)
    except (trio.Cancelled, CloseConnection):
        raise
    except Exception as exc:  # a bug in a command must not kill the connection
        log.error("internal error in %s: %s", next(iter(cmd), "?"), traceback.format_exc())
        return error_reply(MongoError("InternalError", f"mongosim internal error: {exc!r}"), service, db, cmd, conn)
    finally:
        CLIENT_CONNECTION.reset(token)
    return service.decorate(reply, db, cmd, conn)


def _encode_reply(reply: dict, response_to: int, flags: int = 0) -> bytes:
    try:
        parts, size = bsonutil.encode_reply_parts(reply)
    except Exception as exc:
        body = bsonutil.encode(MongoError("InternalError", f"failed to encode reply: {exc}").to_reply())
        parts, size = [body], len(body)
    if size > bsonutil.MAX_BSON_OBJECT_SIZE + 16 * 1024:
        body = bsonutil.encode(MongoError("BSONObjectTooLarge", "reply too large").to_reply())
        parts, size = [body], len(body)
    return wire.encode_op_msg_parts(parts, size, next(_request_ids), response_to, flags)


class DirectSocket:
    """A plain TCP connection read and written with non-blocking calls on its descriptor.

    trio's SocketStream makes every successful receive and send a checkpoint (a round trip through
    the scheduler, twice per request); a request-reply exchange needs one: the wait for the next
    request (`wait_readable`).  After a reply the client's next request is not there yet (it reads the
    reply first), so the wait comes before the read, which would only fail (an exception per request).
    A reply the socket cannot take at once goes on through the stream's `send_all`.  (TLS streams, and
    sockets on Windows, keep the stream's own calls.)
    """

    def __init__(self, stream: trio.SocketStream, counters: Any = None) -> None:
        self.stream = stream
        self.fd = stream.socket.fileno()
        self.replied = False  # a reply went out since the last read
        self.counters = counters  # the service's ServerCounters: bytes out (router/server_status.py)

    async def receive_some(self, max_bytes: int) -> bytes:
        if self.replied:
            self.replied = False
            await trio.lowlevel.wait_readable(self.fd)
        while True:
            try:
                return os.read(self.fd, max_bytes)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.fd)
            except (ConnectionResetError, BrokenPipeError):
                return b""
            except OSError as exc:
                raise trio.ClosedResourceError(str(exc)) from None

    async def send_all(self, data: bytes) -> None:
        self.replied = True
        if self.counters is not None:
            self.counters.bytes_out += len(data)
        try:
            sent = os.write(self.fd, data)
        except BlockingIOError:
            sent = 0
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise trio.BrokenResourceError(str(exc)) from None
        if sent < len(data):
            await self.stream.send_all(memoryview(data)[sent:])


class _CountingSends:
    """A stream (TLS, or a socket on Windows) whose sent bytes the service's counters count."""

    def __init__(self, stream: trio.abc.Stream, counters: Any) -> None:
        self.stream = stream
        self.counters = counters

    async def receive_some(self, max_bytes: int) -> bytes:
        return await self.stream.receive_some(max_bytes)

    async def send_all(self, data: bytes) -> None:
        self.counters.bytes_out += len(data)
        await self.stream.send_all(data)


async def serve_connection(stream: trio.abc.Stream, service: Service) -> None:
    """Serve one client connection until it closes."""
    peer, is_localhost, local = _peer_of(stream)
    conn = ConnState(next(_conn_ids), peer, is_localhost, local=local)
    codec = wire.WireConnection()
    counters = getattr(service, "counters", None)
    io: Any = (DirectSocket(stream, counters) if type(stream) is trio.SocketStream and sys.platform != "win32"
               else _CountingSends(stream, counters) if counters is not None else stream)
    try:
        async with stream:
            while True:
                try:
                    data = await io.receive_some(codec.bytes_wanted(1 << 16))  # (a large message in one read)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return
                if not data:
                    return
                if counters is not None:
                    counters.bytes_in += len(data)
                codec.receive_data(data)
                while True:
                    try:
                        msg = codec.next_message()
                    except wire.FrameError as exc:
                        log.info("closing connection %s: %s", conn.id, exc)
                        return
                    if msg is wire.NEED_DATA:
                        break
                    try:
                        keep = await _handle(io, service, conn, msg)
                    except CloseConnection:
                        return
                    if not keep:
                        return
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return
    finally:
        conn.closing = True
        closer = getattr(service, "connection_closed", None)
        if closer is not None:
            closer(conn)


async def _handle(stream: trio.abc.Stream, service: Service, conn: ConnState, msg: Any) -> bool:
    """Answer one message; False to close the connection."""
    if isinstance(msg, wire.UnsupportedRequest):
        if msg.close_after:
            return False
        if msg.reply_with_op_reply:
            await stream.send_all(wire.encode_op_reply([msg.error.to_reply()], next(_request_ids), msg.request_id))
        else:
            await stream.send_all(wire.encode_op_msg(msg.error.to_reply(), next(_request_ids), msg.request_id))
        return True
    if isinstance(msg, wire.QueryRequest):
        cmd = msg.command()
        name = next(iter(cmd), "")
        if not msg.is_command or name.lower() not in ("hello", "ismaster"):
            err = MongoError(
                5739101 if msg.is_command else 5739101,
                f"Unsupported OP_QUERY command: {name}. The client driver may require an upgrade. "
                "For more details see https://dochub.mongodb.org/core/legacy-opcode-removal",
            )
            await stream.send_all(wire.encode_op_reply([err.to_reply()], next(_request_ids), msg.request_id))
            return True
        reply = await _answer(service, msg.db, cmd, conn)
        await stream.send_all(wire.encode_op_reply([reply], next(_request_ids), msg.request_id))
        return True
    # OP_MSG
    cmd, db = msg.body, msg.db
    name = next(iter(cmd), "")
    streaming_hello = handshake.is_streaming_hello(name, cmd)
    reply = await _answer(service, db, cmd, conn)  # (a streaming hello waits in the service, after failCommand)
    if msg.more_to_come:
        return True  # the client asked for no reply
    if streaming_hello and msg.exhaust_allowed and reply.get("ok"):
        # Exhaust: keep sending hello replies on our own until the client goes away, each one
        # awaiting a change from the topologyVersion of the one before (as the server rewrites the
        # next exhaust hello's topologyVersion from its reply): one reply per change, or per
        # maxAwaitTimeMS, not a flood of replies to a topologyVersion the client has long passed.
        # An error ends the stream (sent without moreToCome), as the server stops an exhaust
        # command that fails.
        response_to = msg.request_id
        while reply.get("ok"):
            rid = next(_request_ids)
            body = bsonutil.encode_reply(reply)
            await stream.send_all(wire.encode_op_msg_raw(body, rid, response_to, MORE_TO_COME))
            response_to = rid
            if "topologyVersion" in reply:
                cmd = {**cmd, "topologyVersion": reply["topologyVersion"]}
            reply = await _answer(service, db, cmd, conn)
        await stream.send_all(_encode_reply(reply, response_to))
        return True
    if name == "getMore" and msg.exhaust_allowed:
        await _exhaust_get_more(stream, service, conn, db, cmd, reply, msg.request_id)
        return True
    await stream.send_all(_encode_reply(reply, msg.request_id))
    if conn.after_reply:
        run_after_reply(conn)
    return True


async def _exhaust_get_more(stream: trio.abc.Stream, service: Service, conn: ConnState, db: str, cmd: dict,
                            reply: dict, response_to: int) -> None:
    """An exhaust cursor: while the cursor stays open, each reply goes out with moreToCome and the
    getMore runs again by itself (the server's exhaust protocol); the last reply (cursor closed, or
    an error) goes without it."""
    while reply.get("ok") and (reply.get("cursor") or {}).get("id"):
        rid = next(_request_ids)
        await stream.send_all(wire.encode_op_msg_raw(bsonutil.encode_reply(reply), rid, response_to, MORE_TO_COME))
        if conn.after_reply:
            run_after_reply(conn)
        response_to = rid
        reply = await _answer(service, db, cmd, conn)
    await stream.send_all(_encode_reply(reply, response_to))
    if conn.after_reply:
        run_after_reply(conn)


async def serve_tcp(service: Service, host: str, port: int, *, task_status=trio.TASK_STATUS_IGNORED,
                    ssl_context=None) -> None:
    """Listen on host:port; report the bound port through task_status."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    if ssl_context is not None:
        listeners = [trio.SSLListener(lst, ssl_context, https_compatible=False) for lst in listeners]
    bound = listeners[0].socket.getsockname()[1] if ssl_context is None else listeners[0].transport_listener.socket.getsockname()[1]
    task_status.started(bound)
    await serve_listeners(service, listeners)


async def serve_listeners(service: Service, listeners: list, connections: set | None = None) -> None:
    """Serve every connection the listeners accept until cancelled (the listeners close then).
    `connections`: gets each open connection's cancel scope (cancel one to close it)."""

    async def handler(stream: trio.abc.Stream) -> None:
        with trio.CancelScope() as scope:
            if connections is not None:
                connections.add(scope)
            try:
                await serve_connection(stream, service)
            except trio.BrokenResourceError:
                pass
            except Exception:  # a TLS handshake failure etc. must not reach the listener
                log.info("connection ended with %s", traceback.format_exc())
            finally:
                if connections is not None:
                    connections.discard(scope)

    await trio.serve_listeners(handler, listeners)
