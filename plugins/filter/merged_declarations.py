# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: merged_declarations
short_description: The inventory's pve_isos, pve_networks or pve_sdn merged with what the manifests declare
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The inventory plugin P(puls.proxmox.manifests#inventory) sets C(pve_manifest_isos), C(pve_manifest_networks) and
    C(pve_manifest_sdn), and the role merges each with the variable of the same kind from C(group_vars) and
    C(host_vars), so that neither replaces the other.
  - Each object is named by its identity. An ISO is its volume (C(STORAGE:CONTENT/FILE)) and node. A network entry is its
    node, and each of its interfaces is its name on that node. An SDN zone or VNet is its name, a subnet its CIDR and
    VNet. An object declared in both places is one object when the two agree on every field both set; a field only one
    of them sets is taken.
  - Two declarations of one object that disagree are an error naming both places (the inventory's file and line where
    ansible-core records them, and the manifest file and document) and the field.
positional: from_manifests, kind, origins
options:
  _input:
    description: The inventory's own variable, C(pve_isos), C(pve_networks) or C(pve_sdn).
    type: raw
    required: true
  from_manifests:
    description: The plugin's variable of the same kind, C(pve_manifest_isos), C(pve_manifest_networks) or C(pve_manifest_sdn).
    type: raw
    required: true
  kind:
    description: Which kind the two are.
    type: str
    choices: [isos, networks, sdn]
    required: true
  origins:
    description: C(pve_manifest_origins), where the plugin read each object, by kind and identity.
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: Keep the ISOs of the inventory and of the manifests
  ansible.builtin.debug:
    msg: "{{ pve_isos | puls.proxmox.merged_declarations(pve_manifest_isos, 'isos', pve_manifest_origins) }}"
'''

RETURN = r'''
_value:
  description: The merged declarations, of the kind's type (a list for isos and networks, a dict for sdn).
  type: raw
'''

from ansible_collections.puls.proxmox.plugins.plugin_utils._declarations import merged_declarations


class FilterModule:
    def filters(self):
        return {'merged_declarations': merged_declarations}
