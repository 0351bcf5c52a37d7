"""A VM's hibernation as qemu-server runs it (PVE/API2/Qemu.pm vm_suspend with todisk, vm_resume; PVE/QemuServer.pm
vm_start, vm_start_nolock)."""

import pytest
from test_migration import STATUS, running_an_hour

CONFIG = '/nodes/pve1/qemu/{0}/config'


def pending(api, vmid):
    return {item['key'] for item in api.data('GET', f'/nodes/pve1/qemu/{vmid}/pending') if 'pending' in item}


def log_of(api, upid):
    return [line['t'] for line in api.data('GET', f'/nodes/pve1/tasks/{upid}/log')]


@pytest.mark.lab(time_scale=0.01)
@pytest.mark.parametrize('resume', ['start', 'resume'])
def test_a_hibernated_vm_resumes_its_guests_boot_in_a_new_process_with_its_pending_changes_still_pending(lab, api, resume):
    vm = running_an_hour(api, lab, 132)
    guest = lab.guest(132)
    booted, address = guest.boot.started_at, guest.address
    # A cloud-init change applies to the config at once; `vga` waits for a restart (vmconfig_hotplug_pending).
    api.data('PUT', CONFIG.format(132), ipconfig0=f'ip={lab.address(52)}/24,gw={lab.gateway}', vga='qxl')
    assert pending(api, 132) == {'vga'}
    api.run('POST', STATUS.format('pve1', 132, 'suspend'), todisk=1)
    assert api.data('GET', STATUS.format('pve1', 132, 'current'))['status'] == 'stopped' and api.config(132)['lock'] == 'suspended'

    # vm_start resumes a VM locked `suspended` (vm_resume: through vm_start too): the saved guest runs on.
    upid = api.data('POST', STATUS.format('pve1', 132, resume))
    assert api.wait(upid)['exitstatus'] == 'OK' and upid.split(':')[5] == ('qmstart' if resume == 'start' else 'qmresume')
    assert log_of(api, upid) == ['Resumed VM, removing state', 'TASK OK']
    assert api.data('GET', STATUS.format('pve1', 132, 'current'))['uptime'] < 3600 and 'lock' not in api.config(132)
    assert lab.guest(132).boot.started_at == booted and lab.guest(132).address == address
    # No pending change applied (`!$resume`); the cloud-init drive regenerated all the same (no `$migratedfrom`).
    assert pending(api, 132) == {'vga'}
    assert lab.call(lambda: lab.pve.cloudinit_regenerated(132))

    # A stop and a start boot the guest anew: the drive's address, the pending change applied.
    api.run('POST', STATUS.format('pve1', 132, 'stop'))
    started = api.data('POST', STATUS.format('pve1', 132, 'start'))
    api.wait(started)
    assert 'Resumed VM, removing state' not in log_of(api, started)
    assert lab.guest(132).boot.started_at != booted and lab.guest(132).address == lab.address(52)
    assert api.config(132)['vga'] == 'qxl' and pending(api, 132) == set()
    assert vm.node == 'pve1'


def test_an_ha_managed_vm_is_not_hibernated(lab, api):
    api.clone(133)
    api.run('POST', STATUS.format('pve1', 133, 'start'))
    api.data('POST', '/cluster/ha/resources', sid='vm:133')
    assert api.error('POST', STATUS.format('pve1', 133, 'suspend'), todisk=1)[:2] == (500, 'Cannot suspend HA managed VM to disk')
