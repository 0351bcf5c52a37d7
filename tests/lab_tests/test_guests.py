"""Running VMs are real SSH guests: cloud-init's user, keys and address apply at boot; the DHCP address is
reported by the guest agent; commands run for real in the guest's home."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.parse

import pytest

CONFIG = '/nodes/pve1/qemu/{0}/config'
STATUS = '/nodes/pve1/qemu/{0}/status/{1}'


def boot(lab, api, vmid, public_key, ip='dhcp', **config):
    """Clone the base template, give it a cloud-init user, key and address (ip: an address, 'dhcp', or None for
    no ipconfig0) and start it: its SSH endpoint listens once the start task has ended."""
    api.clone(vmid)
    if ip:
        config['ipconfig0'] = 'ip=dhcp' if ip == 'dhcp' else f'ip={ip}/24,gw={lab.gateway}'
    api.data('PUT', CONFIG.format(vmid), ciuser='alice', sshkeys=urllib.parse.quote(public_key + '\n', safe=''), **config)
    assert api.run('POST', STATUS.format(vmid, 'start'))['exitstatus'] == 'OK'
    guest = lab.guest(vmid)
    assert guest.endpoint is not None, guest.error
    return guest


def ssh(tmp_path, key, target, command, *options):
    argv = [
        'ssh',
        '-i',
        str(key),
        '-o',
        'UserKnownHostsFile={0}'.format(tmp_path / 'known_hosts'),
        '-o',
        'StrictHostKeyChecking=accept-new',
        '-o',
        'BatchMode=yes',
        '-o',
        'ConnectTimeout=5',
    ]
    return subprocess.run(argv + list(options) + [target, command], capture_output=True, text=True, timeout=60, check=False)


def test_a_started_clone_runs_commands_over_ssh_for_its_cloud_init_user(lab, api, ssh_key, tmp_path):
    key, public = ssh_key
    ip = lab.address(1)
    guest = boot(lab, api, 120, public, ip=ip)
    done = ssh(tmp_path, key, 'alice@' + ip, 'cloud-init status --wait')
    assert (done.returncode, done.stdout) == (0, 'status: done\n'), done.stderr
    marked = ssh(tmp_path, key, 'alice@' + ip, 'touch mark && pwd && echo $HOME')
    assert marked.returncode == 0 and marked.stdout.split() == [str(guest.home)] * 2
    assert (guest.home / 'mark').is_file()
    assert guest.commands == ['cloud-init status --wait', 'touch mark && pwd && echo $HOME']
    assert lab.ssh_connections(120) == 2 and lab.ssh_connections() == 2


def test_a_guests_system_files_are_its_own_so_a_generalization_never_touches_this_machine(lab, api, ssh_key, tmp_path):
    key, public = ssh_key
    ip = lab.address(1)
    guest = boot(lab, api, 120, public, ip=ip)
    machine = {path: open(path, 'rb').read() for path in ('/etc/machine-id', '/etc/ssh/ssh_config')}
    seen = ssh(tmp_path, key, 'alice@' + ip, 'cat /etc/machine-id; ls /etc/ssh')
    assert seen.returncode == 0 and seen.stdout == guest.machine_id + '\nssh_host_ed25519_key\n', seen.stderr
    wiped = ssh(tmp_path, key, 'alice@' + ip, ': > /etc/machine-id && rm -f /var/lib/dbus/machine-id /etc/ssh/ssh_host_*')
    assert wiped.returncode == 0, wiped.stderr
    system = guest.home / '.system'
    assert (system / 'etc' / 'machine-id').read_text() == '' and not (system / 'var' / 'lib' / 'dbus' / 'machine-id').exists()
    assert list((system / 'etc' / 'ssh').iterdir()) == []
    assert {path: open(path, 'rb').read() for path in machine} == machine


def test_a_guest_takes_files_by_sftp_and_scp_and_gives_a_terminal(lab, api, ssh_key, tmp_path):
    key, public = ssh_key
    ip = lab.address(1)
    guest = boot(lab, api, 120, public, ip=ip)
    options = ['-i', str(key), '-o', 'UserKnownHostsFile={0}'.format(tmp_path / 'known_hosts'), '-o', 'StrictHostKeyChecking=accept-new', '-o', 'BatchMode=yes']
    source = tmp_path / 'payload'
    source.write_text('payload\n')
    sftp = subprocess.run(
        ['sftp'] + options + ['-b', '-', 'alice@' + ip],
        capture_output=True,
        text=True,
        input=f'put {source} by-sftp\nput {source} {guest.home}/absolute\n',
        timeout=60,
        check=False,
    )
    assert sftp.returncode == 0, sftp.stderr
    scp = subprocess.run(['scp', '-O'] + options + [str(source), f'alice@{ip}:by-scp'], capture_output=True, text=True, timeout=60, check=False)
    assert scp.returncode == 0, scp.stderr
    assert [(guest.home / name).read_text() for name in ('by-sftp', 'absolute', 'by-scp')] == ['payload\n'] * 3
    terminal = ssh(tmp_path, key, 'alice@' + ip, 'tty', '-tt')
    assert terminal.returncode == 0 and terminal.stdout.startswith('/dev/pts/')


def test_a_wrong_key_or_user_is_refused(lab, api, ssh_key, tmp_path):
    key, public = ssh_key
    ip = lab.address(1)
    boot(lab, api, 120, public, ip=ip)
    other = tmp_path / 'other'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', str(other)], check=True)
    for attempt in (ssh(tmp_path, other, 'alice@' + ip, 'true'), ssh(tmp_path, key, 'ubuntu@' + ip, 'true')):
        assert attempt.returncode == 255 and 'Permission denied (publickey)' in attempt.stderr
    assert lab.guest(120).commands == []


def test_the_ssh_port_closes_when_the_vm_stops(lab, api, ssh_key, tmp_path):
    key, public = ssh_key
    ip = lab.address(1)
    guest = boot(lab, api, 120, public, ip=ip)
    assert api.run('POST', STATUS.format(120, 'stop'))['exitstatus'] == 'OK'
    assert guest.endpoint is None
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((ip, 22), timeout=5)
    assert 'Connection refused' in ssh(tmp_path, key, 'alice@' + ip, 'true').stderr


@pytest.mark.parametrize('ip', ['dhcp', None])
def test_a_dhcp_guest_gets_a_lease_the_agent_reports(lab, api, ssh_key, tmp_path, ip):
    key, public = ssh_key
    guest = boot(lab, api, 121, public, ip=ip)
    interfaces = api.data('GET', '/nodes/pve1/qemu/121/agent/network-get-interfaces')['result']
    addresses = {i['name']: [a['ip-address'] for a in i['ip-addresses']] for i in interfaces}
    assert addresses['lo'] == ['127.0.0.1'] and addresses['eth0'] == [guest.address]
    assert guest.address in lab.dhcp_pool
    assert ssh(tmp_path, key, 'alice@' + guest.address, 'true').returncode == 0


def test_a_guest_without_an_agent_answers_no_agent_request(lab, api, ssh_key):
    guest = boot(lab, api, 121, ssh_key[1], agent='0')
    assert guest.address in lab.dhcp_pool
    assert api.error('GET', '/nodes/pve1/qemu/121/agent/network-get-interfaces')[:2] == (500, 'QEMU guest agent is not running')


def test_cloud_init_is_applied_at_boot(lab, api, ssh_key, tmp_path):
    key, public = ssh_key
    ip = lab.address(1)
    guest = boot(lab, api, 120, public, ip=ip)
    api.data('PUT', CONFIG.format(120), ciuser='bob')
    assert guest.user == 'alice' and ssh(tmp_path, key, 'bob@' + ip, 'true').returncode == 255
    assert api.run('POST', STATUS.format(120, 'reboot'))['exitstatus'] == 'OK'
    assert guest.user == 'bob' and ssh(tmp_path, key, 'bob@' + ip, 'true').returncode == 0


def test_cloud_init_status_follows_the_guest_knobs(lab, api, ssh_key, tmp_path):
    key, public = ssh_key
    ip = lab.address(1)
    lab.guest(120).cloud_init_delay = None
    guest = boot(lab, api, 120, public, ip=ip)
    assert ssh(tmp_path, key, 'alice@' + ip, 'cloud-init status').stdout == 'status: running\n'
    guest.finish_cloud_init()
    assert ssh(tmp_path, key, 'alice@' + ip, 'cloud-init status --wait').stdout == 'status: done\n'
    lab.guest(121).cloud_init_delay = 0.2
    boot(lab, api, 121, public, ip=lab.address(2))
    assert ssh(tmp_path, key, 'alice@' + lab.address(2), 'cloud-init status --wait').stdout.endswith('status: done\n')
    guest.cloud_init_delay, guest.cloud_init_error = 0, True
    assert api.run('POST', STATUS.format(120, 'reboot'))['exitstatus'] == 'OK'
    status = ssh(tmp_path, key, 'alice@' + ip, 'cloud-init status --long')
    assert status.returncode == 1 and status.stdout.startswith('status: error\n')
    assert ssh(tmp_path, key, 'alice@' + ip, 'cloud-init clean --logs').returncode == 0
    assert guest.cloud_init_cleans == ['--logs']


def test_a_slow_guest_answers_ssh_after_its_delay(lab, api, ssh_key, tmp_path):
    key, public = ssh_key
    guest = boot(lab, api, 120, public, ip=lab.address(1))
    guest.ssh_delay = 0.5
    started = time.monotonic()
    assert ssh(tmp_path, key, 'alice@' + lab.address(1), 'true').returncode == 0
    assert time.monotonic() - started >= 0.5


def test_a_host_key_lasts_as_long_as_its_vm(lab, api, ssh_key):
    public = ssh_key[1]
    guest = boot(lab, api, 120, public, ip=lab.address(1))
    (guest.home / 'data').write_text('kept')
    first = guest.host_key.public_data
    assert api.run('POST', STATUS.format(120, 'reboot'))['exitstatus'] == 'OK'
    assert guest.host_key.public_data == first and (guest.home / 'data').exists()
    assert api.run('POST', STATUS.format(120, 'stop'))['exitstatus'] == 'OK'
    assert api.run('DELETE', '/nodes/pve1/qemu/120')['exitstatus'] == 'OK'
    guest = boot(lab, api, 120, public, ip=lab.address(1))
    assert guest.host_key.public_data != first and not (guest.home / 'data').exists()


def test_ansible_playbook_runs_against_a_guest(lab, api, ssh_key, tmp_path):
    key, public = ssh_key
    ip = lab.address(1)
    guest = boot(lab, api, 120, public, ip=ip)
    (tmp_path / 'inventory.ini').write_text(
        'web1 ansible_host={0} ansible_user=alice ansible_ssh_private_key_file={1} ansible_python_interpreter={2} '
        'ansible_ssh_common_args="-o UserKnownHostsFile={3} -o StrictHostKeyChecking=accept-new"\n'.format(ip, key, sys.executable, tmp_path / 'known_hosts')
    )
    (tmp_path / 'site.yml').write_text(
        textwrap.dedent('''\
        - hosts: web1
          tasks:
            - command: cloud-init status --wait
              changed_when: false
            - copy: {content: "hello\\n", dest: "~/hello.txt"}
            - command: whoami
              become: true
              changed_when: false
            - file: {path: ~/made-as-root, state: directory}
              become: true
        ''')
    )
    control = tempfile.mkdtemp(prefix='cp-')  # short: ssh limits a control socket's path to 104 bytes
    env = dict(os.environ, ANSIBLE_HOME=str(tmp_path / 'ansible'), ANSIBLE_SSH_CONTROL_PATH_DIR=control, ANSIBLE_NOCOLOR='1')
    try:
        run = subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'inventory.ini', 'site.yml'],
            cwd=str(tmp_path),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        shutil.rmtree(control, ignore_errors=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'ok=5 ' in run.stdout and 'changed=2 ' in run.stdout  # facts and four tasks
    assert (guest.home / 'hello.txt').read_text() == 'hello\n' and (guest.home / 'made-as-root').is_dir()
    assert lab.ssh_connections(120) >= 1
