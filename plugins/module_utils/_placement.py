# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which node a new VM is created on. Pure: the caller lists nodes (``GET /nodes``) and storages.

PVE's rules for a clone to another node (qemu-server ``PVE/API2/Qemu.pm``, ``clone_vm`` and
``$check_storage_access_clone``): every drive of the source counts, an ISO in a CD-ROM drive and the cloud-init
drive included, only ``none`` and a physical ``cdrom`` drive do not; one on a storage without ``shared`` refuses
the clone ("can't clone VM to node ... (VM uses local storage)"). A target ``storage`` must be enabled on both
nodes and shared ("can't clone to non-shared storage ...").

Rules, in order:
1. ``node`` given wins, provided it is online and PVE can clone there.
2. A source with a drive on local (unshared) storage, or a full clone to a local ``storage``, pins the VM to the
   source's node; so does an import volume on a local storage, which exists on one node only. pve_vm refuses
   rather than clone-then-migrate: a migration of a fresh VM's local disks is slow and surprising, and the user
   can declare ``node`` or move the template to shared storage instead. A linked clone of a template on shared
   storage is placed like any other clone.
3. Otherwise, among ``nodes`` (all cluster nodes when empty) on which a declared shared ``storage`` is enabled,
   the online node with the most free memory (maxmem - mem); ties go to the first name in sort order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError, drive_volumes, is_cloudinit_volume, parse_drive, storage_of


def clone_volumes(config: Mapping[str, Any]) -> list[str]:
    """The volumes a full clone copies (the privileges it needs): every disk and the cloud-init drive, not an ISO in a CD-ROM drive."""
    return [volume for key, volume in drive_volumes(config).items() if is_cloudinit_volume(volume) or parse_drive(config[key])[1].get('media') != 'cdrom']


def locality_volumes(config: Mapping[str, Any]) -> list[str]:
    """The volumes PVE's clone-to-another-node check counts ($check_storage_access_clone): every drive's, an ISO in a
    CD-ROM drive and the cloud-init drive included; only an empty (``none``) or physical (``cdrom``) drive is left out."""
    return list(drive_volumes(config).values())


def uses_local_storage(volumes: Iterable[str], shared_storages: Iterable[str]) -> bool:
    """Whether any volume (or device path) is outside the shared storages, as qemu-server's clone check counts it."""
    shared = set(shared_storages)
    return any(storage_of(volume) not in shared for volume in volumes)


def _free_memory(status: Mapping[str, Any]) -> int:
    return int(status.get('maxmem') or 0) - int(status.get('mem') or 0)


def choose_node(
    node_status: Iterable[Mapping[str, Any]],
    node: str | None = None,
    nodes: Iterable[str] = (),
    source_node: str | None = None,
    source_is_local: bool = False,
    storage: str | None = None,
    storage_is_local: bool = False,
    storage_nodes: Iterable[str] | None = None,
) -> str:
    """The node to create the VM on (see the module docstring); SpecError naming ``node`` or ``nodes`` when none fits.

    ``node_status`` is the node listing (node, status, maxmem, mem); ``source_node`` the node of the template
    or of the import volume, ``source_is_local`` whether its disks are on local storage (``uses_local_storage``).
    ``storage`` is a full clone's target storage, ``storage_is_local`` whether it lacks ``shared``, ``storage_nodes``
    the nodes it is enabled on (None: not known, PVE decides).
    """
    listing = {status['node']: status for status in node_status}
    online = sorted(name for name, status in listing.items() if status.get('status') == 'online')
    candidates = list(nodes)
    unknown = [name for name in [node, *candidates] if name and name not in listing]
    if unknown:
        raise SpecError('node' if node in unknown else 'nodes', f"names {', '.join(unknown)}, not a node of this cluster ({', '.join(sorted(listing))})")
    reason = None
    if source_node and source_is_local:
        reason = f'the source is on local storage of {source_node}'
    elif source_node and storage and storage_is_local:
        reason = f'storage {storage} is not shared, and PVE clones to another node only onto shared storage'
    reachable = None if storage_nodes is None or not storage or storage_is_local else set(storage_nodes)
    if node:
        if reason and node != source_node:
            fix = 'put the source on shared storage' if source_is_local else 'declare a shared storage'
            raise SpecError('node', f'is {node}, but {reason}, so PVE can only create this VM on {source_node}; set node: {source_node} or {fix}')
        if reachable is not None and node != source_node and node not in reachable:
            raise SpecError(
                'node',
                f'is {node}, but storage {storage} is not enabled there (only on '
                f"{', '.join(sorted(reachable)) or 'no node'}); set node to one of those or declare another storage",
            )
        chosen = [node]
    elif reason and source_node:  # a reason names the source's node
        if candidates and source_node not in candidates:
            raise SpecError(
                'nodes', f"lists {', '.join(candidates)}, but the VM must be created on {source_node} ({reason}); add {source_node} to nodes or set node"
            )
        chosen = [source_node]
    else:
        chosen = candidates or online
        if reachable is not None:
            chosen = [name for name in chosen if name in reachable or name == source_node]
            if not chosen:
                raise SpecError(
                    'storage',
                    f"is {storage}, which is enabled on none of the nodes the VM may go to "
                    f"({', '.join(candidates or online)}); declare another storage or other nodes",
                )
    usable = [name for name in chosen if name in online]
    if not usable and node:
        raise SpecError('node', f'is {node}, which is not online; wait for it or name another node')
    if not usable:
        raise SpecError('nodes', f"offers no online node to create the VM on ({', '.join(chosen) or 'none listed'}); bring one online or add another")
    return min(usable, key=lambda name: (-_free_memory(listing[name]), name))
