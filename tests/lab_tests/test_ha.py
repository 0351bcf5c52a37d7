"""HA-managed VMs: power calls queue a request to the HA manager, which acts later (qemu-server PVE/API2/Qemu.pm
vm_start, vm_stop, vm_shutdown; pve-ha-manager PVE/API2/HA/Resources.pm, PVE/HA/Resources/PVEVM.pm)."""

import threading

import pytest

STATUS = '/nodes/pve1/qemu/{0}/status/{1}'
RESOURCES = '/cluster/ha/resources'
# PVE seconds the HA stack takes to act: long enough that a test sees the task end well before the change.
HA_DELAY = 100


def wait_for(condition, timeout=20):
    event = threading.Event()
    for _attempt in range(int(timeout / 0.02)):
        if condition():
            return True
        event.wait(0.02)
    return False


def status(api, vmid):
    return api.data('GET', STATUS.format(vmid, 'current'))


def tasks_of(api, vmid):
    return [(task['type'], task['user']) for task in api.data('GET', '/nodes/pve1/tasks', vmid=vmid, limit=100, source='all')]


@pytest.mark.lab(time_scale=0.01)
def test_a_start_of_an_ha_managed_vm_is_a_request_that_ends_before_the_vm_runs(lab, api):
    lab.pve.ha_delay = HA_DELAY
    api.clone(120)
    api.data('POST', RESOURCES, sid='vm:120', state='stopped')
    assert status(api, 120)['ha'] == {'managed': 1, 'state': 'stopped'}

    task = api.run('POST', STATUS.format(120, 'start'))
    assert (task['type'], task['exitstatus']) == ('hastart', 'OK')
    assert 'Requesting HA start for VM 120' in task['log']
    assert status(api, 120)['status'] == 'stopped'
    # The LRM starts it later through vm_start: a qmstart task of its own, and the service is started.
    assert wait_for(lambda: status(api, 120)['status'] == 'running')
    assert wait_for(lambda: status(api, 120)['ha']['state'] == 'started')
    assert ('qmstart', 'root@pam') in tasks_of(api, 120)
    hastate = [item.get('hastate') for item in api.data('GET', '/cluster/resources', type='vm') if item['vmid'] == 120]
    assert hastate == ['started']


@pytest.mark.lab(time_scale=0.01)
def test_shutdown_and_stop_of_an_ha_managed_vm_are_hastop_requests(lab, api):
    lab.pve.ha_delay = HA_DELAY
    api.clone(120)
    api.clone(121)
    for vmid in (120, 121):
        api.data('POST', RESOURCES, sid=str(vmid))  # a bare VMID; the state defaults to started
    assert wait_for(lambda: all(status(api, vmid)['status'] == 'running' for vmid in (120, 121)))

    shutdown = api.run('POST', STATUS.format(120, 'shutdown'), timeout=30)
    stop = api.run('POST', STATUS.format(121, 'stop'))
    assert [(task['type'], task['exitstatus']) for task in (shutdown, stop)] == [('hastop', 'OK')] * 2
    assert status(api, 120)['status'] == status(api, 121)['status'] == 'running'
    assert wait_for(lambda: all(status(api, vmid)['status'] == 'stopped' for vmid in (120, 121)))
    # PVEVM.pm shutdown: a graceful shutdown with the request's timeout, or vm_stop for the hard stop (timeout 0).
    assert ('qmshutdown', 'root@pam') in tasks_of(api, 120) and ('qmstop', 'root@pam') in tasks_of(api, 121)
    assert {item['sid']: item['state'] for item in api.data('GET', RESOURCES)} == {'vm:120': 'stopped', 'vm:121': 'stopped'}


def test_the_ha_resources_api_refuses_unknown_guests_and_duplicates(api):
    assert api.error('POST', RESOURCES, sid='vm:150')[:2] == (500, "resource 'vm:150' does not exist in cluster")
    api.clone(120)
    api.data('POST', RESOURCES, sid='vm:120', state='stopped')
    assert api.error('POST', RESOURCES, sid='vm:120')[:2] == (500, "resource ID 'vm:120' already defined")
    # Without purge, PVE refuses to destroy a VM that HA manages; with it, the resource goes with the VM.
    assert api.error('DELETE', '/nodes/pve1/qemu/120')[1] == 'unable to remove VM 120 - used in HA resources and purge parameter not set.'
    assert api.run('DELETE', '/nodes/pve1/qemu/120', purge=1)['exitstatus'] == 'OK'
    assert api.data('GET', RESOURCES) == []


def test_power_calls_on_an_ignored_resource_do_not_go_through_ha(api):
    api.clone(120)
    api.data('POST', RESOURCES, sid='vm:120', state='ignored')
    assert status(api, 120)['ha'] == {'managed': 0}
    assert api.run('POST', STATUS.format(120, 'start'))['type'] == 'qmstart'
    assert api.run('POST', STATUS.format(120, 'reboot'))['type'] == 'qmreboot'
