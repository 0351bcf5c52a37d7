# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: fleet_problems
short_description: What is wrong with the declared machines, against each other and the cluster, before any change
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The pre-flight check of the C(puls.proxmox.reconcile) role over every declared machine, one message per problem,
    each naming the hosts and the variable to change, in this order.
  - Machines that declare the same C(pve_vmid), or the same static address (C(pve_ip)).
  - A C(pve_replace) that names a machine of the inventory, a protected guest, a guest without the owner tag, or a guest
    whose owner record names another VMID (a clone made outside this collection).
  - The problems of the machines' images, as P(puls.proxmox.image_problems#filter) finds them.
  - The guests that declared VMs would take over without C(pve_adopt), as P(puls.proxmox.unadopted#filter) finds them.
options:
  _input:
    description: The declared machines, as P(puls.proxmox.declared_machines#filter) returns them.
    type: list
    elements: dict
    required: true
  guests:
    description: The guests of the cluster, as P(puls.proxmox.pve_fleet_info#module) returns them.
    type: list
    elements: dict
    required: true
  replaced:
    description:
      - The guests the machines replace, as P(puls.proxmox.pve_guest_info#module) returns them with
        O(puls.proxmox.pve_guest_info#module:details=true).
    type: list
    elements: dict
    required: true
  untagged:
    description:
      - The guests of declared VMs' names or VMIDs that lack the owner tag, as P(puls.proxmox.pve_guest_info#module)
        returns them with O(puls.proxmox.pve_guest_info#module:details=true).
    type: list
    elements: dict
    required: true
  owner_tag:
    description: The tag that marks guests this collection manages.
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Stop before any change when the declared machines cannot work
  ansible.builtin.fail:
    msg: "Nothing was changed: {{ problems | join('; ') }}"
  when: problems | length > 0
  vars:
    problems: >-
      {{ declared | puls.proxmox.fleet_problems(guests=cluster.guests, replaced=replaced.guests, untagged=untagged.guests,
                                                owner_tag='puls-managed') }}
'''

RETURN = r'''
_value:
  description: Each problem as a sentence that names the hosts and says what to change; empty when every machine can be reconciled.
  type: list
  elements: str
'''

from ansible_collections.puls.proxmox.plugins.plugin_utils._fleet_checks import fleet_problems


class FilterModule:
    def filters(self):
        return {'fleet_problems': fleet_problems}
