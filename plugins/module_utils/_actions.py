# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A plan of any resource: the ordered actions that converge it, and the diff they show.

A planner (``_<resource>_plan.py``) returns a ``Plan``; the module reports ``changed``, ``diff`` and ``changes`` from
it and, in a real run, the resource's I/O half executes ``actions`` in order, so a check run and a real run cannot
disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Action:
    """One step for the module to execute; each planner's docstring says its kinds and their params."""

    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """The actions converging the resource, the diff's two sides, and the keys still waiting for a restart afterwards."""

    actions: tuple[Action, ...]
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    reboot_required: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.actions)

    @property
    def diff(self) -> dict[str, dict[str, Any]]:
        return {'before': dict(self.before), 'after': dict(self.after)}

    @property
    def changes(self) -> tuple[str, ...]:
        keys = set(self.before) | set(self.after)
        return tuple(sorted(key for key in keys if self.before.get(key) != self.after.get(key)))
