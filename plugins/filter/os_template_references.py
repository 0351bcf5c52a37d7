# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: os_template_references
short_description: The containers to create whose image names an OS template by its appliance name
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The pre-flight of the C(puls.proxmox.reconcile) role. A container's C(pve_container.image) may name an OS template
    as PVE's appliance index names it (V(debian-12-standard), V(ubuntu-24.04-standard), or the whole file name) instead
    of its volume. For each container still to create with such an image, the role resolves it on the container's node
    with P(puls.proxmox.pve_os_template#module).
  - For each container template with such an image too, whether it exists or not, as its build is made from that
    volume and the spec that tells whether it is current names it.
  - An image that is a volume, a VMID, or the name of a container template (declared, or one of the cluster) is not an
    OS template name.
  - A container with such an image and no C(pve_container.node) is an error.
positional: guests, declared_templates, templates
options:
  _input:
    description: The machines of P(puls.proxmox.fleet_vars#module)'s C(hosts), each with C(type) and its options C(vm).
    type: dict
    required: true
  guests:
    description: The guests of the cluster, as P(puls.proxmox.pve_fleet_info#module) returns them.
    type: list
    elements: dict
    required: true
  declared_templates:
    description: The names of the declared templates.
    type: list
    elements: str
    default: []
  templates:
    description: The templates of P(puls.proxmox.fleet_vars#module)'s C(templates), alike.
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: Resolve the OS templates of the containers to create, planning their downloads
  puls.proxmox.pve_os_template:
    name: "{{ item.name }}"
    node: "{{ item.node }}"
  check_mode: true
  loop: "{{ fleet.hosts | puls.proxmox.os_template_references(cluster.guests) }}"
'''

RETURN = r'''
_value:
  description: One C({host, name, node}) per container to create or container template, C(name) the OS template's name.
  type: list
  elements: dict
'''

from ansible_collections.puls.proxmox.plugins.plugin_utils._os_templates import os_template_references


class FilterModule:
    def filters(self):
        return {'os_template_references': os_template_references}
