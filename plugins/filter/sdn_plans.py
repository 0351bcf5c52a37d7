# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: sdn_plans
short_description: The plans of the SDN zones, VNets and subnets, from the result of pve_sdn
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The plans (the fact C(puls_plan) that the plan summary callback prints) of the SDN objects of C(pve_sdn), from the
    result of P(puls.proxmox.pve_sdn#module) and its options. The C(puls.proxmox.reconcile) role records one per object.
  - Each plan has the kind C(sdn) and the name the module's C(changes) give the object, C(zone NAME), C(vnet NAME) or
    C(subnet VNET CIDR). A declared object gets C(create), C(update), C(destroy) (declared C(state=absent)) or C(ok). An
    object the run deletes without declaring it gets C(prune).
  - The module's C(apply), the one apply of the SDN config, is no object's action.
options:
  _input:
    description: The result of P(puls.proxmox.pve_sdn#module).
    type: dict
    required: true
  declared:
    description: The options given to P(puls.proxmox.pve_sdn#module), of which C(zones), C(vnets) and C(subnets) are read.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Record the plan of each SDN object
  ansible.builtin.set_fact:
    puls_plan: "{{ item }}"
  loop: "{{ sdn_result | puls.proxmox.sdn_plans({'zones': [{'name': 'lab', 'type': 'simple'}]}) }}"
'''

RETURN = r'''
_value:
  description: >-
    The plans, each a dict with C(kind) (V(sdn)), C(name) (such as V(vnet web)) and C(actions), for example
    V([create]).
  type: list
  elements: dict
'''

from ansible_collections.puls.proxmox.plugins.module_utils._plan_words import sdn_plans


class FilterModule:
    def filters(self):
        return {'sdn_plans': sdn_plans}
