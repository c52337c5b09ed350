"""Wire fuzzing against a running server (a real TCP listener, raw sockets).

CI profile: MONGOSIM_FUZZ_FRAMES (default 3000) frames in batches of 50, half
against a sharded cluster (the router) and half against a replica set; after
each batch an idle bystander connection and a brand-new connection must both
answer `ping`.  Long profile (the issue's 100,000 frames):

    MONGOSIM_FUZZ_FRAMES=100000 python -m pytest tests/reliability/test_wire_fuzz.py -q

What each frame must get is described in `wirefuzz.py` (a reply, silence for
moreToCome, or a closed connection -- never a hang, never a dead server).
"""

from __future__ import annotations

import os
import struct

import bson
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from mongosim import Cluster
from tests.reliability import wirefuzz as wf

FRAMES = int(os.environ.get("MONGOSIM_FUZZ_FRAMES", "3000"))
BATCH = 50


@pytest.fixture(scope="module", params=["sharded", "replset"])
def server(request):
    with Cluster(shards=2, port=0, instant_hwm=True, topology=request.param) as cluster:
        prober = wf.Prober("127.0.0.1", cluster.port)
        yield cluster, prober
        prober.close()
        print(f"\nwire fuzz: {prober.stats.frames} frames, {prober.stats.replies} replies, "
              f"{prober.stats.closes} closes, {prober.stats.reconnects} connections; "
              f"error codes: {dict(prober.stats.codes.most_common(25))}")


@settings(max_examples=max(1, FRAMES // BATCH // 2),  # half of the frames per topology
          deadline=None, database=None, suppress_health_check=list(HealthCheck),
          # no shrinking: the server is stateful, so a failing batch is reported as found
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(batch=st.lists(wf.fuzz_frames(), min_size=BATCH, max_size=BATCH))
def test_fuzzed_frames_never_hurt_the_server(server, batch):
    cluster, prober = server
    errors_before = len(prober.stats.internal_errors)
    for case in batch:
        prober.run(case)
    prober.check_health()
    assert cluster.running
    # a command may fail, but never with "mongosim internal error" (an uncaught exception)
    assert len(prober.stats.internal_errors) == errors_before, prober.stats.internal_errors[errors_before:][:3]


# -- pinned regressions: each of these is a frame the fuzzer can produce ----------------------
def _one(prober: wf.Prober, data: bytes) -> dict | None:
    """Send one delimited frame on a fresh connection; its reply (None if the server closed)."""
    conn = wf.Conn(prober.addr, prober.timeout)
    try:
        conn.sendall(data)
        import time

        frame = conn.read_frame(time.monotonic() + prober.timeout)
        if frame is None:
            return None
        reply = wf.parse_reply(frame)
        prober.ping(conn)  # and the connection still works
        return reply
    finally:
        conn.close()


def test_deep_nesting_is_refused_like_the_server(server):
    _cluster, prober = server
    ok = _one(prober, wf.op_msg(bson.encode({"ping": 1, "$db": "admin", "x": bson.decode(wf.nested_bson(199, False))})))
    assert ok["ok"] == 1  # 200 levels below the top: the limit
    for depth in (200, 900, 5000):
        body = wf.bson_raw_elements([(0x10, b"ping", struct.pack("<i", 1)), (0x03, b"x", wf.nested_bson(depth, False)),
                                     (0x02, b"$db", wf.bson_string(b"admin"))])
        reply = _one(prober, wf.op_msg(body))
        assert reply["ok"] == 0 and reply["code"] == 15, reply  # Overflow
        assert "maximum nested object depth" in reply["errmsg"]


def test_oversized_document_is_refused(server):
    _cluster, prober = server
    pad = "x" * (wf.MAX_BSON_INTERNAL + 10)
    reply = _one(prober, wf.op_msg(bson.encode({"insert": "big", "documents": [{"_id": 1, "pad": pad}], "$db": "fuzz"})))
    assert reply["ok"] == 0 and reply["code"] == 10334, reply  # BSONObjectTooLarge
    seq = b"documents\x00" + bson.encode({"_id": 2, "pad": pad})
    section = b"\x01" + struct.pack("<i", 4 + len(seq)) + seq
    reply = _one(prober, wf.op_msg(bson.encode({"insert": "big", "$db": "fuzz"}), extra_sections=section))
    assert reply["ok"] == 0 and reply["code"] == 10334, reply
    # a 16 MB document is the most a collection may hold (insert checks the user limit)
    doc = {"_id": 3, "pad": "x" * (16 * 1024 * 1024 - 100)}
    seq = b"documents\x00" + bson.encode(doc)
    section = b"\x01" + struct.pack("<i", 4 + len(seq)) + seq
    reply = _one(prober, wf.op_msg(bson.encode({"insert": "big", "$db": "fuzz"}), extra_sections=section))
    assert reply["ok"] == 1, reply


def test_bad_length_closes_only_that_connection(server):
    _cluster, prober = server
    for length in (-1, 0, 15, wf.MAX_MESSAGE + 1):
        prober.run(wf.Case("bad_length", struct.pack("<i", length) + b"\x00" * 12, "pinned"))
    prober.check_health()
