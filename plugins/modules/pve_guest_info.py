#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: pve_guest_info
short_description: List the guests of a Proxmox VE cluster, with ownership, protection and linked clones
version_added: 0.1.0
description:
  - Lists the QEMU VMs, templates and containers of the cluster from one C(GET /cluster/resources), in VMID order.
  - Ownership is the owner tag and an owner record in the guest's Notes naming its own VMID (a clone inherits the
    tag and the Notes, but not a record naming it). The listing has no Notes, so the config of each listed guest that
    carries O(owner_tag) is read for its record, one request per such guest.
  - With O(details=true) it also reads each listed guest's config for its protection flag, and finds the linked
    clones of each listed template. That takes one request per listed guest, and one per VM of the cluster for each
    listed template.
  - The C(puls.proxmox.reconcile) role uses it to check replacements and to find what to prune.
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.connection
  - puls.proxmox.connection.action_group
attributes:
  check_mode:
    support: full
    details: It changes nothing in either mode.
  diff_mode:
    support: none
options:
  names:
    description:
      - List only the guests with these names. Default is every guest.
    type: list
    elements: str
  owned_only:
    description:
      - List only the guests that carry O(owner_tag). Each says in RV(guests[].owned) and RV(guests[].ownership)
        whether it really is owned.
    type: bool
    default: false
  owner_tag:
    description:
      - The tag that marks guests this collection manages.
    type: str
    default: puls-managed
  details:
    description:
      - Read each listed guest's config for RV(guests[].protected) and, for templates, RV(guests[].linked_clones).
    type: bool
    default: false
seealso:
  - module: puls.proxmox.pve_vm
  - module: puls.proxmox.pve_template
'''

EXAMPLES = r'''
- name: List the guests this collection manages, with their protection
  puls.proxmox.pve_guest_info:
    owned_only: true
    details: true
  register: owned

- name: Show the protected ones
  ansible.builtin.debug:
    msg: "{{ owned.guests | selectattr('owned') | selectattr('protected') | map(attribute='name') | list }}"

- name: Show the guests an earlier release tagged, which have no owner record yet
  ansible.builtin.debug:
    msg: "{{ owned.guests | selectattr('ownership', 'equalto', 'legacy') | map(attribute='name') | list }}"

- name: Where is web1?
  puls.proxmox.pve_guest_info:
    names: [web1]
  register: web1

- name: Show its VMID and node
  ansible.builtin.debug:
    msg: "{{ web1.guests | map(attribute='vmid') | list }} on {{ web1.guests | map(attribute='node') | list }}"
'''

RETURN = r'''
guests:
  description: The guests listed, in VMID order.
  returned: always
  type: list
  elements: dict
  contains:
    vmid:
      description: VMID of the guest.
      type: int
      sample: 101
    name:
      description: Its name (empty for a few seconds after a create).
      type: str
      sample: web1
    node:
      description: The node it is on.
      type: str
      sample: pve1
    type:
      description: V(qemu) or V(lxc).
      type: str
      sample: qemu
    status:
      description: Its power status, V(running) or V(stopped).
      type: str
      sample: running
    template:
      description: Whether it is a template.
      type: bool
      sample: false
    tags:
      description: Its tags, lower-cased and sorted (compared ignoring case).
      type: list
      elements: str
      sample: [puls-managed, web]
    owned:
      description:
        - Whether this collection owns it - it carries O(owner_tag) and its owner record names its own VMID (that is,
          RV(guests[].ownership) is V(owned)).
      type: bool
      sample: true
    ownership:
      description:
        - V(owned) (the owner tag, and the owner record naming its VMID); V(legacy) (the tag and no record - made by a
          release before the record, or a clone of such a template; it is managed when declared, never pruned when not);
          V(inherited) (the tag, with a record naming another VMID - a clone made outside this collection, never owned);
          V(foreign) (no owner tag).
      type: str
      choices: [owned, legacy, inherited, foreign]
      sample: owned
    provisioned:
      description:
        - >-
          Whether its Notes hold a provision record (C([puls-provision: ...]), as P(puls.proxmox.pve_notes_hash#module)
          writes it), so that Puls provisioned it even when it lacks the owner mark.
      type: bool
      returned: when its config was read - it carries O(owner_tag), or O(details=true)
      sample: true
    protected:
      description: Whether PVE's protection flag is on.
      type: bool
      returned: when O(details=true)
      sample: false
    linked_clones:
      description: For a template, the guests whose disks use its base volumes, as C(name (VMID)); empty otherwise.
      type: list
      elements: str
      returned: when O(details=true)
      sample: [web2 (102)]
'''

from ansible_collections.puls.proxmox.plugins.module_utils._guests_io import list_guests
from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import DEFAULT_OWNER_TAG

ARGUMENT_SPEC = {
    'names': {'type': 'list', 'elements': 'str'},
    'owned_only': {'type': 'bool', 'default': False},
    'owner_tag': {'type': 'str', 'default': DEFAULT_OWNER_TAG},
    'details': {'type': 'bool', 'default': False},
}


def main():
    module = PveModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    module.run(list_guests, module.client, params['names'], params['owner_tag'], params['owned_only'], params['details'])


if __name__ == '__main__':
    main()
