# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_vm through real ansible-playbook runs against the lab: each state, and the module's EXAMPLES.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pve_vm_states.py -n 2
"""

from __future__ import annotations

import ast
import pathlib

import lab_vms
import pytest
import yaml
from lab.images import qcow2
from lab.seed import SHARED_STORAGE
from pve_vm_plays import TASK, cluster_vms, inventory, sent, ssh_public_key, vm_env, vm_named, vm_play

from playbooks import four_runs, run_playbook

TEMPLATE = 9017
MODULE = pathlib.Path(__file__).resolve().parents[2] / 'plugins' / 'modules' / 'pve_vm.py'


def status_of(lab, name):
    return vm_named(lab, name).status


def volumes_of(lab, vmid):
    return lab.call(lambda: [name for store in lab.pve.storages.values() for name, volume in store.get('volumes', {}).items() if volume.get('vmid') == vmid])


@pytest.mark.lab(time_scale=0.01)
def test_present_started_and_stopped_create_as_declared_and_absent_destroys_each_in_four_runs(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    created = four_runs(
        tmp_path,
        vm_play(),
        env,
        inventory(
            {
                'st-present': {'image': 'ubuntu-24.04-cloud'},
                'st-started': {'image': 'ubuntu-24.04-cloud', 'state': 'started'},
                'st-stopped': {'image': 'ubuntu-24.04-cloud', 'state': 'stopped'},
            }
        ),
    )
    results = {host: created.real.one(TASK, host) for host in ('st-present', 'st-started', 'st-stopped')}
    assert [results[host]['status'] for host in results] == ['stopped', 'running', 'stopped']
    assert [status_of(lab, host) for host in results] == ['stopped', 'running', 'stopped']
    assert results['st-present']['diff']['after']['state'] == 'present' and 'status' not in results['st-present']['diff']['after']
    assert created.check.one(TASK, 'st-started')['vmid'] is None  # not allocated in check mode
    assert all('puls-managed' in vm_named(lab, host).config['tags'] for host in results)

    destroyed = four_runs(tmp_path, vm_play(), env, inventory({host: {'state': 'absent'} for host in results}))
    assert not [config for config in cluster_vms(lab).values() if config.get('name', '').startswith('st-')]
    running = results['st-started']['vmid']
    assert sent(lab, 'POST', '/qemu/%d/status/shutdown' % running), 'a running VM is shut down before it is destroyed'
    assert all(volumes_of(lab, results[host]['vmid']) == [] for host in results), 'disks are purged with the VM'
    assert destroyed.real.one(TASK, 'st-started')['diff'] == {
        'before': {'state': 'present', 'vmid': running, 'node': 'pve1', 'status': 'running'},
        'after': {'state': 'absent'},
    }
    assert destroyed.real_again.one(TASK, 'st-started')['status'] == 'absent'


@pytest.mark.lab(time_scale=0.01)
def test_started_and_stopped_change_an_existing_vms_power_gracefully_in_four_runs(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    vms = {'pw-start': {'image': TEMPLATE}, 'pw-stop': {'image': TEMPLATE, 'state': 'started'}, 'pw-keep': {'image': TEMPLATE}}
    assert run_playbook(tmp_path, vm_play(), env, inventory(vms), name='create').rc == 0
    # A guest that ignores ACPI is stopped after shutdown_timeout.
    vm_named(lab, 'pw-stop').acpi = False
    runs = four_runs(
        tmp_path,
        vm_play(),
        env,
        inventory(
            {
                'pw-start': {'state': 'started'},
                'pw-stop': {'state': 'stopped', 'shutdown_timeout': 30},
                'pw-keep': {'state': 'present', 'cores': 3},
            }
        ),
    )
    assert [status_of(lab, host) for host in vms] == ['running', 'stopped', 'stopped']
    vmid = vm_named(lab, 'pw-stop').vmid
    assert sent(lab, 'POST', '/qemu/%d/status/shutdown' % vmid) == [{'timeout': '30', 'forceStop': '1'}]
    assert not sent(lab, 'POST', '/qemu/%d/status/stop' % vmid)
    diff = runs.real.one(TASK, 'pw-stop')['diff']
    assert (diff['before']['status'], diff['after']['status']) == ('running', 'stopped')
    assert runs.real.one(TASK, 'pw-keep')['changes'] == ['cores'] and 'status' not in runs.real.one(TASK, 'pw-keep')['diff']['after']


@pytest.mark.lab(time_scale=0.01)
def test_restarted_restarts_on_every_run_as_its_check_run_predicts(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    plays = vm_play()
    assert run_playbook(tmp_path, plays, env, inventory({'rs1': {'image': TEMPLATE, 'state': 'started'}})).rc == 0
    vmid = vm_named(lab, 'rs1').vmid
    inventory_file = inventory({'rs1': {'state': 'restarted'}})
    writes = len(lab.writes())
    check = run_playbook(tmp_path, plays, env, inventory_file, check=True, name='check')
    assert len(lab.writes()) == writes, 'check mode writes nothing'
    first = run_playbook(tmp_path, plays, env, inventory_file, name='first')
    second = run_playbook(tmp_path, plays, env, inventory_file, name='second')
    predicted, done, again = (run.one(TASK, 'rs1') for run in (check, first, second))
    assert predicted['changed'] and done['changed'] and again['changed']
    assert predicted['diff'] == done['diff'] == again['diff']
    assert len(sent(lab, 'POST', '/qemu/%d/status/shutdown' % vmid)) == 2
    assert len(sent(lab, 'POST', '/qemu/%d/status/start' % vmid)) == 3
    assert status_of(lab, 'rs1') == 'running'


def module_examples():
    """The EXAMPLES of the module, as tasks, their documentation addresses moved into the loopback block."""
    tree = ast.parse(MODULE.read_text())
    text = next(node.value.value for node in tree.body if isinstance(node, ast.Assign) and node.targets[0].id == 'EXAMPLES')
    return yaml.safe_load(text)


@pytest.mark.lab(time_scale=0.01)
def test_the_module_examples_run_against_the_lab(lab, tmp_path):
    # The lab as the examples assume it: a user's key pair, and the API token of module_defaults' example.
    home = tmp_path / 'home'
    (home / '.ssh').mkdir(parents=True)
    ssh_public_key(home / '.ssh')

    def prepare():
        lab.pve.apitokens['automation@pve!ansible'] = lab.token_secret
        lab.pve.store_file('local', 'noble-server-cloudimg-amd64.qcow2', 4 << 20, content='import')
        lab.pve.volume_data['local:import/noble-server-cloudimg-amd64.qcow2'] = qcow2(3584 << 20)

    lab.call(prepare)
    plays = [{'name': 'EXAMPLES', 'hosts': 'localhost', 'gather_facts': False, 'tasks': module_examples()}]
    run = run_playbook(
        tmp_path, plays, vm_env(lab, tmp_path, HOME=str(home)), name='examples', inventory={'all': {'hosts': {'localhost': {'ansible_connection': 'local'}}}}
    )
    assert run.rc == 0, run.stdout + run.stderr
    assert not run.failed and len(run.results) == len(plays[0]['tasks'])
    web1 = run.for_task('Full clone of a template, sized and addressed, started')[0]['result']
    assert web1['address'] == '127.51.100.11' and web1['status'] == 'running'
    assert run.one('Show where web1 can be reached')['msg'] == 'web1 is VM %d on pve1, at 127.51.100.11' % web1['vmid']
    assert run.one('Grow web1\'s memory and apply it at once by restarting the VM')['changed']
    assert vm_named(lab, 'web1').config['memory'] in (8192, '8192') and status_of(lab, 'web1') == 'running'
    assert run.one('Linked clone on DHCP, its address reported by the guest agent')['address'] in lab.dhcp_pool
    db1 = vm_named(lab, 'db1').config
    seed = db1['ide2'].split(',')[0]
    # No user_data_storage: the seed goes to the lab's shared storage with content iso.
    assert seed.startswith(SHARED_STORAGE + ':iso/puls-seed-db1-') and b'packages: [postgresql]' in lab.volume_bytes(seed)
    assert vm_named(lab, 'legacy-app').config['protection'] in (1, '1')
    assert not [config for config in cluster_vms(lab).values() if config.get('name') == 'ci-runner']


def ha_tasks(lab, vmid):
    """The types of the power tasks of VM vmid, oldest first, with the user that ran them."""
    return lab.call(
        lambda: [
            (task['type'], task['user'])
            for task in lab.pve.tasklog
            if task['id'] == str(vmid) and task['type'] in ('hastart', 'hastop', 'qmstart', 'qmshutdown', 'qmstop')
        ]
    )


@pytest.mark.lab(time_scale=0.01)
def test_start_and_stop_of_ha_managed_vms_end_with_the_vm_in_the_declared_state(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    api = lab_vms.client(lab)
    assert (
        run_playbook(
            tmp_path,
            vm_play(),
            env,
            inventory({'ha-up': {'image': TEMPLATE, 'state': 'stopped'}, 'ha-down': {'image': TEMPLATE, 'state': 'started'}}),
            name='create',
        ).rc
        == 0
    )
    up, down = vm_named(lab, 'ha-up').vmid, vm_named(lab, 'ha-down').vmid
    api.post('/cluster/ha/resources', sid='vm:%d' % up, state='stopped')
    api.post('/cluster/ha/resources', sid='vm:%d' % down, state='started')
    # The HA manager acts 5 s after a request: far longer than the module takes to end after the task.
    lab.pve.ha_delay = 500

    run = run_playbook(tmp_path, vm_play(), env, inventory({'ha-up': {'state': 'started'}, 'ha-down': {'state': 'stopped'}}), name='power')
    assert run.rc == 0, run.stdout
    # When the module is done, the VMs are as declared, not merely requested: the tasks were HA requests.
    assert (status_of(lab, 'ha-up'), status_of(lab, 'ha-down')) == ('running', 'stopped')
    assert (run.one(TASK, 'ha-up')['status'], run.one(TASK, 'ha-down')['status']) == ('running', 'stopped')
    assert ha_tasks(lab, up)[-2:] == [('hastart', lab.token_id), ('qmstart', 'root@pam')]
    assert ha_tasks(lab, down)[-2:] == [('hastop', lab.token_id), ('qmshutdown', 'root@pam')]


@pytest.mark.lab(time_scale=0.01)
def test_an_ha_request_the_manager_does_not_carry_out_fails_at_the_timeout_naming_the_vm_and_ha(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    api = lab_vms.client(lab)
    assert run_playbook(tmp_path, vm_play(), env, inventory({'ha-stuck': {'image': TEMPLATE}}), name='create').rc == 0
    vmid = vm_named(lab, 'ha-stuck').vmid
    api.post('/cluster/ha/resources', sid='vm:%d' % vmid, state='stopped')
    lab.pve.ha_delay = 10**6  # the HA manager never gets to it

    run = run_playbook(tmp_path, vm_play(), env, inventory({'ha-stuck': {'state': 'started', 'timeout': 3}}), name='stuck')
    assert run.rc != 0
    message = run.one(TASK, 'ha-stuck')['msg']
    assert 'VM %d on pve1 is stopped, not running' % vmid in message
    assert 'VM %d is HA-managed (HA state: request_start)' % vmid in message and 'vm:%d' % vmid in message
    assert status_of(lab, 'ha-stuck') == 'stopped'


def fleet_reason(lab, tmp_path, name, options):
    """pve_fleet_info's reason for the machine (check mode, one listing): '' when it calls it as declared."""
    play = [
        {
            'name': 'Fleet',
            'hosts': 'localhost',
            'connection': 'local',
            'gather_facts': False,
            'tasks': [{'name': 'Fleet', 'puls.proxmox.pve_fleet_info': {'machines': [{'host': name, 'vm': dict(options, name=name)}]}}],
        }
    ]
    run = run_playbook(tmp_path, play, lab.env, check=True, name='fleet')
    assert run.rc == 0, run.stdout + run.stderr
    return run.one('Fleet')['machines'][name]['reason']


def up_for_an_hour(lab, tmp_path, env, name, index):
    """VM name created running at lab.address(index), as if an hour ago: its boot and its tasks (the clone and the
    start), so that a restart now is told from that boot (the record allows a minute's skew). Its options, and the
    same with the next address."""
    first = {'image': TEMPLATE, 'state': 'started', 'ip': f'{lab.address(index)}/24', 'gateway': lab.gateway}
    assert run_playbook(tmp_path, vm_play(), env, inventory({name: first}), name='create').rc == 0
    booted = vm_named(lab, name)

    def an_hour_ago():
        booted.started_at -= 3600
        for record in lab.pve.tasklog:
            if record['id'] == str(booted.vmid):
                record.update(starttime=record['starttime'] - 3600, endtime=record.get('endtime', record['starttime']) - 3600)

    lab.call(an_hour_ago)
    return first, dict(first, ip=f'{lab.address(index + 1)}/24')


def awaiting_restart(lab, tmp_path, env, name, index):
    """VM name up for an hour (up_for_an_hour), then its address changed by a run: the running guest awaits its restart
    for ipconfig0. Its new options and the lab's VM."""
    _first, moved = up_for_an_hour(lab, tmp_path, env, name, index)
    change = run_playbook(tmp_path, vm_play(), env, inventory({name: moved}), name='change')
    assert change.rc == 0, change.stdout
    assert change.one(TASK, name)['changed'] and change.one(TASK, name)['reboot_required'] == ['ipconfig0']
    return moved, vm_named(lab, name)


@pytest.mark.lab(time_scale=0.01)
def test_a_changed_address_of_a_running_vm_awaits_its_restart_in_later_runs_too(lab, tmp_path):
    # PVE applies a changed ipconfig0 to the config at once and GET .../cloudinit never lists it (qemu-server
    # Qemu.pm cloudinit_pending): only the module's restart record says the guest still has its old address.
    env = vm_env(lab, tmp_path)
    moved, vm = awaiting_restart(lab, tmp_path, env, 'rr-web', 41)
    assert '[puls-pending: vmid=%d,' % vm.vmid in vm.config['description']
    # PVE itself reports nothing pending.
    api = lab_vms.client(lab)
    assert [item for item in api.get('/nodes/pve1/qemu/%d/cloudinit' % vm.vmid) if 'pending' in item] == []

    runs = four_runs(tmp_path, vm_play(), env, inventory({'rr-web': moved}))
    for run in (runs.check, runs.real, runs.check_again, runs.real_again):
        assert run.one(TASK, 'rr-web')['reboot_required'] == ['ipconfig0'], 'a later run still knows the guest awaits its restart'
    assert fleet_reason(lab, tmp_path, 'rr-web', moved) == 'awaiting restart: ipconfig0'

    # Restarted behind the collection's back: the guest booted with the new address, nothing awaits any more.
    api.run_task('POST', '/nodes/pve1/qemu/%d/status/stop' % vm.vmid)
    api.run_task('POST', '/nodes/pve1/qemu/%d/status/start' % vm.vmid)
    writes = len(lab.writes())
    after = run_playbook(tmp_path, vm_play(), env, inventory({'rr-web': moved}), name='after')
    assert after.rc == 0, after.stdout
    assert after.one(TASK, 'rr-web')['reboot_required'] == [] and not after.one(TASK, 'rr-web')['changed']
    assert len(lab.writes()) == writes
    assert fleet_reason(lab, tmp_path, 'rr-web', moved) == ''


@pytest.mark.lab(time_scale=0.01)
def test_a_live_migration_restarts_nothing_so_the_changed_address_still_awaits_the_restart_reboot_mode_then_makes(lab, tmp_path):
    # A live migration runs the guest on in a new QEMU process (its uptime restarts: qemu-server QemuServer.pm
    # vmstatus) with its old cloud-init drive (vm_start_nolock regenerates none for a migration's start).
    env = vm_env(lab, tmp_path)
    moved, vm = awaiting_restart(lab, tmp_path, env, 'lm-web', 43)
    api = lab_vms.client(lab)
    upid = lab.call(lab.pve.migrate(vm.vmid, 'pve2', secs=10))
    api.wait_task(upid, 60, 'migrating VM lm-web')  # raises unless the task ends OK
    assert vm.node == 'pve2' and api.get('/nodes/pve2/qemu/%d/status/current' % vm.vmid)['uptime'] < 3600

    # The source node, evacuated, is shut down for maintenance: its task list (the qmigrate task) cannot be read; the
    # start on the target tells by its own log that it was the migration's.
    lab.call(lambda: lab.pve.set_node_offline('pve1'))
    after = run_playbook(tmp_path, vm_play(), env, inventory({'lm-web': moved}), name='after-migration')
    assert after.rc == 0, after.stdout
    assert after.one(TASK, 'lm-web')['reboot_required'] == ['ipconfig0'], 'the migrated guest still has its old address'
    assert fleet_reason(lab, tmp_path, 'lm-web', moved) == 'awaiting restart: ipconfig0'
    lab.call(lambda: lab.pve.set_node_offline('pve1', offline=False))

    rebooted = run_playbook(tmp_path, vm_play(), env, inventory({'lm-web': dict(moved, apply_mode='reboot')}), name='reboot')
    assert rebooted.rc == 0, rebooted.stdout
    assert rebooted.one(TASK, 'lm-web')['changed'] and lab.guest(vm.vmid).address == lab.address(44)
    again = run_playbook(tmp_path, vm_play(), env, inventory({'lm-web': moved}), name='again')
    assert again.one(TASK, 'lm-web')['reboot_required'] == [] and fleet_reason(lab, tmp_path, 'lm-web', moved) == ''


@pytest.mark.lab(time_scale=0.01)
def test_a_resume_after_hibernation_restarts_nothing_whether_a_start_or_a_resume_runs_it_and_a_restart_after_it_does(lab, tmp_path):
    # qemu-server Qemu.pm vm_suspend with todisk, then vm_start (a qmstart task) or vm_resume (qmresume): the saved guest
    # runs on in a new QEMU process with its boot and its old address (QemuServer.pm vm_start_nolock logs the resume).
    env = vm_env(lab, tmp_path)
    moved, vm = awaiting_restart(lab, tmp_path, env, 'hb-web', 46)
    api = lab_vms.client(lab)
    status = '/nodes/pve1/qemu/%d/status/' % vm.vmid
    old_address = lab.guest(vm.vmid).address

    for resume in ('start', 'resume'):
        api.run_task('POST', status + 'suspend', todisk=1)
        api.run_task('POST', status + resume)
        assert api.get(status + 'current')['uptime'] < 3600 and lab.guest(vm.vmid).address == old_address
        after = run_playbook(tmp_path, vm_play(), env, inventory({'hb-web': moved}), name=f'after-{resume}')
        assert after.rc == 0, after.stdout
        assert after.one(TASK, 'hb-web')['reboot_required'] == ['ipconfig0'], f'resumed by a {resume}, the guest still has its old address'

    # A stop and a start boot the guest anew, with the new address: nothing awaits a restart any more.
    api.run_task('POST', status + 'stop')
    api.run_task('POST', status + 'start')
    assert lab.guest(vm.vmid).address == lab.address(47)
    restarted = run_playbook(tmp_path, vm_play(), env, inventory({'hb-web': moved}), name='restarted')
    assert restarted.rc == 0 and restarted.one(TASK, 'hb-web')['reboot_required'] == [], restarted.stdout
    assert fleet_reason(lab, tmp_path, 'hb-web', moved) == ''


@pytest.mark.lab(time_scale=0.01)
def test_a_change_to_a_hibernated_vm_is_refused_before_any_write_and_state_started_alone_resumes_it(lab, tmp_path):
    # qemu-server Qemu.pm vm_suspend with todisk: the VM stays locked `suspended`, and update_vm refuses every write
    # (check_lock) until a start resumes it.
    env = vm_env(lab, tmp_path)
    first, _moved = up_for_an_hour(lab, tmp_path, env, 'hz-web', 49)
    vm = vm_named(lab, 'hz-web')
    api = lab_vms.client(lab)
    api.run_task('POST', '/nodes/pve1/qemu/%d/status/suspend' % vm.vmid, todisk=1)
    writes = len(lab.writes())
    for check in (True, False):
        refused = run_playbook(tmp_path, vm_play(), env, inventory({'hz-web': dict(first, cores=3)}), check=check, name=f'refused-{check}')
        assert refused.rc != 0, refused.stdout
        assert 'is hibernated (lock suspended)' in refused.one(TASK, 'hz-web')['msg'] and 'state: started' in refused.one(TASK, 'hz-web')['msg']
    assert len(lab.writes()) == writes

    resumed = run_playbook(tmp_path, vm_play(), env, inventory({'hz-web': first}), name='resumed')
    assert resumed.rc == 0 and resumed.one(TASK, 'hz-web')['changed'], resumed.stdout
    assert vm.status == 'running' and 'lock' not in vm.config
    changed = run_playbook(tmp_path, vm_play(), env, inventory({'hz-web': dict(first, cores=3)}), name='changed')
    # Resumed, it takes the change (a running VM's cores wait for its restart).
    assert changed.rc == 0 and changed.one(TASK, 'hz-web')['reboot_required'] == ['cores'], changed.stdout
