"""A headless Chromium, driven through chromedriver's W3C WebDriver HTTP API with the standard library only.

Used by the timeline's browser test and by `mongosim demo ... --png`.  Needs
Debian's `chromium` and `chromium-driver` packages (or any Chrome/Chromium
with a matching chromedriver; point `MONGOSIM_CHROMIUM` / `MONGOSIM_CHROMEDRIVER`
at them).  Nothing is downloaded by hand: if either is missing, `BrowserMissing`
says how to install them; `ensure_browser()` installs Debian's packages itself
when it runs as root with apt-get at hand (as CI does), and otherwise says why not.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import zlib
from typing import Any

INSTALL_HINT = (
    "The timeline is checked in a real headless Chromium, driven through chromedriver. Install both, e.g. on "
    "Debian/Ubuntu:  sudo apt-get update && sudo apt-get install -y chromium chromium-driver  "
    "(or set MONGOSIM_CHROMIUM and MONGOSIM_CHROMEDRIVER to a Chrome/Chromium binary and its matching "
    "chromedriver)."
)

_CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


MIN_WINDOW_WIDTH = 500  # headless Chromium's windows are at least this wide; narrower viewports are emulated


class BrowserMissing(RuntimeError):
    """No usable Chromium/chromedriver; `tried_install` when installing them was tried and failed."""

    def __init__(self, message: str, tried_install: bool = False) -> None:
        super().__init__(message)
        self.tried_install = tried_install


def _given(var: str) -> str | None:
    """A binary named by an environment variable: its path, "" if it names nothing usable, None if unset."""
    value = os.environ.get(var)
    if value is None:
        return None
    return shutil.which(value) or ""


def find_browser() -> tuple[str, str]:
    """(chromium binary, chromedriver binary), or BrowserMissing."""
    chromium = _given("MONGOSIM_CHROMIUM")
    if chromium is None:
        chromium = next((p for p in (shutil.which(n) for n in _CHROMIUM_NAMES) if p), None)
    driver = _given("MONGOSIM_CHROMEDRIVER")
    if driver is None:
        driver = shutil.which("chromedriver")
    if driver is None and os.path.exists("/usr/lib/chromium/chromedriver"):
        driver = "/usr/lib/chromium/chromedriver"
    missing = [name for name, path in (("chromium", chromium), ("chromedriver", driver)) if not path]
    if missing:
        raise BrowserMissing(f"{' and '.join(missing)} not found. {INSTALL_HINT}")
    return chromium, driver  # type: ignore[return-value]


def apt_install() -> None:
    """Install Debian's chromium and chromium-driver (root only); CalledProcessError on failure."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium", "chromium-driver"]):
        subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, timeout=900)


def ensure_browser(installer: Any = apt_install) -> tuple[str, str]:
    """(chromium, chromedriver): found, or installed with `installer` when this process may (root and
    apt-get present). Otherwise BrowserMissing saying why; `tried_install` tells a failed install
    (where the caller should fail) from one that was not possible (where a test may skip)."""
    try:
        return find_browser()
    except BrowserMissing as err:
        missing = err
    if os.geteuid() != 0:
        raise BrowserMissing(f"{missing} Not installing them: that needs root (this process runs as uid "
                             f"{os.geteuid()}).")
    if shutil.which("apt-get") is None:
        raise BrowserMissing(f"{missing} Not installing them: no apt-get on this machine.")
    try:
        installer()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = (getattr(exc, "stderr", None) or str(exc)).strip().splitlines()[-1:] or [""]
        raise BrowserMissing(f"installing chromium and chromium-driver failed: {detail[0]}", tried_install=True) \
            from None
    try:
        return find_browser()
    except BrowserMissing as err:
        raise BrowserMissing(f"installed chromium and chromium-driver, but: {err}", tried_install=True) from None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriverError(RuntimeError):
    pass


class Browser:
    """One headless Chromium session.  Use as a context manager."""

    def __init__(self, width: int = 1240, height: int = 1400, timeout: float = 30.0) -> None:
        self.width, self.height, self.timeout = width, height, timeout
        self.chromium, self.driver = find_browser()
        self._proc: subprocess.Popen | None = None
        self._session: str | None = None
        self._base = ""
        self._tmp = tempfile.TemporaryDirectory(prefix="mongosim-chromium-")

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> "Browser":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.quit()

    def start(self) -> None:
        port = _free_port()
        self._base = f"http://127.0.0.1:{port}"
        self._proc = subprocess.Popen([self.driver, f"--port={port}"], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                if self._call("GET", "/status").get("ready"):
                    break
            except (OSError, WebDriverError):
                pass
            if time.monotonic() > deadline or self._proc.poll() is not None:
                self.quit()
                raise BrowserMissing(f"chromedriver ({self.driver}) did not start. {INSTALL_HINT}")
            time.sleep(0.05)
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
                "--force-device-scale-factor=1", "--no-first-run", "--no-default-browser-check",
                f"--window-size={self.width},{self.height}", f"--user-data-dir={self._tmp.name}/profile"]
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": self.chromium, "args": args}}}}
        try:
            value = self._call("POST", "/session", caps)
        except WebDriverError as err:
            self.quit()
            raise BrowserMissing(f"Chromium ({self.chromium}) did not start: {err}. {INSTALL_HINT}") from None
        self._session = value["sessionId"]
        if self.width < MIN_WINDOW_WIDTH:
            self.viewport(self.width, self.height)

    def quit(self) -> None:
        if self._session is not None:
            try:
                self._call("DELETE", f"/session/{self._session}")
            except (OSError, WebDriverError):
                pass
            self._session = None
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            self._proc = None
        self._tmp.cleanup()

    # -- the protocol ---------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: dict | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self._base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            try:
                payload = json.loads(err.read() or b"{}")
            except ValueError:
                payload = {}
            raise WebDriverError(str(payload.get("value", {}).get("message", err))) from None
        return payload.get("value", payload)

    def _s(self, path: str) -> str:
        return f"/session/{self._session}{path}"

    def open(self, url: str) -> None:
        self._call("POST", self._s("/url"), {"url": url})

    def run(self, script: str, *args: Any) -> Any:
        """Run JavaScript in the page (a function body: use `return`); return its JSON result."""
        return self._call("POST", self._s("/execute/sync"), {"script": script, "args": list(args)})

    def click(self, css: str) -> None:
        el = self._call("POST", self._s("/element"), {"using": "css selector", "value": css})
        eid = next(iter(el.values()))
        self._call("POST", self._s(f"/element/{eid}/click"), {})

    def screenshot(self) -> bytes:
        return base64.b64decode(self._call("GET", self._s("/screenshot")))

    def viewport(self, width: int, height: int) -> None:
        """Lay the page out in a viewport of this size, narrower than a window can be (a phone's 360 px):
        the DevTools protocol's device-metrics override, through chromedriver."""
        self.width, self.height = width, height
        self._call("POST", self._s("/goog/cdp/execute"), {"cmd": "Emulation.setDeviceMetricsOverride", "params": {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}})

    def full_page_screenshot(self) -> bytes:
        """Resize the window to the page's height first, then take the screenshot."""
        h = int(self.run("return Math.ceil(document.documentElement.scrollHeight);"))
        if self.width < MIN_WINDOW_WIDTH:
            self.viewport(self.width, max(h + 20, 200))
        else:
            self._call("POST", self._s("/window/rect"), {"width": self.width, "height": max(h + 20, 200)})
        return self.screenshot()


# -- reading a PNG back (to check pixels) -------------------------------------------------------------


def decode_png(data: bytes) -> tuple[int, int, list[bytearray], int]:
    """(width, height, rows, bytes per pixel) of an 8-bit RGB/RGBA PNG (what Chromium writes)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, b""
    width = height = bpp = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _c, _f, interlace = struct.unpack(">IIBBBBB", chunk)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytearray] = []
    prev = bytearray(stride)
    i = 0
    for _ in range(height):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 0xFF
        elif f == 2:
            for x in range(stride):
                line[x] = (line[x] + prev[x]) & 0xFF
        elif f == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 0xFF
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
        rows.append(line)
        prev = line
    return width, height, rows, bpp


def pixel(png: tuple[int, int, list[bytearray], int], x: int, y: int) -> tuple[int, int, int]:
    _w, _h, rows, bpp = png
    row = rows[y]
    return row[x * bpp], row[x * bpp + 1], row[x * bpp + 2]
