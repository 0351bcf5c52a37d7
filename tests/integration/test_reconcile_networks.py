# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node networks (pve_networks) through puls.proxmox.site against the lab: a check run plans the bridges and a
container on the new bridge without writing, the real run creates them with one apply of the node's network, the next
run changes nothing and applies nothing, and a bridge no longer declared is pruned, being owned. One lab, four runs.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_reconcile_networks.py -p no:xdist
"""

from __future__ import annotations

import pytest
from lab.images import CONTAINER_TEMPLATE
from lab.pve.network import PHYSICAL_NICS, parse

from playbooks import run_playbook

SITE = '- import_playbook: puls.proxmox.site\n'


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
    assert set(interfaces(lab)) == {'lo', 'eno1', 'eno2', 'eno3', 'vmbr0'}

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
    assert set(interfaces(lab)) == {'lo', 'eno1', 'eno2', 'eno3', 'vmbr0', 'vmbr1'}
