"""Placement across nodes as PVE decides it: the shared storage, clone_vm's target checks (qemu-server
src/PVE/API2/Qemu.pm, clone_vm and $check_storage_access_clone) and a VMID another node holds (pmxcfs EEXIST)."""

import pytest

CLONE = '/nodes/pve1/qemu/{0}/clone'
SHARED = 'nfs-shared'


def shared_template(api, vmid=9100, **drives):
    """A template whose disk and cloud-init drive are on the shared storage, plus the given drives."""
    api.run('POST', '/nodes/pve1/qemu', vmid=vmid, name='shared-template', scsi0=SHARED + ':1', ide2=SHARED + ':cloudinit', **drives)
    assert api.run('POST', f'/nodes/pve1/qemu/{vmid}/template')['exitstatus'] == 'OK'
    return vmid


def node_of(api, vmid):
    return [item['node'] for item in api.data('GET', '/cluster/resources', type='vm') if item['vmid'] == vmid]


def test_the_shared_storage_is_one_storage_every_node_lists_as_shared(api):
    config = api.data('GET', '/storage/' + SHARED)
    assert (config['type'], config.get('shared')) == ('nfs', 1)
    for node in ('pve1', 'pve2'):
        listed = {item['storage']: item for item in api.data('GET', f'/nodes/{node}/storage')}
        assert listed[SHARED]['shared'] == 1 and listed[SHARED]['active'] == 1
        assert not listed['local']['shared'] and not listed['local-lvm']['shared']
        assert set(listed[SHARED]['content'].split(',')) == {'images', 'iso', 'import', 'vztmpl'}
    # What a clone from pve1 to pve2 can use: the shared storages only.
    assert [item['storage'] for item in api.data('GET', '/nodes/pve1/storage', target='pve2')] == [SHARED]


def test_a_template_on_shared_storage_is_cloned_to_another_node(api):
    vmid = shared_template(api)
    api.clone(130, source=vmid, target='pve2')
    api.clone(131, source=vmid, target='pve2', full=1, storage=SHARED)
    assert node_of(api, 130) == ['pve2'] and node_of(api, 131) == ['pve2']


def test_a_clone_to_another_node_refuses_a_non_shared_target_storage(api):
    vmid = shared_template(api)
    assert api.error('POST', CLONE.format(vmid), newid=130, target='pve2', full=1, storage='local-lvm')[:2] == (
        500,
        "can't clone to non-shared storage 'local-lvm'",
    )


def test_a_target_storage_must_be_enabled_on_the_target_node(lab, api):
    vmid = shared_template(api)
    lab.pve.storages[SHARED]['nodes'] = 'pve1'
    assert api.error('POST', CLONE.format(vmid), newid=130, target='pve2', full=1, storage=SHARED)[:2] == (
        500,
        f"storage '{SHARED}' is not available on node 'pve2'",
    )


def test_an_iso_in_a_cdrom_drive_on_local_storage_keeps_the_clone_on_its_node(lab, api):
    lab.pve.storages['local']['files'].add('tools.iso')
    vmid = shared_template(api, ide0='local:iso/tools.iso,media=cdrom')
    assert api.error('POST', CLONE.format(vmid), newid=130, target='pve2')[:2] == (500, "can't clone VM to node 'pve2' (VM uses local storage)")
    api.clone(130, source=vmid)
    assert node_of(api, 130) == ['pve1']


def test_an_iso_on_shared_storage_an_empty_or_a_physical_cdrom_drive_do_not(lab, api):
    lab.pve.storages[SHARED]['files'].add('tools.iso')
    vmid = shared_template(api, ide0=SHARED + ':iso/tools.iso,media=cdrom', ide1='none,media=cdrom', sata0='cdrom,media=cdrom')
    api.clone(130, source=vmid, target='pve2')
    assert node_of(api, 130) == ['pve2']


def test_a_clone_to_a_vmid_held_on_another_node_fails_in_its_task_as_pmxcfs_refuses_it(api):
    vmid = shared_template(api)
    api.clone(130, source=vmid, target='pve2')
    upid = api.data('POST', CLONE.format(9017), newid=130)
    status = api.wait(upid)
    assert status['exitstatus'] == "close (rename) atomic file '/etc/pve/nodes/pve1/qemu-server/130.conf' failed: File exists"
    assert node_of(api, 130) == ['pve2']
    assert api.config(130, node='pve2')['name'] == 'Copy-of-VM-shared-template'


@pytest.mark.lab(time_scale=0.01)
def test_a_clone_that_loses_the_vmid_race_fails_in_its_task(lab, api):
    lab.call(lambda: lab.pve.race_next_create('pve2'))
    upid = api.data('POST', CLONE.format(9017), newid=140)
    assert api.wait(upid)['exitstatus'] == ("close (rename) atomic file '/etc/pve/nodes/pve1/qemu-server/140.conf' failed: File exists")
    assert node_of(api, 140) == ['pve2']
    api.clone(141)


def test_a_create_that_loses_the_vmid_race_fails_as_pmxcfs_refuses_it(lab, api):
    lab.call(lambda: lab.pve.race_next_create('pve2'))
    assert api.error('POST', '/nodes/pve1/qemu', vmid=150, name='web')[:2] == (
        500,
        "unable to create VM 150 - close (rename) atomic file '/etc/pve/nodes/pve1/qemu-server/150.conf' failed: File exists",
    )
    assert node_of(api, 150) == ['pve2']
    # Once the vmlist has it, the check before the write names the node.
    assert api.error('POST', '/nodes/pve1/qemu', vmid=150, name='web')[:2] == (500, "unable to create VM 150 - VM 150 already exists on node 'pve2'")
    api.run('POST', '/nodes/pve1/qemu', vmid=151, name='web')
    assert node_of(api, 151) == ['pve1']
