# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which guests may be linked clones of a template, where PVE's volume IDs do not say it (LVM-thin). Pure.

Where a storage names a linked clone's volume after its base (directories: ``100/base-100-disk-0.qcow2/101/...``,
Plugin.pm ``clone_image``; ZFS and Ceph RBD: ``base-100-disk-0/vm-101-disk-0``, a container's on ZFS
``basevol-100-disk-0/subvol-101-disk-0``, ZFSPoolPlugin.pm ``clone_image``), ``_template_plan.uses_base`` reads it
from the name, as PVE's ``volume_is_base_and_used`` does. LVM-thin does not: its ``clone_image`` returns the plain
``vm-101-disk-0`` of a thin snapshot of the base LV, the API shows no parent, and PVE destroys such a template
without complaint (pve-storage ``PVE/Storage/LvmThinPlugin.pm``, ``clone_image`` and the note at its top;
``PVE/Storage.pm``, the notes above ``volume_is_base_and_used`` and in ``vdisk_free``).

There the collection judges by what a clone inherits. ``clone_vm`` (qemu-server ``PVE/API2/Qemu.pm``) copies every
config key but disks and NICs, the Notes included, as pve-container's ``clone_vm`` (``src/PVE/API2/LXC.pm``) does for a
container. A template pve_template made carries a template block
(``[puls-template: ...]``, its spec hashes) in its Notes, so a guest may be a linked clone of it when it has a disk
volume of its own (``vm-N-disk-M``, not a base) on an LVM-thin storage, or one whose type it cannot see, holding a
base volume of the template, and carries the same block. A full clone carries it too and cannot be told apart: it
is counted, which keeps a template longer than needed, never shorter.

A template without a template block (made outside pve_template) gives nothing to judge by: ``meta`` is copied by
every clone, so all clones of one original share it with each other as well. PVE itself cannot tell either, and a
thin snapshot outlives its origin (the note at the top of LvmThinPlugin.pm: "LVM thin allows deletion of such base
volumes without affecting the linked clones"), so destroying such a template harms no clone: none is counted.

Templates are not counted: their volumes are base volumes. Documented in docs/index.md (Templates).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._template_plan import base_volume_pattern, guest_volumes, recorded_entries
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import storage_of

# Storage types whose volume IDs hide a linked clone's base (pve-storage LvmThinPlugin.pm).
BASE_HIDING_TYPES = frozenset(('lvmthin',))
_OWN_DISK = re.compile(r'^vm-\d+-disk-\d+(?:\.[a-z0-9]+)?$')


def base_storages(template_config: Mapping[str, Any], template_vmid: int) -> set[str]:
    """The storages holding a base volume of the template (``local-lvm`` of ``local-lvm:base-100-disk-0``)."""
    base = re.compile('^' + base_volume_pattern(template_vmid))
    return {storage for volume in guest_volumes(template_config) if (storage := storage_of(volume)) and base.match(volume.partition(':')[2])}


def own_disk_storages(config: Mapping[str, Any]) -> set[str]:
    """The storages holding a plain disk volume of the guest (``vm-N-disk-M``: neither a base nor named after one)."""
    return {storage for volume in guest_volumes(config) if (storage := storage_of(volume)) and _OWN_DISK.match(volume.partition(':')[2])}


def hides_base(storage: str, storage_types: Mapping[str, str]) -> bool:
    """Whether the storage's volume IDs may hide a linked clone's base: LVM-thin, or a type not visible to the user."""
    kind = storage_types.get(storage)
    return kind is None or kind in BASE_HIDING_TYPES


def made_from(template_config: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """Whether the guest inherited the template's block (see the module's docstring); never for a template without one."""
    theirs = recorded_entries(template_config.get('description'))
    return bool(theirs) and recorded_entries(config.get('description')) == theirs


def may_be_linked(template_config: Mapping[str, Any], template_vmid: int, config: Mapping[str, Any], storage_types: Mapping[str, str]) -> bool:
    """Whether the guest with ``config`` may be a linked clone of the template on a storage whose names hide it."""
    if str(config.get('template', '')) in ('1', 'true', 'True'):
        return False
    shared = base_storages(template_config, template_vmid) & own_disk_storages(config)
    return any(hides_base(storage, storage_types) for storage in shared) and made_from(template_config, config)


def needs_storage_types(template_config: Mapping[str, Any], template_vmid: int, configs: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any of the configs has a plain disk on a storage holding the template's base: only then do the storage
    types matter (one more request)."""
    bases = base_storages(template_config, template_vmid)
    return any(bases & own_disk_storages(config) and made_from(template_config, config) for config in configs)


def storage_types(storage_resources: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Storage ID -> plugin type, from ``GET /cluster/resources?type=storage`` (one entry per node and storage)."""
    return {str(item['storage']): str(item['plugintype']) for item in storage_resources if item.get('storage') and item.get('plugintype')}
