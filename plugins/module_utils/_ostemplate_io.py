# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_os_template's run: read the node's vztmpl storages and volumes (and, when none matches, its appliance index),
resolve the name (_ostemplate.resolve), check the credential may download it (_privileges.require, in check mode too),
then download it in a real run."""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.module_utils._ostemplate import OsTemplateError, resolve
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import os_template_needs, require
from ansible_collections.puls.proxmox.plugins.module_utils._volumes import list_volumes

DEFAULT_TIMEOUT = 1800


def reconcile(client, name, node, timeout=DEFAULT_TIMEOUT, check_mode=False):
    """The module's result: the volume of the OS template ``name`` on ``node``, downloaded when missing. Raises
    OsTemplateError when it is neither on the node's storages nor in its appliance index."""
    # PVE's storage index of a node (pve-storage PVE/API2/Storage/Status.pm index): content=vztmpl lists the storages
    # that hold OS templates, enabled=1 those enabled, in the order PVE lists them (by storage ID).
    storages = client.get(f'/nodes/{node}/storage', content='vztmpl', enabled=1, context=f'listing the storages of node {node}')
    active = sorted(item['storage'] for item in storages or () if item.get('active', 1))
    volumes = {}
    for storage in active:
        volumes.update({volid: volid.split('/', 1)[-1] for volid in list_volumes(client, node, storage, 'vztmpl')})
    try:
        resolution = resolve(name, node, volumes, (), active)
    except OsTemplateError:
        # Not on a storage: the appliance index, read only then (pveam's list, which PVE keeps per node).
        appliances = client.get(f'/nodes/{node}/aplinfo', context=f'reading the appliance index of node {node}')
        resolution = resolve(name, node, volumes, appliances or (), active)
    result = {'volume': resolution.volume, 'download': dict(resolution.download or {}) or None}
    diff = {'before': {'volume': None}, 'after': {'volume': resolution.volume}} if resolution.download else None
    # Before the download, in check mode too: the plan run already says what the real run would be refused.
    require(client, os_template_needs(resolution.download, node), f'the plan for {resolution.volume}')
    if resolution.download is None or check_mode:
        return dict(result, changed=resolution.download is not None, diff=diff)
    upid = client.post(
        f'/nodes/{node}/aplinfo',
        storage=resolution.download['storage'],
        template=resolution.download['template'],
        context=f'downloading the OS template {resolution.download["template"]} onto storage {resolution.download["storage"]} of node {node}',
    )
    client.wait_task(upid, timeout, context=f'downloading the OS template {resolution.download["template"]} on node {node}')
    return dict(result, changed=True, diff=diff)
