"""getParameter / setParameter (logLevel, logComponentVerbosity), getLog and the RamLog, over the wire.

Parameters belong to the front door (the session's clusters are shared: each test restores what it sets).
"""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

from mongosim.shardsim import log_component_settings as lcs
from mongosim.shardsim import ram_log


@pytest.fixture
def admin(client):
    yield client.admin
    client.admin.command({"setParameter": 1, "logLevel": 0})
    client.admin.command({"setParameter": 1, "logComponentVerbosity": {"query": -1, "network": {"asio": -1}}})


def test_get_parameter_star_is_sorted_and_has_the_log_parameters(admin):
    reply = admin.command("getParameter", "*")
    names = [k for k in reply if k not in ("ok", "operationTime", "$clusterTime")]
    assert names == sorted(names)
    assert reply["logLevel"] == 0 and reply["logComponentVerbosity"]["verbosity"] == 0
    assert set(admin.command({"getParameter": {"allParameters": True}})) == set(reply)


def test_set_log_level_and_component_verbosity(admin):
    # mongosh db.setLogLevel(1, "query") and db.getLogComponents()
    reply = admin.command({"setParameter": 1, "logComponentVerbosity": {"query": {"verbosity": 1}}})
    assert reply["was"]["query"] == {"verbosity": -1}
    comps = admin.command({"getParameter": 1, "logComponentVerbosity": 1})["logComponentVerbosity"]
    assert comps["query"] == {"verbosity": 1} and comps["verbosity"] == 0
    assert comps["network"] == {"verbosity": -1, "asio": {"verbosity": -1}, "bridge": {"verbosity": -1},
                                "connectionPool": {"verbosity": -1}}
    assert comps["storage"]["wt"]["wtCheckpoint"] == {"verbosity": -1}
    assert admin.command({"setParameter": 1, "logLevel": 2})["was"] == 0
    assert admin.command({"getParameter": 1, "logLevel": 1})["logLevel"] == 2
    admin.command({"setParameter": 1, "logComponentVerbosity": {"verbosity": 3, "network": {"asio": 2}}})
    reply = admin.command({"getParameter": 1, "logLevel": 1, "logComponentVerbosity": 1})
    assert reply["logLevel"] == 3 and reply["logComponentVerbosity"]["network"]["asio"] == {"verbosity": 2}


def test_get_parameter_show_details_and_set_at(admin):
    reply = admin.command({"getParameter": {"showDetails": True}, "logLevel": 1, "enableTestCommands": 1})
    assert reply["logLevel"] == {"value": 0, "settableAtRuntime": True, "settableAtStartup": True}
    assert reply["enableTestCommands"]["settableAtRuntime"] is False
    runtime = admin.command({"getParameter": {"allParameters": True, "setAt": "runtime"}})
    assert "logLevel" in runtime and "enableTestCommands" not in runtime


@pytest.mark.parametrize("cmd,code,msg", [
    ({"getParameter": 1, "noSuchParameter": 1}, 72, "no option found to get"),
    ({"getParameter": {"bogus": True}}, 40415, "BSON field 'getParameter.bogus' is an unknown field."),
    ({"getParameter": {"setAt": "later"}}, 2, "Enumeration value 'later' for field 'getParameter.setAt' is not a "
                                              "valid value."),
    ({"setParameter": 1, "noSuchParameter": 1}, 72, "attempted to set unrecognized parameter [noSuchParameter], use "
                                                    "help:true to see options "),
    ({"setParameter": 1}, 72, "no option found to set, use help:true to see options "),
    ({"setParameter": 1, "enableTestCommands": 0}, 20, "not allowed to change [enableTestCommands] at runtime"),
    ({"setParameter": 1, "logLevel": -1}, 2, "Invalid value for logLevel: logLevel: -1"),
    ({"setParameter": 1, "logLevel": "x"}, 2, 'Invalid value for logLevel: logLevel: "x"'),
    ({"setParameter": 1, "logComponentVerbosity": 1}, 14, "log component verbosity is not a BSON object: "
                                                         "logComponentVerbosity: 1"),
    ({"setParameter": 1, "logComponentVerbosity": {"nope": 1}}, 2, "Invalid component name default.nope"),
    ({"setParameter": 1, "logComponentVerbosity": {"asio": 1}}, 2, "Invalid component name default.asio"),
    ({"setParameter": 1, "logComponentVerbosity": {"query": -2}}, 2,
     "Expected default.query to be greater than or equal to -1, but found -2"),
    ({"setParameter": 1, "logComponentVerbosity": {"query": "x"}}, 2, "Invalid type stringfor component default.query"),
])
def test_parameter_errors(admin, cmd, code, msg):
    with pytest.raises(OperationFailure) as e:
        admin.command(cmd)
    assert (e.value.code, e.value.details["errmsg"]) == (code, msg)
    assert admin.command({"getParameter": 1, "logLevel": 1, "logComponentVerbosity": 1})["logComponentVerbosity"][
        "query"] == {"verbosity": -1}  # (nothing was set)


def test_parameters_are_admin_only(client):
    for cmd in ({"getParameter": 1, "logLevel": 1}, {"setParameter": 1, "logLevel": 0}, {"getLog": "*"}):
        with pytest.raises(OperationFailure) as e:
            client.test.command(cmd)
        assert e.value.code == 13


def test_get_log(client):
    assert client.admin.command("getLog", "*")["names"] == ["global", "startupWarnings"]
    before = client.admin.command("getLog", "global")["totalLinesWritten"]
    # a warning the server logs: a document failing a validator with validationAction warn (id 20294)
    client.gl.create_collection("v", validator={"a": {"$type": "int"}}, validationAction="warn")
    client.gl.v.insert_one({"a": "x"})
    reply = client.admin.command("getLog", "global")
    assert reply["totalLinesWritten"] == before + 1
    line = reply["log"][-1]
    assert isinstance(line, str) and '"id": 20294' in line and '"s": "W"' in line
    assert client.admin.command("getLog", "startupWarnings")["log"] == []


def test_get_log_errors(client):
    with pytest.raises(OperationFailure) as e:
        client.admin.command("getLog", 1)
    assert e.value.code == 14
    assert e.value.details["errmsg"] == "Argument to getLog must be of type String; found 1 of type int"
    with pytest.raises(OperationFailure) as e:
        client.admin.command("getLog", "nope")
    assert e.value.details["errmsg"] == "no RamLog named: nope" and "code" not in e.value.details
    with pytest.raises(OperationFailure) as e:
        client.admin.command("clearLog", "startupWarnings")
    assert e.value.code == 72


def test_ram_log_keeps_the_newest_1024_lines():
    log = ram_log.RamLog("t")
    for i in range(1500):
        log.write(str(i))
    assert log.total_lines_written == 1500
    lines = log.lines()
    assert len(lines) == 1024 and lines[0] == "476" and lines[-1] == "1499"
    log.clear()
    assert log.lines() == [] and log.total_lines_written == 0


def test_ram_log_handler_gets_the_mongosim_loggers_lines():
    handler = ram_log.install()
    assert handler in logging.getLogger("mongosim").handlers and ram_log.install() is handler
    before = ram_log.RAM_LOGS["global"].total_lines_written
    logging.getLogger("mongosim.test_ram_log").warning("hello ram log")
    assert ram_log.RAM_LOGS["global"].total_lines_written == before + 1
    assert "hello ram log" in ram_log.RAM_LOGS["global"].lines()[-1]


_NAMES = [name for name, _ in lcs.COMPONENTS]


@given(st.dictionaries(st.sampled_from(_NAMES), st.integers(0, 5)))
def test_component_verbosity_round_trips(levels):
    """What getParameter shows, set again from nothing, is the same levels."""
    shown = lcs.describe(levels)
    again = lcs.apply({}, lcs.parse(shown))
    assert lcs.describe(again) == shown
    assert {k: v for k, v in again.items() if k != "default" or v} == {k: v for k, v in levels.items()
                                                                       if k != "default" or v}
