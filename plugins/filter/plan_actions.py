# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: plan_actions
short_description: The plan words of a machine of the reconcile role, from the results of its tasks
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The actions a machine's plan lists (the fact C(puls_plan) that the plan summary callback prints), from the results
    of the C(puls.proxmox.reconcile) role's tasks. The words are defined once, in the collection's code, for the role
    and the callback; C(docs/index.md) lists them.
  - The actions come in this order - the template's C(build) or C(rebuild (REASON)), the VM's C(create), C(update) or
    C(update (reboot needed)), C(provision FILE, ...), C(replace OLD), C(destroy) - or C(ok) alone.
  - With O(iso=true) the input is P(puls.proxmox.pve_iso#module)'s RV(puls.proxmox.pve_iso#module:action) instead, and the
    result is the plan of that file.
options:
  _input:
    description:
      - The results, a dict with the optional keys C(template) (P(puls.proxmox.pve_template#module)'s query result),
        C(vm) (P(puls.proxmox.pve_vm#module)'s result), C(provision) (the files that run), C(replaced) (the name of the
        machine replaced, empty when none) and C(destroyed) (bool).
      - With O(iso=true), pve_iso's action on each node.
    type: dict
    required: true
  iso:
    description: Whether the input is pve_iso's action on each node.
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: Record the plan
  ansible.builtin.set_fact:
    puls_plan:
      kind: vm
      name: "{{ inventory_hostname }}"
      actions: "{{ {'vm': created, 'provision': ['base.yml']} | puls.proxmox.plan_actions }}"
'''

RETURN = r'''
_value:
  description: The actions, for example V([create, provision base.yml]); V([ok]) when there is nothing to do.
  type: list
  elements: str
'''

from ansible_collections.puls.proxmox.plugins.module_utils._plan_words import iso_actions, machine_actions


def plan_actions(results, iso=False):
    """See DOCUMENTATION."""
    if iso:
        return iso_actions(results)
    results = results or {}
    return machine_actions(
        template=results.get('template'),
        vm=results.get('vm'),
        provision=results.get('provision'),
        replaced=results.get('replaced') or None,
        destroyed=bool(results.get('destroyed')),
    )


class FilterModule:
    def filters(self):
        return {'plan_actions': plan_actions}
