"""Container templates in the lab (tests/lab/pve/ct_templates.py): the conversion answers null and runs in a vztemplate
task that holds the config lock, fails on thick LVM, a linked clone's volumes are named after their base on ZFS, such
a template is not destroyed while its base is used, and the node's task list filters by type and source."""

import pytest
from test_containers import TEMPLATE, download_template

LXC = '/nodes/pve1/lxc'
TASKS = '/nodes/pve1/tasks'
THICK_LVM = {'type': 'lvm', 'active': 1, 'content': 'images,rootdir', 'files': set(), 'vgname': 'big', 'shared': 0}
ZFS = {'type': 'zfspool', 'active': 1, 'content': 'images,rootdir', 'files': set(), 'pool': 'tank/data', 'sparse': 1}


def add_storage(lab, name, config):
    lab.call(lambda: lab.pve.storages.__setitem__(name, dict(config, files=set())))


def create(api, vmid, rootfs, **params):
    status = api.run('POST', LXC, vmid=vmid, ostemplate=TEMPLATE, rootfs=rootfs, **params)
    assert status['exitstatus'] == 'OK', status
    return api.data('GET', f'{LXC}/{vmid}/config')


def conversion_of(api, vmid):
    """The one vztemplate task of the container, once it has ended."""
    listed = api.data('GET', TASKS, vmid=vmid, typefilter='vztemplate', source='all')
    assert len(listed) == 1, listed
    return api.wait(listed[0]['upid'])


@pytest.mark.lab(time_scale=0.01)
def test_a_conversion_answers_null_and_runs_in_a_vztemplate_task_that_holds_the_config_lock(lab, api):
    download_template(lab, api)
    create(api, 160, 'local-lvm:1', hostname='base')
    # 5 s of real time, far longer than the requests below and than the 10 PVE seconds a config write waits for the lock.
    lab.pve.ct_secs['template'] = 500
    assert api.data('POST', f'{LXC}/160/template') is None
    running = api.data('GET', TASKS, vmid=160, typefilter='vztemplate', source='active')
    assert [task['status'] for task in running] == ['RUNNING']
    assert api.data('GET', TASKS, vmid=160, typefilter='vztemplate') == [], 'the default source lists finished tasks only'
    status, message, _errors = api.error('PUT', f'{LXC}/160/config', hostname='renamed')
    assert (status, message) == (500, "can't lock file '/run/lock/lxc/pve-config-160.lock' - got timeout"), 'the worker holds the lock'
    assert api.wait(running[0]['upid'])['exitstatus'] == 'OK'
    api.data('PUT', f'{LXC}/160/config', hostname='renamed')
    config = api.data('GET', f'{LXC}/160/config')
    assert (config['template'], config['hostname']) == (1, 'renamed') and config['rootfs'].startswith('local-lvm:base-160-disk-0,')
    assert conversion_of(api, 160)['exitstatus'] == 'OK'
    assert [task['type'] for task in api.data('GET', TASKS, vmid=160, typefilter='vzcreate')] == ['vzcreate']


def test_a_conversion_on_thick_lvm_fails_in_its_task_and_changes_nothing(lab, api):
    download_template(lab, api)
    add_storage(lab, 'big', THICK_LVM)
    before = create(api, 161, 'big:1', hostname='thick')
    assert before['rootfs'].startswith('big:vm-161-disk-0,')
    assert api.data('POST', f'{LXC}/161/template') is None
    assert conversion_of(api, 161)['exitstatus'] == "Template feature is not available for 'big:vm-161-disk-0'"
    after = api.data('GET', f'{LXC}/161/config')
    assert 'template' not in after and after['rootfs'] == before['rootfs']


def test_on_zfs_a_linked_clone_names_its_base_and_the_template_stays_while_it_is_used(lab, api):
    download_template(lab, api)
    add_storage(lab, 'tank', ZFS)
    assert create(api, 162, 'tank:1', hostname='zbase')['rootfs'].startswith('tank:subvol-162-disk-0,')
    assert api.data('POST', f'{LXC}/162/template') is None
    assert api.data('GET', f'{LXC}/162/config')['rootfs'].startswith('tank:basevol-162-disk-0,')
    assert api.run('POST', f'{LXC}/162/clone', newid=163, hostname='zlinked')['exitstatus'] == 'OK'
    assert api.run('POST', f'{LXC}/162/clone', newid=164, hostname='zfull', full=1)['exitstatus'] == 'OK'
    assert api.data('GET', f'{LXC}/163/config')['rootfs'].startswith('tank:basevol-162-disk-0/subvol-163-disk-0,')
    assert api.data('GET', f'{LXC}/164/config')['rootfs'].startswith('tank:subvol-164-disk-0,')

    refused = api.run('DELETE', f'{LXC}/162', purge=1)
    assert refused['exitstatus'] == "base volume 'basevol-162-disk-0' is still in use by linked clones"
    assert api.data('GET', f'{LXC}/162/config')['template'] == 1
    assert api.run('DELETE', f'{LXC}/163')['exitstatus'] == 'OK'
    assert api.run('DELETE', f'{LXC}/162', purge=1)['exitstatus'] == 'OK', 'a full clone does not hold the base'


def test_on_lvm_thin_a_linked_clone_is_named_plainly_and_does_not_keep_its_template(lab, api):
    download_template(lab, api)
    create(api, 165, 'local-lvm:1', hostname='tbase')
    api.data('POST', f'{LXC}/165/template')
    assert api.run('POST', f'{LXC}/165/clone', newid=166, hostname='tlinked')['exitstatus'] == 'OK'
    assert api.data('GET', f'{LXC}/166/config')['rootfs'].startswith('local-lvm:vm-166-disk-0,')
    assert api.run('DELETE', f'{LXC}/165')['exitstatus'] == 'OK'


def test_on_ceph_rbd_a_linked_clone_names_its_base(lab, api):
    """RBDPlugin.pm clone_image returns "$basename/$name" too; a container's volumes there are vm-N-disk-M."""
    download_template(lab, api)
    add_storage(lab, 'ceph', {'type': 'rbd', 'active': 1, 'content': 'images,rootdir', 'pool': 'rbd', 'shared': 1})
    create(api, 167, 'ceph:1', hostname='rbase')
    api.data('POST', f'{LXC}/167/template')
    assert api.run('POST', f'{LXC}/167/clone', newid=168, hostname='rlinked')['exitstatus'] == 'OK'
    assert api.data('GET', f'{LXC}/168/config')['rootfs'].startswith('ceph:base-167-disk-0/vm-168-disk-0,')
    assert api.run('DELETE', f'{LXC}/167')['exitstatus'] == "base volume 'base-167-disk-0' is still in use by linked clones"


def test_on_zfs_a_template_made_from_a_linked_clone_names_its_clones_after_its_own_base_only(lab, api):
    """ZFSPoolPlugin.pm create_base keeps the base the clone was made from (basevol-169-disk-0/basevol-170-disk-0), and
    clone_image names the next clone after the last part alone, which volume_is_base_and_used compares (vdisk_free names
    the whole volume)."""
    download_template(lab, api)
    add_storage(lab, 'tank', ZFS)
    create(api, 169, 'tank:1', hostname='zroot')
    api.data('POST', f'{LXC}/169/template')
    assert api.run('POST', f'{LXC}/169/clone', newid=170, hostname='zmiddle')['exitstatus'] == 'OK'
    api.data('POST', f'{LXC}/170/template')
    assert api.data('GET', f'{LXC}/170/config')['rootfs'].startswith('tank:basevol-169-disk-0/basevol-170-disk-0,')
    assert api.run('POST', f'{LXC}/170/clone', newid=171, hostname='zleaf')['exitstatus'] == 'OK'
    assert api.data('GET', f'{LXC}/171/config')['rootfs'].startswith('tank:basevol-170-disk-0/subvol-171-disk-0,')

    assert api.run('DELETE', f'{LXC}/170')['exitstatus'] == "base volume 'basevol-169-disk-0/basevol-170-disk-0' is still in use by linked clones"
    assert api.run('DELETE', f'{LXC}/169')['exitstatus'] == "base volume 'basevol-169-disk-0' is still in use by linked clones"
    assert api.run('DELETE', f'{LXC}/171')['exitstatus'] == 'OK'
    assert api.run('DELETE', f'{LXC}/170')['exitstatus'] == 'OK'
    assert api.run('DELETE', f'{LXC}/169')['exitstatus'] == 'OK'
