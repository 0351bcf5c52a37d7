# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declared tags spelled as the cluster stores them, so that a plan compares them with what PVE read back exactly.

PVE writes a guest's tags through get_unique_tags (pve-guest-common ``PVE/GuestHelpers.pm``): lower-cased unless the
datacenter's ``tag-style`` has ``case-sensitive`` set. ``GET /cluster/options`` gives ``tag-style`` to every user
(pve-manager ``PVE/API2/Cluster.pm``, ``get_options``). It is asked only when a declared or current tag has a capital
letter: with none, either style stores the same.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import as_bool, tag_set


def read_options(client) -> dict:
    """The datacenter options the credential may see (``tag-style`` and ``allowed-tags`` for anyone)."""
    return client.get('/cluster/options', context='reading the datacenter options (tag-style)') or {}


def case_sensitive(options) -> bool:
    """Whether the datacenter's tag-style keeps a tag's case (parse_datacenter_config answers it as an object)."""
    style = options.get('tag-style') or {}
    return isinstance(style, dict) and as_bool(style.get('case-sensitive') or 0)


def as_stored(client, spec, current: Any):
    """``spec`` with its declared tags spelled as PVE will store them; ``current``: the guest's ``tags`` now."""
    if spec.tags is None or not any(tag != tag.lower() for tag in spec.tags | tag_set(current)):
        return spec
    if case_sensitive(read_options(client)):
        return spec
    return replace(spec, tags=frozenset(tag.lower() for tag in spec.tags))
