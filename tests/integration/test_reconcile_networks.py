# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node networks (pve_networks) and SDN (pve_sdn) through puls.proxmox.site against the lab: a check run plans the
bridges (the VNets) and a guest on the new one without writing, the real run creates them with one apply of the node's
network (of the SDN config) before the guest, the next run changes nothing and applies nothing, and a bridge (a VNet)
no longer declared is pruned, being owned. One lab, four runs, per test.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_reconcile_networks.py -p no:xdist
"""

from __future__ import annotations

import pytest
from lab.images import CONTAINER_TEMPLATE
from lab.pve.network import PHYSICAL_NICS, parse

from playbooks import run_playbook

SITE = '- import_playbook: puls.proxmox.site\n'
TEMPLATE = 9017


def site(lab, tmp_path, inventory, name, check=False):
    run = run_playbook(tmp_path, SITE, lab.env, inventory=inventory, check=check, name=name)
    assert run.rc == 0, run.stdout + run.stderr
    return run


def applies(lab):
    """The requests that applied pve1's network (PUT /nodes/pve1/network, the reload)."""
    return [r for r in lab.writes() if r.method == 'PUT' and r.path.rstrip('/').endswith('/nodes/pve1/network')]


def interfaces(lab):
    """pve1's interfaces as applied, read through the lab's own parse; nothing may be left staged."""
    current, staged = lab.call(lambda: lab.pve.network_files('pve1'))
    assert staged is None
    return parse(current, PHYSICAL_NICS)['ifaces']


@pytest.mark.slow(minutes=2)
def test_bridges_are_planned_created_with_one_apply_left_alone_then_pruned_and_a_guest_uses_a_new_one(lab, tmp_path):
    vmbr1 = {'name': 'vmbr1', 'type': 'bridge', 'ports': ['eno2'], 'vlan_aware': True, 'cidr': '127.1.0.1/24', 'comments': 'Guests'}
    vmbr2 = {'name': 'vmbr2', 'type': 'bridge'}
    network = {'node': 'pve1', 'interfaces': [vmbr1, vmbr2]}
    container = {
        'image': f'local:vztmpl/{CONTAINER_TEMPLATE}',
        'storage': 'local-lvm',
        'node': 'pve1',
        'bridge': 'vmbr1',
        'ip': '127.1.0.41/24',
        'memory': 256,
    }
    inventory = {
        'all': {
            'vars': {
                'pve_nodes': lab.nodes,
                'pve_networks': [network],
                'pve_isos': [
                    {'filename': CONTAINER_TEMPLATE, 'content': 'vztmpl', 'storage': 'local', 'node': 'pve1', 'url': lab.served.url(CONTAINER_TEMPLATE)}
                ],
            },
            'children': {'pve_containers': {'hosts': {'ct1': {'pve_container': container}}}},
        }
    }

    # The container names vmbr1, which only this run makes: the check run plans both, and writes nothing.
    planned = site(lab, tmp_path, inventory, 'plan', check=True)
    assert lab.writes() == []
    assert planned.plans == {'pve1/vmbr1': ['create'], 'pve1/vmbr2': ['create'], CONTAINER_TEMPLATE: ['create'], 'ct1': ['create']}
    assert set(interfaces(lab)) == {'lo', 'eno1', 'eno2', 'eno3', 'eno4', 'vmbr0', 'vmbr10'}

    applied = site(lab, tmp_path, inventory, 'apply')
    assert applied.plans == planned.plans
    assert len(applies(lab)) == 1
    made = interfaces(lab)
    assert (made['vmbr1']['bridge_ports'], made['vmbr1']['bridge_vlan_aware'], made['vmbr1']['cidr']) == ('eno2', 1, '127.1.0.1/24')
    assert 'puls-managed' in made['vmbr1']['comments'] and 'puls-managed' in made['vmbr2']['comments']
    ct_config = lab.call(lambda: {ct.config.get('hostname'): dict(ct.config) for ct in lab.pve.cts})['ct1']
    assert 'bridge=vmbr1' in ct_config['net0']

    # Nothing changed: every interface ok, no apply, no write at all.
    writes = len(lab.writes())
    again = site(lab, tmp_path, inventory, 'again')
    assert not again.changed, again.stdout
    assert again.plans == {'pve1/vmbr1': ['ok'], 'pve1/vmbr2': ['ok'], CONTAINER_TEMPLATE: ['ok'], 'ct1': ['ok']}
    assert len(lab.writes()) == writes

    # vmbr2 no longer declared, with pruning on: the owned bridge is deleted, with one more apply; vmbr0 (not made
    # by the collection, and not declared) stays.
    network['interfaces'] = [vmbr1]
    inventory['all']['vars']['pve_prune'] = True
    pruned = site(lab, tmp_path, inventory, 'prune')
    assert pruned.plans == {'pve1/vmbr1': ['ok'], 'pve1/vmbr2': ['prune'], CONTAINER_TEMPLATE: ['ok'], 'ct1': ['ok']}
    assert len(applies(lab)) == 2
    assert set(interfaces(lab)) == {'lo', 'eno1', 'eno2', 'eno3', 'eno4', 'vmbr0', 'vmbr10', 'vmbr1'}


def test_adopting_a_bridge_keeps_its_ipv6_address_and_one_on_dhcp_is_refused_naming_why(lab, tmp_path):
    # The seed's vmbr0 has the node's IPv4 address and a link-local IPv6 one, vmbr10 takes DHCP and SLAAC: PVE's
    # update_network keeps a family only when sent its address, and never keeps DHCP or SLAAC.
    vmbr0 = {'name': 'vmbr0', 'type': 'bridge', 'comments': 'Management'}
    network = {'node': 'pve1', 'adopt': True, 'allow_management_change': True, 'interfaces': [vmbr0]}
    inventory = {
        'all': {
            'vars': {'pve_nodes': lab.nodes, 'pve_networks': [network]},
            # site.yml plays on the machines: one VM, on the adopted bridge.
            'children': {'pve_vms': {'hosts': {'web1': {'pve_image': str(TEMPLATE), 'pve_node': 'pve1', 'pve_power': 'stopped'}}}},
        }
    }
    planned = site(lab, tmp_path, inventory, 'plan', check=True)
    assert lab.writes() == [] and planned.plans == {'pve1/vmbr0': ['update'], 'web1': ['create']}
    adopted = site(lab, tmp_path, inventory, 'adopt')
    assert adopted.plans == planned.plans and len(applies(lab)) == 1
    have = interfaces(lab)['vmbr0']
    assert (have['families'], have['cidr'], have['cidr6'], have['gateway6'], have['method6']) == (
        ['inet', 'inet6'],
        lab.block.node(1) + '/24',
        'fe80::201/64',
        'fe80::1',
        'static',
    )
    assert have['comments'] == 'Management\npuls-managed\n'

    # vmbr10 declared too: refused before anything is written, naming the interface, what PVE would drop and the ways out.
    network['interfaces'] = [vmbr0, {'name': 'vmbr10', 'type': 'bridge'}]
    writes = len(lab.writes())
    refused = run_playbook(tmp_path, SITE, lab.env, inventory=inventory, name='dhcp')
    assert refused.rc != 0
    message = refused.one("puls.proxmox.reconcile : Keep the node's network interfaces")['msg']
    assert message.startswith('interfaces[1]: vmbr10 on pve1 takes its IPv4 address by DHCP (inet dhcp); PVE would make it manual.'), message
    assert 'update_network' in message and 'declare its cidr' in message and message.endswith('Nothing was changed.')
    assert len(lab.writes()) == writes
    have = interfaces(lab)['vmbr10']
    assert (have['method'], have['method6'], have['families']) == ('dhcp', 'auto', ['inet', 'inet6']) and 'comments' not in have

    # Adopted as it is with the mark written on the node, vmbr10 is declared without a change to make.
    current = lab.call(lambda: lab.pve.network_files('pve1'))[0]
    marked = current.replace('iface vmbr10 inet6 auto\n', 'iface vmbr10 inet6 auto\n#puls-managed\n')
    lab.call(lambda: lab.pve.node_networks['pve1'].update(current=marked))
    again = site(lab, tmp_path, inventory, 'again')
    assert again.plans == {'pve1/vmbr0': ['ok'], 'pve1/vmbr10': ['ok'], 'web1': ['ok']} and len(lab.writes()) == writes


def sdn_applies(lab):
    """The requests that applied the SDN config (PUT /cluster/sdn)."""
    return [r for r in lab.writes() if r.method == 'PUT' and r.path.rstrip('/').endswith('/cluster/sdn')]


@pytest.mark.slow(minutes=2)
def test_a_vnet_is_planned_created_before_the_vm_that_names_it_as_its_bridge_left_alone_then_pruned(lab, tmp_path):
    # The subnets are configuration only: the lab serves nothing on them.
    sdn = {
        'zones': [{'name': 'lab', 'type': 'simple'}],
        'vnets': [{'name': 'labnet', 'zone': 'lab', 'alias': 'Lab guests'}, {'name': 'spare', 'zone': 'lab'}],
        'subnets': [{'vnet': 'labnet', 'cidr': '127.200.1.0/24', 'gateway': '127.200.1.1'}, {'vnet': 'spare', 'cidr': '127.200.2.0/24'}],
    }
    inventory = {
        'all': {
            'vars': {'pve_nodes': lab.nodes, 'pve_sdn': sdn},
            'children': {'pve_vms': {'hosts': {'web1': {'pve_image': str(TEMPLATE), 'pve_node': 'pve1', 'pve_bridge': 'labnet', 'pve_power': 'stopped'}}}},
        }
    }
    declared = {'zone lab', 'vnet labnet', 'vnet spare', 'subnet labnet 127.200.1.0/24', 'subnet spare 127.200.2.0/24'}

    # web1's bridge is the VNet labnet, which only this run makes: the check run plans both, and writes nothing.
    planned = site(lab, tmp_path, inventory, 'plan', check=True)
    assert lab.writes() == []
    assert planned.plans == {**dict.fromkeys(declared, ['create']), 'web1': ['create']}

    applied = site(lab, tmp_path, inventory, 'apply')
    assert applied.plans == planned.plans
    writes = lab.writes()
    assert len(sdn_applies(lab)) == 1
    # The SDN config is applied before the VM is cloned onto the VNet.
    clone = next(index for index, r in enumerate(writes) if r.method == 'POST' and r.path.endswith('/clone'))
    assert writes.index(sdn_applies(lab)[0]) < clone
    running = lab.call(lambda: {kind: dict(objects) for kind, objects in lab.pve.sdn_running.items()})
    assert set(running['vnets']) == {'labnet', 'spare'} and running['vnets']['labnet']['alias'] == 'Lab guests (puls-managed)'
    vm_config = lab.call(lambda: {vm.config.get('name'): dict(vm.config) for vm in lab.pve.vms})['web1']
    assert 'bridge=labnet' in vm_config['net0']

    # Nothing changed: every object ok, no apply, no write at all.
    again = site(lab, tmp_path, inventory, 'again')
    assert not again.changed, again.stdout
    assert again.plans == {**dict.fromkeys(declared, ['ok']), 'web1': ['ok']}
    assert len(lab.writes()) == len(writes)

    # spare no longer declared, with pruning on: the owned VNet goes with its subnet, in one more apply; labnet,
    # which web1 uses, stays.
    sdn['vnets'], sdn['subnets'] = sdn['vnets'][:1], sdn['subnets'][:1]
    inventory['all']['vars']['pve_prune'] = True
    pruned = site(lab, tmp_path, inventory, 'prune')
    assert pruned.plans == {
        'zone lab': ['ok'],
        'vnet labnet': ['ok'],
        'subnet labnet 127.200.1.0/24': ['ok'],
        'vnet spare': ['prune'],
        'subnet spare 127.200.2.0/24': ['prune'],
        'web1': ['ok'],
    }
    assert len(sdn_applies(lab)) == 2
    assert set(lab.call(lambda: set(lab.pve.sdn_running['vnets']))) == {'labnet'}


def test_a_node_without_ifupdown2_is_left_as_it_was_and_apply_false_stages_the_changes(lab, tmp_path):
    lab.call(lambda: lab.pve.nodes_without_ifupdown2.add('pve1'))
    network = {'node': 'pve1', 'interfaces': [{'name': 'vmbr1', 'type': 'bridge', 'ports': ['eno2']}]}
    inventory = {
        'all': {
            'vars': {'pve_nodes': lab.nodes, 'pve_networks': [network]},
            'children': {'pve_vms': {'hosts': {'web1': {'pve_image': str(TEMPLATE), 'pve_node': 'pve1', 'pve_power': 'stopped'}}}},
        }
    }
    refused = run_playbook(tmp_path, SITE, lab.env, inventory=inventory, name='refused')
    assert refused.rc != 0
    message = refused.one("puls.proxmox.reconcile : Keep the node's network interfaces")['msg']
    assert 'you need ifupdown2 to reload network configuration' in message and 'were reverted' in message and 'apply: false' in message
    assert lab.call(lambda: lab.pve.network_files('pve1'))[1] is None and len(applies(lab)) == 1  # the one refused
    network['apply'] = False
    staged = site(lab, tmp_path, inventory, 'staged')
    assert staged.plans == {'pve1/vmbr1': ['create'], 'web1': ['create']} and len(applies(lab)) == 1
    current, new = lab.call(lambda: lab.pve.network_files('pve1'))
    assert 'iface vmbr1 ' not in current and 'iface vmbr1 inet manual\n\tbridge-ports eno2\n' in new
