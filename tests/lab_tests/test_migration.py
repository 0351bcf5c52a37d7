"""A VM's migration as qemu-server runs it (PVE/API2/Qemu.pm migrate_vm, PVE/QemuMigrate.pm phase2, PVE/QemuServer.pm
vm_start_nolock and vmstatus)."""

import pytest
from test_ha import wait_for

STATUS = '/nodes/{0}/qemu/{1}/status/{2}'


def tasks_on(api, node, vmid):
    return [(task['type'], task['user']) for task in api.data('GET', f'/nodes/{node}/tasks', vmid=vmid, source='all', limit=100)]


def running_an_hour(api, lab, vmid):
    """VM vmid cloned, started, and (as far as its uptime tells) running for an hour."""
    api.clone(vmid)
    api.run('POST', STATUS.format('pve1', vmid, 'start'))
    vm = lab.pve.vm(vmid)
    lab.call(lambda: setattr(vm, 'started_at', vm.started_at - 3600))
    # The guest follows (guests.py polls the model): its boot is the one of an hour ago.
    assert wait_for(lambda: lab.guest(vmid).boot is not None and lab.guest(vmid).boot.started_at == vm.started_at)
    return vm


@pytest.mark.lab(time_scale=0.01)
def test_a_running_vm_migrates_online_into_a_new_process_that_runs_the_guests_old_boot(lab, api):
    vm = running_an_hour(api, lab, 130)
    booted = lab.guest(130).boot.started_at
    api.data('PUT', '/nodes/pve1/qemu/130/config', ipconfig0=f'ip={lab.address(50)}/24,gw={lab.gateway}')
    upid = lab.call(lab.pve.migrate(130, 'pve2', secs=100))
    assert api.wait(upid)['exitstatus'] == 'OK'
    assert upid.split(':')[1] == 'pve1' and upid.split(':')[5] == 'qmigrate'
    # QemuMigrate.pm phase2: `qm start --migratedfrom pve1` on the target, a command-line worker of root@pam.
    assert ('qmstart', 'root@pam') in tasks_on(api, 'pve2', 130)
    assert ('qmstart', 'root@pam') not in tasks_on(api, 'pve1', 130)[:1]
    # vm_start_nolock prints the incoming migration's address into that start's log (a boot's start prints none).
    start = next(task for task in api.data('GET', '/nodes/pve2/tasks', vmid=130, source='all') if task['type'] == 'qmstart')
    log = [line['t'] for line in api.data('GET', f'/nodes/pve2/tasks/{start["upid"]}/log')]
    assert log == ['migration listens on unix:/run/qemu-server/130.migrate', 'TASK OK']
    # Archived as it ended (RESTEnvironment.pm fork_worker: the command line runs active_workers after waitpid), the
    # index lists it with its status and end.
    archived = next(task for task in api.data('GET', '/nodes/pve2/tasks', vmid=130) if task['upid'] == start['upid'])
    assert archived['status'] == 'OK' and archived['endtime'] >= archived['starttime']
    # vmstatus: the uptime is the new process's; the guest still runs its boot, with the old cloud-init drive.
    assert api.data('GET', STATUS.format('pve2', 130, 'current'))['uptime'] < 3600
    assert vm.node == 'pve2' and lab.guest(130).boot.started_at == booted
    assert not lab.call(lambda: lab.pve.cloudinit_regenerated(130))

    # A start after a stop is a boot again: the drive is regenerated.
    api.run('POST', STATUS.format('pve2', 130, 'stop'))
    booting = api.data('POST', STATUS.format('pve2', 130, 'start'))
    api.wait(booting)
    assert not any(line['t'].startswith('migration listens on') for line in api.data('GET', f'/nodes/pve2/tasks/{booting}/log'))
    assert lab.call(lambda: lab.pve.cloudinit_regenerated(130))
    assert lab.guest(130).boot.started_at != booted


@pytest.mark.lab(time_scale=0.01)
def test_a_stopped_vm_migrates_offline_without_a_start(lab, api):
    api.clone(131)
    upid = lab.call(lab.pve.migrate(131, 'pve2', secs=10))
    assert api.wait(upid)['exitstatus'] == 'OK'
    assert lab.pve.vm(131).node == 'pve2' and tasks_on(api, 'pve2', 131) == []
    assert api.data('GET', STATUS.format('pve2', 131, 'current'))['status'] == 'stopped'
