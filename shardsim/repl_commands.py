"""Replica-set commands on a member: replSetGetStatus, replSetGetConfig, replSetStepDown,
replSetStepUp, replSetFreeze, replSetReconfig, appendOplogNote.

Replies follow the server's shapes (repl_set_get_status / topology_coordinator
prepareStatusResponse, ReplSetConfig::toBSON) so that mongosh's `rs.status()`,
`rs.conf()`, `rs.stepDown()`, `rs.freeze()`, `rs.add()` / `rs.addArb()` /
`rs.remove()` work.  A member is seen by another only when the two can talk:
a killed or cut-off member shows as `health: 0`, state 8 "(not
reachable/healthy)".  An arbiter shows as state 7 ARBITER with no optimes of
its own (prepareStatusResponse leaves them out for arbiters); asked itself,
its applied optime is the commit point it heard of.

replSetReconfig takes members' `arbiterOnly`, `priority`, `votes`, `hidden`
and `tags`, and `settings.getLastErrorModes`, checked as MemberConfig and
ReplSetConfig check them (an arbiter must vote and has no tags and priority
0 by default; tags are strings; a mode names existing tag keys with positive
counts; a member cannot turn into an arbiter or back; config servers have no
arbiters).  A reconfig that would change the set's implicit default write
concern (an arbiter added to, or removed from, a set where that flips it
between w: "majority" and w: 1) is refused, forced or not, until a
cluster-wide write concern is set (`setDefaultRWConcern`), as since 5.0.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import trio
from bson import Int64, Timestamp

from mongosim.oplog import entry as E
from mongosim.oplog.clock import key_ts
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import topology_coordinator as tc
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.values import type_name
from mongosim.shardsim.replica_set import DOWN, PRIMARY, REMOVED, SECONDARY, STATE_CODES, optime

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.replica_set import Member

_EPOCH = datetime(1970, 1, 1)
_NULL_OPTIME = {"ts": Timestamp(0, 0), "t": Int64(-1)}


def member_of(node: Node) -> "Member":
    m = getattr(node, "member", None)
    if m is None:
        raise MongoError("NoReplicationEnabled", "not running with --replSet")
    return m


def _optime(m: "Member", key: int) -> dict:
    return {"ts": key_ts(key), "t": Int64(m.term_at(key))} if key else dict(_NULL_OPTIME)


def _wall(m: "Member", key: int) -> datetime:
    if m.arbiter:  # (no oplog of its own: the wall time of the entry the others hold)
        holders = [o for o in m.rs.data_bearing if o.node.oplog.find_by_key(key) is not None] if key else []
        m = holders[0] if holders else m
    e = m.node.oplog.find_by_key(key) if key else None
    return e["wall"] if e is not None else _EPOCH


def _arbiter_optime(m: "Member") -> dict:
    term, key = optime(m)
    return {"ts": key_ts(key), "t": Int64(term)} if key else dict(_NULL_OPTIME)


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)


def _since(t: float) -> Int64:
    return Int64(int(max(trio.current_time() - t, 0)))


def _state_str(m: "Member", seen: bool) -> tuple[int, str]:
    if not seen:
        return STATE_CODES[DOWN], "(not reachable/healthy)"
    return STATE_CODES[m.state], m.state


def _member_status(me: "Member", m: "Member", commit_key: int) -> dict:
    rs = me.rs
    seen = rs.can_talk(me, m)
    code, text = _state_str(m, seen)
    d: dict[str, Any] = {"_id": m.id, "name": m.host, "health": 1.0 if seen else 0.0, "state": code, "stateStr": text}
    key = m.last_key if seen else 0
    d["uptime"] = _since(m.started_at) if seen else Int64(0)
    if not m.arbiter:  # (an arbiter has no optimes to show)
        d["optime"] = _optime(m, key)
        if m is not me:
            d["optimeDurable"] = _optime(m, key)
        d["optimeDate"] = _wall(m, key)
        if m is not me:
            d["optimeDurableDate"] = _wall(m, key)
        d["lastAppliedWallTime"] = _wall(m, key)
        d["lastDurableWallTime"] = _wall(m, key)
    if m is not me:
        d["lastHeartbeat"] = _now()
        d["lastHeartbeatRecv"] = _now() if seen else _EPOCH
        d["pingMs"] = Int64(0)
        d["lastHeartbeatMessage"] = "" if seen else f"Error connecting to {m.host} :: caused by :: Connection refused"
    src = m.sync_source if seen and m.state == SECONDARY else None
    d["syncSourceHost"] = src.host if src is not None else ""
    d["syncSourceId"] = src.id if src is not None else -1
    d["infoMessage"] = ""
    if seen and m.state == PRIMARY:
        d["electionTime"] = key_ts(m.election_key)
        d["electionDate"] = _wall(m, m.election_key)
    d["configVersion"] = rs.config_version
    d["configTerm"] = rs.term
    if m is me:
        d["self"] = True
        d["lastHeartbeatMessage"] = ""
    return d


@command("replSetGetStatus")
def cmd_repl_set_get_status(node: Node, ctx: OpCtx) -> dict:
    me = member_of(node)
    rs = me.rs
    if me.arbiter:
        commit = me.known_commit_key
    else:
        commit = min(me.known_commit_key, me.last_key) if rs.multi else me.last_key
    src = me.sync_source if me.state == SECONDARY else None
    reply: dict[str, Any] = {
        "set": rs.name, "date": _now(), "myState": STATE_CODES[me.state], "term": Int64(rs.term),
        "syncSourceHost": src.host if src is not None else "", "syncSourceId": src.id if src is not None else -1,
        "heartbeatIntervalMillis": Int64(int(rs.heartbeat_interval * 1000)),
        "majorityVoteCount": rs.majority, "writeMajorityCount": rs.write_majority,
        "votingMembersCount": len(rs.voting), "writableVotingMembersCount": len(rs.writable_voting),
    }
    if me.arbiter:  # its applied optime is the commit point; no committed snapshot, no stable checkpoint
        applied, wall = _arbiter_optime(me), _wall(me, commit)
        reply["optimes"] = {
            "lastCommittedOpTime": applied, "lastCommittedWallTime": wall, "appliedOpTime": applied,
            "durableOpTime": applied, "writtenOpTime": applied, "lastAppliedWallTime": wall,
            "lastDurableWallTime": wall, "lastWrittenWallTime": wall,
        }
    else:
        reply["optimes"] = {
            "lastCommittedOpTime": _optime(me, commit), "lastCommittedWallTime": _wall(me, commit),
            "readConcernMajorityOpTime": _optime(me, commit), "appliedOpTime": _optime(me, me.last_key),
            "durableOpTime": _optime(me, me.last_key), "writtenOpTime": _optime(me, me.last_key),
            "lastAppliedWallTime": _wall(me, me.last_key), "lastDurableWallTime": _wall(me, me.last_key),
            "lastWrittenWallTime": _wall(me, me.last_key),
        }
        reply["lastStableRecoveryTimestamp"] = key_ts(me.committed.key if me.committed.active else commit)
    if me.state == PRIMARY and rs.elections:
        last = rs.elections[-1]
        reply["electionCandidateMetrics"] = {"lastElectionReason": last["reason"], "lastElectionDate": _now(),
                                             "electionTerm": Int64(last["term"])}
    reply["members"] = [_member_status(me, m, commit) for m in rs.members if m.state != REMOVED]
    reply["ok"] = 1.0
    return reply


def config_doc(rs: Any) -> dict:
    members = []
    for m in rs.members:
        if m.state == REMOVED:
            continue
        members.append({"_id": m.id, "host": m.host, "arbiterOnly": m.arbiter, "buildIndexes": True,
                        "hidden": m.hidden, "priority": float(m.priority), "tags": dict(m.tags),
                        "secondaryDelaySecs": Int64(m.secondary_delay), "votes": 1 if m.votes else 0})
    return {
        "_id": rs.name, "version": rs.config_version, "term": rs.term, "members": members,
        "protocolVersion": Int64(1), "writeConcernMajorityJournalDefault": True,
        "settings": {"chainingAllowed": True, "heartbeatIntervalMillis": int(rs.heartbeat_interval * 1000),
                     "heartbeatTimeoutSecs": 10, "electionTimeoutMillis": int(rs.election_timeout * 1000),
                     "catchUpTimeoutMillis": -1, "catchUpTakeoverDelayMillis": 30000,
                     "getLastErrorModes": {name: dict(mode) for name, mode in rs.write_concern_modes.items()},
                     "getLastErrorDefaults": {"w": 1, "wtimeout": 0}, "replicaSetId": rs.replica_set_id},
    }


@command("replSetGetConfig")
def cmd_repl_set_get_config(node: Node, ctx: OpCtx) -> dict:
    """The set's config; with `commitmentStatus: true` (on the primary only) whether the config is
    committed — always, here: a reconfig reaches every member at once (processReplSetGetConfig)."""
    member = member_of(node)
    want = ctx.cmd.get("commitmentStatus", False)
    if not isinstance(want, (bool, int, float, Int64)):
        raise MongoError("TypeMismatch", "Expected boolean or number type for field \"commitmentStatus\", found "
                                         f"{type_name(want)}")
    reply: dict[str, Any] = {"config": config_doc(member.rs)}
    if want:
        if not member.is_primary:
            raise MongoError("NotWritablePrimary", "commitmentStatus is only supported on primary.")
        reply["commitmentStatus"] = True
    reply["ok"] = 1.0
    return reply


def _seconds(v: Any, what: str, default: float) -> float:
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float, Int64)):
        raise MongoError("TypeMismatch", f"{what} must be a number")
    return float(v)


@command("replSetStepDown")
async def cmd_repl_set_step_down(node: Node, ctx: OpCtx) -> dict:
    m = member_of(node)
    secs = _seconds(ctx.cmd.get("replSetStepDown"), "stepdown period", 60.0)
    catch_up = _seconds(ctx.cmd.get("secondaryCatchUpPeriodSecs"), "secondaryCatchUpPeriodSecs",
                        min(10.0, secs))
    await tc.step_down(m.rs, m, secs, catch_up, force=bool(ctx.cmd.get("force", False)))
    return {"ok": 1.0}


@command("replSetStepUp")
def cmd_repl_set_step_up(node: Node, ctx: OpCtx) -> dict:
    m = member_of(node)
    rs = m.rs
    if m.state == PRIMARY:
        return {"ok": 1.0}
    if not m.electable or tc.candidate(rs, [o for o in rs.members if rs.can_talk(m, o)]) is not m:
        raise MongoError("CommandFailed", "Election failed.")
    for o in rs.members:
        if o is not m and o.state == PRIMARY and rs.can_talk(m, o):
            tc.demote(rs, o, 0.0)
    tc.elect(rs, m, "stepUpRequest")
    return {"ok": 1.0}


@command("replSetFreeze")
def cmd_repl_set_freeze(node: Node, ctx: OpCtx) -> dict:
    m = member_of(node)
    out = tc.freeze(m.rs, m, _seconds(ctx.cmd.get("replSetFreeze"), "freeze period", 0.0))
    return {**out, "ok": 1.0}


@command("appendOplogNote")
def cmd_append_oplog_note(node: Node, ctx: OpCtx) -> dict:
    m = member_of(node)
    if m.state != PRIMARY:
        raise MongoError("NotWritablePrimary", "not primary")
    data = ctx.cmd.get("data")
    if not isinstance(data, dict):
        raise MongoError("NoSuchKey", "missing data field")
    node.log(E.noop_op(data), ctx)
    return {"ok": 1.0}


def _member_error(spec: dict, reason: str, code: str = "BadValue") -> MongoError:
    """A member's config refused (MemberConfig::parseFromBSON's context), as replSetReconfig reports it."""
    return MongoError("InvalidReplicaSetConfig", f"member: {bson_str(spec)} :: caused by :: {reason}")


def parse_member(spec: Any) -> dict:
    """One `members[n]` of a new config, checked as MemberConfig checks it; its fields normalised."""
    if not isinstance(spec, dict) or not isinstance(spec.get("_id"), int) or not isinstance(spec.get("host"), str):
        raise MongoError("InvalidReplicaSetConfig", "each member needs an integer _id and a host")
    arbiter = bool(spec.get("arbiterOnly", False))
    priority = float(spec.get("priority", 1.0))
    if arbiter and priority == 1.0:
        priority = 0.0  # an arbiter's default priority
    votes = 1 if spec.get("votes", 1) else 0
    hidden = bool(spec.get("hidden", False))
    if arbiter and not votes:
        raise _member_error(spec, "Arbiter must vote (cannot have 0 votes)")
    if priority != 0:
        if not votes:
            raise _member_error(spec, "priority must be 0 when non-voting (votes:0)")
        if hidden:
            raise _member_error(spec, "priority must be 0 when hidden=true")
    tags = spec.get("tags") or {}
    if not isinstance(tags, dict):
        raise _member_error(spec, wrong_type("MemberConfig.tags", tags, "object").errmsg)
    for key, value in tags.items():
        if not isinstance(value, str):
            raise _member_error(spec, f"tags.{key} field has non-string value of type {type_name(value)}")
    if arbiter and tags:
        raise _member_error(spec, "Cannot set tags on arbiters.")
    return {"_id": spec["_id"], "host": spec["host"], "arbiter": arbiter, "priority": priority, "votes": votes,
            "hidden": hidden, "tags": {str(k): v for k, v in tags.items()}}


def parse_write_concern_modes(settings: Any, members: list[dict]) -> dict[str, dict[str, int]]:
    """`settings.getLastErrorModes` (ReplSetWriteConcernModeDefinitions): each mode a document of
    positive counts of tag keys some member carries."""
    modes = settings.get("getLastErrorModes", {}) if isinstance(settings, dict) else {}
    field = "getLastErrorModes"
    if not isinstance(modes, dict):
        raise MongoError("InvalidReplicaSetConfig", f"Expected {field} to be an Object, it actually had type "
                                                    f"{type_name(modes)}")
    keys = {k for spec in members for k in spec["tags"]}
    out: dict[str, dict[str, int]] = {}
    for name, mode in modes.items():
        if not isinstance(mode, dict):
            raise MongoError("InvalidReplicaSetConfig", f"Expected {field}.{name} to be an Object, not "
                                                        f"{type_name(mode)}")
        constraints: dict[str, int] = {}
        for tag, count in mode.items():
            if isinstance(count, bool) or not isinstance(count, (int, float, Int64)):
                raise MongoError("InvalidReplicaSetConfig", f"Expected {field}.{name}.{tag} to be a number, not "
                                                            f"{type_name(count)}")
            if int(count) <= 0:
                raise MongoError("InvalidReplicaSetConfig", f"Value of {field}.{name}.{tag} must be positive, but "
                                                            f"found {int(count)}")
            if tag not in keys:
                raise MongoError("InvalidReplicaSetConfig", f"No replica set tag key {tag} in config")
            constraints[tag] = int(count)
        out[name] = constraints
    return out


def _implicit_majority(members: list[dict]) -> bool:
    """isImplicitDefaultWriteConcernMajority for a config's members."""
    voters = [s for s in members if s["votes"]]
    writable = [s for s in voters if not s["arbiter"]]
    return len(voters) == len(writable) or len(writable) > len(voters) // 2 + 1


def _check_implicit_default_unchanged(rs: Any, members: list[dict]) -> None:
    """A reconfig may not flip the implicit default write concern while no cluster-wide one is set."""
    if rs.defaults is None or rs.defaults.cwwc_set or _implicit_majority(members) == rs.implicit_default_majority:
        return
    if rs.in_sharded_cluster:
        raise MongoError("NewReplicaSetConfigurationIncompatible", "Reconfig attempted to install a config that "
                         "would change the implicit default write concern on the shard to {w: 1}. Use the "
                         "setDefaultRWConcern command to set a cluster-wide write concern on the cluster and try "
                         "the reconfig again.")
    raise MongoError("NewReplicaSetConfigurationIncompatible", "Reconfig attempted to install a config that would "
                     "change the implicit default write concern. Use the setDefaultRWConcern command to set a "
                     "cluster-wide write concern and try the reconfig again.")


@command("replSetReconfig")
def cmd_repl_set_reconfig(node: Node, ctx: OpCtx) -> dict:
    m = member_of(node)
    rs = m.rs
    cfg = ctx.cmd.get("replSetReconfig")
    force = bool(ctx.cmd.get("force"))
    if not isinstance(cfg, dict):
        raise MongoError("TypeMismatch", "replSetReconfig expects a config document")
    if m.state != PRIMARY and not force:
        raise MongoError("NotWritablePrimary", "replSetReconfig should only be run on a writable PRIMARY. "
                         f"Current state {m.state};")
    if cfg.get("_id") != rs.name:
        raise MongoError("InvalidReplicaSetConfig", f"New and old configurations differ in replica set name; old "
                         f"was {rs.name}, and new is {cfg.get('_id')}")
    version = cfg.get("version")
    if not isinstance(version, int) or version <= rs.config_version:
        raise MongoError("NewReplicaSetConfigurationIncompatible", "New config is rejected :: caused by :: New "
                         f"config version {version} must be greater than the current version {rs.config_version}")
    specs = cfg.get("members")
    if not isinstance(specs, list) or not specs:
        raise MongoError("InvalidReplicaSetConfig", "replica set configuration must have a non-empty members list")
    members = [parse_member(spec) for spec in specs]
    modes = parse_write_concern_modes(cfg.get("settings"), members)
    if not any(not s["arbiter"] and s["priority"] > 0 for s in members):
        raise MongoError("NewReplicaSetConfigurationIncompatible", "Replica set configuration must contain at "
                         "least one non-arbiter member with priority > 0")
    if rs.is_config and any(s["arbiter"] for s in members):
        raise MongoError("NewReplicaSetConfigurationIncompatible", "Arbiters are not allowed in replica set "
                         "configurations being used for config servers")
    by_id = {mm.id: mm for mm in rs.members if mm.state != REMOVED}
    wanted = {s["_id"]: s for s in members}
    for i, s in wanted.items():
        old = by_id.get(i)
        if old is not None and old.arbiter != s["arbiter"]:
            raise MongoError("NewReplicaSetConfigurationIncompatible", "New and old configurations differ in the "
                             f"setting of the arbiterOnly field for member {old.host}; to make this change, remove "
                             "then re-add the member")
    _check_implicit_default_unchanged(rs, members)
    added = [i for i in wanted if i not in by_id]
    removed = [i for i in by_id if i not in wanted]
    voting_change = sum(1 for i in added if wanted[i]["votes"]) + sum(1 for i in removed if by_id[i].votes)
    if voting_change > 1 and not force:
        raise MongoError("NewReplicaSetConfigurationIncompatible", "Rejecting reconfig where the new config has "
                         "a voting member set that differs from the old one by more than one member.")
    if by_id.get(m.id) is not None and m.id in removed:
        raise MongoError("InvalidReplicaSetConfig", "the primary cannot remove itself")
    if added and rs.member_factory is None:
        raise MongoError("IllegalOperation", "this replica set cannot start new members")
    for i, s in wanted.items():
        mm = by_id.get(i)
        if mm is None:
            mm = rs.member_factory(s["host"], i, arbiter=s["arbiter"])
        mm.priority = s["priority"]
        mm.votes = s["votes"]
        mm.hidden = s["hidden"]
        mm.tags = s["tags"]
    for i in removed:
        gone = by_id[i]
        gone.state = REMOVED
        if gone.on_close_connections is not None:
            gone.on_close_connections()
        gone.node.cursors.kill_all()
    rs.write_concern_modes = modes
    rs.config_version = version
    node.log(E.noop_op({"msg": "Reconfig set", "version": version}), ctx)
    rs.notify()
    rs.progress()
    return {"ok": 1.0}
