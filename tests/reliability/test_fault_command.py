"""The `mongosimFault` test command checks its arguments as the server's IDL parser does: a wrongly
typed argument is TypeMismatch, a value out of range BadValue, an unknown field 40415 — never
InternalError — and a refused command applies nothing."""

from __future__ import annotations

import pytest

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient, CommandError

BAD = [
    ({"drop": {}}, "TypeMismatch", "BSON field 'mongosimFault.drop' is the wrong type 'object', expected types '[bool, int]'"),
    ({"delay": "1"}, "TypeMismatch", "BSON field 'mongosimFault.delay' is the wrong type 'string'"),
    ({"delay": -1}, "BadValue", "'delay' must be a finite number >= 0"),
    ({"delay": float("nan")}, "BadValue", "'delay' must be a finite number"),
    ({"skew": [1]}, "TypeMismatch", "BSON field 'mongosimFault.skew' is the wrong type 'array'"),
    ({"restart": 1}, "TypeMismatch", "BSON field 'mongosimFault.restart' is the wrong type 'int', expected type 'bool'"),
    ({"pauseNoop": "yes"}, "TypeMismatch", "BSON field 'mongosimFault.pauseNoop' is the wrong type 'string'"),
    ({"clear": None}, "TypeMismatch", "BSON field 'mongosimFault.clear' is the wrong type 'null'"),
    ({"fail": 6}, "TypeMismatch", "BSON field 'mongosimFault.fail' is the wrong type 'int', expected type 'object'"),
    ({"fail": {"times": 1}}, "IDLFailedToParse", "BSON field 'mongosimFault.fail.code' is missing but a required field"),
    ({"fail": {"code": "6"}}, "TypeMismatch", "BSON field 'mongosimFault.fail.code' is the wrong type 'string'"),
    ({"fail": {"code": 6, "times": -1}}, "BadValue", "'fail.times' must be >= 0"),
    ({"fail": {"code": 6, "labels": [1]}}, "TypeMismatch", "BSON field 'mongosimFault.fail.labels.0' is the wrong type"),
    ({"fail": {"code": 6, "when": 1}}, "IDLUnknownField", "BSON field 'mongosimFault.fail.when' is an unknown field."),
    ({"bogus": 1}, "IDLUnknownField", "BSON field 'mongosimFault.bogus' is an unknown field."),
    ({"drop": -2}, "BadValue", "'drop' must be >= 0"),
]


async def _run(cmds: list[dict]) -> tuple[list, dict]:
    async with open_cluster(shards=2, listen=False) as core:
        c = AsyncClient(core.router)
        out = []
        for cmd in cmds:
            try:
                out.append(await c.admin(cmd))
            except CommandError as err:
                out.append(err)
        f = core.router.shard("shard01").faults
        return out, {"delay": f.delay, "drop_times": f.drop_times, "fail_times": f.fail_times,
                     "noop_paused": core.nodes["shard01"].noop_paused}


@pytest.mark.parametrize("extra, code_name, message", BAD, ids=[next(iter(b[0])) + "-" + b[1] for b in BAD])
async def test_a_wrongly_typed_argument_gets_the_servers_error(extra, code_name, message):
    # a valid delay goes first: the command is refused as a whole, so it must not be applied either
    (err,), faults = await _run([{"mongosimFault": "shard01", "delay": 0.5, **extra}])
    assert isinstance(err, CommandError), err
    assert err.code_name == code_name and message in err.reply["errmsg"], err.reply
    assert faults == {"delay": 0.0, "drop_times": 0, "fail_times": 0, "noop_paused": False}


async def test_the_shard_argument_is_a_string_of_a_known_shard():
    (not_a_string, unknown), _ = await _run([{"mongosimFault": {}, "delay": 1}, {"mongosimFault": "shard09", "delay": 1}])
    assert not_a_string.code_name == "TypeMismatch"
    assert not_a_string.reply["errmsg"] == ("BSON field 'mongosimFault.mongosimFault' is the wrong type 'object', "
                                            "expected type 'string'")
    assert unknown.code_name == "ShardNotFound"


async def test_good_arguments_are_applied():
    (reply,), faults = await _run([{"mongosimFault": "shard01", "delay": 0.25, "drop": True, "pauseNoop": True,
                                    "fail": {"code": 6, "times": 2, "labels": ["RetryableError"]}}])
    assert reply["applied"] == ["delay", "fail", "drop", "pauseNoop"]
    assert faults == {"delay": 0.25, "drop_times": 1, "fail_times": 2, "noop_paused": True}
