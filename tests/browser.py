"""Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: JSON messages ending in
NUL on file descriptors 3 and 4), so a test can press real keys and click real links with the standard library
alone: no driver, no websocket client. One page; each call waits for its answer."""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
from pathlib import Path
from typing import Any

from slack import generous
from web_server import CHROMIUM

KEYS = {"ArrowLeft": 37, "ArrowUp": 38, "ArrowRight": 39, "ArrowDown": 40, "Enter": 13, "Tab": 9, "Backspace": 8}


class BrowserError(AssertionError):
    pass


class Browser:
    def __init__(self, profile: Path, width: int = 1400, height: int = 1000) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:  # the child's fds 3 (commands in) and 4 (answers out)
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.process = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
             f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=wire, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._from_chrome], [], [], generous(60))
            if not ready:
                raise BrowserError("chromium did not answer")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise BrowserError("chromium closed its DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            found = self._read()
            if found.get("id") == self._next_id:
                if "error" in found:
                    raise BrowserError(f"{method}: {found['error']}")
                return found.get("result", {})
            self.events.append(found)

    def wait_for(self, event: str) -> dict[str, Any]:
        """The next `event` (one that came before this call counts)."""
        while True:
            for i, found in enumerate(self.events):
                if found.get("method") == event:
                    return self.events.pop(i)
            self.events.append(self._read())

    def _loads(self, action: Any) -> None:
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        action()
        self.wait_for("Page.loadEventFired")

    def open(self, url: str) -> None:
        self._loads(lambda: self.call("Page.navigate", session=True, url=url))

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    @property
    def url(self) -> str:
        return self.js("location.href")

    def _key(self, key: str) -> None:
        text = {"Enter": "\r"}.get(key)
        for kind in ("keyDown", "keyUp"):
            extra = {"text": text} if text and kind == "keyDown" else {}
            self.call("Input.dispatchKeyEvent", session=True, type=kind, key=key, code=key,
                      windowsVirtualKeyCode=KEYS[key], nativeVirtualKeyCode=KEYS[key], **extra)

    def press(self, key: str) -> None:
        """A real key press (down, up) that navigates: returns once the next page has loaded."""
        self._loads(lambda: self._key(key))

    def key(self, key: str) -> None:
        """A real key press that stays on the page (Tab, Backspace in a field)."""
        self._key(key)

    def focus(self, selector: str) -> None:
        if not self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return false; "
                       "e.focus(); if (e.select) e.select(); return true; })()"):
            raise BrowserError(f"nothing matches {selector!r} on {self.url}")

    def type(self, text: str) -> None:
        """Text typed into the focused field, as a keyboard's input (its selection replaced)."""
        self.call("Input.insertText", session=True, text=text)

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the first element matching `selector`; waits for the next page."""
        box = self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null; "
                      "e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect(); "
                      "return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        if box is None:
            raise BrowserError(f"nothing matches {selector!r} on {self.url}")

        def mouse() -> None:
            for kind in ("mousePressed", "mouseReleased"):
                self.call("Input.dispatchMouseEvent", session=True, type=kind, x=box[0], y=box[1], button="left",
                          clickCount=1)
        self._loads(mouse)

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.call("Page.captureScreenshot", session=True, format="png")["data"])
        path.write_bytes(data)
        keep = os.environ.get("TGSTORE_SCREENSHOT_DIR")
        if keep:
            (Path(keep) / path.name).write_bytes(data)
        return data

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.process.wait(timeout=generous(30))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
