# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: volume_references
short_description: The volumes the declared machines name - CD-ROM ISOs, images to import, OS templates
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The pre-flight of the C(puls.proxmox.reconcile) role. Each volume C(STORAGE:CONTENT/FILE) that a declared machine
    names - a VM's C(pve_cdrom) (C(iso)), a VM's C(pve_image) to import (C(import)), a container's
    C(pve_container.image) (C(vztmpl)) - so that P(puls.proxmox.pve_fleet_info#module) finds where each is, and
    P(puls.proxmox.volume_problems#filter) names those that are nowhere and not declared, before any write.
  - A template's too, which only its build reads.
positional: templates
options:
  _input:
    description: The machines of P(puls.proxmox.fleet_vars#module)'s C(hosts), each with C(type) and its options C(vm).
    type: dict
    required: true
  templates:
    description: The templates of P(puls.proxmox.fleet_vars#module)'s C(templates), alike.
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: Find the volumes the declared machines name
  puls.proxmox.pve_fleet_info:
    machines: "{{ fleet.hosts.values() | list }}"
    volumes: "{{ fleet.hosts | puls.proxmox.volume_references | map(attribute='volume') | unique | list }}"
'''

RETURN = r'''
_value:
  description:
    - One C({host, field, volume, created_only, template}) per volume a machine or template names. C(field) is the
      variable (C(pve_cdrom), C(pve_image), C(pve_container.image)); C(created_only) is whether only the machine's
      creation (a template's build) reads it; C(template) is the template's name, null for a machine.
  type: list
  elements: dict
'''

from ansible_collections.puls.proxmox.plugins.plugin_utils._volume_check import volume_references


class FilterModule:
    def filters(self):
        return {'volume_references': volume_references}
