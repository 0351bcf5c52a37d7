# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether this collection owns a guest: the owner tag, and an owner record in its Notes naming the guest's own VMID.

A clone copies every config key of its source other than disks and NICs, tags and Notes included (qemu-server
``PVE/API2/Qemu.pm``, ``clone_vm``). The owner tag alone therefore cannot tell a guest this collection made from a
clone that someone made by hand (or Terraform, or Packer) of a template it made. So every guest it makes also
carries one managed line in its Notes (``_notes``)::

    [puls-owner: puls-managed=105]

naming, for the owner tag, the VMID the record was written for. A clone inherits the line, but it names the
source's VMID, never the clone's: such a record is not valid. The owner tag stays on every owned guest (users
filter on it in the web UI); a per-VMID tag would not do, since a tag that is not yet in the cluster's tag list
needs Sys.Modify on ``/`` under a restricted ``user-tag-access`` (pve-guest-common ``PVE/GuestHelpers.pm``,
``assert_tag_permissions``).

The four states of a guest for an owner tag:

- ``owned``: the tag, and a record naming the guest's VMID;
- ``legacy``: the tag and no record for it, as a guest made by a release before the record (or a clone of such a
  template) has. Declared, it is managed and gets the record on its next run; undeclared, it is never pruned;
- ``inherited``: the tag, and a record naming another VMID: a clone made outside this collection;
- ``foreign``: no owner tag.

Pure: strings in, strings out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils import _notes
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import normalize_tags

OWNER_BLOCK = 'puls-owner'
OWNED = 'owned'
LEGACY = 'legacy'
INHERITED = 'inherited'
FOREIGN = 'foreign'
STATES = (OWNED, LEGACY, INHERITED, FOREIGN)


def recorded_vmid(description: str | None, owner_tag: str) -> int | None:
    """The VMID the owner record of ``owner_tag`` names in the Notes, or None when there is none."""
    value = _notes.parse(description, tag=OWNER_BLOCK).entries.get(owner_tag)
    return int(value) if value is not None and value.isdigit() else None


def state(config: Mapping[str, Any], vmid: int, owner_tag: str) -> str:
    """The ownership of guest ``vmid`` with ``config`` (its ``tags`` and ``description``): one of STATES."""
    if owner_tag not in normalize_tags(config.get('tags')):
        return FOREIGN
    recorded = recorded_vmid(config.get('description'), owner_tag)
    if recorded is None:
        return LEGACY
    return OWNED if recorded == int(vmid) else INHERITED


def with_record(description: str | None, owner_tag: str, vmid: int) -> str:
    """The Notes with the owner record of ``owner_tag`` naming ``vmid``: human text and every other managed block kept
    byte for byte, the records of other owner tags kept. Raises ``_notes.NotesTooLongError`` past PVE's limit."""
    entries = dict(_notes.parse(description, tag=OWNER_BLOCK).entries)
    entries[owner_tag] = str(int(vmid))
    return _notes.render(description, entries, tag=OWNER_BLOCK)


def record_text(owner_tag: str, vmid: int | None) -> str | None:
    """How the diff shows a record: ``TAG=VMID``, or None for no record."""
    return None if vmid is None else f'{owner_tag}={vmid}'


def inherited_message(name: str, described: str, recorded: int | None, source: str | None, owner_tag: str) -> str:
    """Why a guest with an inherited record is refused, and how to take it over."""
    origin = source or f'guest {recorded}'
    return (
        f'{name!r} is {described}, which carries the owner tag {owner_tag!r} but an owner record in its Notes '
        f'naming VMID {recorded}, not its own: it looks like a clone of {origin} made outside this collection, so '
        'it is not taken over; set adopt: true to manage it (its record then names its own VMID), or choose another name'
    )
