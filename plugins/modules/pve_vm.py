#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: pve_vm
short_description: One Proxmox VE VM, created exactly as declared and kept that way
version_added: 0.1.0
description:
  - Creates a QEMU VM by cloning a template (full or linked) or by importing a cloud image, applies the declared
    hardware, network and cloud-init settings in the same run, and keeps them as declared on later runs.
  - Only declared options are managed. An option left unset is neither compared nor changed, so values that come from
    the template or were set by hand stay as they are.
  - The VM is identified by O(name) (or by O(vmid) when given). A VM this module creates carries the owner tag
    O(owner_tag); a VM with the name but without the tag is refused unless O(adopt=true).
  - Check mode writes nothing and reports the same C(changed) and diff as the real run. The diff holds only declared
    settings, with the cloud-init password masked.
  - "Changes Proxmox VE can only apply at the next boot are returned in RV(reboot_required) (O(apply_mode=report)), or
    applied by restarting the VM (O(apply_mode=reboot))."
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.attributes.progress
  - puls.proxmox.connection
  - puls.proxmox.connection.action_group
  - puls.proxmox.vm_options
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  planned_images:
    description:
      - Import volumes that an earlier task of the same run makes, typically P(puls.proxmox.pve_iso#module) downloading a
        cloud image. Used in check mode only, where that task has made nothing yet.
      - In check mode, a VM to be created whose O(image) is one of these volumes is planned as imported from it on the
        listed nodes, instead of failing because the volume does not exist yet. A real run ignores this option and
        finds the volume on the storage.
    type: list
    elements: dict
    suboptions:
      volume:
        description: The volume ID, as P(puls.proxmox.pve_iso#module) returns it in RV(puls.proxmox.pve_iso#module:volid).
        type: str
        required: true
      nodes:
        description: The nodes whose storage will hold the volume.
        type: list
        elements: str
        required: true
seealso:
  - module: puls.proxmox.pve_iso
notes:
  - Placement options (O(image), O(linked_clone), O(node), O(nodes), O(vmid), O(pool), O(storage)) apply when the VM is
    created; an existing VM is neither moved nor cloned again.
requirements:
  - dnspython >= 2.4 (on the controller, for O(dns_domain))
  - pycdlib and PyYAML (on the controller, for O(user_data))
'''

EXAMPLES = r'''
- name: Full clone of a template, sized and addressed, started
  puls.proxmox.pve_vm:
    name: web1
    image: ubuntu-24.04-cloud
    cores: 2
    memory: 4096
    disk_size: 20G
    ip: 127.51.100.11/24
    gateway: 127.51.100.1
    ci_user: ops
    ssh_keys:
      - "{{ lookup('ansible.builtin.file', '~/.ssh/id_ed25519.pub') }}"
    tags: [web, production]
    onboot: true
    state: started
  register: web1

- name: Show where web1 can be reached
  ansible.builtin.debug:
    msg: "web1 is VM {{ web1.vmid }} on {{ web1.node }}, at {{ web1.address }}"

- name: Linked clone on DHCP, its address reported by the guest agent
  puls.proxmox.pve_vm:
    name: ci-runner
    image: ubuntu-24.04
    linked_clone: true
    ip: dhcp
    state: started

- name: Import a cloud image, configured by raw cloud-init user-data on a seed ISO
  puls.proxmox.pve_vm:
    name: db1
    image: local:import/noble-server-cloudimg-amd64.qcow2
    storage: local-lvm
    disk_size: 32G
    memory: 8192
    user_data: |
      #cloud-config
      package_update: true
      packages: [postgresql]
      users:
        - name: ops
          sudo: ALL=(ALL) NOPASSWD:ALL
          ssh_authorized_keys:
            - "{{ lookup('ansible.builtin.file', '~/.ssh/id_ed25519.pub') }}"
    state: started

- name: A UEFI VM with a TPM, a data disk and a second network on a VLAN
  puls.proxmox.pve_vm:
    name: app1
    image: ubuntu-24.04-cloud
    storage: local-lvm
    bios: ovmf
    machine: q35
    efidisk:
      pre_enrolled_keys: true
    tpm:
      version: v2.0
    disks:
      - slot: scsi1
        size: 100G
        cache: writeback
        discard: true
        iothread: true
    nets:
      - slot: net1
        bridge: vmbr1
        vlan: 20
        firewall: true
    state: started

- name: Grow web1's memory and apply it at once by restarting the VM
  puls.proxmox.pve_vm:
    name: web1
    memory: 8192
    apply_mode: reboot

- name: Stop the runner (graceful shutdown, forced after 60 seconds)
  puls.proxmox.pve_vm:
    name: ci-runner
    state: stopped
    shutdown_timeout: 60

- name: Take over a VM made by hand (created from the template if it is missing)
  puls.proxmox.pve_vm:
    name: legacy-app
    image: "9017"
    adopt: true
    protection: true

- name: Set the connection once for every module of the collection
  module_defaults:
    group/puls.proxmox.pve:
      api_url: "{{ lookup('ansible.builtin.env', 'PROXMOX_URL') }}"
      api_user: automation@pve
      api_token_name: ansible
      api_token_secret: "{{ lookup('ansible.builtin.env', 'PROXMOX_TOKEN_SECRET') }}"
  block:
    - name: Remove the runner
      puls.proxmox.pve_vm:
        name: ci-runner
        state: absent
'''

RETURN = r'''
vmid:
  description: VMID of the VM. Null in check mode for a VM that would be created without a declared O(vmid).
  returned: always
  type: int
  sample: 101
node:
  description: Node the VM is on (or would be created on).
  returned: always
  type: str
  sample: pve1
status:
  description: Power status of the VM after the run (predicted in check mode), or V(absent) when it does not exist.
  returned: always
  type: str
  sample: running
address:
  description:
    - IPv4 address to reach the VM at. The static O(ip) or the one found in DNS; under DHCP, the address its guest
      agent reports while it runs.
    - Null when unknown (a stopped DHCP VM, no guest agent, or a VM that would be created in check mode); a warning says
      why when a running VM's address is unknown.
  returned: always
  type: str
  sample: 127.51.100.11
reboot_required:
  description:
    - Config keys whose new values the running VM takes only at its next boot (PVE's pending changes, and cloud-init
      settings not yet on its cloud-init drive). Empty when nothing waits, or when the run restarted the VM. A live
      migration or a resume after hibernation starts a new QEMU process but no new boot of the guest, so what waited
      still waits (the VM's tasks tell a restart from those).
  returned: always
  type: list
  elements: str
  sample: [cores, ipconfig0]
changes:
  description: Names of the diff entries whose value changed (or would change), for example PVE config keys.
  returned: always
  type: list
  elements: str
  sample: [memory, tags]
diff:
  description:
    - The declared settings before and after, in PVE's terms (config keys such as C(cores), C(net0), C(ipconfig0);
      C(disk_size); C(status) for the power states; C(state) when the VM is created or destroyed).
    - A device of O(disks), O(nets), O(efidisk) or O(tpm) shows under its config key (C(scsi1), C(net1), C(efidisk0),
      C(tpmstate0)) with its storage, size and declared properties only; a disk O(remove_undeclared_disks) detaches
      shows its volume before and null after.
  returned: when diff mode is on
  type: dict
  contains:
    before:
      description: The settings before the run.
      type: dict
    after:
      description: The settings after the run.
      type: dict
'''

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.puls.proxmox.plugins.module_utils._cidata import (
    HAS_PYCDLIB,
    HAS_YAML,
    PYCDLIB_IMPORT_ERROR,
    YAML_IMPORT_ERROR,
    SeedDataError,
)
from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule
from ansible_collections.puls.proxmox.plugins.module_utils._option_specs import VM_ARGUMENT_SPEC
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError
from ansible_collections.puls.proxmox.plugins.module_utils._vm_io import reconcile_vm


def main():
    module = PveModule(argument_spec=VM_ARGUMENT_SPEC, supports_check_mode=True)
    if module.params['user_data'] is not None:
        for library, present, trace in (('PyYAML', HAS_YAML, YAML_IMPORT_ERROR), ('pycdlib', HAS_PYCDLIB, PYCDLIB_IMPORT_ERROR)):
            if not present:
                module.fail(missing_required_lib(library, reason='for user_data'), exception=trace)
    try:
        module.run(reconcile_vm, module.client, module.params, check_mode=module.check_mode)
    except (SpecError, SeedDataError) as exc:
        module.fail(str(exc), option=exc.option)


if __name__ == '__main__':
    main()
