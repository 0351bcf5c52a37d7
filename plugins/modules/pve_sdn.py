#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: pve_sdn
short_description: Proxmox VE SDN zones, VNets and subnets, declared and applied once
version_added: 0.1.0
description:
  - Keeps the declared SDN zones (simple, VLAN, VXLAN), VNets and subnets of the cluster as declared, in one call.
  - Only declared settings are managed. A setting left unset is neither compared nor changed.
  - Proxmox VE writes every SDN change to its config and makes it take effect only with an apply (C(PUT /cluster/sdn)),
    which reloads the network of every node. The module writes all of its changes, then applies once, only when
    something changed.
  - On Proxmox VE 9 a real run holds the SDN lock (C(POST /cluster/sdn/lock)) from its last read to the apply, so no
    other client's change slips in between. When Proxmox VE refuses one of its writes midway, the writes before it are
    rolled back (C(POST /cluster/sdn/rollback)) and nothing is changed; Proxmox VE 8 has no rollback, and the error
    names the writes left pending. A lock another client holds is refused, naming it. Proxmox VE's lock does not
    expire (and the web interface does not show it); should a run be killed between its lock and its apply, release it
    with C(pvesh delete /cluster/sdn/lock --force 1).
  - The apply ends well only when every node reloaded its network; a node that could not (unreachable, or its
    C(ifreload) failed) fails the module, which still reports C(changed) and C(applied).
  - Check mode writes nothing and reports the same C(changed) and diff as the real run.
  - "Bad input fails before the first write: the options, a VNet this collection did not make (see O(adopt)), a VNet a
    guest's NIC still uses, rules of Proxmox VE (a tag a zone does not take, DHCP ranges outside a simple zone, a
    vxlan zone without peers), changes someone else left unapplied (see O(pending_changes)), missing privileges."
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
      - "The diff is C({object: settings}) before and after, keyed C(zone NAME), C(vnet NAME) and C(subnet VNET CIDR),
        for each declared, deleted or pruned object: its declared options (a zone's C(type), a VNet's C(managed)). A
        created object is null before, a deleted one null after. Changes made before the run that it applies show as
        C((pending))."
options:
  zones:
    description: The SDN zones this module keeps. Zones not listed are left alone.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The zone ID, a letter then letters or digits (either case), 2 to 8 in all.
        type: str
        required: true
      state:
        description: V(present) keeps the zone. V(absent) deletes it; Proxmox VE deletes only a zone without VNets.
        type: str
        choices: [present, absent]
        default: present
      type:
        description: The zone type. Required with O(zones[].state=present); Proxmox VE cannot change it.
        type: str
        choices: [simple, vlan, vxlan]
      bridge:
        description: The bridge whose VLANs a V(vlan) zone uses. Required for a V(vlan) zone.
        type: str
      peers:
        description:
          - The addresses of the nodes of a V(vxlan) zone. Required for a V(vxlan) zone, unless it exists and takes its
            peers from a fabric (Proxmox VE 9), which is then kept; Proxmox VE refuses a zone with both.
        type: list
        elements: str
      vxlan_port:
        description: The UDP port of a V(vxlan) zone's tunnels (Proxmox VE uses 4789 when unset).
        type: int
      mtu:
        description: The MTU of the zone's VNet bridges.
        type: int
      nodes:
        description: The nodes the zone is on (all when unset).
        type: list
        elements: str
      dhcp:
        description: The DHCP server of a V(simple) zone.
        type: str
        choices: [dnsmasq]
      ipam:
        description: The IPAM of the zone, such as V(pve).
        type: str
  vnets:
    description: The VNets this module keeps. VNets not listed are left alone, unless O(prune=true).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The VNet ID, a letter then letters or digits (either case), 2 to 8 in all.
        type: str
        required: true
      state:
        description:
          - V(present) keeps the VNet. V(absent) deletes it with its subnets, if this collection made it (or
            O(adopt=true)) and no guest's NIC uses it.
        type: str
        choices: [present, absent]
        default: present
      zone:
        description: The zone of the VNet. Required with O(vnets[].state=present).
        type: str
      tag:
        description:
          - The VLAN tag (1 to 4096) of a VNet in a V(vlan) zone, or its VNI in a V(vxlan) zone; both require it.
            A VNet in a V(simple) zone has none.
        type: int
      alias:
        description:
          - The alias of the VNet. The module adds its mark C((puls-managed)) after it.
          - One line, at most 240 bytes, so that with the mark it fits a Linux interface alias (255 bytes), where
            Proxmox VE's network reload writes it.
        type: str
      vlanaware:
        description: Whether the VNet passes VLANs through. A VLAN-aware VNet has no subnets.
        type: bool
      isolate_ports:
        description: Whether the ports of the VNet's bridge are isolated from each other.
        type: bool
  subnets:
    description:
      - The subnets this module keeps, each on a VNet. Subnets not listed are left alone, unless O(prune=true) and
        their VNet was made by this collection.
    type: list
    elements: dict
    default: []
    suboptions:
      vnet:
        description: The VNet of the subnet.
        type: str
        required: true
      cidr:
        description: The network in CIDR notation, such as V(127.51.100.0/24).
        type: str
        required: true
      state:
        description: V(present) keeps the subnet. V(absent) deletes it.
        type: str
        choices: [present, absent]
        default: present
      gateway:
        description: The gateway address, inside the subnet.
        type: str
      snat:
        description: Whether traffic from the subnet is masqueraded (source NAT).
        type: bool
      dhcp_ranges:
        description:
          - The DHCP ranges of the subnet, inside it and not overlapping. Only on a VNet of a V(simple) zone, the only
            zone type Proxmox VE serves DHCP in.
        type: list
        elements: dict
        suboptions:
          start:
            description: The first address of the range.
            type: str
            required: true
          end:
            description: The last address of the range.
            type: str
            required: true
  prune:
    description:
      - Delete the VNets this collection made (their alias has the mark C(puls-managed)) that O(vnets) no longer lists,
        and the subnets of such VNets that O(subnets) no longer lists. A VNet without the mark is never pruned, and
        zones are never pruned (they have no field to keep the mark in); declare a zone O(zones[].state=absent) to
        delete it.
    type: bool
    default: false
  adopt:
    description:
      - Manage a declared VNet that exists but was not made by this collection. It gets the mark in its alias, and from
        then on it is managed and can be pruned. Without it, such a VNet is refused.
    type: bool
    default: false
  pending_changes:
    description:
      - What to do when the SDN config already has changes not applied, made by a person in the web interface or by
        another tool. An apply applies the whole config, theirs included, controllers and fabrics too. It also reloads
        every node's network, which applies the node network changes staged there and not applied (the node's
        Network panel, or M(puls.proxmox.pve_node_network) stopped midway); they count as such changes, named
        C(node NAME network (staged)).
      - V(refuse) fails when this run would apply, naming those changes. V(apply) applies them with this run's
        changes (and alone, when this run changes nothing).
    type: str
    choices: [refuse, apply]
    default: refuse
notes:
  - >-
    B(Ownership.) A VNet this module creates has the mark C(puls-managed) in its alias, the one free-text field of a
    VNet. Zones and subnets have no such field: a subnet counts as made by this collection when its VNet does, and
    zones are never pruned.
  - >-
    B(Privileges.) C(SDN.Audit) on C(/sdn/zones) to see every zone and VNet; C(SDN.Allocate) on C(/sdn/zones) to create
    a zone, on C(/sdn/zones/ZONE) to change or delete it and to create a VNet in it, on C(/sdn/zones/ZONE/VNET) to change
    or delete a VNet and its subnets, and on C(/sdn) to apply (and to take the lock, Proxmox VE 9). C(SDN.Audit) on
    C(/sdn/controllers) and (Proxmox VE 9) C(/sdn/fabrics) to see their changes not applied, and C(Sys.Audit) on
    C(/nodes/NODE) of each online node to see its staged network changes and its network reload. C(SDN.Audit) and
    C(SDN.Allocate) on C(/sdn) hold all of the SDN ones. Deleting a VNet needs C(VM.Audit) on C(/vms) to see
    which guests use it. The module checks them before the first write and names what is missing. C(SDN.Use) is what
    guests need to put a NIC on a VNet; this module does not need it.
  - Zone types other than simple, VLAN and VXLAN, IPAM and DNS servers, and controllers are not managed.
seealso:
  - name: Proxmox VE Software-Defined Network
    description: Zones, VNets, subnets and the apply.
    link: https://pve.proxmox.com/pve-docs/chapter-pvesdn.html
'''

EXAMPLES = r'''
# The connection options come from the PROXMOX_* environment variables (see the puls.proxmox.connection options).

- name: A VLAN zone on vmbr0 with two VNets, one with a routed subnet
  puls.proxmox.pve_sdn:
    zones:
      - name: lan
        type: vlan
        bridge: vmbr0
    vnets:
      - name: web
        zone: lan
        tag: 20
        alias: Web tier
      - name: db
        zone: lan
        tag: 30
    subnets:
      - vnet: web
        cidr: 127.51.100.0/24
        gateway: 127.51.100.1
        snat: true
  register: sdn

- name: Show what was done
  ansible.builtin.debug:
    msg: "{{ sdn.actions }}"

- name: A simple zone with DHCP, and the VNets made here that are no longer declared pruned
  puls.proxmox.pve_sdn:
    prune: true
    zones:
      - name: lab
        type: simple
        dhcp: dnsmasq
    vnets:
      - name: web
        zone: lan
        tag: 20
        alias: Web tier
      - name: labnet
        zone: lab
    subnets:
      - vnet: web
        cidr: 127.51.100.0/24
        gateway: 127.51.100.1
        snat: true
      - vnet: labnet
        cidr: 127.0.113.0/24
        gateway: 127.0.113.1
        dhcp_ranges:
          - start: 127.0.113.100
            end: 127.0.113.199
'''

RETURN = r'''
actions:
  description:
    - What was done, or would be done in check mode, in order. C(create KIND ID), C(update KIND ID), C(delete KIND ID)
      (KIND is zone, vnet or subnet; a subnet's ID is C(ZONE-NETWORK-MASK)), and C(apply), the one apply of the SDN
      config.
  returned: always
  type: list
  elements: str
  sample: [create zone lan, create vnet web, create subnet lan-127.51.100.0-24, apply]
applied:
  description: Whether the SDN config was applied (C(PUT /cluster/sdn); never in check mode).
  returned: always
  type: bool
  sample: true
changes:
  description:
    - The objects whose settings changed (or would change), as C(zone NAME), C(vnet NAME) and C(subnet VNET CIDR), and
      C((pending)) when changes made before the run are applied with it.
  returned: always
  type: list
  elements: str
  sample: [subnet web 127.51.100.0/24, vnet web, zone lan]
diff:
  description: The declared objects before and after, see the diff_mode attribute.
  returned: when diff mode is on
  type: dict
  contains:
    before:
      description: The objects before the run.
      type: dict
    after:
      description: The objects after the run.
      type: dict
'''

from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule
from ansible_collections.puls.proxmox.plugins.module_utils._sdn_io import reconcile
from ansible_collections.puls.proxmox.plugins.module_utils._sdn_plan import PENDING_CHOICES, ZONE_TYPES, SdnOptionError, SdnRefused
from ansible_collections.puls.proxmox.plugins.module_utils._sdn_reload import ReloadFailed

STATE = {'type': 'str', 'default': 'present', 'choices': ['present', 'absent']}
ZONE = {
    'name': {'type': 'str', 'required': True},
    'state': STATE,
    'type': {'type': 'str', 'choices': list(ZONE_TYPES)},
    'bridge': {'type': 'str'},
    'peers': {'type': 'list', 'elements': 'str'},
    'vxlan_port': {'type': 'int'},
    'mtu': {'type': 'int'},
    'nodes': {'type': 'list', 'elements': 'str'},
    'dhcp': {'type': 'str', 'choices': ['dnsmasq']},
    'ipam': {'type': 'str'},
}
VNET = {
    'name': {'type': 'str', 'required': True},
    'state': STATE,
    'zone': {'type': 'str'},
    'tag': {'type': 'int'},
    'alias': {'type': 'str'},
    'vlanaware': {'type': 'bool'},
    'isolate_ports': {'type': 'bool'},
}
SUBNET = {
    'vnet': {'type': 'str', 'required': True},
    'cidr': {'type': 'str', 'required': True},
    'state': STATE,
    'gateway': {'type': 'str'},
    'snat': {'type': 'bool'},
    'dhcp_ranges': {
        'type': 'list',
        'elements': 'dict',
        'options': {'start': {'type': 'str', 'required': True}, 'end': {'type': 'str', 'required': True}},
    },
}
ARGUMENT_SPEC = {
    'zones': {'type': 'list', 'elements': 'dict', 'default': [], 'options': ZONE},
    'vnets': {'type': 'list', 'elements': 'dict', 'default': [], 'options': VNET},
    'subnets': {'type': 'list', 'elements': 'dict', 'default': [], 'options': SUBNET},
    'prune': {'type': 'bool', 'default': False},
    'adopt': {'type': 'bool', 'default': False},
    'pending_changes': {'type': 'str', 'default': 'refuse', 'choices': list(PENDING_CHOICES)},
}


def main():
    module = PveModule(argument_spec=ARGUMENT_SPEC)
    try:
        module.run(reconcile, module.client, module.params, check_mode=module.check_mode)
    except SdnOptionError as exc:
        module.fail(str(exc), option=exc.option)
    except SdnRefused as exc:
        module.fail(str(exc))
    except ReloadFailed as exc:
        module.fail(str(exc), changed=True, applied=True, task_upid=exc.upid)


if __name__ == '__main__':
    main()
