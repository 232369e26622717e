"""The last pass of a narrowed reading (tgstore.svod.drawing): every string the runs hold gets its tree-drawing
characters back, so what is hashed, stored and shown is what a reading of the plain text gives. The files' own
texts stay as read (they are stored from the file's bytes); an event kept as a place in its file widens what it
cuts from there (model.Event)."""

from __future__ import annotations

import dataclasses
from typing import Any

from tgstore.svod.drawing import widen
from tgstore.svod.readers.model import Event, SvodLog
from tgstore.svod.tree import Tree

_ATOMS = (int, float, bool, type(None))
_NUMBERS = {"int", "bool", "float", "int | None", "bool | None", "float | None"}  # annotations (as text)


class _Widener:
    def __init__(self) -> None:
        self.done: dict[int, Any] = {}  # id -> the widened object (trees and heads are shared between stages)
        self.names: dict[type, tuple[str, ...]] = {}  # a dataclass's field names (dataclasses.fields is slow)
        self.kept: list[tuple] = []

    def value(self, item: Any) -> Any:
        """`item` widened: a string anew, a container or object in place (a tuple anew)."""
        kind = type(item)
        if kind is str:
            return item if item.isascii() else widen(item)
        if kind in _ATOMS:
            return item
        key = id(item)
        found = self.done.get(key)
        if found is not None:
            return found
        self.done[key] = item
        if kind is list:
            for i, v in enumerate(item):
                if type(v) not in _ATOMS and not (type(v) is str and v.isascii()):
                    item[i] = self.value(v)
        elif kind is dict:
            if not all(type(k) is str and k.isascii() for k in item):
                widened = {self.value(k): v for k, v in item.items()}
                item.clear()
                item.update(widened)
            for k, v in item.items():
                if type(v) not in _ATOMS and not (type(v) is str and v.isascii()):
                    item[k] = self.value(v)
        elif kind is tuple:
            self.kept.append(item)  # alive while `done` names it by id
            item = self.done[key] = tuple(self.value(v) for v in item)
        elif kind is Tree:
            if not item.plain:  # a line's text holds a drawing character: its heads may
                self.tree(item)
        elif kind is Event:
            self.event(item)
        elif dataclasses.is_dataclass(item):
            names = self.names.get(kind)
            if names is None:  # numbers and flags are skipped; the files' texts stay as read (stored from their bytes)
                names = self.names[kind] = tuple(f.name for f in dataclasses.fields(item)
                                                 if f.name != "files" and str(f.type) not in _NUMBERS)
            for name in names:
                v = getattr(item, name)
                if type(v) not in _ATOMS and not (type(v) is str and v.isascii()):
                    setattr(item, name, self.value(v))
        return item

    def tree(self, tree: Tree) -> None:
        done = self.done
        for node in tree.nodes.values():
            head = node.head
            wide = done.get(id(head))
            if wide is None:
                op, _sink, args, dtype, shape = head
                if op.isascii() and (args is None or args.isascii()) and (dtype is None or dtype.isascii()) \
                        and (shape is None or shape.isascii()):
                    wide = done[id(head)] = head  # nearly every head: kept as it is
                else:
                    wide = self.value(head)
            node.head = wide

    def event(self, event: Event) -> None:
        event.message, event.target = self.value(event.message), self.value(event.target)
        event.level, event.timestamp = self.value(event.level), self.value(event.timestamp)
        if event.source is not None:
            event.source[0].narrowed = True
        else:
            self.value(event._record)


def widen_runs(runs: list[SvodLog]) -> None:
    """Put the drawing characters back into everything the runs hold (in place)."""
    widener = _Widener()
    for run in runs:
        widener.value(run)
