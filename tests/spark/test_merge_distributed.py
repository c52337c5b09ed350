"""The distributed merge job: ranges replayed on their own give the whole dump's events; the job's
ordered partitions are the router's stream — on the recorded workload, on the command line, and as a
property over random workloads, shard counts and partition counts."""

from __future__ import annotations

import tempfile

import pymongo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.spark.dump_ranges import (DumpRange, entry_meta, index_dump, index_path, load_range, plan_ranges, plan_slices,
                                        read_index, walk)
from mongosim.spark.merge_job import MergeJob, main, merge_dumps_single_partition
from mongosim.spark.oplog_source import dump_files, dump_oplogs, iter_dump, range_events, slice_events, whole_dump, write_dump
from mongosim.spark.options import StreamOptions
from mongosim.spark.schema import decode_event
from tests.spark.helpers import drain, shard_across, transactions

OPTIONS = [  # (id, source options)
    ("cluster-expanded", {"showExpandedEvents": "true"}),
    ("collection", {"database": "eq", "collection": "orders"}),
]


def _split(idx, k: int) -> tuple[DumpRange, DumpRange]:
    """The dump cut before its k-th entry (the index samples every entry)."""
    a = DumpRange(idx.shard, 0, idx.path, 0, idx.offsets[k], idx.keys[0], idx.keys[k], True)
    b = DumpRange(idx.shard, 0, idx.path, idx.offsets[k], idx.size, idx.keys[k], None, False,
                  (idx.offsets[:k], idx.keys[:k]))
    return a, b


def _chain_cuts(idx) -> tuple[set[int], int]:
    """Cut points inside transaction chains (between an entry a chain starts with and its terminal
    entry), and how many of them separate a terminal entry from a `partialTxn` one."""
    with open(idx.path, "rb") as f:
        data = f.read()
    pos_of_key, cuts, partial = {}, set(), 0
    for n, (pos, size) in enumerate(walk(data, idx.path)):
        raw = data[pos:pos + size]
        key, op, ns = entry_meta(raw)
        pos_of_key[key] = n
        if op == "c" and ns == "admin.$cmd":
            ev = decode_event(raw)
            prev = (ev.get("prevOpTime") or {}).get("ts")
            if prev is not None and prev.time != 0:
                first = pos_of_key[(prev.time << 32) | prev.inc]
                cuts.update(range(first + 1, n + 1))
                partial += "applyOps" in ev["o"]
    return cuts, partial


def test_the_index_left_beside_a_dump_is_the_walked_one_while_the_dump_is_unchanged(recorded, tmp_path):
    """`write_dump` leaves the sparse index a walk of the dump gives; a job does not trust it once the
    dump was rewritten (size and modification time recorded), nor for another sampling."""
    _start, dumps, _ = recorded
    for shard, path in dump_files(dumps).items():
        assert read_index(shard, path) == index_dump(shard, path)
        assert read_index(shard, path, sample_every=7) is None
    shard, path = sorted(dump_files(dumps).items())[0]
    copy = tmp_path / f"{shard}.bson"
    raws = list(iter_dump(path))
    write_dump(raws, copy)
    assert read_index(shard, copy) == index_dump(shard, copy)
    with open(copy, "wb") as f:  # rewritten without its index: one entry fewer
        f.write(b"".join(raws[:-1]))
    assert read_index(shard, copy) is None
    with open(index_path(copy), "w") as f:
        f.write("{not json")
    assert read_index(shard, copy) is None


@pytest.mark.parametrize("name,options", OPTIONS, ids=[o[0] for o in OPTIONS])
def test_a_range_replays_exactly_the_events_of_its_entries(recorded, name, options):
    """Cut anywhere — inside transaction chains too (their earlier entries are carried across) — the
    two ranges' events, one after the other, are the whole dump's events."""
    start, dumps, _ = recorded
    opts = StreamOptions.parse({**options, "startAfter": start})
    crossing = partial = 0
    for shard, path in dump_files(dumps).items():
        idx = index_dump(shard, str(path), sample_every=1)
        whole = list(range_events(whole_dump(shard, path), opts))
        assert whole
        inside, n_partial = _chain_cuts(idx)
        crossing, partial = crossing + len(inside), partial + n_partial
        for k in sorted(inside | set(range(1, idx.count, 25))):
            a, b = _split(idx, k)
            assert list(range_events(a, opts)) + list(range_events(b, opts)) == whole, (shard, k)
        many = plan_ranges([idx], 17)
        assert len(many) == 17
        assert [e for r in many for e in range_events(r, opts)] == whole
    assert crossing and partial, "the workload has prepared and partialTxn chains to cut through"


@pytest.mark.parametrize("name,options", OPTIONS, ids=[o[0] for o in OPTIONS])
def test_time_slices_one_after_the_other_are_the_merged_stream(recorded, name, options):
    """The dumps cut at common times (windows starting at a sample before the cut, entries past the
    slice's end dropped, chains carried in): each slice merged on its own, the slices concatenated,
    give the merge of the whole dumps."""
    start, dumps, _ = recorded
    opts = StreamOptions.parse({**options, "startAfter": start})
    for sample_every in (1, 3):
        idx = [index_dump(shard, str(path), sample_every) for shard, path in dump_files(dumps).items()]
        (whole,) = plan_slices(idx, 1)
        assert all(r.first and r.hi_key is None for r in whole)
        merged = list(slice_events(whole, opts))
        assert len({e[1] for e in merged}) == len(idx) > 1
        for partitions in (5, 17, 40):
            slices = plan_slices(idx, partitions)
            assert len(slices) > 3
            assert [e for sl in slices for e in slice_events(sl, opts)] == merged, (sample_every, partitions)


def test_carried_entries_sit_below_the_range(recorded):
    _start, dumps, _ = recorded
    for shard, path in dump_files(dumps).items():
        idx = index_dump(shard, str(path), sample_every=1)
        inside, _ = _chain_cuts(idx)
        for k in sorted(inside)[:5]:
            _a, b = _split(idx, k)
            oplog = load_range(b)
            carried = oplog.position_at_or_after(b.lo_key) - oplog.start
            assert carried >= 1 and len(oplog) == idx.count - k + carried


def _partitioned(df) -> list[tuple[int, str, bytes]]:
    from pyspark.sql.functions import spark_partition_id

    return [(r.pid, r.token, bytes(r.rawEvent)) for r in df.withColumn("pid", spark_partition_id()).collect()]


@pytest.mark.parametrize("name,output", [("cluster-expanded", 3), ("collection-match", 3),
                                         ("cluster-expanded", None), ("collection-match", None)])
def test_several_ordered_partitions_are_the_router_stream(spark, recorded, name, output):
    """With the default output partitions the time slices are the ordered partitions (no shuffle);
    with another number, Spark's distributed sort makes them."""
    from tests.spark.helpers import STREAMS

    start, dumps, streamed = recorded
    options = dict(next(s[3] for s in STREAMS if s[0] == name))
    job = MergeJob(spark, str(dumps), partitions=7, output_partitions=output, sample_every=4, startAfter=start,
                   includeRawEvent="true", **options)
    try:
        assert len(job.ranges) == 7
        df = job.dataframe()
        assert df.rdd.getNumPartitions() == (output or 7)
        rows = _partitioned(df)
        assert [raw for _p, _t, raw in rows] == streamed[name]  # collect(): the partitions in order
        pids = [p for p, _t, _r in rows]
        assert pids == sorted(pids) and len(set(pids)) >= 2
        single = merge_dumps_single_partition(spark, str(dumps), startAfter=start, includeRawEvent="true",
                                              **options)
        assert [bytes(r.rawEvent) for r in single.collect()] == streamed[name]
    finally:
        job.close()


def test_the_command_line_writes_ordered_parquet_parts(spark, recorded, tmp_path, capsys):
    start, dumps, streamed = recorded
    out = tmp_path / "merged.parquet"
    assert main([str(dumps), str(out), "--start-after", start, "--show-expanded-events", "--partitions", "5",
                 "--output-partitions", "3"]) == 0
    assert "3 ordered partitions" in capsys.readouterr().out
    parts = sorted(out.glob("part-*.parquet"))
    assert len(parts) == 3
    tokens = [[r.token for r in spark.read.parquet(str(p)).collect()] for p in parts]
    assert all(t for t in tokens) and all(t == sorted(t) for t in tokens)
    expected = [decode_event(raw)["_id"]["_data"] for raw in streamed["cluster-expanded"]]
    assert [t for part in tokens for t in part] == expected


def test_the_written_parquet_keeps_statistics_for_the_token_and_times_only(spark, recorded, tmp_path):
    """`write_parquet`: no dictionary for unique values, no statistics for the JSON payload columns;
    the token and the cluster time keep their min/max (a reader skips row groups by them)."""
    import pyarrow.parquet as pq

    from mongosim.spark.merge_job import PAYLOAD_COLUMNS, write_parquet

    _start, dumps, _streamed = recorded
    job = MergeJob(spark, str(dumps), partitions=2, include_raw_event=True)
    try:
        write_parquet(job.dataframe(), tmp_path / "out")
    finally:
        job.close()
    (part, *_rest) = sorted((tmp_path / "out").glob("part-*.parquet"))
    meta = pq.ParquetFile(part).metadata
    columns = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i)
               for i in range(meta.num_columns)}
    assert set(PAYLOAD_COLUMNS) <= set(columns)
    for name in PAYLOAD_COLUMNS:
        stats = columns[name].statistics
        assert stats is None or not stats.has_min_max, name
    for name in ("token", "clusterTime.t", "operationType"):
        assert columns[name].statistics is not None and columns[name].statistics.has_min_max, name

    def dictionary(name: str) -> bool:
        return any("DICTIONARY" in e for e in columns[name].encodings)

    assert not dictionary("token") and not dictionary("fullDocument") and dictionary("operationType")


def test_a_start_token_missing_from_the_stream_fails(spark, recorded):
    from mongosim.oplog.errors import MongoError

    _start, dumps, streamed = recorded
    other = decode_event(streamed["database"][0])["_id"]["_data"]  # an event of another namespace
    job = MergeJob(spark, str(dumps), database="eq", collection="log", startAfter=other, partitions=3)
    with pytest.raises(MongoError, match="resume token was not found"):
        job.dataframe()
    job.close()


# -- the property: random workloads, shards and partitions --------------------------------------------
OPS = ("insert", "update", "delete", "txn", "chain", "move", "index", "rename")


def run_workload(client, cluster, ops: list[str], shards: int) -> None:
    db = client.prop
    coll = db.c
    next_id = [0]

    def new_ids(n: int) -> list[int]:
        ids = [(next_id[0] + i) * 37 % 400 + 400 * ((next_id[0] + i) % max(shards, 1)) for i in range(n)]
        next_id[0] += n
        return ids

    for op in ops:
        if op == "insert":
            coll.insert_many([{"_id": i, "v": i} for i in new_ids(6) if not coll.find_one({"_id": i})] or [{}])
        elif op == "update":
            coll.update_many({"_id": {"$lt": 400 * shards // 2}}, {"$inc": {"u": 1}})
        elif op == "delete":
            coll.delete_one({"_id": {"$gte": 200}})
        elif op == "txn":
            ids = [d["_id"] for d in coll.find({}, {"_id": 1}).limit(50)]
            lo = [i for i in ids if i < 400][:1] or [0]
            hi = [i for i in ids if i >= 400][:1] or [900]
            with client.start_session() as s, s.start_transaction():
                for i in lo + hi:
                    coll.update_one({"_id": i}, {"$set": {"t": op}}, upsert=True, session=s)
        elif op == "chain":
            transactions(client, cluster, coll, [1, 2, 3, 4, 5, 6], [401])
        elif op == "move" and shards > 1:
            chunk = next_id[0] % shards
            client.admin.command("moveChunk", "prop.c", find={"_id": 400 * chunk},
                                 to=f"shard{(chunk + 1 + next_id[0]) % shards:02d}")
            next_id[0] += 1
        elif op == "index" and "v_1" in coll.index_information():
            coll.drop_index("v_1")
        elif op == "index":
            coll.create_index([("v", 1)])
        elif op == "rename":
            db.tmp.insert_one({"_id": next_id[0]})
            db.tmp.rename(f"r{next_id[0]}")
            next_id[0] += 1


@settings(max_examples=max(5, settings().max_examples // 40), deadline=None)  # ci: 5; nightly: 50
@given(shards=st.integers(1, 4), partitions=st.integers(1, 12), sample_every=st.integers(1, 5),
       ops=st.lists(st.sampled_from(OPS), min_size=3, max_size=9), level=st.sampled_from(["cluster", "collection"]),
       resume_at=st.integers(0, 30), reshuffle=st.booleans())
def test_property_distributed_merge_is_the_router_stream(spark, shards, partitions, sample_every, ops, level,
                                                         resume_at, reshuffle):
    import mongosim

    with mongosim.Cluster(shards=shards, port=0, instant_hwm=True) as cluster, \
            tempfile.TemporaryDirectory() as tmp:
        client = pymongo.MongoClient(cluster.uri)
        client.admin.command("enableSharding", "prop", primaryShard="shard00")
        client.admin.command("shardCollection", "prop.c", key={"_id": 1})
        for k in range(1, shards):
            client.admin.command("split", "prop.c", middle={"_id": 400 * k})
            client.admin.command("moveChunk", "prop.c", find={"_id": 400 * k}, to=f"shard{k:02d}")
        with client.watch(max_await_time_ms=50) as cs:
            start = cs.resume_token["_data"]
        run_workload(client, cluster, ops, shards)
        client.prop.c.drop()  # (a collection stream ends in an invalidate)
        client.prop.after.insert_one({"_id": 1})
        dump_oplogs(cluster, tmp)
        target, options, kw = (None, {"showExpandedEvents": "true"}, {"show_expanded_events": True}) \
            if level == "cluster" else (("prop", "c"), {"database": "prop", "collection": "c"}, {})
        router = drain(cluster.uri, start, target, kw)
        if resume_at and resume_at < len(router):  # resume from an event's token
            start = decode_event(router[resume_at - 1])["_id"]["_data"]
            router = router[resume_at:]
        job = MergeJob(spark, tmp, partitions=partitions, output_partitions=max(1, partitions // 2) if reshuffle else None,
                       sample_every=sample_every, startAfter=start, includeRawEvent="true", **options)
        try:
            got = [bytes(r.rawEvent) for r in job.dataframe().select("rawEvent").collect()]
        finally:
            job.close()
        single = merge_dumps_single_partition(spark, tmp, startAfter=start, includeRawEvent="true", **options)
        assert got == router
        assert [bytes(r.rawEvent) for r in single.select("rawEvent").collect()] == router
        client.close()


def test_the_merge_columns_option_names_known_columns_only():
    from mongosim.spark.oplog_source import merge_column_names

    assert merge_column_names("true") == ("__key", "__order", "__op", "__intact")
    assert merge_column_names(None) == () and merge_column_names("false") == ()
    assert merge_column_names("__intact,__op") == ("__op", "__intact")
    with pytest.raises(ValueError, match="unknown columns"):
        merge_column_names("__op,__nope")


@pytest.mark.parametrize("fd_schema", [None, "_id INT, n INT"])
def test_a_slice_gives_its_events_rows_column_by_column_up_to_the_end_time(spark, recorded, fd_schema):
    """A slice partition's record batches (built column by column) hold exactly the rows `RowBuilder.row`
    gives its merged events, the merge columns after them, none from `endBeforeOperationTime` on;
    with a `fullDocumentSchema` (no Arrow schema) the same rows come as tuples."""
    import json

    from bson import Timestamp

    from mongosim.spark.oplog_source import MongoOplogDataSource, _end_key

    _start, dumps, _ = recorded
    job = MergeJob(spark, str(dumps), partitions=3)
    plan = {"dumps": job.samples, "slices": [[r.to_json() for r in sl] for sl in job.slices]}
    opts = StreamOptions.parse({"showexpandedevents": "true"})
    every = [key for sl in job.slices for key, *_rest in slice_events(sl, opts)]
    middle = every[len(every) // 2]  # an event's time: the end cuts the stream there
    end = Timestamp(int(middle[2:10], 16), int(middle[10:18], 16))
    options = {"merge": "false", "ranges": json.dumps(plan), "mergeColumns": "true",
               "endBeforeOperationTime": f"{end.time},{end.inc}", "showExpandedEvents": "true"}
    if fd_schema:
        options["fullDocumentSchema"] = fd_schema
    ds = MongoOplogDataSource(options)
    reader = ds.reader(spark.createDataFrame([], ds.schema()).schema)
    rows, end_key = reader.rows, _end_key(end)
    got, expected = [], []
    for part in reader.partitions():
        for out in reader.read(part):
            got.extend(out.to_pylist() if fd_schema is None else [out])
        shards = {r["order"]: r["shard"] for r in part.ranges}
        mine = [rows.row(raw, shards[order]) + (key, order, op, intact)
                for key, order, raw, op, intact in slice_events([DumpRange.from_json(r) for r in part.ranges], opts)
                if key < end_key]
        expected.extend(rows.record_batch(mine).to_pylist() if fd_schema is None and mine else mine)
    assert got == expected
    assert 0 < len(got) < len(every)
