"""Run `mongosim serve` in a child process (the way testers run it) and find its URI."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_READY = re.compile(r"cluster ready: (\S+)")


class ServerProcess:
    def __init__(self, *args: str, timeout: float = 60.0) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self.args = [sys.executable, "-m", "mongosim.cli", "serve", "--port", "0", *args]
        self.proc = subprocess.Popen(self.args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.output: list[str] = []
        self.uri: str | None = None
        ready = threading.Event()

        def pump() -> None:
            for line in self.proc.stdout:  # type: ignore[union-attr]
                self.output.append(line)
                m = _READY.search(line)
                if m and self.uri is None:
                    self.uri = m.group(1)
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        ready.wait(timeout)
        if self.uri is None:
            self.kill()
            raise RuntimeError("mongosim serve did not start:\n" + "".join(self.output))

    @property
    def port(self) -> int:
        assert self.uri is not None
        return int(self.uri.rsplit(":", 1)[1].split("/")[0])

    @property
    def pid(self) -> int:
        return self.proc.pid

    def rss_bytes(self) -> int:
        """Resident set size of the server process (Linux /proc)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as in a crash."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> int:
        """SIGINT (Ctrl-C): a clean shutdown."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
        time.sleep(0)
