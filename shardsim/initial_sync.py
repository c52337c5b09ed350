"""Initial sync: a member with no usable history copies its sync source's data.

A new member (replSetReconfig) starts empty, and a member whose newest entry
has fallen off its source's bounded oplog can no longer catch up by
replication; both copy the source's data as it is now (its collections with
their options, indexes, shard keys and documents, its session table and
pre-images) and begin their oplog with the source's newest entry, as the
server's initial sync clones and then applies from the clone's start.  The
copy goes through BSON, so no document object is shared between members.
A member created with its set starts this way too (its oplog then begins
with the set's "initiating set" entry).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.oplog.oplog import Oplog
from mongosim.shardsim.catalog import Catalog, Collection
from mongosim.shardsim.collection_options import refresh
from mongosim.shardsim.query.values import hashable
from mongosim.shardsim.sessions import SessionState, SessionTable

if TYPE_CHECKING:
    from mongosim.shardsim.replica_set import Member


def copy_sessions(src: SessionTable, dst: SessionTable) -> None:
    """The session table's retryable-write records (replicated data on the server)."""
    dst._sessions.clear()
    for key, s in src._sessions.items():
        txn = s.txn if s.txn is not None and s.txn.state == "committed" else None
        dst._sessions[key] = SessionState(s.txn_number, dict(s.executed), s.last_write_key, txn)


def initial_sync(member: "Member", source: "Member") -> None:
    node, src = member.node, source.node
    catalog = Catalog()
    for c in src.catalog.all_collections():
        docs = bsonutil.decode(bsonutil.encode({"d": list(c.docs.values())}))["d"]
        coll = Collection(c.db, c.name, uuid=c.uuid, options=bsonutil.decode(bsonutil.encode(c.options)),
                          indexes=[dict(s) for s in c.indexes if s.get("name") == "_id_"],
                          shard_key=dict(c.shard_key) if c.shard_key else None)
        for d in docs:
            coll.docs[hashable(d["_id"])] = d
        for spec in c.indexes:
            if spec.get("name") != "_id_":
                coll.add_index(dict(spec))
        catalog.add_collection(refresh(coll))
    member.committed.stop()
    node.catalog = catalog
    copy_sessions(src.sessions, node.sessions)
    node.preimages = {k: bsonutil.decode(bsonutil.encode(v)) for k, v in src.preimages.items()}
    node.cursors.kill_all(MongoError("InterruptedDueToReplStateChange", "operation was interrupted because a "
                                     "replica set state change occurred: initial sync"))
    node.oplog.wake_readers()
    oplog = Oplog(src.oplog.max_bytes)
    last = src.oplog.end - 1
    key, op, ns = src.oplog.meta_at(last)
    oplog._base = last  # positions continue the source's numbering
    oplog.append_raw(src.oplog.raw_at(last), key, op, ns)
    node.oplog = oplog
    if node.event_cache is not None:
        node.event_cache._events.clear()
    node.clock.advance(max(src.clock.key, key))
    member.term_starts = [(key, source.term_at(key))]
    member.fetched_key = key
    member.buffer.clear()
    member.applier.partial.clear()
    member.applier.prepared.clear()
    member._metadata_done = len(member.rs.metadata_log)
    if member.rs.multi:
        member.committed.start()
