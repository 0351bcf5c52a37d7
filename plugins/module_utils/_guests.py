# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_guest_info's I/O: the guests of the cluster as the reconcile role's checks need them.

One ``GET /cluster/resources`` lists every guest; with ``details`` each listed guest's config is read for its
protection flag, and each template's linked clones are found as pve_template finds them (every other VM's
config), so that prune never destroys a template a clone still uses.
"""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError, is_missing
from ansible_collections.puls.proxmox.plugins.module_utils._template import owned, protected
from ansible_collections.puls.proxmox.plugins.module_utils._template_io import linked_clones
from ansible_collections.puls.proxmox.plugins.module_utils._vmconfig import as_bool, normalize_tags


def list_guests(client, names=None, owner_tag='puls-managed', owned_only=False, details=False):
    """The result of pve_guest_info: the guests (by VMID) named in names (all when None), owned ones only if asked."""
    resources = client.cluster_vms()
    wanted = None if names is None else set(names)
    guests = []
    for entry in sorted(resources, key=lambda item: int(item['vmid'])):
        if wanted is not None and entry.get('name') not in wanted:
            continue
        if owned_only and not owned(entry.get('tags'), owner_tag):
            continue
        guest = describe(entry, owner_tag)
        if details and not add_details(client, resources, entry, guest):
            continue
        guests.append(guest)
    return dict(changed=False, guests=guests)


def describe(entry, owner_tag):
    return dict(vmid=int(entry['vmid']), name=entry.get('name') or '', node=entry.get('node'), type=entry.get('type', 'qemu'),
                status=entry.get('status'), template=as_bool(entry.get('template')), tags=sorted(normalize_tags(entry.get('tags'))),
                owned=owned(entry.get('tags'), owner_tag))


def add_details(client, resources, entry, guest):
    """Fill in protected (and linked_clones for a template); False when the guest went away since the listing."""
    path = '/nodes/%s/%s/%s/config' % (entry['node'], guest['type'], guest['vmid'])
    try:
        config = client.get(path, context='reading the config of %s %s on %s' % (guest['type'], guest['vmid'], entry['node']))
    except PveApiError as exc:
        if is_missing(exc.reason):
            return False
        raise
    guest['protected'] = protected(config)
    guest['linked_clones'] = linked_clones(client, resources, guest['vmid']) if guest['template'] else []
    return True
