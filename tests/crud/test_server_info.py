"""getCmdLineOpts and hostInfo over the wire: what the process was started with and the machine it runs on."""

from __future__ import annotations

from datetime import datetime

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
