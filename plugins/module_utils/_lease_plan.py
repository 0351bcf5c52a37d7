# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Leases on the work two runs can collide on, kept in PVE itself: the pure half (parse, decide, render).

One managed line in the notes of the lease node (``_lease_io``; docs/concurrency.md)::

    [puls-leases: template/web-golden=3f2a9c1b7d4e@awx-1:1764621234,vm/web1=3f2a9c1b7d4e@awx-1:1764621240]

keyed by the work (``template/NAME``, ``vm/NAME``, ``replace/NAME``, ``prune``), valued by the holding
run's id, its controller and the expiry (Unix seconds of the controllers' clocks). A lease is another
run's while it has not expired; once expired, any run may take it over. An expired lease stays in the
record only where it marks something a dead run may have left behind (a template's build VM, so that
the next run destroys it with a message saying whose it was); the others are dropped on the next write.

Pure: strings and numbers in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from ansible_collections.puls.proxmox.plugins.module_utils import _notes

LEASES_TAG = 'puls-leases'
WORKS = ('template', 'vm', 'replace')
PRUNE = 'prune'
_NAME = r'[A-Za-z0-9_.-]{1,64}'
RUN_ID = re.compile(_NAME)
_VALUE = rf'{_NAME}@{_NAME}:[0-9]+'
_HOLDER = re.compile(rf'(?P<run>{_NAME})@(?P<controller>{_NAME}):(?P<expires>[0-9]+)')
_KEY = re.compile(rf'(?:(?:{"|".join(WORKS)})/{_NAME}|{PRUNE})')
# Where an expired lease marks a leftover that the next holder cleans up.
_LEFTOVER_WORKS = ('template/',)


@dataclass(frozen=True)
class Holder:
    """Who holds a lease: the run's id, its controller's host name and the expiry in Unix seconds."""

    run: str
    controller: str
    expires: int

    def render(self) -> str:
        return f'{self.run}@{self.controller}:{self.expires}'

    def describe(self, now: float) -> dict:
        """The holder as the module returns it, with the seconds left (negative once expired)."""
        return {'run_id': self.run, 'controller': self.controller, 'expires': self.expires, 'expires_in': int(self.expires - now)}


@dataclass(frozen=True)
class Decision:
    """What an acquire finds: whether this run holds the leases now, the leases to write (None: nothing to write),
    the live holder that keeps them from this run, or the expired holder this run takes one over from, and the key
    that holder held (the first such of the keys asked for)."""

    acquired: bool
    leases: dict | None
    held_by: Holder | None = None
    taken_over: Holder | None = None
    key: str | None = None


def validate_key(key: str) -> str:
    """key if it names a piece of work a lease can be held on, else ValueError naming it."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(
            f'key {key!r} is not a lease key: give {", ".join(work + "/NAME" for work in WORKS)} '
            f'(NAME of letters, digits, ".", "_" or "-", at most 64) or {PRUNE}'
        )
    return key


def validate_run_id(run_id: str) -> str:
    """run_id if a lease can name it, else ValueError naming it."""
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        raise ValueError(f'run_id {run_id!r} must be 1 to 64 letters, digits, ".", "_" or "-"')
    return run_id


def controller_name(hostname: str) -> str:
    """A host name as a lease holds it: characters outside letters, digits, ".", "_" and "-" become "-", at most 64."""
    return re.sub(r'[^A-Za-z0-9_.-]', '-', hostname or 'unknown')[:64] or 'unknown'


def parse(description: str | None) -> dict:
    """{key: Holder} of the record in the notes (empty without one)."""
    leases = {}
    for key, value in _notes.parse(description, tag=LEASES_TAG, value=_VALUE).entries.items():
        # cast: _notes.parse kept only values matching _VALUE, the same pattern.
        match = cast(re.Match, _HOLDER.fullmatch(value))
        leases[key] = Holder(match['run'], match['controller'], int(match['expires']))
    return leases


def render(description: str | None, leases: Mapping[str, Holder], max_length: int) -> str:
    """The notes with the record holding leases (no line without any), every other character kept."""
    return _notes.render(description, {key: holder.render() for key, holder in leases.items()}, tag=LEASES_TAG, max_length=max_length, value=_VALUE)


def live(holder: Holder | None, now: float) -> bool:
    return holder is not None and holder.expires > now


def others(leases: Mapping[str, Holder], run: str, now: float) -> dict:
    """{key: Holder} of the live leases other runs hold."""
    return {key: holder for key, holder in leases.items() if holder.run != run and live(holder, now)}


def _tidy(leases: Mapping[str, Holder], now: float) -> dict:
    """leases without the expired ones that mark no leftover."""
    return {key: holder for key, holder in leases.items() if live(holder, now) or key.startswith(_LEFTOVER_WORKS)}


def acquire(leases: Mapping[str, Holder], keys: Sequence[str], run: str, controller: str, now: float, ttl: int) -> Decision:
    """Take (or renew) the leases on keys for run until now + ttl, all of them or, while another run holds one of them
    live, none: a run never holds some of what it waits for, so two runs asking for overlapping keys cannot each hold
    what the other waits for."""
    others_held = [(key, leases[key]) for key in keys if key in leases and leases[key].run != run]
    blocking = [(key, holder) for key, holder in others_held if live(holder, now)]
    if blocking:
        key, holder = blocking[0]
        return Decision(False, None, held_by=holder, key=key)
    mine = Holder(run, controller, int(now + ttl))
    wanted = dict(_tidy(leases, now), **dict.fromkeys(keys, mine))
    taken_key, taken_over = others_held[0] if others_held else (None, None)
    return Decision(True, None if wanted == dict(leases) else wanted, taken_over=taken_over, key=taken_key)


def release(leases: Mapping[str, Holder], keys: Sequence[str], run: str, now: float) -> dict | None:
    """The leases without run's own leases on keys (None: nothing to write); another run's lease is never dropped."""
    mine = {key for key in keys if key in leases and leases[key].run == run}
    if not mine:
        return None
    return {name: holder for name, holder in _tidy(leases, now).items() if name not in mine}


def lease_node(nodes) -> str | None:
    """The node whose notes hold the leases: the lowest-named online node of GET /nodes (None when none is online)."""
    online = sorted(entry['node'] for entry in nodes or () if entry.get('status') == 'online' and entry.get('node'))
    return online[0] if online else None
