# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which node a new VM is created on. Pure: the caller lists nodes (``GET /nodes``) and storages.

Rules, in order:
1. ``node`` given wins, provided it is online and can reach the source's disks.
2. A source whose disks sit on local (unshared) storage pins the VM to the source's node: PVE refuses
   to clone such a VM to another node ("can't clone VM to node ... (VM uses local storage)",
   FIELD-NOTES A.13), and an import volume on a local storage exists on one node only. pve_vm
   refuses rather than clone-then-migrate: a migration of a fresh VM's local disks is slow and
   surprising, and the user can declare ``node`` or move the template to shared storage instead.
3. A linked clone goes to its template's node.
4. Otherwise, among ``nodes`` (all cluster nodes when empty), the online node with the most free
   memory (maxmem - mem); ties go to the first name in sort order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._vmconfig import SpecError, drive_volumes, is_cloudinit_volume, parse_drive, storage_of


def clone_volumes(config: Mapping[str, Any]) -> list[str]:
    """The volumes PVE's clone-to-another-node check counts: every disk and the cloud-init drive, not an ISO in a CD-ROM drive."""
    return [volume for key, volume in drive_volumes(config).items()
            if is_cloudinit_volume(volume) or parse_drive(config[key])[1].get('media') != 'cdrom']


def uses_local_storage(volumes: Iterable[str], shared_storages: Iterable[str]) -> bool:
    """Whether any volume (or device path) is outside the shared storages, as qemu-server's clone check counts it."""
    shared = set(shared_storages)
    return any(storage_of(volume) not in shared for volume in volumes)


def _free_memory(status: Mapping[str, Any]) -> int:
    return int(status.get('maxmem') or 0) - int(status.get('mem') or 0)


def choose_node(node_status: Iterable[Mapping[str, Any]], node: str | None = None, nodes: Iterable[str] = (),
                source_node: str | None = None, source_is_local: bool = False, linked_clone: bool = False) -> str:
    """The node to create the VM on (see the module docstring); SpecError naming ``node`` or ``nodes`` when none fits.

    ``node_status`` is the node listing (node, status, maxmem, mem); ``source_node`` the node of the template
    or of the import volume, ``source_is_local`` whether its disks are on local storage (``uses_local_storage``).
    """
    listing = {status['node']: status for status in node_status}
    online = sorted(name for name, status in listing.items() if status.get('status') == 'online')
    candidates = list(nodes)
    unknown = [name for name in [node, *candidates] if name and name not in listing]
    if unknown:
        raise SpecError('node' if node in unknown else 'nodes',
                        f"names {', '.join(unknown)}, not a node of this cluster ({', '.join(sorted(listing))})")
    pinned = source_node if source_node and (source_is_local or linked_clone) else None
    if node:
        if source_is_local and node != source_node:
            raise SpecError('node', f'is {node}, but the source is on local storage of {source_node} and PVE can only '
                                    f'create this VM there; set node: {source_node} or put the source on shared storage')
        chosen = [node]
    elif pinned:
        if candidates and pinned not in candidates:
            reason = 'its disks are on local storage there' if source_is_local else 'a linked clone stays with its template'
            raise SpecError('nodes', f"lists {', '.join(candidates)}, but the VM must be created on {pinned} ({reason}); "
                                     f'add {pinned} to nodes or set node')
        chosen = [pinned]
    else:
        chosen = candidates or online
    usable = [name for name in chosen if name in online]
    if not usable and node:
        raise SpecError('node', f'is {node}, which is not online; wait for it or name another node')
    if not usable:
        raise SpecError('nodes', f"offers no online node to create the VM on ({', '.join(chosen) or 'none listed'}); "
                                 'bring one online or add another')
    return min(usable, key=lambda name: (-_free_memory(listing[name]), name))
