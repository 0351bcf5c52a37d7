# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_guest_info's I/O: the guests of the cluster as the reconcile role's checks need them.

One ``GET /cluster/resources`` lists every guest. Ownership is the owner tag and the owner record in the Notes
(``_ownership``), and the listing has no Notes: the config of each listed guest carrying the owner tag is read for
it (a guest without the tag is foreign, with no read). With ``details`` each listed guest's config is read for its
protection flag too, and each template's linked clones are found as pve_template finds them (every other guest's
config of its type), so that prune never destroys a template a clone still uses.
"""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.module_utils import _notes, _ownership
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError, is_missing
from ansible_collections.puls.proxmox.plugins.module_utils._template_io import linked_clones
from ansible_collections.puls.proxmox.plugins.module_utils._template_plan import protected
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import as_bool, normalize_tags


def list_guests(client, names=None, owner_tag='puls-managed', owned_only=False, details=False):
    """The result of pve_guest_info: the guests (by VMID) named in names (all when None); with owned_only, only those
    carrying the owner tag (each says whether it is owned, or why not)."""
    resources = client.cluster_vms()
    wanted = None if names is None else set(names)
    guests = []
    for entry in sorted(resources, key=lambda item: int(item['vmid'])):
        if wanted is not None and entry.get('name') not in wanted:
            continue
        tagged = carries_tag(entry, owner_tag)
        if owned_only and not tagged:
            continue
        config = {}
        if tagged or details:
            config = read_config(client, entry)
            if config is None:  # gone since the listing
                continue
        guest = describe(entry, owner_tag, config)
        if details:
            guest['protected'] = protected(config)
            # A container template's linked clones are containers, a VM template's VMs.
            guest['linked_clones'] = linked_clones(client, resources, guest['vmid'], guest_type=guest['type']) if guest['template'] else []
        guests.append(guest)
    return {'changed': False, 'guests': guests}


def carries_tag(entry, owner_tag):
    return owner_tag in normalize_tags(entry.get('tags'))


def describe(entry, owner_tag, config=None):
    """A guest of the listing as the modules return it. With its ``config``, ``owned`` and ``ownership`` follow the owner
    record (_ownership); without (pve_fleet_info's listing), ``owned`` says only whether it carries the owner tag."""
    guest = {
        'vmid': int(entry['vmid']),
        'name': entry.get('name') or '',
        'node': entry.get('node'),
        'type': entry.get('type', 'qemu'),
        'status': entry.get('status'),
        'template': as_bool(entry.get('template')),
        'tags': sorted(normalize_tags(entry.get('tags'))),
        'owned': carries_tag(entry, owner_tag),
    }
    if config is not None:
        # The tags of the listing: the config of a guest changed since may be newer, but the record is only in the config.
        ownership = _ownership.state(dict(config, tags=entry.get('tags')), int(entry['vmid']), owner_tag)
        # A provision record without the owner mark: a guest Puls provisioned (an earlier release, or a tag removed by hand).
        guest.update(owned=ownership == _ownership.OWNED, ownership=ownership, provisioned=_notes.parse(config.get('description')).span is not None)
    return guest


def read_config(client, entry):
    """The guest's config, or None when it went away since the listing."""
    kind, vmid, node = entry.get('type', 'qemu'), entry['vmid'], entry['node']
    try:
        return client.get('/nodes/%s/%s/%s/config' % (node, kind, vmid), context='reading the config of %s %s on %s' % (kind, vmid, node))
    except PveApiError as exc:
        if is_missing(exc.reason):
            return None
        raise
