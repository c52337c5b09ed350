"""Server-side JavaScript through pymongo, in both topologies: $where, mapReduce, $function, $accumulator.

The engine is shardsim.javascript; these tests check what a client sees: the
matches, mapReduce's results and its `out` collections (sharded input through
mongos reduces the shards' partial results again), the aggregation operators,
the contexts that refuse `$where`/`$function`, and the errors (139
JSInterpreterFailure for a syntax error or a throw; a runaway script ends
with an error and the server keeps serving).
"""

from __future__ import annotations

import time

import pytest
from bson import Code
from pymongo.errors import OperationFailure

from mongosim.shardsim.javascript import engine
from tests.crud.conftest import shard_two_ways

SUM = Code("function(key, values) { return Array.sum(values); }")


@pytest.fixture
def db(client, request):
    db = client[f"jsx_{request.node.name.split('[')[0][-20:]}"]
    client.drop_database(db.name)
    return db


def _docs(db, n=10):
    db.c.insert_many([{"_id": i, "k": i % 3, "x": i, "tags": ["a", "b"][: i % 3]} for i in range(n)])


def _sharded(client, db):
    """db.c sharded on _id across the two shards (mongos only)."""
    if client.topology_name == "sharded":
        shard_two_ways(client, f"{db.name}.c", key="_id", split=5)


# --- $where ----------------------------------------------------------------------------------------


def test_where_string_and_function(client, db):
    _sharded(client, db)
    _docs(db)
    assert [d["_id"] for d in db.c.find({"$where": "this.x > 6"}).sort("_id", 1)] == [7, 8, 9]
    assert [d["_id"] for d in db.c.find({"$where": Code("function() { return obj.k == 1 && this.tags.length; }")})
            .sort("_id", 1)] == [1, 4, 7]
    assert db.command("count", "c", query={"k": 2, "$where": "this.x % 4 == 0"})["n"] == 1  # 8
    assert db.c.distinct("x", {"$where": "this.x < 2"}) == [0, 1]
    assert sorted(db.c.distinct("x", {"$where": "/^[12]$/.test(String(this.x))"})) == [1, 2]
    assert [d["_id"] for d in db.c.find({"$or": [{"_id": 0}, {"$where": "this.x == 9"}]}).sort("_id", 1)] == [0, 9]


def test_where_in_writes(client, db):
    _docs(db)
    assert db.c.update_many({"$where": "this.x >= 8"}, {"$set": {"big": True}}).modified_count == 2
    assert db.c.delete_many({"$where": "function() { return this.big === true; }"}).deleted_count == 2
    assert db.c.count_documents({}) == 8


def test_where_refused_where_the_server_refuses_it(client, db):
    _docs(db, 3)
    with pytest.raises(OperationFailure) as e:
        list(db.c.find({"tags": {"$elemMatch": {"$where": "true"}}}))
    assert (e.value.code, e.value.details["errmsg"]) == (2, "$where can only be applied to the top-level document")
    with pytest.raises(OperationFailure) as e:
        list(db.c.aggregate([{"$match": {"$where": "true"}}]))
    assert (e.value.code, e.value.details["errmsg"]) == (2, "$where is not allowed in this context")
    with pytest.raises(OperationFailure) as e:  # (pymongo counts with an aggregation $match)
        db.c.count_documents({"$where": "true"})
    assert (e.value.code, e.value.details["errmsg"]) == (2, "$where is not allowed in this context")
    with pytest.raises(OperationFailure) as e:
        db.create_collection("v", validator={"$where": "true"})
    assert e.value.code == 2 and "$where is not allowed in this context" in e.value.details["errmsg"]
    with pytest.raises(OperationFailure) as e:
        list(db.c.find({"$where": 5}))
    assert (e.value.code, e.value.details["errmsg"]) == (2, "$where got bad type")


def test_where_script_errors(client, db):
    _docs(db, 3)
    with pytest.raises(OperationFailure) as e:
        list(db.c.find({"$where": "function() { return this.x >"}))
    assert e.value.code == 139 and e.value.details["codeName"] == "JSInterpreterFailure"
    assert e.value.details["errmsg"].startswith("SyntaxError: ")
    with pytest.raises(OperationFailure) as e:
        list(db.c.find({"$where": "function() { throw new Error('no: ' + this._id); }"}))
    assert e.value.code == 139 and "Error: no: 0" in e.value.details["errmsg"]


def test_runaway_script_ends_and_the_server_keeps_serving(client, db, monkeypatch):
    _docs(db, 2)
    with pytest.raises(OperationFailure) as e:  # the command's own limit
        list(db.c.find({"$where": "while (true) {}"}).max_time_ms(200))
    assert e.value.code == 50
    monkeypatch.setattr(engine, "TIME_LIMIT", 0.2)  # without one: the engine's per-call budget
    with pytest.raises(OperationFailure) as e:
        list(db.c.find({"$where": "for (;;) { var a = [1, 2]; }"}))
    assert e.value.code == 139 and "JavaScript execution terminated" in e.value.details["errmsg"]
    assert [d["_id"] for d in db.c.find({"$where": "this.x == 1"})] == [1]



def test_sleep_counts_toward_max_time_ms_without_blocking(client, db):
    """The server's native `sleep(ms)`: its time counts toward the command's maxTimeMS (a script sleeping
    past it is MaxTimeMSExpired, also when the sleeps add up over the documents), but the emulator does not
    wait (its scripts run on its event loop); without a maxTimeMS it costs nothing."""
    _docs(db, 4)
    t0 = time.monotonic()
    assert len(list(db.c.find({"$where": "sleep(60000) || true"}))) == 4  # a minute each: counted, not waited
    assert len(list(db.c.find({"$where": "sleep(100); return true"}).max_time_ms(1000))) == 4  # 400 ms of 1000
    assert time.monotonic() - t0 < 30
    with pytest.raises(OperationFailure) as e:
        list(db.c.find({"$where": "sleep(100) || true"}).max_time_ms(10))
    assert e.value.code == 50 and e.value.details["codeName"] == "MaxTimeMSExpired"
    with pytest.raises(OperationFailure) as e:  # 300 ms each: past 1000 at the fourth document
        list(db.c.find({"$where": "sleep(300) || true"}).max_time_ms(1000))
    assert e.value.code == 50
    with pytest.raises(OperationFailure) as e:  # caught by nothing the script can do
        list(db.c.find({"$where": "try { sleep(100); } catch (e) {} return true"}).max_time_ms(10))
    assert e.value.code == 50
    for bad in ("sleep()", "sleep('10')", "sleep(1, 2)"):
        with pytest.raises(OperationFailure) as e:
            list(db.c.find({"$where": bad}))
        assert e.value.code == 139
        assert "sleep takes a single numeric argument -- sleep(milliseconds)" in e.value.details["errmsg"]
    assert len(list(db.c.find({"$where": "try { sleep('x') } catch (e) { return e.message.length > 0 }"}))) == 4


# --- mapReduce -------------------------------------------------------------------------------------


def test_map_reduce_inline(client, db):
    _sharded(client, db)
    _docs(db)
    reply = db.command("mapReduce", "c", map=Code("function() { emit(this.k, this.x); }"), reduce=SUM,
                       out={"inline": 1})
    assert reply["ok"] == 1.0 and set(reply) >= {"results", "ok"} and "counts" not in reply
    assert reply["results"] == [{"_id": 0, "value": 18}, {"_id": 1, "value": 12}, {"_id": 2, "value": 15}]


def test_map_reduce_query_sort_limit_scope_finalize(client, db):
    _sharded(client, db)
    _docs(db)
    reply = db.command("mapReduce", "c", map=Code("function() { emit(this.k, {n: 1, s: this.x * factor}); }"),
                       reduce=Code("function(k, vs) { var r = {n: 0, s: 0};"
                                   " vs.forEach(function(v) { r.n += v.n; r.s += v.s; }); return r; }"),
                       finalize=Code("function(k, v) { return v.s / v.n; }"),
                       query={"x": {"$gte": 3}}, scope={"factor": 10}, out={"inline": 1})
    assert reply["results"] == [{"_id": 0, "value": 60}, {"_id": 1, "value": 55}, {"_id": 2, "value": 65}]
    # the limit is the command's, not each shard's: k = 0 is _id 0, 3 (shard00) and 6, 9 (shard01)
    reply = db.command("mapReduce", "c", map=Code("function() { emit('all', this._id); }"),
                       reduce=Code("function(k, vs) { return Array.sum(vs); }"), sort={"k": 1, "_id": 1}, limit=3,
                       out={"inline": 1})
    assert reply["results"] == [{"_id": "all", "value": 9}]  # 0 + 3 + 6


def test_map_reduce_scope_functions(client, db):
    _sharded(client, db)
    _docs(db, 4)
    reply = db.command("mapReduce", "c", map=Code("function() { emit(bucket(this.x), 1); }"), reduce=SUM,
                       scope={"bucket": Code("function(x) { return x < 2 ? 'low' : 'high'; }")}, out={"inline": 1})
    assert reply["results"] == [{"_id": "high", "value": 2}, {"_id": "low", "value": 2}]


def test_map_reduce_keys_group_by_bson_equality(client, db):
    db.c.insert_many([{"v": 1}, {"v": 1.0}, {"v": "1"}, {"v": {"a": 1}}, {"v": {"a": 1}}])
    reply = db.command("mapReduce", "c", map=Code("function() { emit(this.v, 1); }"), reduce=SUM, out={"inline": 1})
    assert reply["results"] == [{"_id": 1, "value": 2}, {"_id": "1", "value": 1}, {"_id": {"a": 1}, "value": 2}]


def test_map_reduce_out_modes(client, db):
    _sharded(client, db)
    _docs(db, 6)
    mapper = Code("function() { emit(this.k, 1); }")
    assert db.command("mapReduce", "c", map=mapper, reduce=SUM, out="res")["result"] == "res"
    assert list(db.res.find().sort("_id", 1)) == [{"_id": 0, "value": 2}, {"_id": 1, "value": 2}, {"_id": 2, "value": 2}]
    db.res.insert_one({"_id": 9, "value": 100})
    db.command("mapReduce", "c", map=mapper, reduce=SUM, out={"reduce": "res"})
    assert [d["value"] for d in db.res.find().sort("_id", 1)] == [4, 4, 4, 100]
    db.command("mapReduce", "c", map=mapper, reduce=SUM, out={"merge": "res"}, query={"k": 0})
    assert [d["value"] for d in db.res.find().sort("_id", 1)] == [2, 4, 4, 100]
    reply = db.command("mapReduce", "c", map=mapper, reduce=SUM, out={"replace": "res", "db": db.name})
    assert reply["result"] == {"db": db.name, "collection": "res"}
    assert [d["value"] for d in db.res.find().sort("_id", 1)] == [2, 2, 2]


def test_map_reduce_script_errors(client, db):
    _docs(db, 2)
    with pytest.raises(OperationFailure) as e:
        db.command("mapReduce", "c", map=Code("function() { emit(this.k, "), reduce=SUM, out={"inline": 1})
    assert e.value.code == 139
    assert e.value.details["errmsg"].startswith("MapReduce internal error :: caused by :: SyntaxError: ")
    with pytest.raises(OperationFailure) as e:
        db.command("mapReduce", "c", map=Code("function() { emit(this.k, undefinedName); }"), reduce=SUM,
                   out={"inline": 1})
    assert e.value.code == 139 and e.value.details["errmsg"] == \
        "MapReduce internal error :: caused by :: ReferenceError: undefinedName is not defined"


def test_map_reduce_on_a_view_is_refused(client, db):
    _docs(db, 2)
    db.command("create", "v", viewOn="c", pipeline=[])
    with pytest.raises(OperationFailure) as e:
        db.command("mapReduce", "v", map=Code("function() { emit(1, 1); }"), reduce=SUM, out={"inline": 1})
    assert (e.value.code, e.value.details["errmsg"]) == (166, "mapReduce on a view is not supported")


# --- $function and $accumulator --------------------------------------------------------------------


def test_function_expression(client, db):
    _sharded(client, db)
    _docs(db, 4)
    out = list(db.c.aggregate([
        {"$project": {"y": {"$function": {"body": Code("function(x, s) { return x * 2 + s; }"), "args": ["$x", "!"],
                                          "lang": "js"}}}},
        {"$sort": {"_id": 1}}]))
    assert [d["y"] for d in out] == ["0!", "2!", "4!", "6!"]
    out = list(db.c.find({"$expr": {"$function": {"body": "function(t) { return t.length == 2; }",
                                                   "args": ["$tags"], "lang": "js"}}}))
    assert [d["_id"] for d in out] == [2]


@pytest.mark.parametrize("spec, code", [
    ("x", 31260),
    ({"args": [], "lang": "js"}, 31261),
    ({"body": 5, "args": [], "lang": "js"}, 31262),
    ({"body": "$x", "args": [], "lang": "js"}, 31432),
    ({"body": "function() {}", "lang": "js"}, 31263),
    ({"body": "function() {}", "args": []}, 31418),
    ({"body": "function() {}", "args": [], "lang": "py"}, 31419),
    ({"body": "function() {}", "args": "$x", "lang": "js"}, 31266),
])
def test_function_spec_errors(client, db, spec, code):
    db.c.insert_one({"x": 1})
    with pytest.raises(OperationFailure) as e:
        list(db.c.aggregate([{"$project": {"y": {"$function": spec}}}]))
    assert e.value.code == code


def test_function_refused_in_a_validator(client, db):
    with pytest.raises(OperationFailure) as e:
        db.create_collection("v", validator={"$expr": {"$function": {"body": "function() { return true; }",
                                                                      "args": [], "lang": "js"}}})
    assert e.value.code == 4660800


ACC = {"init": Code("function(base) { return {n: 0, s: base}; }"), "initArgs": [100],
       "accumulate": Code("function(st, x) { return {n: st.n + 1, s: st.s + x}; }"), "accumulateArgs": ["$x"],
       "merge": Code("function(a, b) { return {n: a.n + b.n, s: a.s + b.s}; }"),
       "finalize": Code("function(st) { return st.s + '/' + st.n; }"), "lang": "js"}


def test_accumulator(client, db):
    _sharded(client, db)
    _docs(db)
    out = list(db.c.aggregate([{"$group": {"_id": "$k", "r": {"$accumulator": ACC}}}, {"$sort": {"_id": 1}}]))
    assert out == [{"_id": 0, "r": "118/4"}, {"_id": 1, "r": "112/3"}, {"_id": 2, "r": "115/3"}]
    no_finalize = {k: v for k, v in ACC.items() if k not in ("finalize", "initArgs")}
    no_finalize["init"] = Code("function() { return {n: 0, s: 0}; }")
    out = list(db.c.aggregate([{"$group": {"_id": None, "r": {"$accumulator": no_finalize}}}]))
    assert out == [{"_id": None, "r": {"n": 10, "s": 45}}]
    key_init = {**ACC, "init": Code("function(k) { return {n: 0, s: k * 1000}; }"), "initArgs": ["$_id"]}
    out = list(db.c.aggregate([{"$group": {"_id": "$k", "r": {"$accumulator": key_init}}}, {"$sort": {"_id": 1}}]))
    assert [d["r"] for d in out] == ["18/4", "1012/3", "2015/3"]


@pytest.mark.parametrize("change, code", [
    ({"lang": "py"}, 4544705),
    ({"bogus": 1}, 4544706),
    ({"init": None}, 4544702),
    ({"init": "$x"}, 4544701),
    ({"initArgs": 5}, 4544711),
    ({"accumulateArgs": "$x"}, 4544712),
])
def test_accumulator_spec_errors(client, db, change, code):
    db.c.insert_one({"x": 1})
    with pytest.raises(OperationFailure) as e:
        list(db.c.aggregate([{"$group": {"_id": None, "r": {"$accumulator": {**ACC, **change}}}}]))
    assert e.value.code == code


@pytest.mark.parametrize("missing, code", [("init", 4544707), ("accumulate", 4544708), ("merge", 4544709),
                                           ("accumulateArgs", 4544710)])
def test_accumulator_missing_fields(client, db, missing, code):
    db.c.insert_one({"x": 1})
    spec = {k: v for k, v in ACC.items() if k != missing}
    with pytest.raises(OperationFailure) as e:
        list(db.c.aggregate([{"$group": {"_id": None, "r": {"$accumulator": spec}}}]))
    assert e.value.code == code
