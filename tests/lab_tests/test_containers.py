"""Containers in the lab: the served Debian container template, root's SSH keys from the create, and running
containers as SSH guests at net0's address (tests/lab/pve/containers.py, tests/lab/guests.py)."""

import io
import tarfile

import pytest
import zstandard
from lab.images import CONTAINER_TEMPLATE
from test_guests import ssh

LXC = '/nodes/pve1/lxc'
TEMPLATE = f'local:vztmpl/{CONTAINER_TEMPLATE}'


def download_template(lab, api):
    status = api.download(lab.served.url(CONTAINER_TEMPLATE), 'vztmpl', CONTAINER_TEMPLATE)
    assert status['exitstatus'] == 'OK', status


def create(api, vmid, **params):
    return api.run('POST', LXC, vmid=vmid, ostemplate=TEMPLATE, rootfs='local-lvm:1', **params)


def test_the_served_container_template_is_a_zstd_tarball_that_downloads_as_vztmpl(lab, api):
    download_template(lab, api)
    listed = [item['volid'] for item in api.data('GET', '/nodes/pve1/storage/local/content', content='vztmpl')]
    assert listed == [TEMPLATE]
    with tarfile.open(fileobj=io.BytesIO(zstandard.ZstdDecompressor().decompressobj().decompress(lab.volume_bytes(TEMPLATE)))) as archive:
        assert archive.extractfile('./etc/os-release').read().startswith(b'PRETTY_NAME="Debian GNU/Linux 12')


def test_a_create_from_a_template_the_storage_lacks_fails_in_its_task_and_leaves_no_container(lab, api):
    download_template(lab, api)  # the storage lists vztmpl volumes, so a missing one is known to be missing
    status = api.run('POST', LXC, vmid=150, ostemplate='local:vztmpl/debian-11-standard_11.7-1_amd64.tar.zst', rootfs='local-lvm:1')
    assert status['exitstatus'] == "unable to create CT 150 - volume 'local:vztmpl/debian-11-standard_11.7-1_amd64.tar.zst' does not exist"
    assert api.call('GET', f'{LXC}/150/config').status_code != 200


def test_a_running_container_is_an_ssh_guest_for_root_with_the_keys_of_its_create(lab, api, ssh_key, tmp_path):
    key, public = ssh_key
    download_template(lab, api)
    ip = lab.address(5)
    assert (
        create(api, 151, hostname='ct151', net0=f'name=eth0,bridge=vmbr0,ip={ip}/24,gw={lab.gateway}', **{'ssh-public-keys': public + '\n'})['exitstatus']
        == 'OK'
    )
    assert 'ssh-public-keys' not in api.data('GET', f'{LXC}/151/config'), 'the keys are in the root file system, not the config'
    assert lab.guest(151).endpoint is None
    assert api.run('POST', f'{LXC}/151/status/start')['exitstatus'] == 'OK'
    guest = lab.guest(151)
    assert guest.endpoint is not None, guest.error
    assert (guest.user, guest.address) == ('root', ip)
    done = ssh(tmp_path, key, f'root@{ip}', 'echo $HOME')
    assert (done.returncode, done.stdout.strip()) == (0, str(guest.home)), done.stderr
    moved = lab.address(8)
    api.data('PUT', f'{LXC}/151/config', net0=f'name=eth0,bridge=vmbr0,ip={moved}/24')
    lab.call(lab.guests.sync)  # what the guests' watcher does within POLL_SECS
    assert lab.guest(151).address == moved, 'a running container takes a new address at once'
    assert ssh(tmp_path, key, f'root@{moved}', 'true').returncode == 0
    assert api.run('POST', f'{LXC}/151/status/shutdown', timeout=10)['exitstatus'] == 'OK'
    assert lab.guest(151).endpoint is None, 'the endpoint goes when the container stops'


def test_a_container_without_keys_refuses_every_key_and_a_clone_keeps_its_sources_keys(lab, api, ssh_key, tmp_path):
    key, public = ssh_key
    download_template(lab, api)
    assert create(api, 152, hostname='keyless', net0=f'name=eth0,bridge=vmbr0,ip={lab.address(6)}/24')['exitstatus'] == 'OK'
    assert api.run('POST', f'{LXC}/152/status/start')['exitstatus'] == 'OK'
    refused = ssh(tmp_path, key, f'root@{lab.address(6)}', 'true')
    assert refused.returncode == 255 and 'Permission denied' in refused.stderr

    assert create(api, 153, hostname='base', **{'ssh-public-keys': public})['exitstatus'] == 'OK'
    assert api.data('POST', f'{LXC}/153/template') is None  # its vztemplate task (test_ct_templates.py) ran at once: time_scale 0
    assert api.data('GET', f'{LXC}/153/config')['template'] == 1
    assert api.run('POST', f'{LXC}/153/clone', newid=154, hostname='copy')['exitstatus'] == 'OK'
    api.data('PUT', f'{LXC}/154/config', net0=f'name=eth0,bridge=vmbr0,ip={lab.address(7)}/24')
    assert api.run('POST', f'{LXC}/154/status/start')['exitstatus'] == 'OK'
    done = ssh(tmp_path, key, f'root@{lab.address(7)}', 'true')
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize('keys', ['not a key', 'ssh-ed25519 AAAAnotbase64'])
def test_a_create_with_an_invalid_ssh_key_is_refused_before_anything_is_made(lab, api, keys):
    download_template(lab, api)
    status, message, _errors = api.error('POST', LXC, vmid=155, ostemplate=TEMPLATE, rootfs='local-lvm:1', **{'ssh-public-keys': keys})
    assert (status, message) == (500, 'SSH public key validation error')
    assert api.call('GET', f'{LXC}/155/config').status_code != 200


def test_a_network_device_with_an_mtu_above_its_bridges_is_refused_on_update_and_fails_a_create_in_its_task(lab, api):
    """src/PVE/LXC/Config.pm update_pct_config: the bridge's MTU (vmbr0 sets none: 1500) bounds a netN's mtu."""
    download_template(lab, api)
    assert create(api, 156, hostname='mtu', net0='name=eth0,bridge=vmbr0')['exitstatus'] == 'OK'
    status, message, _errors = api.error('PUT', f'{LXC}/156/config', net1='name=eth1,bridge=vmbr0,mtu=9000')
    assert (status, message) == (500, "net1: MTU size '9000' is bigger than bridge MTU '1500'")
    assert 'net1' not in api.data('GET', f'{LXC}/156/config')
    api.data('PUT', f'{LXC}/156/config', net1='name=eth1,bridge=vmbr0,mtu=1500')
    assert 'mtu=1500' in api.data('GET', f'{LXC}/156/config')['net1']

    failed = create(api, 157, hostname='mtu2', net0='name=eth0,bridge=vmbr0', net1='name=eth1,bridge=vmbr0,mtu=9000')
    assert failed['exitstatus'] == "unable to create CT 157 - net1: MTU size '9000' is bigger than bridge MTU '1500'"
    assert api.call('GET', f'{LXC}/157/config').status_code != 200
    assert create(api, 157, hostname='mtu2', net1='name=eth1,bridge=vmbr0,mtu=1400')['exitstatus'] == 'OK', 'the VMID is free again'


MIB = 1024**2


def convert(api, vmid):
    """A container made a template: PVE answers null and converts in a vztemplate task (test_ct_templates.py)."""
    assert api.data('POST', f'{LXC}/{vmid}/template') is None
    (task,) = api.data('GET', '/nodes/pve1/tasks', vmid=vmid, typefilter='vztemplate', source='all')
    assert api.wait(task['upid'])['exitstatus'] == 'OK'
    assert api.data('GET', f'{LXC}/{vmid}/config')['template'] == 1


def add_directory_storage(api, storage='ctdir'):
    """A directory storage for container volumes (the seed's local holds none)."""
    form = {'storage': storage, 'type': 'dir', 'path': f'/mnt/{storage}', 'content': 'rootdir'}
    assert api.session.post(api.lab.url + '/api2/json/storage', data=form, verify=api.lab.cafile, timeout=30).status_code == 200


def volume_size(api, volid):
    return api.data('GET', f'/nodes/pve1/storage/{volid.split(":")[0]}/content/{volid}')['size']


def rootfs(api, vmid):
    volume, *props = api.data('GET', f'{LXC}/{vmid}/config')['rootfs'].split(',')
    return volume, dict(prop.split('=', 1) for prop in props)


def test_a_new_volume_is_whole_mib_rounded_down_and_on_lvm_thin_whole_extents(lab, api):
    """pve-container src/PVE/LXC.pm create_disks: int(GiB * 1024) * 1024 KiB; LVM rounds the LV up to 4 MiB extents."""
    download_template(lab, api)
    add_directory_storage(api)
    cases = {160: ('local-lvm:1.46484', '1499M', 1500 * MIB), 161: ('local-lvm:1.46484375', '1500M', 1500 * MIB), 162: ('ctdir:1.46484', '1499M', 1499 * MIB)}
    for vmid, (volume, size, volume_bytes) in cases.items():
        assert api.run('POST', LXC, vmid=vmid, ostemplate=TEMPLATE, rootfs=volume)['exitstatus'] == 'OK'
        volid, props = rootfs(api, vmid)
        assert (props['size'], volume_size(api, volid)) == (size, volume_bytes), vmid
    api.data('PUT', f'{LXC}/160/config', mp0='local-lvm:0.0976562,mp=/srv')
    assert ',size=99M' in api.data('GET', f'{LXC}/160/config')['mp0']


def test_a_resize_compares_with_the_volumes_size_not_the_configs(lab, api):
    """src/PVE/API2/LXC.pm resize_vm: volume_size_info, then "unable to shrink disk size" / "disk is already at specified size"."""
    download_template(lab, api)
    assert api.run('POST', LXC, vmid=163, ostemplate=TEMPLATE, rootfs='local-lvm:1.46484')['exitstatus'] == 'OK'
    assert rootfs(api, 163)[1]['size'] == '1499M'
    assert api.error('PUT', f'{LXC}/163/resize', disk='rootfs', size='1500M')[:2] == (500, 'disk is already at specified size')
    assert api.error('PUT', f'{LXC}/163/resize', disk='rootfs', size='1499M')[:2] == (500, 'unable to shrink disk size')
    assert api.error('PUT', f'{LXC}/163/resize', disk='rootfs', size='+0')[:2] == (500, 'disk is already at specified size')
    assert api.run('PUT', f'{LXC}/163/resize', disk='rootfs', size='1502M')['exitstatus'] == 'OK'
    volid, props = rootfs(api, 163)
    assert (props['size'], volume_size(api, volid)) == ('1502M', 1504 * MIB)
    assert api.run('PUT', f'{LXC}/163/resize', disk='rootfs', size='+2M')['exitstatus'] == 'OK', 'relative to the volume: 1506M'
    assert rootfs(api, 163)[1]['size'] == '1506M'


@pytest.mark.lab(time_scale=0.01, clone_secs=300)
def test_a_container_clone_holds_its_sources_disk_lock_until_its_copy_ends(lab, api):
    """src/PVE/API2/LXC.pm clone_vm: set_lock($vmid, 'disk') before the worker, remove_lock after the copy (linked too)."""
    download_template(lab, api)
    assert create(api, 164, hostname='base')['exitstatus'] == 'OK'
    convert(api, 164)
    for full in (1, 0):
        upid = api.data('POST', f'{LXC}/164/clone', newid=165, hostname='first', full=full)
        assert api.data('GET', f'/nodes/pve1/tasks/{upid}/status')['status'] == 'running'
        assert api.data('GET', f'{LXC}/164/config')['lock'] == 'disk'
        assert api.error('POST', f'{LXC}/164/clone', newid=166, hostname='second', full=full)[:2] == (500, 'CT is locked (disk)')
        assert api.call('GET', f'{LXC}/166/config').status_code != 200, 'the refused clone made nothing'
        assert api.wait(upid)['exitstatus'] == 'OK'
        assert 'lock' not in api.data('GET', f'{LXC}/164/config')
        assert api.run('DELETE', f'{LXC}/165')['exitstatus'] == 'OK'


def test_a_linked_clone_of_a_template_on_a_directory_storage_is_refused(lab, api):
    """src/PVE/API2/LXC.pm clone_vm: "Linked clone feature for 'VOLID' is not available" unless volume_has_feature('clone')
    (pve-storage src/PVE/Storage/Plugin.pm: never for a raw or subvol target on a directory storage)."""
    download_template(lab, api)
    add_directory_storage(api)
    for vmid, storage in ((167, 'ctdir'), (168, 'local-lvm')):
        assert api.run('POST', LXC, vmid=vmid, ostemplate=TEMPLATE, rootfs=f'{storage}:1')['exitstatus'] == 'OK'
        convert(api, vmid)
    volid = rootfs(api, 167)[0]
    assert api.error('POST', f'{LXC}/167/clone', newid=170, hostname='linked')[:2] == (500, f"Linked clone feature for '{volid}' is not available")
    assert 'lock' not in api.data('GET', f'{LXC}/167/config') and api.call('GET', f'{LXC}/170/config').status_code != 200
    assert api.run('POST', f'{LXC}/167/clone', newid=170, hostname='full', full=1)['exitstatus'] == 'OK'
    assert api.run('POST', f'{LXC}/168/clone', newid=171, hostname='linked')['exitstatus'] == 'OK'


def test_a_full_clone_records_its_sources_volume_size_and_a_linked_clone_its_sources_config_size(lab, api):
    """src/PVE/LXC.pm copy_volume: a full clone's volume (and size=) is the source volume's size (volume_size_info)."""
    download_template(lab, api)
    assert api.run('POST', LXC, vmid=172, ostemplate=TEMPLATE, rootfs='local-lvm:1.46484')['exitstatus'] == 'OK'
    convert(api, 172)
    assert rootfs(api, 172)[1]['size'] == '1499M' and volume_size(api, rootfs(api, 172)[0]) == 1500 * MIB
    assert api.run('POST', f'{LXC}/172/clone', newid=173, hostname='full', full=1)['exitstatus'] == 'OK'
    assert api.run('POST', f'{LXC}/172/clone', newid=174, hostname='linked')['exitstatus'] == 'OK'
    assert (rootfs(api, 173)[1]['size'], rootfs(api, 174)[1]['size']) == ('1500M', '1499M')
