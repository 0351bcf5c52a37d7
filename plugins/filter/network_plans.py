# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: network_plans
short_description: The plans of a node's network interfaces, from the result of pve_node_network
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The plans (the fact C(puls_plan) that the plan summary callback prints) of the interfaces of one entry of
    C(pve_networks), from the result of P(puls.proxmox.pve_node_network#module). The C(puls.proxmox.reconcile) role
    records one per interface.
  - Each plan has the kind C(network) and the name C(NODE/IFACE). A declared interface gets C(create), C(update),
    C(destroy) (declared C(state=absent)) or C(ok). An interface the run deletes without declaring it gets C(prune).
  - The module's C(apply), the one reload of the node's network, is no interface's action.
options:
  _input:
    description: The result of P(puls.proxmox.pve_node_network#module).
    type: dict
    required: true
  node:
    description: The node.
    type: str
    required: true
  declared:
    description: The names of the interfaces the entry declares.
    type: list
    elements: str
    required: true
'''

EXAMPLES = r'''
- name: Record the plan of each interface
  ansible.builtin.set_fact:
    puls_plan: "{{ item }}"
  loop: "{{ network_result | puls.proxmox.network_plans('pve1', ['vmbr1']) }}"
'''

RETURN = r'''
_value:
  description: >-
    The plans, each a dict with C(kind) (V(network)), C(name) (V(NODE/IFACE)) and C(actions), for example
    V([create]).
  type: list
  elements: dict
'''

from ansible_collections.puls.proxmox.plugins.module_utils._plan_words import network_plans


class FilterModule:
    def filters(self):
        return {'network_plans': network_plans}
