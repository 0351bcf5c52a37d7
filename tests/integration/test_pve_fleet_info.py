# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_fleet_info against the lab: it calls a machine as declared exactly when pve_vm would change nothing and no
provision file is pending, with one listing and one config read per VM, no write, and no secret in its output."""

from __future__ import annotations

import lab_vms
import yaml

from ansible_collections.puls.proxmox.plugins.modules import pve_fleet_info
from ansible_collections.puls.proxmox.plugins.plugin_utils._provision_files import hash_provision_files
from playbooks import four_runs, run_playbook

SECRET = 'Fleet-Secret-7qX!'


def test_examples_run_in_the_four_runs_and_write_nothing(lab, tmp_path):
    (tmp_path / 'playbooks').mkdir()
    (tmp_path / 'playbooks' / 'web.yml').write_text('- {hosts: all, gather_facts: false, tasks: []}\n')
    tasks = yaml.safe_load(pve_fleet_info.EXAMPLES)
    play = [{'name': 'Examples', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': tasks}]
    runs = four_runs(tmp_path, play, lab.env)
    for run in (runs.check, runs.real):
        fleet = run.one('Which web servers need no work?')
        assert fleet['as_declared'] == [] and fleet['changed'] is False
        assert {host: check['reason'] for host, check in fleet['machines'].items()} == {'web1': 'not created yet', 'web2': 'not created yet'}
    assert lab.writes() == []


def test_each_kind_of_difference_is_found_and_agrees_with_pve_vm_in_check_mode(lab, tmp_path):
    api = lab_vms.client(lab)
    _key, public = lab_vms.ssh_key(tmp_path)
    (tmp_path / 'a.yml').write_text('- {hosts: all, gather_facts: false, tasks: []}\n')
    (tmp_path / 'b.yml').write_text('- {hosts: all, gather_facts: false, tasks: []}\n')
    common = {'image': '9017', 'node': 'pve1', 'cores': 2, 'memory': 1024, 'gateway': lab.gateway, 'tags': ['web']}
    declared = {
        'same1': dict(common, ip=f'{lab.address(1)}/24', ci_user='alice', ci_password=SECRET, ssh_keys=[public]),
        'cores2': dict(common, ip=f'{lab.address(2)}/24'),
        'changed3': dict(common, ip=f'{lab.address(3)}/24'),
        'stale4': dict(common, ip=f'{lab.address(4)}/24'),
        'new5': dict(common, ip=f'{lab.address(5)}/24'),
        'foreign6': dict(common, ip=f'{lab.address(6)}/24'),
        'unmade7': dict(common, ip=f'{lab.address(7)}/24'),
    }
    provision = {'same1': ['a.yml'], 'changed3': ['b.yml'], 'stale4': ['a.yml']}
    setup = [
        {
            'name': 'Make the VMs as declared',
            'hosts': 'localhost',
            'connection': 'local',
            'gather_facts': False,
            'vars': {'declared': declared},
            'tasks': [
                {
                    'name': 'Create',
                    'puls.proxmox.pve_vm': "{{ declared[item] | combine({'name': item}) }}",
                    'loop': ['same1', 'cores2', 'changed3', 'stale4', 'new5'],
                },
                {
                    'name': 'Record',
                    'puls.proxmox.pve_notes_hash': {'name': '{{ item.0 }}', 'files': '{{ item.1 }}', 'state': 'applied', 'base_dir': str(tmp_path)},
                    'loop': [['same1', ['a.yml']], ['changed3', ['b.yml']], ['stale4', ['a.yml', 'gone.yml']]],
                },
            ],
        }
    ]
    (tmp_path / 'gone.yml').write_text('- {hosts: all, gather_facts: false, tasks: []}\n')
    made = run_playbook(tmp_path, setup, lab.env, name='setup')
    assert made.rc == 0, made.stdout + made.stderr
    # Behind the collection's back: cores, a provision file's content, an old machine to replace, a foreign VM.
    cores2 = next(vm['vmid'] for vm in api.cluster_vms() if vm['name'] == 'cores2')
    api.put(f'/nodes/pve1/qemu/{cores2}/config', cores=4)
    (tmp_path / 'b.yml').write_text('- {hosts: all, gather_facts: false, tasks: [{ansible.builtin.ping: {}}]}\n')
    lab_vms.clone(api, 150, 'old5', tags='puls-managed')
    lab_vms.clone(api, 151, 'foreign6')
    requests, writes = len(lab.requests()), len(lab.writes())

    machines = [
        {
            'host': name,
            'vm': dict(options, name=name),
            'provision': {'files': provision.get(name, []), 'base_dir': str(tmp_path)},
            'replace': 'old5' if name == 'new5' else None,
        }
        for name, options in declared.items()
    ]
    check = [
        {
            'name': 'Check the fleet',
            'hosts': 'localhost',
            'connection': 'local',
            'gather_facts': False,
            'vars': {'machines': machines},
            'tasks': [{'name': 'Fleet', 'puls.proxmox.pve_fleet_info': {'machines': '{{ machines }}'}}],
        }
    ]
    run = run_playbook(tmp_path, check, lab.env, check=True, extra_args=['-vvv'], name='fleet')
    assert run.rc == 0, run.stdout + run.stderr
    fleet = run.one('Fleet')
    reasons = {host: check['reason'] for host, check in fleet['machines'].items()}
    assert fleet['as_declared'] == ['same1'] and reasons['same1'] == ''
    assert fleet['machines']['same1']['address'] == lab.address(1)
    assert reasons['cores2'] == 'VM to converge: cores'
    assert reasons['changed3'] == 'provision files pending: b.yml'
    assert reasons['stale4'] == 'record of files no longer declared: gone.yml'
    assert reasons['new5'] == 'replaces old5, which still exists'
    assert 'foreign6' in reasons['foreign6'] and 'puls-managed' in reasons['foreign6']
    assert reasons['unmade7'] == 'not created yet'
    # Each machine's hashes come back, for the provisioning chain to give pve_notes_hash instead of hashing again.
    hashes = {host: check['hashes'] for host, check in fleet['machines'].items()}
    assert hashes['changed3'] == hash_provision_files(['b.yml'], str(tmp_path), [], 'closure')[0]
    assert set(hashes['same1']) == {'a.yml'} and hashes['cores2'] is None
    # One listing, one config read per VM that exists, nothing written.
    asked = [f'{r.method} {r.path}' for r in lab.requests()[requests:]]
    assert asked.count('GET /api2/json/cluster/resources') == 1
    assert len(asked) == 1 + 5 and len(lab.writes()) == writes  # new5's is the listing's: old5 exists
    # The password the options held shows nowhere, even at -vvv.
    assert SECRET not in run.stdout + run.stderr

    # pve_vm in check mode agrees: it would change the VM of every machine the pass sent on for its VM, and only those.
    agree = [
        {
            'name': 'Ask pve_vm',
            'hosts': 'localhost',
            'connection': 'local',
            'gather_facts': False,
            'vars': {'declared': declared},
            'tasks': [
                {
                    'name': 'Plan',
                    'puls.proxmox.pve_vm': "{{ declared[item] | combine({'name': item}) }}",
                    'loop': ['same1', 'cores2', 'changed3', 'stale4', 'new5'],
                    'register': 'planned',
                }
            ],
        }
    ]
    asked_vm = run_playbook(tmp_path, agree, lab.env, check=True, name='agree')
    assert asked_vm.rc == 0, asked_vm.stdout + asked_vm.stderr
    changed = {result['item'] for result in asked_vm.one('Plan')['results'] if result['changed']}
    assert changed == {'cores2'}
    assert len(lab.writes()) == writes
