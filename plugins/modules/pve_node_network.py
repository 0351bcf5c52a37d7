#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: pve_node_network
short_description: The network devices of one Proxmox VE node (bridges, bonds, VLANs), declared and applied once
version_added: 0.1.0
description:
  - Keeps the declared Linux bridges, bonds and VLAN interfaces of one node as declared, in one call per node.
  - Only declared settings are managed. A setting left unset is neither compared nor changed.
  - Proxmox VE stages every change in C(/etc/network/interfaces.new). The module stages all of its changes, then applies
    them with one reload of the node's network (C(PUT /nodes/{node}/network)), only when something changed.
  - Check mode writes nothing and reports the same C(changed) and diff as the real run.
  - "Bad input fails before the first write: the options, the node, an interface this collection did not make
    (see O(adopt)), the interface that carries the node's own address (see O(allow_management_change)), changes
    someone else staged (see O(pending_changes)), missing privileges, a port or the default gateway another interface
    keeps, a bond's bond-primary outside its ports."
  - "When Proxmox VE refuses a change midway, or the reload (a node without ifupdown2), the changes this run staged are
    reverted, so nothing is applied and the next run does not find them staged; but with changes staged before the
    run (O(pending_changes=apply)) they stay staged with those, which a revert would drop too, and the error says so.
    A reload whose task fails (C(ifreload -a)) has moved the staged changes into C(/etc/network/interfaces) already:
    nothing is left staged, and the error says to reload the node's network once the cause is corrected."
  - "An update keeps the interface's IPv4 and IPv6 addresses: Proxmox VE keeps an address only when an update sends it
    again, and sets the methods to static or manual. An update it would make lose DHCP (unless O(interfaces[].cidr)
    is declared), SLAAC or DHCPv6, or the options of a stanza without an address, is refused before any write, and so
    is one that would send again an address written on the node that Proxmox VE refuses to be sent (an IPv6 address
    outside the unicast ranges, a prefix length below 8)."
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.connection
  - puls.proxmox.connection.action_group
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details:
      - "The diff is C({interface: settings}) before and after, for each declared, deleted or pruned interface: its
        C(type), the declared options, its C(comments) and C(managed) (whether it carries the owner mark). A created
        interface is null before, a deleted one null after. Changes staged before the run that it applies show as
        C((pending))."
options:
  node:
    description: The node whose network devices are declared.
    type: str
    required: true
  interfaces:
    description:
      - The interfaces of the node this module keeps. Interfaces not listed are left alone, unless O(prune=true).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description:
          - The interface name, such as V(vmbr1), V(bond0), V(vmbr0.20) or V(vlan30).
          - Proxmox VE tells the type by the name, so a bond is named C(bondN), and a VLAN is named C(DEVICE.ID)
            (the device and VLAN ID come from the name) or has O(interfaces[].vlan_raw_device).
        type: str
        required: true
      state:
        description:
          - V(present) keeps the interface. V(absent) deletes it, if this collection made it (or O(adopt=true)).
        type: str
        choices: [present, absent]
        default: present
      type:
        description: The interface type. Required with O(interfaces[].state=present).
        type: str
        choices: [bridge, bond, vlan]
      ports:
        description:
          - The ports of a bridge (C(bridge_ports)) or the slaves of a bond (C(slaves)).
          - A port is on one interface only; Proxmox VE refuses a port another interface has.
        type: list
        elements: str
      vlan_aware:
        description:
          - Whether a bridge is VLAN-aware. V(false) removes VLAN awareness (and O(interfaces[].vlan_ids)).
        type: bool
      vlan_ids:
        description:
          - The VLANs a VLAN-aware bridge carries, as IDs (2 to 4094) and ranges from the lower to the higher, for
            example V(2-4094) or V(10 20 100-200).
          - Without it, Proxmox VE writes V(2-4094).
        type: str
      cidr:
        description: The IPv4 address with its prefix length (8 to 32), for example V(127.0.2.10/24).
        type: str
      gateway:
        description: The default IPv4 gateway. Only one interface of a node may have one.
        type: str
      mtu:
        description: The MTU, 1280 to 65520. A bridge's MTU cannot exceed its ports'.
        type: int
      autostart:
        description:
          - Whether the interface starts at boot (an C(auto) line). The reload brings up only such interfaces.
        type: bool
        default: true
      comments:
        description:
          - Comment lines of the interface. The module adds its own line C(puls-managed) after them.
          - Unset, the comments of an existing interface are kept.
        type: str
      bond_mode:
        description: The bonding mode of a bond. Proxmox VE writes V(balance-rr) when it is unset.
        type: str
        choices: [balance-rr, active-backup, balance-xor, broadcast, 802.3ad, balance-tlb, balance-alb]
      bond_xmit_hash_policy:
        description: The transmit hash policy of a bond in mode V(balance-xor) or V(802.3ad).
        type: str
        choices: [layer2, layer2+3, layer3+4]
      bond_primary:
        description:
          - The primary slave of a bond in mode V(active-backup), one of its ports.
          - Proxmox VE refuses a bond whose bond-primary is not one of its slaves, so ports that leave out the bond's
            own bond-primary are refused unless this names another one; in another mode, which does not use it, the
            bond-primary is removed with them.
        type: str
      vlan_raw_device:
        description: The device of a VLAN interface not named C(DEVICE.ID), such as V(vlan30).
        type: str
      vlan_id:
        description: The VLAN ID of a VLAN interface named neither C(DEVICE.ID) nor C(vlanN).
        type: int
  prune:
    description:
      - Delete the interfaces of the node that this collection made (their comments have the line C(puls-managed))
        and that O(interfaces) no longer lists. An interface without the line is never pruned.
    type: bool
    default: false
  adopt:
    description:
      - Manage a declared interface that exists but was not made by this collection. It gets the line C(puls-managed)
        in its comments, and from then on it is managed and can be pruned.
      - Without it, such an interface is refused, so that a declaration never takes over a hand-made interface by
        accident.
    type: bool
    default: false
  allow_management_change:
    description:
      - Allow changing or deleting the interface that carries the node's own address (its C(ip) in
        C(GET /cluster/status), IPv4 or IPv6) and the interfaces beneath it (bridge ports, bond slaves, a VLAN's
        device).
      - Without it, any change to them is refused, since a wrong one cuts the node off the network.
    type: bool
    default: false
  pending_changes:
    description:
      - What to do when the node already has network changes staged and not applied, by a person in the web interface
        or another tool (C(/etc/network/interfaces.new)).
      - V(refuse) fails when this run would apply, showing the staged changes. V(apply) applies them with this run's
        changes (and alone, when this run changes nothing).
    type: str
    choices: [refuse, apply]
    default: refuse
  apply:
    description:
      - Apply the staged changes at the end of the run. V(false) only stages them, to be applied later (Apply
        Configuration in the web interface); later runs then see them staged.
    type: bool
    default: true
notes:
  - >-
    B(Ownership.) Proxmox VE keeps no tags or notes for network devices, so an interface this module creates has the
    comment line C(puls-managed). O(prune) deletes only such interfaces, and O(adopt) marks an existing one.
  - >-
    B(Privileges.) C(Sys.Modify) on C(/nodes/NODE) lets the module stage and apply changes. C(SDN.Audit) (or
    C(SDN.Use)) on C(/sdn/zones/localnetwork) lets it see every bridge, which Proxmox VE lists only to who may audit
    or use it. C(Sys.Audit) on C(/) lets it read the node's address (C(GET /cluster/status)). The module checks them
    before the first write and names what is missing.
  - IPv6 addresses (kept, not declared), OVS interfaces and removing an address are not managed yet.
seealso:
  - name: Proxmox VE network configuration
    description: Bridges, bonds and VLANs on a Proxmox VE node.
    link: https://pve.proxmox.com/pve-docs/chapter-sysadmin.html#sysadmin_network_configuration
'''

EXAMPLES = r'''
# The connection options come from the PROXMOX_* environment variables (see the puls.proxmox.connection options).

- name: A VLAN-aware bridge on a bond of two NICs, and a VLAN interface for storage traffic
  puls.proxmox.pve_node_network:
    node: pve1
    interfaces:
      - name: bond0
        type: bond
        ports: [eno2, eno3]
        bond_mode: active-backup
        bond_primary: eno2
      - name: vmbr1
        type: bridge
        ports: [bond0]
        vlan_aware: true
        vlan_ids: "2-4094"
        comments: Guest traffic
      - name: vmbr1.30
        type: vlan
        cidr: 127.51.100.10/24
        mtu: 1500
  register: network

- name: Show what was done
  ansible.builtin.debug:
    msg: "{{ network.actions }}"

- name: Remove the interfaces made by this collection that are no longer declared
  puls.proxmox.pve_node_network:
    node: pve1
    prune: true
    interfaces:
      - name: vmbr1
        type: bridge
        ports: [eno2]

- name: Take over the installer's vmbr0 (it carries the node's address) to set its comment
  puls.proxmox.pve_node_network:
    node: pve1
    adopt: true
    allow_management_change: true
    interfaces:
      - name: vmbr0
        type: bridge
        comments: Management
'''

RETURN = r'''
actions:
  description:
    - What was done, or would be done in check mode, in order. C(create IFACE), C(update IFACE), C(delete IFACE), and
      C(apply), the one reload of the node's network.
  returned: always
  type: list
  elements: str
  sample: [create bond0, create vmbr1, apply]
applied:
  description: Whether the node's network was reloaded with the staged changes (never in check mode).
  returned: always
  type: bool
  sample: true
changes:
  description:
    - The interfaces whose settings changed (or would change), and C((pending)) when changes staged before the run are
      applied with it.
  returned: always
  type: list
  elements: str
  sample: [bond0, vmbr1]
management:
  description: The interfaces protected as the node's management path (see O(allow_management_change)).
  returned: always
  type: list
  elements: str
  sample: [eno1, vmbr0]
diff:
  description: The declared interfaces before and after, see the diff_mode attribute.
  returned: when diff mode is on
  type: dict
  contains:
    before:
      description: The interfaces before the run.
      type: dict
    after:
      description: The interfaces after the run.
      type: dict
'''

from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule
from ansible_collections.puls.proxmox.plugins.module_utils._network_io import reconcile
from ansible_collections.puls.proxmox.plugins.module_utils._network_plan import (
    BOND_MODES,
    HASH_POLICIES,
    PENDING_CHOICES,
    TYPES,
    NetworkOptionError,
    NetworkRefused,
)

INTERFACE = {
    'name': {'type': 'str', 'required': True},
    'state': {'type': 'str', 'default': 'present', 'choices': ['present', 'absent']},
    'type': {'type': 'str', 'choices': list(TYPES)},
    'ports': {'type': 'list', 'elements': 'str'},
    'vlan_aware': {'type': 'bool'},
    'vlan_ids': {'type': 'str'},
    'cidr': {'type': 'str'},
    'gateway': {'type': 'str'},
    'mtu': {'type': 'int'},
    'autostart': {'type': 'bool', 'default': True},
    'comments': {'type': 'str'},
    'bond_mode': {'type': 'str', 'choices': list(BOND_MODES)},
    'bond_xmit_hash_policy': {'type': 'str', 'choices': list(HASH_POLICIES)},
    'bond_primary': {'type': 'str'},
    'vlan_raw_device': {'type': 'str'},
    'vlan_id': {'type': 'int'},
}
ARGUMENT_SPEC = {
    'node': {'type': 'str', 'required': True},
    'interfaces': {'type': 'list', 'elements': 'dict', 'default': [], 'options': INTERFACE},
    'prune': {'type': 'bool', 'default': False},
    'adopt': {'type': 'bool', 'default': False},
    'allow_management_change': {'type': 'bool', 'default': False},
    'pending_changes': {'type': 'str', 'default': 'refuse', 'choices': list(PENDING_CHOICES)},
    'apply': {'type': 'bool', 'default': True},
}


def main():
    module = PveModule(argument_spec=ARGUMENT_SPEC)
    try:
        module.run(reconcile, module.client, module.params, check_mode=module.check_mode)
    except NetworkOptionError as exc:
        module.fail(str(exc), option=exc.option)
    except NetworkRefused as exc:
        module.fail(str(exc))


if __name__ == '__main__':
    main()
