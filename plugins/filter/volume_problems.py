# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: volume_problems
short_description: The volumes the declared machines name that are on no storage and declared nowhere
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The pre-flight of the C(puls.proxmox.reconcile) role. A reference of P(puls.proxmox.volume_references#filter) whose
    volume P(puls.proxmox.pve_fleet_info#module) found on no node, or not on the machine's declared node, and that the
    inventory does not declare (an entry of C(pve_isos) or an C(Iso) manifest, or an OS template the run downloads), is
    one sentence naming the machine, the variable, the volume and the fix. An image or OS template counts only for a machine still to create, and
    a template's volume only for a template not yet built (none of its name on the cluster).
positional: cluster, isos, planned
options:
  _input:
    description: The references, from P(puls.proxmox.volume_references#filter).
    type: list
    elements: dict
    required: true
  cluster:
    description: The result of P(puls.proxmox.pve_fleet_info#module), asked about the references' volumes.
    type: dict
    required: true
  isos:
    description: The declared ISOs, cloud images and OS templates (C(pve_isos) merged with the manifests').
    type: list
    elements: dict
    default: []
  planned:
    description: The volumes of the OS templates the run downloads.
    type: list
    elements: str
    default: []
'''

EXAMPLES = r'''
- name: Stop before any write when a machine names a volume that is nowhere
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "Nothing was changed: {{ problems | join('; ') }}"
  vars:
    problems: "{{ references | puls.proxmox.volume_problems(cluster, pve_isos) }}"
'''

RETURN = r'''
_value:
  description: One sentence per missing volume.
  type: list
  elements: str
'''

from ansible_collections.puls.proxmox.plugins.plugin_utils._volume_check import volume_problems


class FilterModule:
    def filters(self):
        return {'volume_problems': volume_problems}
