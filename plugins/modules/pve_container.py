#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: pve_container
short_description: One Proxmox VE LXC container, created exactly as declared and kept that way
version_added: 0.1.0
description:
  - Creates an LXC container from an OS template volume (C(STORAGE:vztmpl/FILE), which
    P(puls.proxmox.pve_iso#module) downloads) or as a clone of a container template, with the declared resources,
    root file system, mount points, network, DNS and features in the same run, and keeps them as declared on later runs.
  - Only declared options are managed. An option left unset is neither compared nor changed.
  - The container is identified by O(name), its host name (or by O(vmid) when given). A container this module creates
    carries the owner tag O(owner_tag) and an owner record in its Notes naming its VMID, as P(puls.proxmox.pve_vm#module)
    VMs do; a container with the name but without them is refused unless O(adopt=true).
  - Check mode writes nothing and reports the same C(changed) and diff as the real run. The diff holds only declared
    settings; O(password) shows as a mask.
  - "Changes a running container takes only at its next start (features, DNS, an existing mount point's path) are
    returned in RV(reboot_required) (O(apply_mode=report)), or applied by restarting the container
    (O(apply_mode=reboot)). Cores, memory, swap and the network device change at once."
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.attributes.progress
  - puls.proxmox.connection
  - puls.proxmox.connection.action_group
  - puls.proxmox.ct_options
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
seealso:
  - module: puls.proxmox.pve_iso
  - module: puls.proxmox.pve_vm
notes:
  - Placement and source options (O(image), O(linked_clone), O(node), O(vmid), O(pool), O(storage)) and the secrets
    O(password) and O(ssh_keys) apply when the container is created.
'''

EXAMPLES = r'''
- name: Download the Debian 12 container template
  puls.proxmox.pve_iso:
    url: http://download.proxmox.com/images/system/debian-12-standard_12.7-1_amd64.tar.zst
    filename: debian-12-standard_12.7-1_amd64.tar.zst
    content: vztmpl
    storage: local

- name: A running container with a static address, a data volume and root's SSH key
  puls.proxmox.pve_container:
    name: cache1
    image: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
    storage: local-lvm
    disk_size: 8G
    cores: 2
    memory: 1024
    swap: 512
    mount_points:
      - slot: 0
        path: /var/cache/app
        size: 16G
    ip: 127.51.100.21/24
    gateway: 127.51.100.1
    firewall: true
    nets:
      - slot: net1
        bridge: vmbr1
        vlan: 30
        ip: 127.30.0.21/24
        mtu: 1450
    nameservers: [127.51.100.2]
    features: [nesting]
    ssh_keys:
      - "{{ lookup('ansible.builtin.file', '~/.ssh/id_ed25519.pub') }}"
    password: "{{ vault_ct_root_password }}"
    onboot: true
    tags: [cache]
    state: started
  register: cache1

- name: Show where cache1 is
  ansible.builtin.debug:
    msg: "cache1 is container {{ cache1.vmid }} on {{ cache1.node }}, at {{ cache1.address }}"

- name: Turn nesting off and restart the container to apply it
  puls.proxmox.pve_container:
    name: cache1
    features: []
    apply_mode: reboot

- name: A linked clone of a container template, on DHCP
  puls.proxmox.pve_container:
    name: worker1
    image: debian-12-base
    linked_clone: true
    ip: dhcp
    state: started

- name: Remove the worker
  puls.proxmox.pve_container:
    name: worker1
    state: absent
'''

RETURN = r'''
vmid:
  description: VMID of the container. Null in check mode for a container that would be created without a declared O(vmid).
  returned: always
  type: int
  sample: 120
node:
  description: Node the container is on (or would be created on).
  returned: always
  type: str
  sample: pve1
status:
  description: Power status after the run (predicted in check mode), or V(absent).
  returned: always
  type: str
  sample: running
address:
  description: The static IPv4 address of O(ip), or of the container's C(net0) when O(ip) is not declared; null under DHCP.
  returned: always
  type: str
  sample: 127.51.100.21
reboot_required:
  description: Config keys whose new values the running container takes only at its next start. Empty when nothing waits.
  returned: always
  type: list
  elements: str
  sample: [features]
changes:
  description: Names of the diff entries whose value changed (or would change).
  returned: always
  type: list
  elements: str
  sample: [memory, tags]
diff:
  description:
    - The declared settings before and after, in PVE's terms (config keys such as C(cores), C(net0), C(features);
      C(disk_size); C(mpN) with path and size; C(netN) of O(nets) with its declared settings (in PVE's names, C(tag) and
      C(gw)); C(status) for the power states; C(state) when the container is created
      or destroyed).
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

from ansible_collections.puls.proxmox.plugins.module_utils._ct_io import reconcile_container
from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule
from ansible_collections.puls.proxmox.plugins.module_utils._option_specs import CT_ARGUMENT_SPEC
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError


def main():
    module = PveModule(argument_spec=CT_ARGUMENT_SPEC, supports_check_mode=True)
    try:
        module.run(reconcile_container, module.client, module.params, check_mode=module.check_mode)
    except SpecError as exc:
        module.fail(str(exc), option=exc.option)


if __name__ == '__main__':
    main()
