# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: unadopted
short_description: The guests of the cluster that declared VMs would take over without pve_adopt
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The pre-flight check of the C(puls.proxmox.reconcile) role. A declared VM (C(pve_state=present), not a template,
    without C(pve_adopt)) is found by its C(pve_vmid) when it has one, else by its name, as
    P(puls.proxmox.pve_vm#module) finds it. When the guest found lacks the owner tag, pve_vm refuses it; the role stops
    before any change instead, and says how to adopt it.
positional: guests
options:
  _input:
    description:
      - The declared machines, each a dict with C(host), C(name) (C(pve_vm_name)), C(vmid) (C(pve_vmid) or null),
        C(state), C(template) and C(adopt) (C(pve_adopt)).
    type: list
    elements: dict
    required: true
  guests:
    description:
      - The guests of the cluster, as P(puls.proxmox.pve_guest_info#module) or P(puls.proxmox.pve_fleet_info#module)
        return them (C(owned) is whether a guest carries the owner tag in the latter).
    type: list
    elements: dict
    required: true
'''

EXAMPLES = r'''
- name: Stop before any change when a declared VM's name belongs to a guest of someone else
  ansible.builtin.assert:
    that: declared_machines | puls.proxmox.unadopted(cluster.guests) | length == 0
'''

RETURN = r'''
_value:
  description:
    - Each guest refused, as given in O(guests) (so with RV(puls.proxmox.pve_guest_info#module:guests[].provisioned)
      when pve_guest_info read it), with C(host), the declared machine's host.
  type: list
  elements: dict
'''


from ansible_collections.puls.proxmox.plugins.plugin_utils._fleet_checks import unadopted


class FilterModule:
    def filters(self):
        return {'unadopted': unadopted}
