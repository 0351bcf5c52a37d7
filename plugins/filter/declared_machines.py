# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: declared_machines
short_description: The machines an inventory declares, as the reconcile role's pre-flight checks read them
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - Each host of the groups C(pve_templates), C(pve_vms) and C(pve_containers), once, also the hosts outside C(--limit), read from its
    variables with the C(puls.proxmox.reconcile) role's defaults. The role's pre-flight checks
    (P(puls.proxmox.fleet_problems#filter), P(puls.proxmox.unadopted#filter)) and its orphans and pruning take them.
positional: groups
options:
  _input:
    description: The variables of every host, C(hostvars).
    type: dict
    required: true
  groups:
    description: The inventory's groups, C(groups); hosts of none of the three groups are no machines.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Gather the declared machines
  ansible.builtin.set_fact:
    declared: "{{ hostvars | puls.proxmox.declared_machines(groups) }}"
  run_once: true
'''

RETURN = r'''
_value:
  description:
    - One dict per machine, templates first, with C(host), C(name) (C(pve_vm_name), default the host), C(vmid)
      (C(pve_vmid), or null), C(ip) (C(pve_ip), a container's C(pve_container.ip), or empty), C(replace) (C(pve_replace), or empty), C(image) (C(pve_image)
      as a string, or empty; empty for a container), C(state) (C(pve_state), default V(present)), C(adopt) (C(pve_adopt) as a bool) ,
      C(template) (whether the host is in group C(pve_templates)) and C(type) (V(lxc) for a host of C(pve_containers)
      only, else V(qemu)).
  type: list
  elements: dict
'''

from ansible_collections.puls.proxmox.plugins.plugin_utils._fleet_checks import declared_machines


def declared_machines_of(hostvars, groups):
    """See DOCUMENTATION."""
    return declared_machines(hostvars, groups.get('pve_templates') or [], groups.get('pve_vms') or [], groups.get('pve_containers') or [])


class FilterModule:
    def filters(self):
        return {'declared_machines': declared_machines_of}
