# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: plan_differences
short_description: A VM's declared-versus-observed differences, from pve_vm's result, for the run history
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The differences the C(puls.proxmox.reconcile) role records with a machine's plan (the fact C(puls_plan), key
    C(differences)), which the plan summary callback keeps in the run history (its C(history_dir)).
  - One entry per changed entry of P(puls.proxmox.pve_vm#module)'s RV(puls.proxmox.pve_vm#module:changes) - C(field),
    with C(observed) (the diff's before) and C(declared) (its after) when the run had C(--diff) - then one per key of
    RV(puls.proxmox.pve_vm#module:reboot_required) with C(pending_restart). Secrets are masked in the diff already.
options:
  _input:
    description: P(puls.proxmox.pve_vm#module)'s result; none gives no differences.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Record the plan with the differences
  ansible.builtin.set_fact:
    puls_plan:
      kind: vm
      name: "{{ inventory_hostname }}"
      actions: "{{ {'vm': converged} | puls.proxmox.plan_actions }}"
      differences: "{{ converged | puls.proxmox.plan_differences }}"
'''

RETURN = r'''
_value:
  description: "The differences, for example V([{field: cores, observed: 1, declared: 2}])."
  type: list
  elements: dict
'''

from ansible_collections.puls.proxmox.plugins.module_utils._history import differences


class FilterModule:
    def filters(self):
        return {'plan_differences': differences}
