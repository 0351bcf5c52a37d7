#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: pve_fleet_info
short_description: Find, in one pass over a Proxmox VE cluster, the declared VMs that are already as declared
version_added: 0.1.0
description:
  - Checks many declared VMs against the cluster at once. It reads C(GET /cluster/resources) once and each declared
    VM's config once, and plans each VM as M(puls.proxmox.pve_vm) and M(puls.proxmox.pve_notes_hash) would.
  - A machine is as declared when M(puls.proxmox.pve_vm) would change nothing, none of its provision files is
    pending, its provision record names no file that is no longer declared, and the machine it replaces is gone.
  - Any other outcome makes a machine not as declared, including an error while checking it, such as an invalid
    option, a foreign VM of that name, or a DNS failure. The modules that would then run report such errors in
    full, so the result can only spare work, never skip any.
  - A running VM whose pve_vm options hold C(apply_mode=reboot) also has its status, running config and cloud-init drive
    read, because what waits for a restart restarts it. A VM addressed by DHCP has its guest agent asked for its
    address.
  - A machine may be an LXC container (O(machines[].type=lxc)), planned as M(puls.proxmox.pve_container) would plan
    it; its config, status and (while it runs) running config are read, as that module reads them.
  - It also returns every guest of the listing, as M(puls.proxmox.pve_guest_info) lists them.
  - >-
    With O(volumes), it also finds where each of those volumes is (RV(volumes), RV(missing_volumes)), with one content
    listing per online node, storage and content type. The C(puls.proxmox.reconcile) role asks it about the CD-ROM
    ISOs, OS templates and images to import that the declared machines name.
  - The C(puls.proxmox.reconcile) role runs it once per run, so that the machines already as declared need no
    further task.
  - The provision files are hashed on the controller, where they are, as M(puls.proxmox.pve_notes_hash) does, and their
    hashes returned with each machine's outcome (RV(machines.hashes)).
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.attributes.action
  - puls.proxmox.connection
  - puls.proxmox.connection.action_group
attributes:
  check_mode:
    support: full
    details: It changes nothing in either mode.
  diff_mode:
    support: none
  action:
    support: full
options:
  volumes:
    description:
      - Volumes C(STORAGE:CONTENT/FILE) (V(local:iso/debian-12.iso), V(local:vztmpl/FILE), V(local:import/FILE)) to find on
        the cluster's online nodes.
    type: list
    elements: str
    default: []
  machines:
    description:
      - The declared machines.
    type: list
    elements: dict
    required: true
    suboptions:
      host:
        description:
          - The machine's name in the result, such as its inventory host.
        type: str
        required: true
      type:
        description:
          - Whether the machine is a VM (V(qemu)) or an LXC container (V(lxc)).
        type: str
        choices: [qemu, lxc]
        default: qemu
      vm:
        description:
          - The options M(puls.proxmox.pve_vm) would be given for the machine, as a dictionary; for a container,
            those of M(puls.proxmox.pve_container).
          - They are checked as that module checks them. A machine with an option it would refuse is not
            as declared.
        type: dict
        required: true
      provision:
        description:
          - The machine's provision files, as M(puls.proxmox.pve_notes_hash) takes them.
        type: dict
        suboptions:
          files:
            description:
              - The provision files in the order they run.
            type: list
            elements: str
            default: []
          force:
            description:
              - Every file is pending, so the machine is never as declared.
            type: bool
            default: false
          hash_mode:
            description:
              - As M(puls.proxmox.pve_notes_hash)'s O(puls.proxmox.pve_notes_hash#module:hash_mode).
            type: str
            choices: [closure, file]
            default: closure
          hash_include:
            description:
              - As M(puls.proxmox.pve_notes_hash)'s O(puls.proxmox.pve_notes_hash#module:hash_include).
            type: list
            elements: path
            default: []
          base_dir:
            description:
              - The directory relative provision paths start from. Default is the playbook's directory.
            type: path
          hashes:
            description:
              - The hash of each file. Leave it unset, and the action plugin computes them on the controller.
            type: dict
      replace:
        description:
          - The name of the machine this one replaces. While a VM of that name exists, the machine is not as declared.
        type: str
  owner_tag:
    description:
      - The tag that marks guests this collection manages, for RV(guests[].owned).
    type: str
    default: puls-managed
notes:
  - The result never holds the values of M(puls.proxmox.pve_vm)'s secret options, such as C(ci_password) and
    C(user_data), nor M(puls.proxmox.pve_container)'s C(password).
seealso:
  - module: puls.proxmox.pve_vm
  - module: puls.proxmox.pve_container
  - module: puls.proxmox.pve_notes_hash
'''

EXAMPLES = r'''
- name: Which web servers need no work?
  puls.proxmox.pve_fleet_info:
    machines:
      - host: web1
        vm: {name: web1, image: ubuntu-24.04-cloud, cores: 2, memory: 2048, ip: 127.51.100.11/24, gateway: 127.51.100.1}
        provision: {files: [playbooks/web.yml]}
      - host: web2
        vm: {name: web2, image: ubuntu-24.04-cloud, cores: 2, memory: 2048, ip: 127.51.100.12/24, gateway: 127.51.100.1}
        provision: {files: [playbooks/web.yml]}
  register: fleet

- name: Show them, and why the others need work
  ansible.builtin.debug:
    msg: "as declared: {{ fleet.as_declared }}; {{ fleet.machines | dict2items | rejectattr('value.as_declared')
           | map(attribute='value.reason') | list }}"
'''

RETURN = r'''
as_declared:
  description: The hosts of the machines that are as declared.
  returned: always
  type: list
  elements: str
  sample: [web1]
guests:
  description:
    - The guests of the cluster, in VMID order, as M(puls.proxmox.pve_guest_info) returns them without O(puls.proxmox.pve_guest_info#module:details).
  returned: always
  type: list
  elements: dict
  sample:
    - {vmid: 101, name: web1, node: pve1, type: qemu, status: running, template: false, tags: [puls-managed, web], owned: true}
  contains:
    vmid:
      description: The guest's VMID.
      type: int
    name:
      description: The guest's name.
      type: str
    node:
      description: The node the guest is on.
      type: str
    type:
      description: V(qemu) or V(lxc).
      type: str
    status:
      description: The guest's power status, such as V(running) or V(stopped).
      type: str
    template:
      description: Whether the guest is a template.
      type: bool
    tags:
      description: The guest's tags, sorted.
      type: list
      elements: str
    owned:
      description: Whether the guest carries O(owner_tag).
      type: bool
volumes:
  description: Each volume of O(volumes), with the online nodes whose storage lists it (none when it is nowhere).
  returned: always
  type: dict
  sample: {local:iso/debian-12.iso: [pve1]}
missing_volumes:
  description: The volumes of O(volumes) that no online node's storage lists.
  returned: always
  type: list
  elements: str
  sample: [local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst]
machines:
  description: Each machine's outcome, by host.
  returned: always
  type: dict
  sample:
    web1: {as_declared: true, reason: '', vmid: 101, node: pve1, address: 127.51.100.11, hashes: {playbooks/web.yml: 0c1d2e3f4a5b}}
    web2: {as_declared: false, reason: 'VM to converge: cores', vmid: 102, node: pve1, address: null,
           hashes: {playbooks/web.yml: 0c1d2e3f4a5b}}
  contains:
    as_declared:
      description: Whether the machine needs no work.
      type: bool
    reason:
      description: Why the machine is not as declared; for one that is, any warning about its address, else empty.
      type: str
    vmid:
      description: The VMID of the machine's VM, or null when it has none yet.
      type: int
    node:
      description: The node of the machine's VM, or null when it has none yet.
      type: str
    address:
      description: The IPv4 address to reach a machine at that is as declared, as M(puls.proxmox.pve_vm) returns it; else null.
      type: str
    hashes:
      description:
        - The hash of each of the machine's provision files, keyed as declared, as M(puls.proxmox.pve_notes_hash) returns
          them in RV(puls.proxmox.pve_notes_hash#module:hashes), so that they can be given to it in
          O(puls.proxmox.pve_notes_hash#module:hashes) instead of being computed again.
        - Null when the machine has no provision file, or when its files could not be hashed.
      type: dict
'''

from ansible_collections.puls.proxmox.plugins.module_utils._fleet_io import ARGUMENT_SPEC, check_fleet, find_volumes, fleet_result, prepare
from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule


def main():
    # no_log: the machines' pve_vm options may hold secrets, which must not reach the system log; the result masks them.
    module = PveModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True, no_log=True)
    machines, refused, secrets = prepare(module.params['machines'])
    module.ansible.no_log_values.update(secrets)

    def run():
        checks, resources = check_fleet(module.client, machines)
        return fleet_result({**refused, **checks}, resources, module.params['owner_tag'], find_volumes(module.client, module.params['volumes']))

    module.run(run)


if __name__ == '__main__':
    main()
