"""Clones, templates and the cloud-init drive behave as on PVE (Qemu.pm clone_vm, QemuServer.pm destroy_vm)."""

import pytest

CLONE = '/nodes/pve1/qemu/9017/clone'
CONFIG = '/nodes/pve1/qemu/{0}/config'
CLOUDINIT = '/nodes/pve1/qemu/{0}/cloudinit'


def test_a_clone_gets_its_own_cloud_init_drive(api):
    api.clone(120)
    assert api.config(120)['ide2'] == 'local-lvm:vm-120-cloudinit,media=cdrom'
    assert api.run('DELETE', '/nodes/pve1/qemu/120', purge=1)['exitstatus'] == 'OK'
    content = [item['volid'] for item in api.data('GET', '/nodes/pve1/storage/local-lvm/content')]
    assert 'local-lvm:vm-9017-cloudinit' in content and 'local-lvm:vm-120-cloudinit' not in content


@pytest.mark.lab(time_scale=0.01, clone_secs=300)
def test_a_clone_in_progress_locks_the_new_vm_but_not_its_source(api):
    upid = api.data('POST', CLONE, newid=120)
    assert api.data('GET', f'/nodes/pve1/tasks/{upid}/status')['status'] == 'running'
    assert api.config(120)['lock'] == 'clone'
    assert api.error('PUT', CONFIG.format(120), cores='4')[:2] == (500, 'VM is locked (clone)')
    assert api.run('DELETE', '/nodes/pve1/qemu/120')['exitstatus'] == 'VM is locked (clone)'
    assert 'lock' not in api.config(9017)
    assert api.wait(upid)['exitstatus'] == 'OK'
    assert 'lock' not in api.config(120)


@pytest.mark.lab(time_scale=0.01)
def test_a_duplicate_newid_fails_inside_the_clone_task(lab, api):
    # Another task holds the template's config lock, so both clone workers wait before writing the new config.
    lab.pve.lock_wait = 3000
    lab.call(lab.pve.hold_config_lock(9017, None))
    first = api.data('POST', CLONE, newid=120)
    second = api.data('POST', CLONE, newid=120)
    lab.call(lambda: lab.pve.release_config_lock(9017))
    assert api.wait(first)['exitstatus'] == 'OK'
    assert api.wait(second)['exitstatus'] == 'unable to create VM 120: config file already exists'
    assert api.error('POST', CLONE, newid=120)[:2] == (500, 'unable to create VM 120: config file already exists')


def test_a_clone_to_another_node_needs_shared_storage(api):
    assert api.error('POST', CLONE, newid=120, target='pve2')[:2] == (500, "can't clone VM to node 'pve2' (VM uses local storage)")


def test_the_cloud_init_drive_is_regenerated_by_put_cloudinit_and_by_a_start(lab, api):
    api.clone(120)
    assert lab.pve.cloudinit_regenerated(120)
    api.data('PUT', CONFIG.format(120), ciuser='alice', cipassword='secret')
    assert not lab.pve.cloudinit_regenerated(120)
    # A stopped VM's changes are not recorded as pending (qemu-server QemuServer.pm vmconfig_apply_pending).
    assert api.data('GET', CLOUDINIT.format(120)) == [{'key': 'cipassword', 'value': '**********'}, {'key': 'ciuser', 'value': 'alice'}]
    api.data('PUT', CLOUDINIT.format(120))
    assert lab.pve.cloudinit_regenerated(120)
    assert api.data('GET', CLOUDINIT.format(120)) == [{'key': 'cipassword', 'value': '**********'}, {'key': 'ciuser', 'value': 'alice'}]
    api.data('PUT', CONFIG.format(120), ciuser='bob')
    assert not lab.pve.cloudinit_regenerated(120)
    assert api.run('POST', '/nodes/pve1/qemu/120/status/start')['exitstatus'] == 'OK'
    assert lab.pve.cloudinit_regenerated(120)
