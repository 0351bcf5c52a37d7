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
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  name:
    description:
      - Host name of the container, a DNS name. It identifies the container unless O(vmid) is given; two containers
        with this host name are an error.
    type: str
    required: true
  state:
    description:
      - V(present) makes the container exist as declared and leaves its power alone; a new container stays stopped.
      - V(started) and V(stopped) also set its power. V(stopped) shuts it down and stops it after O(shutdown_timeout)
        seconds.
      - V(restarted) shuts a running container down and starts it again, on every run.
      - V(absent) destroys the container with its volumes (purge, unreferenced volumes included), after a shutdown. A
        protected container is refused.
    type: str
    choices: [present, started, stopped, restarted, absent]
    default: present
  image:
    description:
      - Where a new container comes from; used only when it does not exist yet.
      - An OS template volume, V(STORAGE:vztmpl/FILE) (for example V(local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst));
        it must be on the storage of the chosen node. Needs O(storage).
      - Or the VMID or exact name of a container template to clone.
    type: str
  linked_clone:
    description:
      - Clone a container template as a linked clone instead of a full copy.
      - PVE makes linked clones of a container only on LVM-thin, ZFS, Ceph RBD and BTRFS storage; a template with a
        volume on a directory, NFS, CIFS or (thick) LVM storage is refused before anything is sent; a storage plugin outside
        PVE's own is left to PVE.
    type: bool
    default: false
  node:
    description:
      - Node to create the container on. Default for an OS template, the online node with the most free memory; for a
        clone, the template's node.
    type: str
  vmid:
    description: VMID of the container. When omitted a free one is allocated at creation, safely for parallel runs.
    type: int
  pool:
    description: Resource pool a new container joins.
    type: str
  storage:
    description:
      - Storage of the root file system (and of mount points that name none) of a container created from an OS
        template, for example V(local-lvm); the target storage of a full clone.
    type: str
  disk_size:
    description:
      - Size of the root file system, such as V(8G) or V(1500M) (a bare number is GiB), in whole MiB. It only grows; a
        smaller size than the current one is an error.
    type: str
  cores:
    description: Number of CPU cores the container may use.
    type: int
  memory:
    description: Memory in MiB.
    type: int
  swap:
    description: Swap in MiB.
    type: int
  mount_points:
    description:
      - Mount points C(mpN) with a volume of their own. A new one is allocated; an existing one gets the declared path
        and grows to the declared size. Mount points not listed are left as they are.
    type: list
    elements: dict
    suboptions:
      slot:
        description: The number N of C(mpN), 0 to 255.
        type: int
        required: true
      path:
        description: Where the volume is mounted in the container, an absolute path.
        type: str
        required: true
      storage:
        description: Storage of a new volume; default O(storage).
        type: str
      size:
        description: Size of the volume, such as V(16G), in whole MiB; grow only.
        type: str
        required: true
  bridge:
    description: Bridge of the network device C(net0) (C(eth0)); a new one is on V(vmbr0).
    type: str
  vlan:
    description: VLAN tag of C(net0).
    type: int
  ip:
    description:
      - IPv4 address of C(eth0) with its prefix (V(127.0.0.5/24); a bare address is /24), or V(dhcp).
    type: str
  gateway:
    description: IPv4 gateway of a static O(ip); default the first address of its network ending in C(.1).
    type: str
  firewall:
    description: The PVE firewall on C(net0).
    type: bool
  nets:
    description:
      - Further network devices C(netN), or C(net0) when O(bridge), O(vlan), O(ip), O(gateway) and O(firewall) are not
        declared. Only the declared settings of a device are written; its MAC address (C(hwaddr)) and the rest stay as
        PVE has them. A new device is C(ethN) on V(vmbr0) unless declared otherwise.
      - Devices not listed are left as they are. A running container takes the change at once.
    type: list
    elements: dict
    suboptions:
      slot:
        description: The device, V(net1) to V(net31) (or its number).
        type: str
        required: true
      name:
        description: The interface name inside the container; a new device is C(ethN).
        type: str
      bridge:
        description: Bridge of the device.
        type: str
      vlan:
        description: VLAN tag.
        type: int
      ip:
        description: IPv4 address with its prefix (a bare address is /24), V(dhcp), or V(manual) (left to the container).
        type: str
      gateway:
        description: IPv4 gateway; only with a static O(nets[].ip) in the same entry. Never defaulted.
        type: str
      firewall:
        description: The PVE firewall on the device.
        type: bool
      mtu:
        description: MTU of the interface, 64 to 65535; PVE refuses one above the bridge's.
        type: int
      rate:
        description: Rate limit in MB/s.
        type: float
  nameservers:
    description: DNS servers of the container (IP addresses); an empty list removes them.
    type: list
    elements: str
  searchdomain:
    description: DNS search domain; empty removes it.
    type: str
  unprivileged:
    description:
      - Whether the container is unprivileged; PVE creates unprivileged containers by default. It cannot change after
        creation, so a differing value is an error.
    type: bool
  features:
    description:
      - The container features that are on, among V(nesting), V(keyctl) and V(fuse); the others of the three are turned
        off. Only root@pam may set keyctl and fuse.
    type: list
    elements: str
    choices: [nesting, keyctl, fuse]
  ssh_keys:
    description:
      - SSH public keys for root, written into the container when it is created from an OS template. Not compared
        afterwards (PVE does not report them).
    type: list
    elements: str
  password:
    description:
      - Root password, set when the container is created from an OS template. Never shown in output or diff, never
        compared afterwards.
    type: str
  onboot:
    description: Start the container when its node boots.
    type: bool
  protection:
    description: PVE protection, which refuses removal of the container and its volumes.
    type: bool
  tags:
    description:
      - Tags of the container, compared as the cluster stores them (lower-cased unless the datacenter's tag-style is
        case-sensitive); the owner tag is always added.
    type: list
    elements: str
  owner_tag:
    description: The tag marking containers this collection manages.
    type: str
    default: puls-managed
  adopt:
    description: Take over a container that lacks the owner tag (it is then added).
    type: bool
    default: false
  apply_mode:
    description:
      - V(report) leaves changes that need a restart pending and lists them in RV(reboot_required); V(reboot) restarts a
        running container that has any.
    type: str
    choices: [report, reboot]
    default: report
  shutdown_timeout:
    description: Seconds a shutdown waits for the container to stop before it is stopped by force.
    type: int
    default: 180
  timeout:
    description:
      - Seconds to wait for each PVE task.
      - A clone also waits up to this long for its turn, since PVE copies a container one clone at a time (it locks the
        source for each copy); clones of one template by parallel forks of this controller take turns.
    type: int
    default: 600
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
from ansible_collections.puls.proxmox.plugins.module_utils._ct_options import ARGUMENT_SPEC
from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError


def main():
    module = PveModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        module.run(reconcile_container, module.client, module.params, check_mode=module.check_mode)
    except SpecError as exc:
        module.fail(str(exc), option=exc.option)


if __name__ == '__main__':
    main()
