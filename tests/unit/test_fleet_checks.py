# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reconcile role's pre-flight checks over the declared inventory (plugin_utils/_fleet_checks.py; filters
puls.proxmox.declared_machines, fleet_problems and unadopted)."""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.filter import declared_machines as declared_filter
from ansible_collections.puls.proxmox.plugins.filter import fleet_problems as problems_filter
from ansible_collections.puls.proxmox.plugins.filter import unadopted as unadopted_filter
from ansible_collections.puls.proxmox.plugins.plugin_utils._fleet_checks import declared_machines, fleet_problems, unadopted

TAG = 'puls-managed'
GUESTS = [{'vmid': 9017, 'name': 'ubuntu-24.04-cloud', 'node': 'pve1', 'type': 'qemu', 'template': True, 'owned': False}]


def machine(host, **more):
    return dict(
        {
            'host': host,
            'name': host,
            'vmid': None,
            'ip': '',
            'replace': '',
            'image': 'ubuntu-24.04-cloud',
            'state': 'present',
            'adopt': False,
            'template': False,
        },
        **more,
    )


def problems(machines, replaced=(), untagged=()):
    return fleet_problems(machines, GUESTS, list(replaced), list(untagged), TAG)


def test_each_host_of_the_three_groups_once_templates_first_with_the_roles_defaults():
    hostvars = {
        'golden': {'pve_image': 9017, 'pve_vmid': 600},
        'web1': {'pve_vm_name': 'web1.example', 'pve_ip': '127.0.0.1/24', 'pve_adopt': 'yes', 'pve_replace': 'old1', 'pve_state': 'absent'},
        'web2': {},
        # A container's address is its pve_container's ip; the VM variables pve_ip and pve_image are not its own.
        'dns1': {'pve_container': {'ip': '127.0.0.53/24', 'image': 'local:vztmpl/x.tar.zst'}, 'pve_ip': '127.0.0.9', 'pve_image': 'x', 'pve_vmid': 700},
        'ct2': {},
    }
    # The role's defaults: what a host without variables declares.
    default = {'vmid': None, 'ip': '', 'replace': '', 'image': '', 'state': 'present', 'adopt': False, 'template': False, 'type': 'qemu'}
    assert declared_machines(hostvars, ['golden'], ['web1', 'golden', 'web2'], ['dns1', 'ct2']) == [
        dict(default, host='golden', name='golden', vmid=600, image='9017', template=True),
        dict(default, host='web1', name='web1.example', ip='127.0.0.1/24', replace='old1', state='absent', adopt=True),
        dict(default, host='web2', name='web2'),
        dict(default, host='dns1', name='dns1', vmid=700, ip='127.0.0.53/24', type='lxc'),
        dict(default, host='ct2', name='ct2', type='lxc'),
    ]


def test_the_filter_reads_the_groups_of_the_inventory_and_a_missing_group_is_empty():
    hostvars = {'web1': {}, 'other': {}}
    assert [entry['host'] for entry in declared_filter.declared_machines_of(hostvars, {'pve_vms': ['web1'], 'all': ['web1', 'other']})] == ['web1']
    assert declared_filter.FilterModule().filters() == {'declared_machines': declared_filter.declared_machines_of}


def test_a_sound_fleet_has_no_problem():
    assert (
        problems(
            [machine('web1', vmid=500, ip='127.0.0.1/24'), machine('web2', vmid=501, ip='127.0.0.2/24'), machine('web3', ip='dhcp'), machine('web4', ip='dhcp')]
        )
        == []
    )


def test_a_vmid_or_address_declared_twice_names_its_hosts_in_value_order():
    machines = [
        machine('web1', vmid=500, ip='127.0.0.9/24'),
        machine('web2', vmid='500', ip='127.0.0.9'),
        machine('db1', vmid=99, ip='127.0.0.10/24'),
        machine('db2', vmid=99),
        machine('app1', vmid=None),
        machine('app2', vmid=None),
    ]
    assert problems(machines) == [
        'db1 and db2 declare the same pve_vmid 99: give each machine its own VMID',
        # A VMID given as text is the same VMID to PVE.
        'web1 and web2 declare the same pve_vmid 500: give each machine its own VMID',
        'web1 and web2 declare the same address 127.0.0.9 (pve_ip): give each machine its own address',
    ]


def test_a_machine_to_replace_that_is_declared_protected_foreign_or_a_hand_clone_is_refused():
    machines = [
        machine('new1', replace='web2'),
        machine('web2'),
        machine('new2', replace='locked1'),
        machine('new3', replace='hand1'),
        machine('new4', replace='clone1'),
        machine('new5', replace='gone1'),
        machine('new6', replace='owned1'),
    ]
    replaced = [
        {'name': 'locked1', 'protected': True, 'ownership': 'owned'},
        {'name': 'hand1', 'protected': False, 'ownership': 'foreign'},
        {'name': 'clone1', 'protected': False, 'ownership': 'inherited'},
        {'name': 'owned1', 'protected': False, 'ownership': 'owned'},
    ]
    assert problems(machines, replaced=replaced) == [
        'new1: pve_replace is web2, which is declared in this inventory; a machine to replace must not be declared: remove it from the inventory',
        'new2: pve_replace is locked1, which is protected in Proxmox VE; turn its protection off first if it really is to go',
        'new3: pve_replace is hand1, which lacks the owner tag puls-managed, so this collection did not make it; remove it by hand',
        'new4: pve_replace is clone1, whose owner record names another VMID: a clone made outside this collection; remove it by hand',
    ]


def test_images_then_guests_taken_over_without_pve_adopt_come_last():
    untagged = [
        {'vmid': 180, 'name': 'web1', 'node': 'pve1', 'type': 'qemu', 'owned': False, 'ownership': 'foreign', 'provisioned': False},
        {'vmid': 181, 'name': 'lost1', 'node': 'pve2', 'type': 'qemu', 'owned': False, 'ownership': 'foreign', 'provisioned': True},
    ]
    machines = [machine('web1', image='no-such-template'), machine('app1', name='lost1', vmid=181, ip='127.0.0.1'), machine('app2', ip='127.0.0.1/24')]
    assert problems(machines, untagged=untagged) == [
        'app1 and app2 declare the same address 127.0.0.1 (pve_ip): give each machine its own address',
        'web1: pve_image is no-such-template, which is neither a template declared in this inventory (group pve_templates) nor '
        '(part of) the name of a template in the cluster: declare the template, or correct pve_image',
        'web1: VM 180 (web1 on pve1) lacks the owner tag puls-managed, so this collection did not create it; to take it over set '
        'pve_adopt: true for web1 (the owner tag and record are then added), or choose another pve_vm_name',
        'app1: VM 181 (lost1 on pve2) lacks the owner tag puls-managed, but its Notes hold a [puls-provision: ...] record, so Puls '
        'provisioned it (an earlier release, or the tag was removed); to take it over set pve_adopt: true for app1 (the owner tag '
        'and record are then added), or choose another pve_vm_name',
    ]


def test_a_guest_is_taken_over_by_vmid_when_declared_else_by_name_and_never_by_a_template_an_adopter_or_an_absent_machine():
    guests = [
        {'vmid': 180, 'name': 'web1', 'node': 'pve1', 'type': 'qemu', 'owned': False},
        {'vmid': 181, 'name': 'web2', 'node': 'pve1', 'type': 'qemu', 'owned': True},
        {'vmid': 182, 'name': 'ct1', 'node': 'pve1', 'type': 'lxc', 'owned': False},
        {'vmid': 183, 'name': 'web3', 'node': 'pve1', 'type': 'qemu', 'ownership': 'inherited'},
    ]
    machines = [
        machine('web1'),
        machine('web2'),
        machine('ct1'),
        machine('web3'),
        machine('by-vmid', vmid='180'),
        machine('golden', name='web1', template=True),
        machine('adopter', name='web1', adopt=True),
        machine('gone', name='web1', state='absent'),
        # A container takes over a container only: by its host name, or by a VMID that is a container's.
        machine('ct-machine', name='ct1', type='lxc'),
        machine('ct-web1', name='web1', type='lxc'),
        machine('ct-by-vmid', vmid=182, type='lxc'),
    ]
    found = [(guest['host'], guest['vmid']) for guest in unadopted(machines, guests)]
    assert found == [('web1', 180), ('by-vmid', 180), ('ct-machine', 182), ('ct-by-vmid', 182)]
    assert problems([machine('ct-machine', name='ct1', type='lxc', image='')], untagged=guests[2:3]) == [
        'ct-machine: container 182 (ct1 on pve1) lacks the owner tag puls-managed, so this collection did not create it; to take '
        'it over set pve_adopt: true for ct-machine (the owner tag and record are then added), or choose another pve_vm_name'
    ]
    assert unadopted_filter.FilterModule().filters() == {'unadopted': unadopted}


def test_the_filter_is_the_helper():
    assert problems_filter.FilterModule().filters() == {'fleet_problems': fleet_problems}
