# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_fleet_info's preparation, before any request: pve_vm's own checks and defaults, and the secrets to mask."""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.module_utils._fleet_io import MachineCheck, fleet_result, prepare


def test_valid_options_get_pve_vms_defaults_and_their_secrets_are_listed():
    machines = [
        {'host': 'web1', 'vm': {'name': 'web1', 'cores': '2', 'ci_password': 'pw-1', 'user_data': '#cloud-config\n'}},
        {'host': 'web2', 'vm': {'name': 'web2'}},
    ]
    ready, refused, secrets = prepare(machines)
    assert refused == {} and [machine['host'] for machine in ready] == ['web1', 'web2']
    web1 = ready[0]['vm']
    assert web1['cores'] == 2 and web1['apply_mode'] == 'report' and web1['owner_tag'] == 'puls-managed'
    assert secrets == {'pw-1', '#cloud-config\n'}


def test_options_pve_vm_would_refuse_make_the_machine_not_as_declared_with_pve_vms_message():
    ready, refused, secrets = prepare([{'host': 'bad', 'vm': {'name': 'bad', 'cores': 'many', 'apply_mode': 'sometimes'}}, {'host': 'nameless', 'vm': {}}])
    assert ready == [] and secrets == set()
    assert set(refused) == {'bad', 'nameless'} and not any(check.as_declared for check in refused.values())
    assert 'cores' in refused['bad'].reason and 'apply_mode' in refused['bad'].reason
    assert 'name' in refused['nameless'].reason


def test_the_result_lists_the_hosts_as_declared_in_order_and_the_guests_by_vmid():
    listing = [
        {'vmid': 103, 'name': 'c', 'node': 'pve2', 'status': 'stopped', 'tags': 'puls-managed'},
        {'vmid': 101, 'name': 'b', 'node': 'pve1', 'status': 'running', 'tags': 'web;puls-managed'},
        {'vmid': 9000, 'name': 'base', 'node': 'pve1', 'status': 'stopped', 'template': 1},
    ]
    result = fleet_result(
        {'b': MachineCheck(True, '', 101, 'pve1', '127.0.0.5'), 'a': MachineCheck(False, 'not created yet'), 'c': MachineCheck(True, '', 103, 'pve2')},
        listing,
        'puls-managed',
    )
    assert result['as_declared'] == ['b', 'c'] and result['changed'] is False
    assert [(guest['vmid'], guest['owned'], guest['template']) for guest in result['guests']] == [(101, True, False), (103, True, False), (9000, False, True)]
    assert result['machines']['a'] == {'as_declared': False, 'reason': 'not created yet', 'vmid': None, 'node': None, 'address': None}


def test_a_containers_options_get_pve_containers_defaults_its_password_is_a_secret_and_its_refusals_are_pve_containers():
    machines = [
        {'host': 'dns1', 'type': 'lxc', 'vm': {'name': 'dns1', 'cores': '1', 'password': 'ct-pw-1', 'ip': '127.0.0.53/24'}},
        {'host': 'bad', 'type': 'lxc', 'vm': {'name': 'bad', 'features': ['mknod']}},
    ]
    ready, refused, secrets = prepare(machines)
    assert [machine['host'] for machine in ready] == ['dns1'] and secrets == {'ct-pw-1'}
    dns1 = ready[0]['vm']
    assert dns1['cores'] == 1 and dns1['state'] == 'present' and dns1['shutdown_timeout'] == 180 and 'ci_password' not in dns1
    assert 'features' in refused['bad'].reason and not refused['bad'].as_declared
