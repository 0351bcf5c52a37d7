# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: image_problems
short_description: What is wrong with the declared machines' images, before anything is built
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The pre-flight check of the C(puls.proxmox.reconcile) role over the C(pve_image) of every declared machine, one
    message per problem, each naming the hosts and C(pve_image).
  - Templates of the inventory that are built from each other in a cycle (C(A) from C(B), C(B) from C(A), or a
    template from itself).
  - An image that is not a template of the inventory and that P(puls.proxmox.pve_vm#module) could not resolve
    against the cluster's guests - a name that matches no template, or several (ambiguous), a VMID of no guest, a URL,
    a volume PVE cannot import from. A VM that exists already is not checked (its image no longer matters); a template
    is, on every run (its spec hash resolves its image). Nor is a new VM whose image is a template another run builds
    right now (a guest C(NAME-build) tagged C(puls-building), such as another AWX job slice's) - the role waits for
    that build.
positional: guests
options:
  _input:
    description:
      - The declared machines, each a dict with C(host), C(name) (C(pve_vm_name)), C(image) (C(pve_image), empty when
        none), C(state) (C(pve_state)) and C(template) (whether the host is in group C(pve_templates)).
    type: list
    elements: dict
    required: true
  guests:
    description: The guests of the cluster, as P(puls.proxmox.pve_guest_info#module) returns them in RV(puls.proxmox.pve_guest_info#module:guests).
    type: list
    elements: dict
    required: true
'''

EXAMPLES = r'''
- name: Stop before any change when an image cannot work
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "Nothing was changed: {{ problems | join('; ') }}"
  vars:
    problems: "{{ declared_machines | puls.proxmox.image_problems(cluster.guests) }}"
'''

RETURN = r'''
_value:
  description: The problems, one sentence each saying what to change; empty when there is none.
  type: list
  elements: str
'''

from ansible_collections.puls.proxmox.plugins.plugin_utils._image_problems import image_problems


class FilterModule:
    def filters(self):
        return {'image_problems': image_problems}
