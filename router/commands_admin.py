"""Handshake, server information, sessions and test commands on the router."""

from __future__ import annotations

import uuid as _uuid
from typing import TYPE_CHECKING, Any

import trio
from bson import Binary, Int64, Timestamp
from mongosim.oplog.errors import MongoError
from mongosim.router import authn, handshake, parameters
from mongosim.router.command_registry import ROUTER_COMMANDS, router_command
from mongosim.router.host_info import host_info
from mongosim.router.server_status import server_status_sections
from mongosim.router.request import Request
from mongosim.shardsim import ram_log
from mongosim.shardsim.log_rotate import log_rotate
from mongosim.shardsim.javascript import engine as js_engine
from mongosim.shardsim.profiler import apply_profile_command
from mongosim.shardsim.rw_concern_defaults import RWConcernDefaults
from mongosim.shardsim.topology_coordinator import STOP_REPL_PRODUCER, set_replicating

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


@router_command("hello", "isMaster", "ismaster")
async def cmd_hello(router: Router, req: Request) -> dict:
    return answer_hello(router, req)


def answer_hello(service, req: Request, replica_set: dict | None = None) -> dict:
    """hello on a mongos, or (with `replica_set`, the member's fields) on a replica-set member: the
    connection learns its client metadata; the authentication fields go before `ok`."""
    if "client" in req.cmd and req.conn.client is None:
        req.conn.client = req.cmd["client"]
    reply = handshake.hello_reply(service.identity, req.cmd, req.conn.id, replica_set=replica_set)
    extra = service.auth.hello_fields(req.cmd, authn.conn_auth(service, req.conn))
    if extra:
        ok = reply.pop("ok")
        reply.update(extra)
        reply["ok"] = ok
    return reply


@router_command("ping")
async def cmd_ping(router: Router, req: Request) -> dict:
    return {"ok": 1.0}


@router_command("buildInfo", "buildinfo")
async def cmd_build_info(router: Router, req: Request) -> dict:
    return handshake.build_info()


@router_command("getParameter")
async def cmd_get_parameter(router: Router, req: Request) -> dict:
    if req.db != "admin":
        raise MongoError("Unauthorized", "getParameter may only be run against the admin database.")
    return parameters.get_parameter(router.identity, req.cmd)


@router_command("setParameter")
async def cmd_set_parameter(router: Router, req: Request) -> dict:
    """The front door's own parameters (router/parameters.py): a mongos's are not its shards'."""
    if req.db != "admin":
        raise MongoError("Unauthorized", "setParameter may only be run against the admin database.")
    return parameters.set_parameter(router.identity, req.cmd)


@router_command("getLog")
async def cmd_get_log(router: Router, req: Request) -> dict:
    """The process's in-memory log (shardsim/ram_log.py); admin only."""
    if req.db != "admin":
        raise MongoError("Unauthorized", "getLog may only be run against the admin database.")
    return ram_log.get_log(req.cmd["getLog"])


@router_command("logRotate")
async def cmd_log_rotate(router: Router, req: Request) -> dict:
    """The process's log files (shardsim/log_rotate.py: mongosim writes none); admin only."""
    return log_rotate(req.db, req.cmd)


@router_command("clearLog")
async def cmd_clear_log(router: Router, req: Request) -> dict:
    """A test command: the `global` RamLog empties."""
    if not router.identity.parameters.get("enableTestCommands", 1):
        raise MongoError("CommandNotFound", "no such command: 'clearLog'")
    if req.db != "admin":
        raise MongoError("Unauthorized", "clearLog may only be run against the admin database.")
    return ram_log.clear_log(req.cmd["clearLog"])


@router_command("getCmdLineOpts")
async def cmd_get_cmd_line_opts(router: Router, req: Request) -> dict:
    registry = getattr(router, "registry", None)  # (a mongos: its config server's set)
    config_rs = getattr(registry.config, "replica_set", None) if registry is not None else None
    return handshake.cmd_line_opts(router.identity, config_rs.connection_string() if config_rs is not None else None,
                                   javascript=js_engine.ENABLED)


@router_command("serverStatus")
async def cmd_server_status(router: Router, req: Request) -> dict:
    """The base fields, then the sections (router/server_status.py): a member's `repl` is its hello's
    replica-set part; a mongos's `sharding` names its config server."""
    replica_set_fields = getattr(router, "replica_set_fields", None)
    sharding = None
    registry = getattr(router, "registry", None)
    if registry is not None:
        config = registry.config
        sharding = {"configsvrConnectionString": config.replica_set.connection_string(),
                    "lastSeenConfigServerOpTime": {"ts": config.clock.now(), "t": Int64(config.term)},
                    "maxChunkSizeInBytes": Int64(128 * 1024 * 1024)}
    sections = server_status_sections(router.counters, req.cmd, is_mongos=router.identity.is_mongos,
                                      repl=replica_set_fields() if replica_set_fields is not None else None,
                                      sharding=sharding)
    reply = handshake.server_status(router.identity, trio.current_time() - router.started_at, len(router.connections),
                                    sections)
    return reply


@router_command("replSetGetStatus")
async def cmd_repl_set_get_status(router: Router, req: Request) -> dict:
    """rs.status() through mongos: the router's stub answers `ok: 0` with `info: "mongos"` and no code
    (s/commands/cluster_repl_set_get_status_cmd.cpp, an errmsg command; admin only, no auth needed).
    The other replSet* commands are not router commands: CommandNotFound, as on the server."""
    if req.db != "admin":
        raise MongoError("Unauthorized", "replSetGetStatus may only be run against the admin database.")
    return {"info": "mongos", "ok": 0.0, "errmsg": "replSetGetStatus is not supported through mongos"}


@router_command("connectionStatus")
async def cmd_connection_status(router: Router, req: Request) -> dict:
    return router.auth.connection_status(req.db, req.cmd, authn.conn_auth(router, req.conn))


@router_command("whatsmyuri")
async def cmd_whatsmyuri(router: Router, req: Request) -> dict:
    return {"you": req.conn.peer, "ok": 1.0}


@router_command("endSessions", "killSessions", "refreshSessions", "killAllSessions", "killAllSessionsByPattern")
async def cmd_end_sessions(router: Router, req: Request) -> dict:
    """Sessions ended or killed: their open transactions abort (on a mongos through its transaction
    router, on a replica-set primary in its own session table)."""
    if req.name == "endSessions" and isinstance(req.cmd.get("endSessions"), list):
        router.session_cache.end([lsid for lsid in req.cmd["endSessions"] if isinstance(lsid, dict) and "id" in lsid])
    if req.name in ("endSessions", "killSessions", "killAllSessions"):
        if router.txns is not None:
            await router.txns.end_sessions(req.cmd)
        else:
            router.node.sessions.kill(req.cmd)
    return {"ok": 1.0}


@router_command("startSession")
async def cmd_start_session(router: Router, req: Request) -> dict:
    """A new session of the connection's user, known to this process's session cache from now."""
    lsid = {"id": Binary(_uuid.uuid4().bytes, 4)}
    authn.resolve_session(router, {"lsid": lsid}, req.conn)
    return {"id": lsid, "timeoutMinutes": handshake.LOGICAL_SESSION_TIMEOUT_MINUTES, "ok": 1.0}


@router_command("profile")
async def cmd_profile(router: Router, req: Request) -> dict:
    """A mongos keeps slowms, sampleRate and per-database filters for its logs, but profiles nothing:
    only levels -1 and 0 (shardsim/profiler.py)."""
    return apply_profile_command(router.profile_settings, req.db, req.cmd, on_mongos=True)[0]


@router_command("refreshLogicalSessionCacheNow")
async def cmd_refresh_logical_session_cache_now(router: Router, req: Request) -> dict:
    """A test command: the session cache refreshes now (ended and expired sessions leave it)."""
    if not router.identity.parameters.get("enableTestCommands", 1):
        raise MongoError("CommandNotFound", "no such command: 'refreshLogicalSessionCacheNow'")
    router.session_cache.refresh(trio.current_time())
    return {"ok": 1.0}


@router_command("configureFailPoint")
async def cmd_configure_fail_point(router: Router, req: Request) -> dict:
    if not router.identity.parameters.get("enableTestCommands", 1):
        raise MongoError("CommandNotFound", "no such command: 'configureFailPoint'")
    reply = router.failpoints.configure(req.cmd)
    member = getattr(router, "member", None)
    if member is not None and req.cmd.get("configureFailPoint") == STOP_REPL_PRODUCER:
        # (a member's oplog fetcher stops while it is on: topology_coordinator.set_replicating)
        set_replicating(member.rs, member, req.cmd.get("mode") == "off")
    return reply


def _rw_defaults_set(service: Any, name: str) -> Any:
    """The replica set whose read/write concern defaults `service` answers for: a mongos asks the
    config server; a member its own set, unless it is a shard's (51301, as the server's
    assertNotStandaloneOrShardServer: in a sharded cluster, mongos applies the defaults)."""
    member = getattr(service, "member", None)
    if member is None:
        return service.registry.config.replica_set
    if member.rs.in_sharded_cluster:
        raise MongoError(51301, f"'{name}' is not supported on shard nodes.")
    return member.rs


@router_command("getDefaultRWConcern")
async def cmd_get_default_rw_concern(router: Router, req: Request) -> dict:
    """The defaults in force (`shardsim.rw_concern_defaults`): with a PSA set's implicit w: 1, no
    `defaultWriteConcern` at all."""
    rs = _rw_defaults_set(router, "getDefaultRWConcern")
    defaults = rs.defaults if rs is not None and rs.defaults is not None else RWConcernDefaults()
    return {**defaults.describe(rs), "ok": 1.0}


@router_command("setDefaultRWConcern")
async def cmd_set_default_rw_concern(router: Router, req: Request) -> dict:
    """Set the cluster-wide read/write concern defaults (on a replica set's primary, or through mongos
    on the config server's)."""
    if req.db != "admin":
        raise MongoError("Unauthorized", "setDefaultRWConcern may only be run against the admin database.")
    rs = _rw_defaults_set(router, "setDefaultRWConcern")
    member = getattr(router, "member", None)
    if member is not None and not member.is_primary:
        raise MongoError("NotWritablePrimary", "not primary")
    if rs.defaults is None:
        raise MongoError("IllegalOperation", "this deployment keeps no read/write concern defaults")
    wc = req.cmd.get("defaultWriteConcern")
    if member is not None and isinstance(wc, dict) and isinstance(wc.get("w"), str) and wc["w"] != "majority" \
            and wc["w"] not in rs.write_concern_modes:  # (a config server does not check modes: the shards have them)
        raise MongoError("UnknownReplWriteConcern", f"No write concern mode named '{wc['w']}' found in replica set "
                         "configuration")
    writer = member if member is not None else rs.primary  # (mongos: the config server's primary)
    rs.defaults.set(req.cmd.get("defaultReadConcern"), wc, writer.node.clock.now() if writer else Timestamp(0, 0))
    return {**rs.defaults.describe(rs), "ok": 1.0}


@router_command("hostInfo")
async def cmd_host_info(router: Router, req: Request) -> dict:
    return host_info(router.identity.address)


@router_command("logout")
async def cmd_logout(router: Router, req: Request) -> dict:
    return router.auth.handle_logout(req.db, req.cmd, authn.conn_auth(router, req.conn))


@router_command("listCommands")
async def cmd_list_commands(router: Router, req: Request) -> dict:
    return {"commands": {name: {"help": ""} for name in sorted(ROUTER_COMMANDS)}, "ok": 1.0}


@router_command("saslStart")
async def cmd_sasl_start(router: Router, req: Request) -> dict:
    return router.auth.handle_sasl_start(req.db, req.cmd, authn.conn_auth(router, req.conn))


@router_command("saslContinue")
async def cmd_sasl_continue(router: Router, req: Request) -> dict:
    return router.auth.handle_sasl_continue(req.db, req.cmd, authn.conn_auth(router, req.conn))


async def cmd_user_management(router: Router, req: Request) -> dict:
    """createUser, updateUser, dropUser, grantRolesToUser, revokeRolesFromUser, usersInfo, createRole,
    updateRole, dropRole, grant/revokeRolesToRole, grant/revokePrivilegesToRole, rolesInfo, ..."""
    return router.auth.handle_user_command(req.db, req.cmd, authn.conn_auth(router, req.conn))


for _name in authn.USER_COMMANDS:
    router_command(_name)(cmd_user_management)


@router_command("mongosimFault")
async def cmd_mongosim_fault(router: Router, req: Request) -> dict:
    """Test command: inject a fault on a shard (see mongosim.faults)."""
    if not router.identity.parameters.get("enableTestCommands", 1):
        raise MongoError("CommandNotFound", "no such command: 'mongosimFault'")
    injector = getattr(router, "faults", None)
    if injector is None:
        raise MongoError("IllegalOperation", "fault injection is not available on this server")
    return await injector.apply_command(req.cmd, router, req.conn)
