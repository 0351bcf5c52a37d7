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
