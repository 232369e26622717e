"""Reading extraction bundles (JSON lines; the format is documented in docs/bundle-format.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BUNDLE_VERSION = 1


class BundleError(Exception):
    """The file is not a bundle this tgstore can read; the message names the file and line."""


@dataclass
class Bundle:
    path: Path
    header: dict[str, Any]
    patterns: dict[str, dict[str, Any]] = field(default_factory=dict)  # bundle-local key -> pattern record
    cases: list[dict[str, Any]] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)  # run-level missing records
    end: dict[str, Any] | None = None  # None: truncated, the extraction did not finish
    truncated_line: int | None = None  # the line number of a half-written last line, if any

    @property
    def complete(self) -> bool:
        return self.end is not None

    @property
    def tinygrad(self) -> dict[str, Any]:
        return self.header.get("tinygrad") or {}


def read_bundle(path: Path | str) -> Bundle:
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise BundleError(f"{path}: no such bundle file") from None
    except UnicodeDecodeError as exc:
        raise BundleError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    bundle: Bundle | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines) and bundle is not None:
                # A child killed mid-write leaves half a line at the end; what came before is still good.
                bundle.truncated_line = number
                break
            raise BundleError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict) or "kind" not in record:
            raise BundleError(f"{path}:{number}: a bundle record must be a JSON object with a 'kind'")
        kind = record["kind"]
        if bundle is None:
            if kind != "header":
                raise BundleError(f"{path}:{number}: the first record must be the header, found {kind!r}")
            version = record.get("bundle_version")
            if version != BUNDLE_VERSION:
                raise BundleError(f"{path}: bundle format version {version!r}, this tgstore reads version "
                                  f"{BUNDLE_VERSION}; use a tgstore that matches the extractor")
            bundle = Bundle(path=path, header=record)
        elif kind == "pattern":
            bundle.patterns[record["key"]] = record
        elif kind == "case":
            bundle.cases.append(record)
        elif kind == "missing":
            bundle.missing.append(record)
        elif kind == "end":
            bundle.end = record
        elif kind == "header":
            raise BundleError(f"{path}:{number}: a second header")
        # Unknown kinds are skipped: adding a record kind does not bump the format version.
    if bundle is None:
        raise BundleError(f"{path}: empty bundle (no header)")
    return bundle
