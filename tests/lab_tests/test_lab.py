"""The Lab object, its seeded cluster and `python -m lab`."""

import ipaddress
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time

import dns.resolver
import pytest
import requests
from lab import Lab

NODES = '/nodes'


def test_the_seeded_cluster_has_two_nodes_and_two_storages(api):
    assert [(n['node'], n['status']) for n in api.data('GET', NODES)] == [('pve1', 'online'), ('pve2', 'online')]
    storages = {s['storage']: s for s in api.data('GET', '/storage')}
    assert (storages['local']['type'], storages['local']['content']) == ('dir', 'iso,vztmpl,import,snippets')
    assert not storages['local'].get('shared')
    assert (storages['local-lvm']['type'], storages['local-lvm']['content']) == ('lvmthin', 'images,rootdir')


def test_the_seeded_base_template_is_a_cloud_image_template(api):
    config = api.config(9017)
    assert (config['name'], config['template'], config['agent']) == ('ubuntu-24.04-cloud', 1, '1')
    assert config['scsi0'] == 'local-lvm:base-9017-disk-0,size=3584M'
    assert config['ide2'] == 'local-lvm:vm-9017-cloudinit,media=cdrom'
    assert (config['serial0'], config['vga'], config['scsihw'], config['boot']) == ('socket', 'serial0', 'virtio-scsi-pci', 'order=scsi0')
    assert re.fullmatch(r'virtio=BC:24:11(:[0-9A-F]{2}){3},bridge=vmbr0', config['net0'])
    assert 'puls-base' in config['tags'].split(';')
    content = [item['volid'] for item in api.data('GET', '/nodes/pve1/storage/local-lvm/content')]
    assert content == ['local-lvm:base-9017-disk-0', 'local-lvm:vm-9017-cloudinit']


def test_pve1_has_the_most_free_memory(api):
    def free(items):
        return {i['node']: i['maxmem'] - i['mem'] for i in items if i.get('type') == 'node'}

    listed, resources = free(api.data('GET', NODES)), free(api.data('GET', '/cluster/resources', type='node'))
    assert listed == resources and listed['pve1'] > listed['pve2']
    status = api.data('GET', '/nodes/pve2/status')['memory']
    assert status['free'] == listed['pve2'] == status['total'] - status['used']


def test_a_running_vm_takes_its_nodes_memory(api):
    before = api.data('GET', '/nodes/pve1/status')['memory']['used']
    api.clone(120)
    assert api.run('POST', '/nodes/pve1/qemu/120/status/start')['exitstatus'] == 'OK'
    assert api.data('GET', '/nodes/pve1/status')['memory']['used'] == before + 2048 * 1024**2


def test_root_logs_in_with_the_random_password_and_the_token_works(lab, api):
    def login(password):
        return requests.post(
            lab.url + '/api2/json/access/ticket', data={'username': 'root@pam', 'password': password}, verify=lab.cafile, timeout=10
        ).status_code

    assert lab.password != 'secret'
    assert (login(lab.password), login('secret')) == (200, 401)
    assert api.data('GET', '/version')['version'].startswith('9.')


def test_env_holds_the_collections_settings_for_this_lab(lab):
    env = lab.env
    assert env['PROXMOX_URL'] == f'https://{lab.block.api}:8006'
    assert (env['PROXMOX_USER'], env['PROXMOX_TOKEN_NAME'], env['PROXMOX_TOKEN_SECRET']) == ('root@pam', 'puls', lab.token_secret)
    assert env['PROXMOX_DNS_SERVERS'] == f'{lab.block.dns}:53'
    assert (env['PROXMOX_DNS_DOMAIN'], env['PROXMOX_NODES']) == ('lab.test', 'pve1,pve2')
    response = requests.get(
        env['PROXMOX_URL'] + '/api2/json/version',
        verify=env['PROXMOX_CA_PATH'],
        timeout=10,
        headers={'Authorization': f'PVEAPIToken={lab.token_id}={lab.token_secret}'},
    )
    assert response.status_code == 200


def test_the_labs_certificates_pass_strict_verification(lab):
    # Python 3.13's default context verifies with VERIFY_X509_STRICT, which needs the key identifiers that PVE's
    # certificates carry (pve-cluster src/PVE/Cluster/Setup.pm gen_pveca_cert, gen_pve_ssl_cert): asked for here on
    # any Python, as 3.13 asks by default.
    context = ssl.create_default_context(cafile=lab.cafile)
    context.verify_flags |= ssl.VERIFY_X509_STRICT
    with socket.create_connection((lab.block.api, 8006), timeout=10) as raw, context.wrap_socket(raw, server_hostname=lab.block.api) as tls:
        assert tls.version() is not None


def test_every_lab_address_is_loopback_in_the_labs_block(lab):
    addresses = [lab.block.api, lab.block.dns, lab.block.files, lab.gateway, lab.address(1), lab.address(89)]
    addresses += list(lab.dhcp_pool)
    assert all(ipaddress.ip_address(a).is_loopback and a.startswith(lab.block.prefix + '.') for a in addresses)
    assert len(set(addresses)) == len(addresses)
    with pytest.raises(ValueError):
        lab.address(90)


def test_requests_are_logged_and_writes_leave_out_reads_and_logins(lab, api):
    requests.post(lab.url + '/api2/json/access/ticket', data={'username': 'root@pam', 'password': lab.password}, verify=lab.cafile, timeout=10)
    api.data('GET', '/version')
    api.data('PUT', '/nodes/pve1/qemu/9017/config', description='notes')
    assert ('GET', '/api2/json/version', '') in lab.requests()
    assert lab.writes() == [('PUT', '/api2/json/nodes/pve1/qemu/9017/config', 'description=notes')]


def test_call_runs_functions_and_coroutines_on_the_labs_loop(lab, api):
    lab.call(lab.pve.lose_quorum)
    assert api.error('PUT', '/nodes/pve1/qemu/9017/config', description='x')[:2] == (500, 'cluster not ready - no quorum?')
    lab.call(lab.pve.regain_quorum)
    lab.call(lab.pve.hold_config_lock(9017, None))
    assert api.error('PUT', '/nodes/pve1/qemu/9017/config', description='x')[1] == "can't lock file '/var/lock/qemu-server/lock-9017.conf' - got timeout"


def test_two_labs_run_side_by_side(lab, lab_ca, tmp_path):
    with Lab(tmp_path / 'second', ca=lab_ca) as second:
        assert second.block.prefix != lab.block.prefix
        for each in (lab, second):
            assert (
                requests.get(
                    each.url + '/api2/json/version',
                    verify=each.cafile,
                    timeout=10,
                    headers={'Authorization': f'PVEAPIToken={each.token_id}={each.token_secret}'},
                ).status_code
                == 200
            )


@pytest.mark.lab(time_scale=0.01, clone_secs=7)
def test_the_lab_marker_sets_time_scale_and_clone_time(lab):
    assert (lab.pve.time_scale, lab.pve.clone_secs) == (0.01, 7)


def test_python_m_lab_prints_its_settings_serves_given_dns_records_counts_ssh_connections_and_stops_on_sigterm(tmp_path):
    state = tmp_path / 'state'
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    process = subprocess.Popen(
        [sys.executable, '-m', 'lab', '--state-dir', str(state), '--time-scale', '0', '--dns', 'web2=127.77.0.22'],
        env=dict(os.environ, PYTHONPATH=tests),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [process.stdout.readline() for _line in range(8)]
        settings = dict(line.rstrip('\n').split('=', 1) for line in lines)
        assert sorted(settings) == sorted(
            [
                'PROXMOX_URL',
                'PROXMOX_USER',
                'PROXMOX_TOKEN_NAME',
                'PROXMOX_TOKEN_SECRET',
                'PROXMOX_CA_PATH',
                'PROXMOX_DNS_SERVERS',
                'PROXMOX_DNS_DOMAIN',
                'PROXMOX_NODES',
            ]
        )
        assert settings['PROXMOX_URL'] == 'https://127.77.0.1:8006'
        assert (state / 'env').read_text() == ''.join(lines)
        # verify per request: a session's verify loses to REQUESTS_CA_BUNDLE.
        verify = settings['PROXMOX_CA_PATH']
        session = requests.Session()
        session.headers['Authorization'] = 'PVEAPIToken={0}!{1}={2}'.format(
            settings['PROXMOX_USER'], settings['PROXMOX_TOKEN_NAME'], settings['PROXMOX_TOKEN_SECRET']
        )
        assert session.get(settings['PROXMOX_URL'] + '/api2/json/version', verify=verify, timeout=10).status_code == 200

        resolver = dns.resolver.Resolver(configure=False)
        resolver.nameservers = ['127.77.0.2']
        assert [a.address for a in resolver.resolve('web2.lab.test', 'A')] == ['127.77.0.22']

        # A running guest accepts one TCP connection on its SSH port; SIGUSR1 writes the counts.
        api = settings['PROXMOX_URL'] + '/api2/json/nodes/pve1/qemu'
        for method, path, data in (
            ('POST', '/9017/clone', {'newid': 120, 'name': 'counted'}),
            ('PUT', '/120/config', {'ipconfig0': 'ip=127.77.0.42/24,gw=127.77.0.254'}),
            ('POST', '/120/status/start', {}),
        ):
            assert session.request(method, api + path, data=data, verify=verify, timeout=10).status_code == 200
        wait_until(lambda: socket_banner('127.77.0.42', 22).startswith(b'SSH-'))
        process.send_signal(signal.SIGUSR1)
        counts = state / 'ssh-connections'
        wait_until(counts.exists)
        assert counts.read_text() == '120 1\n9017 0\ntotal 1\n'
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def socket_banner(address, port):
    try:
        with socket.create_connection((address, port), timeout=5) as conn:
            return conn.recv(64)
    except OSError:
        return b''


def wait_until(condition, timeout=30):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, 'timed out waiting'
        time.sleep(0.05)


def test_python_m_lab_refuses_a_dns_record_without_an_address():
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(
        [sys.executable, '-m', 'lab', '--dns', 'web2'], env=dict(os.environ, PYTHONPATH=tests), capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 2
    assert "expected NAME=IPV4-ADDRESS, got 'web2'" in proc.stderr


def test_grant_still_limits_a_user(lab, api):
    lab.pve.apitokens['alice@pve!ro'] = 'ro-secret'
    lab.pve.grant('alice@pve', '/', 'VM.Audit')
    readonly = requests.Session()
    readonly.headers['Authorization'] = 'PVEAPIToken=alice@pve!ro=ro-secret'
    config = lab.url + '/api2/json/nodes/pve1/qemu/9017/config'
    assert readonly.get(config, verify=lab.cafile, timeout=10).status_code == 200
    denied = readonly.put(config, data={'cores': 4}, verify=lab.cafile, timeout=10)
    assert (denied.status_code, denied.json()['message'].strip()) == (403, 'Permission check failed (/vms/9017, VM.Config.CPU)')
