"""What a user does with `make lab`: export the lines it prints, talk to the API with proxmoxer
(token auth, certificate verified against the printed CA), start a VM with their SSH key, and
reach it with the real ssh client."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from proxmoxer import ProxmoxAPI

TESTS = Path(__file__).resolve().parents[1]
SETTINGS = ('PROXMOX_URL', 'PROXMOX_USER', 'PROXMOX_TOKEN_NAME', 'PROXMOX_TOKEN_SECRET', 'PROXMOX_CA_PATH', 'PROXMOX_DNS_SERVERS', 'PROXMOX_DNS_DOMAIN')


@pytest.fixture(name='make_lab')
def make_lab_fixture(tmp_path):
    """`python -m lab` as `make lab` runs it, in the foreground of its own process; yields the printed settings."""
    env = dict(os.environ, PYTHONPATH=str(TESTS))
    process = subprocess.Popen(
        [sys.executable, '-m', 'lab', '--state-dir', str(tmp_path / 'lab'), '--time-scale', '0'], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        settings = {}
        while not set(SETTINGS) <= set(settings):
            line = process.stdout.readline()
            assert line, 'python -m lab exited before printing its settings'
            name, _sep, value = line.rstrip('\n').partition('=')
            settings[name] = value
        yield settings
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def wait_for_task(api, node, upid):
    while True:
        status = api.nodes(node).tasks(upid).status.get()
        if status['status'] == 'stopped':
            return status['exitstatus']
        time.sleep(0.1)


def test_the_printed_settings_reach_the_api_and_a_started_vm_over_ssh(make_lab, tmp_path):
    url = urlsplit(make_lab['PROXMOX_URL'])
    api = ProxmoxAPI(
        url.hostname,
        port=url.port,
        user=make_lab['PROXMOX_USER'],
        token_name=make_lab['PROXMOX_TOKEN_NAME'],
        token_value=make_lab['PROXMOX_TOKEN_SECRET'],
        verify_ssl=make_lab['PROXMOX_CA_PATH'],
    )
    assert api.version.get()['version'].startswith('9.')
    templates = {vm['vmid']: vm['name'] for vm in api.cluster.resources.get(type='vm') if vm.get('template')}
    assert templates.get(9017) == 'ubuntu-24.04-cloud'

    key = tmp_path / 'id_ed25519'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', str(key)], check=True)
    address = url.hostname.rsplit('.', 1)[0] + '.42'
    assert wait_for_task(api, 'pve1', api.nodes('pve1').qemu(9017).clone.post(newid=120, name='hello')) == 'OK'
    api.nodes('pve1').qemu(120).config.put(
        ciuser='alice',
        sshkeys=quote(key.with_suffix('.pub').read_text(), safe=''),
        ipconfig0='ip={0}/24,gw={1}'.format(address, url.hostname.rsplit('.', 1)[0] + '.254'),
    )
    assert wait_for_task(api, 'pve1', api.nodes('pve1').qemu(120).status.start.post()) == 'OK'

    ssh = subprocess.run(
        [
            'ssh',
            '-i',
            str(key),
            '-o',
            'BatchMode=yes',
            '-o',
            'StrictHostKeyChecking=accept-new',
            '-o',
            'UserKnownHostsFile={0}'.format(tmp_path / 'known_hosts'),
            '-o',
            'ConnectTimeout=10',
            'alice@' + address,
            'cloud-init status --wait',
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ssh.returncode == 0, ssh.stderr
    assert ssh.stdout.strip() == 'status: done'
