# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pre-flight check of the volumes the declared machines name (filters volume_references and volume_problems): a
VM's CD-ROM ISO (pve_cdrom), a VM's image to import (pve_image STORAGE:import/FILE) and a container's OS template
(pve_container.image STORAGE:vztmpl/FILE); a template's too, which its build reads. One that is on no node's storage
and that this inventory does not declare (pve_isos, an Iso manifest, an OS template the run downloads) would fail in
PVE ("volume ... does not exist") after other machines were made; the role stops before any write instead."""

from __future__ import annotations

import re

from ansible_collections.puls.proxmox.plugins.module_utils._guest import LXC
from ansible_collections.puls.proxmox.plugins.plugin_utils._declarations import iso_volume

# STORAGE:CONTENT/FILE, the volumes of file content that PVE lists per storage.
_FILE_VOLUME = re.compile(r'^[^:/]+:(?P<content>iso|vztmpl|import)/[^/]+$')
# The option of each machine type that names a volume, its variable in messages, and whether an existing machine
# still uses it (a CD-ROM's ISO does; an image or OS template is read only when the machine is created).
_FIELDS = (
    ('qemu', 'cdrom', 'pve_cdrom', True),
    ('qemu', 'image', 'pve_image', False),
    (LXC, 'image', 'pve_container.image', False),
)


def volume_references(machines, templates=None):
    """[{host, field, volume, created_only, template, node}]: each volume that a machine of ``machines`` (fleet_vars'
    hosts: host -> {type, vm: its module's options}) or a template of ``templates`` (fleet_vars' templates, alike)
    names, in host order. A template's are read only by its build (created_only), ``template`` its name (None for a
    machine); ``node`` is the machine's declared node, or None where placement chooses it."""
    references = []
    for group, is_template in ((machines, False), (templates, True)):
        for host, machine in sorted(dict(group or {}).items()):
            options = machine.get('vm') or {}
            for guest_type, option, field, always in _FIELDS:
                volume = options.get(option)
                if (machine.get('type') or 'qemu') == guest_type and isinstance(volume, str) and _FILE_VOLUME.match(volume):
                    references.append(
                        {
                            'host': host,
                            'field': field,
                            'volume': volume,
                            'created_only': is_template or not always,
                            'template': options.get('name') or host if is_template else None,
                            'node': options.get('node'),
                        }
                    )
    return references


def volume_problems(references, cluster, isos=(), planned=()):
    """One sentence per reference whose volume ``cluster`` (pve_fleet_info's result, asked about them) finds on no node,
    or not on the machine's declared node, and that neither ``isos`` (the merged pve_isos) nor ``planned`` (the volumes
    of the OS templates the run downloads) declares; an image or OS template counts only for a machine still to
    create, or a template not yet built. A storage that is not shared (local) holds each node's own files, and PVE
    takes a guest's volume on the guest's node only."""
    where = (cluster or {}).get('volumes') or {}
    machines = (cluster or {}).get('machines') or {}
    built = {guest.get('name') for guest in (cluster or {}).get('guests') or () if guest.get('template')}
    declared = {iso_volume(entry) for entry in isos or () if (entry.get('state') or 'present') == 'present'} | set(planned or ())
    problems = []
    for reference in references or ():
        volume, field, host, node = reference['volume'], reference['field'], reference['host'], reference.get('node')
        nodes = where.get(volume)
        if nodes is None or (nodes and (node is None or node in nodes)) or volume in declared:
            continue
        template = reference.get('template')
        if reference['created_only'] and (template in built if template is not None else (machines.get(host) or {}).get('vmid') is not None):
            continue
        nowhere = 'on no storage of the cluster' if not nodes else f'on no storage of node {node} (only of {", ".join(nodes)})'
        problems.append(
            f'{host}: {field} is {volume}, which is {nowhere} and which this inventory does not declare: '
            f'declare it in pve_isos (or an Iso manifest) so that the run downloads it, put it on the storage first, or correct {field}'
        )
    return problems
