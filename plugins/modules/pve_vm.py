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
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  name:
    description:
      - Name of the VM, a DNS name. It identifies the VM unless O(vmid) is given; two VMs with this name are an error.
    type: str
    required: true
  state:
    description:
      - V(present) makes the VM exist as declared and leaves its power alone; a new VM stays stopped.
      - V(started) and V(stopped) also set its power. V(stopped) shuts the guest down gracefully and stops it after
        O(shutdown_timeout) seconds.
      - V(restarted) shuts a running VM down gracefully and starts it again (a stopped VM is started). It restarts on
        every run, so it always reports a change.
      - V(absent) destroys the VM with its disks (purge, unreferenced disks included) after a graceful shutdown, and
        removes its O(user_data) seed ISO. A protected VM is refused.
    type: str
    choices: [present, started, stopped, restarted, absent]
    default: present
  image:
    description:
      - Where a new VM comes from; used only when the VM does not exist yet.
      - A template or VM to clone, given by VMID (V(9017)), exact template name (V(ubuntu-24.04-cloud)) or a unique
        part of a template name (V(ubuntu-24.04)). Several matching templates are an error that lists them.
      - Or a disk image volume to import, V(STORAGE:import/NAME.qcow2) (also C(.raw), C(.vmdk); content type C(import))
        or V(STORAGE:VMID/DISK). The VM then gets what a cloud image needs to boot (VirtIO SCSI, serial console, boot
        order, a cloud-init drive) and needs O(storage). URLs are refused; download the image first with P(puls.proxmox.pve_iso#module).
    type: str
  linked_clone:
    description:
      - Clone as a copy-on-write linked clone of a template instead of a full copy.
      - The clone keeps its disks on the template's storage, so O(storage) is refused. It is placed like a full clone, on
        another node only when every drive of the template is on shared storage.
    type: bool
    default: false
  node:
    description:
      - Node to create the VM on. An existing VM is never moved.
      - Without it, the online node among O(nodes) with the most free memory is chosen, except that a clone goes to the
        template's node when any drive of the template is on local storage (an ISO in a CD-ROM drive and the cloud-init
        drive count, an empty CD-ROM drive does not), or when a full clone's O(storage) is not shared, since PVE clones to
        another node only from and to shared storage. A shared O(storage) must be enabled on the node chosen.
    type: str
  nodes:
    description:
      - Candidate nodes for placing a new VM when O(node) is not given; all online nodes when empty.
      - If not set, E(PROXMOX_NODES) is used (comma-separated).
    type: list
    elements: str
  vmid:
    description:
      - VMID of the VM. When given, it identifies the VM (whose name must then be O(name)); a new VM is created with it.
      - Without it, a new VM gets a free VMID, safely also when many VMs are created at once.
    type: int
  pool:
    description:
      - Resource pool a new VM is created in.
    type: str
  storage:
    description:
      - Storage for a new VM's disks (a full clone's copy, or the imported disk, which requires it) and for a cloud-init
        drive added to a VM that has none.
    type: str
  cores:
    description: CPU cores per socket.
    type: int
  sockets:
    description: CPU sockets.
    type: int
  memory:
    description: Memory in MiB.
    type: int
  cpu:
    description:
      - CPU type, for example V(host) or V(x86-64-v2-AES), optionally with properties (V(host,flags=+aes)).
        Properties the VM has and the value does not name are kept.
    type: str
  machine:
    description:
      - Machine type. V(i440fx) is written as PVE's C(pc). A pinned version of the same family
        (C(pc-q35-9.0)) counts as that family and is left alone.
    type: str
    choices: [q35, i440fx]
  disk_size:
    description:
      - Size of the boot disk, for example V(32G), V(512M) or V(1T); a bare number means GiB.
      - The disk is grown when smaller. A size below the current one is an error naming the current size, since PVE
        cannot shrink a disk. An increment such as V(+8G) is refused; declare the total size.
    type: str
  bridge:
    description:
      - Bridge of the first network device (C(net0)), for example V(vmbr0). The device's MAC, model and other
        properties are kept. A VM without C(net0) gets a VirtIO device on V(vmbr0) unless this says otherwise.
    type: str
  vlan:
    description: VLAN tag (1-4094) of the first network device.
    type: int
  ip:
    description:
      - IPv4 address of the first network device, set by cloud-init (C(ipconfig0)). V(10.0.0.5) (a /24),
        V(10.0.0.5/22), or V(dhcp).
      - When not set and O(dns_domain) is, the address is looked up in DNS (see O(dns_domain)).
      - When neither is set, C(ipconfig0) is not managed.
      - Mutually exclusive with O(user_data).
    type: str
  gateway:
    description:
      - IPv4 gateway for a static O(ip). Defaults to the address's first three octets and C(.1).
    type: str
  nameservers:
    description:
      - DNS servers (IP addresses) cloud-init configures in the guest. An empty list removes them.
    type: list
    elements: str
  searchdomain:
    description:
      - DNS search domain cloud-init configures in the guest. An empty string removes it.
    type: str
  dns_domain:
    description:
      - DNS domain of the VMs. When O(ip) is not declared, C(NAME.DNS_DOMAIN) is looked up through O(dns_servers);
        an A record makes that the VM's static address; a name that does not exist (or has no A record) means DHCP.
        Any other DNS failure is an error, so a DNS outage never changes a VM's network.
      - If not set, E(PROXMOX_DNS_DOMAIN) is used.
    type: str
  dns_servers:
    description:
      - DNS servers to ask for O(dns_domain) lookups, as V(IP) or V(IP:PORT) (IPv6 as V([IP]:PORT)). The system resolver
        is never used.
      - If not set, E(PROXMOX_DNS_SERVERS) is used (comma-separated).
    type: list
    elements: str
  ci_user:
    description:
      - User cloud-init creates, whose O(ssh_keys) are authorized. An empty string removes the setting.
    type: str
  ci_password:
    description:
      - Password cloud-init sets for O(ci_user).
      - PVE never returns it, so it is written only when the VM has no password set (at creation); changing it later
        is not detected. It never appears in the output or the diff.
    type: str
  ssh_keys:
    description:
      - OpenSSH public keys (the content of C(.pub) files) cloud-init authorizes for O(ci_user). Compared as keys,
        regardless of PVE's encoding. An empty list removes them.
    type: list
    elements: str
  user_data:
    description:
      - Raw cloud-init user-data (C(#cloud-config), a C(#!) script, MIME multipart). It is delivered on a NoCloud seed
        ISO built by this module, whose C(instance-id) holds a hash of its content, so cloud-init runs it again when it
        changes. The ISO replaces PVE's own cloud-init drive, and is named C(puls-seed-NAME-HASH.iso) on
        O(user_data_storage). A changed user-data uploads a new ISO, attaches it and deletes the old one.
      - Mutually exclusive with O(ip), O(gateway), O(nameservers), O(searchdomain), O(ci_user), O(ci_password) and
        O(ssh_keys), which live on PVE's cloud-init drive; put those settings into the user-data instead.
      - It is never shown in the output or the diff.
    type: str
  user_data_storage:
    description:
      - Storage with content type C(iso) for the seed ISO of O(user_data). The seed stays attached to the VM.
      - When not set, a seed already attached with the same content stays where it is; a new seed goes to the first
        shared storage (by name) with content C(iso) on the VM's node, else to C(local).
      - A seed on C(local) or another non-shared storage blocks migration and HA relocation of the VM (Proxmox VE
        refuses to migrate a local CD-ROM image); set a shared storage here for VMs that must move.
    type: str
  tags:
    description:
      - Tags of the VM, compared as a set (PVE lower-cases and sorts them). The owner tag is always kept.
      - When not set, the VM's tags are left alone except for adding the owner tag.
    type: list
    elements: str
  protection:
    description:
      - PVE's protection flag, which blocks destroying the VM and removing its disks.
      - A protected VM is never destroyed by O(state=absent); set this to V(false) first.
    type: bool
  onboot:
    description: Start the VM when its node boots.
    type: bool
  apply_mode:
    description:
      - What to do with changes a running VM only takes at its next boot (hardware changes PVE keeps pending, cloud-init
        settings, a new seed ISO).
      - V(report) lists them in RV(reboot_required) and leaves the VM running.
      - V(reboot) regenerates the cloud-init drive and restarts the VM (graceful shutdown, then start).
    type: str
    choices: [report, reboot]
    default: report
  owner_tag:
    description:
      - Tag that marks VMs this module manages. It is put on every VM the module creates or adopts.
    type: str
    default: puls-managed
  adopt:
    description:
      - Take over an existing VM with this name that lacks the owner tag, adding the tag. Without it such a VM is refused.
    type: bool
    default: false
  shutdown_timeout:
    description:
      - Seconds a graceful shutdown may take (for O(state=stopped), O(state=restarted), O(state=absent) and
        O(apply_mode=reboot)) before the VM is stopped forcibly.
    type: int
    default: 180
  timeout:
    description:
      - Seconds to wait for each PVE task (a clone, an import, a start, a destroy) and for a new VM's lock to clear.
    type: int
    default: 600
  agent_timeout:
    description:
      - How long after the VM's boot, in seconds, its guest agent may take to report the address of a DHCP VM.
        A VM that has been running longer is asked once. Nothing is asked when the VM's config does not enable the agent.
      - No address is not an error; RV(address) is then null and a warning says why.
    type: int
    default: 120
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
    ip: 10.20.0.11/24
    gateway: 10.20.0.1
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
  sample: 10.20.0.11
reboot_required:
  description:
    - Config keys whose new values the running VM takes only at its next boot (PVE's pending changes, and cloud-init
      settings not yet on its cloud-init drive). Empty when nothing waits, or when the run restarted the VM.
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
    HAS_PYCDLIB, HAS_YAML, PYCDLIB_IMPORT_ERROR, YAML_IMPORT_ERROR, SeedDataError,
)
from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule
from ansible_collections.puls.proxmox.plugins.module_utils._vm import reconcile_vm
from ansible_collections.puls.proxmox.plugins.module_utils._vm_options import ARGUMENT_SPEC
from ansible_collections.puls.proxmox.plugins.module_utils._vmconfig import SpecError


def main():
    module = PveModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
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
