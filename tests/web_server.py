"""A real `tgstore serve` subprocess on loopback, and headless Chromium to load its pages, for the web tests."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import httpx
from slack import generous

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
STARTUP_TIMEOUT = 60.0


@dataclass
class Server:
    url: str  # the database page, e.g. http://127.0.0.1:PORT/sample
    root: str
    path: Path
    process: subprocess.Popen[bytes]
    db: Any = None  # what the test built the database from

    def get(self, path: str, **params: str) -> httpx.Response:
        response = httpx.get(self.root + path, params=params, timeout=30)
        assert response.status_code == 200, f"{path} -> {response.status_code}: {response.text[:500]}"
        return response


DATASETTE_1 = "1.0a41"  # the 1.0 line, tested beside the 0.65 the venv installs


def install_datasette_1(cache: Path) -> Path:
    """A directory holding Datasette's 1.0 line and its dependencies (pip --target), installed once into `cache`."""
    target = cache / f"datasette-{DATASETTE_1}"
    if (target / "datasette" / "__init__.py").is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".datasette-", dir=cache))
    try:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target",
                        str(tmp), f"datasette=={DATASETTE_1}"], check=True, capture_output=True, timeout=generous())
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(db: Path, log: Path, pythonpath: Path | None = None) -> Server:
    """`tgstore serve` on a free port; with `pythonpath`, packages there come first (another Datasette)."""
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    env = {**os.environ, **({"PYTHONPATH": str(pythonpath)} if pythonpath else {})}
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "tgstore", "serve", "--db", str(db), "--host",
                                    "127.0.0.1", "--port", str(port), "--no-open"],
                                   stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        if process.poll() is not None:
            raise AssertionError(f"tgstore serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{root}/-/versions.json", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"tgstore serve did not answer within {STARTUP_TIMEOUT}s:\n{log.read_text()}")
        time.sleep(0.2)
    return Server(url=f"{root}/{db.stem}", root=root, path=db, process=process)


def serve_sample(directory: Path) -> Server:
    """`tgstore serve` of tests/sample_bundles.py's database, built in `directory`; `.db` is what it was built from."""
    from sample_bundles import build_sample_db

    sample = build_sample_db(directory)
    running = start_server(sample.path, directory / "serve.log")
    running.db = sample
    return running


def stop_server(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=15)


def chromium_available() -> bool:
    return os.path.exists(CHROMIUM)


def chromium(url: str, profile: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           "--hide-scrollbars", f"--user-data-dir={profile}", "--virtual-time-budget=5000", *args,
                           url], check=True, timeout=generous(30), capture_output=True)


def dom(url: str, profile: Path) -> str:
    """The page's DOM after Chromium loaded it and ran its scripts."""
    return chromium(url, profile, "--dump-dom").stdout.decode()


def screenshot(url: str, shot: Path, profile: Path, size: str = "1400,1000") -> bytes:
    chromium(url, profile, f"--screenshot={shot}", f"--window-size={size}")
    data = shot.read_bytes()
    keep = os.environ.get("TGSTORE_SCREENSHOT_DIR")
    if keep:
        shutil.copy(shot, Path(keep) / shot.name)
    return data


def text_of(html: str) -> str:
    """The visible text of some HTML: tags removed, entities decoded."""
    return unescape(re.sub(r"<[^>]+>", "", html))
