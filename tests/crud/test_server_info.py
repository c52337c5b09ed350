"""getCmdLineOpts and hostInfo over the wire: what the process was started with and the machine it runs on."""

from __future__ import annotations

from datetime import datetime

import pytest
from pymongo.errors import OperationFailure

from mongosim.shardsim.javascript import engine


def test_cmd_line_opts_names_the_config_server(client):
    parsed = client.admin.command("getCmdLineOpts")["parsed"]
    if client.topology_name == "sharded":
        config = client.mongosim_cluster  # the config server's set, as its connection string
        config_db = parsed["sharding"]["configDB"]
        assert config_db.startswith("configRepl/") and config_db != "configRepl/localhost"
        hosts = config_db.split("/", 1)[1].split(",")
        assert all(h.rsplit(":", 1)[1].isdigit() for h in hosts), config
    else:
        assert parsed["replication"]["replSet"] == "rs0"
    assert "security" not in parsed


def test_cmd_line_opts_under_noscripting(client, monkeypatch):
    monkeypatch.setattr(engine, "ENABLED", False)
    assert client.admin.command("getCmdLineOpts")["parsed"]["security"] == {"javascriptEnabled": False}


def test_host_info(client):
    reply = client.admin.command("hostInfo")
    system = reply["system"]
    assert isinstance(system["currentTime"], datetime)
    for key in ("hostname", "cpuAddrSize", "numCores", "cpuArch", "numaEnabled"):
        assert key in system
    assert system["memSizeMB"] > 0 and system["memLimitMB"] == system["memSizeMB"]
    assert {"type", "name", "version"} <= set(reply["os"])
    assert reply["extra"]["pageSize"] > 0


def test_server_status_sections_count_what_the_server_did(client):
    before = client.admin.command("serverStatus")
    client.ssi.c.insert_many([{"a": i} for i in range(5)])
    client.ssi.c.update_one({"a": 1}, {"$set": {"b": 1}})
    client.ssi.c.delete_many({"a": {"$gt": 3}})
    assert len(list(client.ssi.c.find())) == 4
    with pytest.raises(OperationFailure):
        client.ssi.command("noSuchCommand")
    after = client.admin.command("serverStatus")
    delta = {k: after["opcounters"][k] - before["opcounters"][k] for k in after["opcounters"]}
    assert (delta["insert"], delta["update"], delta["delete"]) == (5, 1, 1)
    assert delta["query"] >= 1 and delta["command"] >= 2
    assert after["asserts"]["user"] > before["asserts"]["user"]
    net = after["network"]
    assert net["bytesIn"] > before["network"]["bytesIn"] and net["bytesOut"] > before["network"]["bytesOut"]
    assert net["numRequests"] > before["network"]["numRequests"]
    assert after["mem"]["bits"] == 64 and after["mem"]["resident"] > 0
    if client.topology_name == "sharded":
        assert after["process"] == "mongos" and "repl" not in after and "opcountersRepl" not in after
        assert after["sharding"]["configsvrConnectionString"].startswith("configRepl/")
        assert after["sharding"]["maxChunkSizeInBytes"] == 128 * 1024 * 1024
    else:
        assert after["process"] == "mongod" and "sharding" not in after
        assert after["repl"]["setName"] == "rs0" and after["repl"]["isWritablePrimary"] is True
        assert set(after["opcountersRepl"]) == set(after["opcounters"])


def test_server_status_leaves_out_the_sections_turned_off(client):
    reply = client.admin.command({"serverStatus": 1, "repl": 0, "sharding": 0, "mem": False, "opcounters": 1})
    assert not {"repl", "sharding", "mem"} & set(reply)
    assert {"asserts", "network", "opcounters", "connections", "uptime"} <= set(reply)
