# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The containers to create whose image names an OS template as PVE's appliance index names it (the filter
os_template_references): the role's pre-flight resolves each with pve_os_template (module_utils/_ostemplate.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.puls.proxmox.plugins.module_utils._guest import LXC
from ansible_collections.puls.proxmox.plugins.module_utils._ostemplate import is_os_template_name


def os_template_references(machines, guests, declared_templates=(), templates=None):
    """[{host, name, node}]: each container of ``machines`` (fleet_vars' hosts: host -> {type, vm: pve_container's
    options}) that does not exist among ``guests`` (pve_fleet_info's, by VMID or else name), and each container
    template of ``templates`` (fleet_vars' templates, alike), whose image is neither a volume, a VMID, the name of a
    container template of the cluster, nor one of ``declared_templates`` (the names of the declared templates, which
    pve_container clones). A container template's, whether it exists or not: the spec that tells whether it is current
    names the OS template by its volume, and its build is made from that."""
    sources = set(declared_templates or ()) | {guest.get('name') for guest in guests or () if guest.get('template') and guest.get('type') == LXC}
    candidates = [(host, machine, False) for host, machine in dict(machines or {}).items()]
    candidates += [(host, machine, True) for host, machine in dict(templates or {}).items()]
    references = []
    for host, machine, template in sorted(candidates, key=lambda candidate: candidate[0]):
        options = machine.get('vm') or {}
        image = options.get('image')
        if machine.get('type') != LXC or not isinstance(image, str) or not is_os_template_name(image) or image in sources:
            continue
        if not template and _exists(options, guests):
            continue
        if not options.get('node'):
            raise AnsibleFilterError(
                f'Nothing was changed: {host}: pve_container.image names the OS template {image!r}, which is found on the '
                "container's node or downloaded there; set pve_container.node (a manifest's metadata.node)"
            )
        references.append({'host': host, 'name': image, 'node': options['node']})
    return references


def _exists(options, guests):
    vmid = options.get('vmid')
    for guest in guests or ():
        if guest.get('type') != LXC:
            continue
        if (int(guest['vmid']) == int(vmid)) if vmid not in (None, '') else guest.get('name') == options.get('name'):
            return True
    return False
