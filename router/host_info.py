"""hostInfo: the machine the process runs on (db/commands/generic_servers.cpp, util/processinfo_linux.cpp).

`system` (currentTime, hostname, cpuAddrSize, memSizeMB, memLimitMB, numCores,
numCoresAvailableToProcess, numPhysicalCores, numCpuSockets, cpuArch,
numaEnabled, numNumaNodes), `os` (type, name, version) and `extra` (the
kernel's version string, page size and count, open file limit), read from the
Python runtime; what a platform does not tell is left out, as the server
leaves out what it cannot read.
"""

from __future__ import annotations

import os
import platform
from datetime import datetime, timezone
from typing import Any

from bson import Int64

__all__ = ["host_info"]


def _sysconf(name: str) -> int | None:
    try:
        value = os.sysconf(name)
    except (AttributeError, ValueError, OSError):
        return None
    return value if value > 0 else None


def _physical_cores_and_sockets() -> tuple[int | None, int | None]:
    """(physical cores, sockets) from /proc/cpuinfo's `physical id` / `core id` pairs (Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None, None
    cores: set[tuple[str, str]] = set()
    sockets: set[str] = set()
    physical = core = None
    for line in text.splitlines() + [""]:
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "physical id":
            physical = value.strip()
        elif key == "core id":
            core = value.strip()
        elif not line.strip():
            if physical is not None:
                sockets.add(physical)
                cores.add((physical, core or ""))
            physical = core = None
    return (len(cores) or None), (len(sockets) or None)


def _os_release() -> tuple[str | None, str | None]:
    """(PRETTY_NAME, VERSION_ID) of /etc/os-release."""
    try:
        with open("/etc/os-release", encoding="utf-8", errors="replace") as f:
            fields = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    except OSError:
        return None, None
    unquote = lambda v: v.strip().strip('"') if v is not None else None  # noqa: E731
    return unquote(fields.get("PRETTY_NAME")), unquote(fields.get("VERSION_ID"))


def host_info(hostname: str) -> dict[str, Any]:
    page = _sysconf("SC_PAGE_SIZE")
    pages = _sysconf("SC_PHYS_PAGES")
    mem_mb = Int64(page * pages // (1024 * 1024)) if page and pages else None
    cores = os.cpu_count()
    physical, sockets = _physical_cores_and_sockets()
    system: dict[str, Any] = {"currentTime": datetime.now(timezone.utc).replace(tzinfo=None), "hostname": hostname,
                              "cpuAddrSize": 64}
    if mem_mb is not None:
        system["memSizeMB"] = mem_mb
        system["memLimitMB"] = mem_mb
    system["numCores"] = cores
    if hasattr(os, "sched_getaffinity"):
        system["numCoresAvailableToProcess"] = len(os.sched_getaffinity(0))
    if physical is not None:
        system["numPhysicalCores"] = physical
    if sockets is not None:
        system["numCpuSockets"] = sockets
    system["cpuArch"] = platform.machine()
    system["numaEnabled"] = False
    system["numNumaNodes"] = 1
    name, version = _os_release() if platform.system() == "Linux" else (None, None)
    os_doc: dict[str, Any] = {"type": platform.system(), "name": name or platform.platform(),
                              "version": version or platform.release()}
    extra: dict[str, Any] = {"versionString": " ".join(platform.uname()[:4]), "kernelVersion": platform.release()}
    if page:
        extra["pageSize"] = Int64(page)
    if pages:
        extra["numPages"] = pages
    try:
        import resource

        extra["maxOpenFiles"] = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, ValueError, OSError):
        pass
    return {"system": system, "os": os_doc, "extra": extra, "ok": 1.0}
