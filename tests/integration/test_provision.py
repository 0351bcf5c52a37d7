# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The provisioning chain (roles/reconcile/tasks/provision.yml) against the lab: real SSH guests, real
ansible-playbook, real puppet apply. Each provision file appends its name to ~/marks in the guest, so a
test reads what ran, and in which order, from the guest's home."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import lab_vms

from ansible_collections.puls.proxmox.plugins.module_utils import _notes
from playbooks import run_playbook

CHAIN = [
    {
        'name': 'Provision',
        'hosts': 'vms',
        'gather_facts': False,
        'tasks': [{'name': 'Run the chain', 'ansible.builtin.include_role': {'name': 'puls.proxmox.reconcile', 'tasks_from': 'provision'}}],
    }
]
HUMAN_NOTES = 'Owner: ops [team] — ünïcödé ✓\n\n[not-a-block: x=1]\n  indented line\n[puls-provision: mentioned, not a block] in text'
FIRST, SECOND, THIRD = 'site/first.yml', 'site/second.sh', 'site/third.pp'


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def write_project(root, home):
    """Three provision files under root/site: a playbook with a role, a script, a Puppet manifest."""
    write(
        root / FIRST,
        '''\
        - name: First provision file
          hosts: all
          gather_facts: false
          roles:
            - marker
        ''',
    )
    write(
        root / 'site/roles/marker/tasks/main.yml',
        '''\
        - name: Leave the first mark
          ansible.builtin.shell: echo "first {{ marker_word }}{{ app_color | default('') }}{{ extra_mark | default('') }}" >> "$HOME/marks"
          changed_when: true
        ''',
    )
    write(root / 'site/roles/marker/defaults/main.yml', 'marker_word: v1\n')
    write(root / SECOND, 'echo "second v1" >> "$HOME/marks"\n')
    write(
        root / THIRD,
        '''\
        exec { 'third mark':
          command => "/bin/sh -c 'echo third >> %s/marks'",
        }
        '''
        % home,
    )


def inventory(hosts, **common):
    return {'all': {'children': {'vms': {'hosts': hosts, 'vars': common}}}}


def host(vmid, address, files, key, **more):
    return dict(
        pve_vmid=vmid,
        pve_address=address,
        pve_provision=files,
        pve_ssh_user='alice',
        pve_ssh_private_key_file=str(key),
        pve_guest_python=sys.executable,
        **more,
    )


def role_result(run, task, host):
    """The one result (not skipped) of the role's task with this name on host (they are named 'ROLE : NAME')."""
    found = [r for r in run.results if r['task'].endswith(' : ' + task) and r['host'] == host and r['status'] != 'skipped']
    assert len(found) == 1, f'expected one result of {task!r} on {host}, got {len(found)}:\n{run.stdout}'
    return found[0]


def marks(guest):
    path = guest.home / 'marks'
    return path.read_text().splitlines() if path.exists() else []


def block(api, vmid):
    return _notes.parse(lab_vms.notes(api, vmid)).entries


def human(api, vmid):
    """The Notes without the provision block's line: what must stay byte for byte."""
    text = lab_vms.notes(api, vmid)
    span = _notes.parse(text).span
    return text if span is None else (text[: span[0]] + text[span[1] :]).rstrip()


def test_the_chain_runs_what_changed_and_nothing_else(lab, tmp_path):
    api = lab_vms.client(lab)
    key, public = lab_vms.ssh_key(tmp_path)
    guest = lab_vms.boot(lab, api, 130, 'web1', lab.address(1), public, description=HUMAN_NOTES)
    write_project(tmp_path, guest.home)
    hosts = {'web1': host(130, lab.address(1), [FIRST, SECOND, THIRD], key)}

    def run(name, check=False, extra=()):
        result = run_playbook(tmp_path, CHAIN, lab.env, inventory=inventory(hosts), check=check, name=name, extra_args=extra)
        assert result.rc == 0, result.stdout + result.stderr
        assert human(api, 130) == HUMAN_NOTES.rstrip()
        return result

    setup_writes = lab.writes()
    checked = run('check', check=True)
    assert role_result(checked, 'Report the provision files that would run', 'web1')['result']['msg'].endswith(f'{FIRST}, {SECOND}, {THIRD}')
    assert (marks(guest), lab.ssh_connections(), lab.writes()) == ([], 0, setup_writes)

    run('first')
    assert marks(guest) == ['first v1', 'second v1', 'third']
    assert list(block(api, 130)) == [FIRST, SECOND, THIRD]

    connections = lab.ssh_connections()
    again = run('again')
    assert marks(guest) == ['first v1', 'second v1', 'third']
    assert lab.ssh_connections() == connections
    assert not again.changed

    (tmp_path / SECOND).write_text('echo "second v2" >> "$HOME/marks"\n')
    run('second-changed')
    assert marks(guest)[3:] == ['second v2']

    (tmp_path / 'site/roles/marker/defaults/main.yml').write_text('marker_word: v2\n')
    run('role-changed')
    assert marks(guest)[4:] == ['first v2']

    run('forced', extra=('-e', 'pve_force_config_check=true'))
    assert marks(guest)[5:] == ['first v2', 'second v2', 'third']

    hosts['web1']['pve_provision'] = [FIRST, THIRD]
    connections = lab.ssh_connections()
    run('second-removed')
    assert list(block(api, 130)) == [FIRST, THIRD]
    assert lab.ssh_connections() == connections
    assert len(marks(guest)) == 8


def test_a_failing_file_stops_the_chain_and_the_fix_reruns_from_it(lab, tmp_path):
    api = lab_vms.client(lab)
    key, public = lab_vms.ssh_key(tmp_path)
    guest = lab_vms.boot(lab, api, 131, 'app1', lab.address(2), public, description=HUMAN_NOTES)
    write_project(tmp_path, guest.home)
    (tmp_path / SECOND).write_text('echo "second broke" >> "$HOME/marks"\nfor i in $(seq 1 60); do echo "line $i"; done\necho "disk full" >&2\nexit 3\n')
    # The playbook sees the machine's own inventory variables, and the extra variables.
    play = {
        'inventory': inventory(
            {'app1': host(131, lab.address(2), [FIRST, SECOND, THIRD], key, app_color=' blue', pve_provision_extra_vars={'extra_mark': ' +extra'})}
        )
    }

    failed = run_playbook(tmp_path, CHAIN, lab.env, name='broken', **play)
    assert failed.rc != 0
    message = role_result(failed, 'Stop the chain at the failed file', 'app1')['result']['msg']
    assert message.startswith(f'{SECOND} failed on {lab.address(2)} (app1) with exit status 3; it stays pending')
    assert message.endswith('line 59\nline 60\ndisk full') and 'line 22\n' in message and 'line 21\n' not in message
    assert marks(guest) == ['first v1 blue +extra', 'second broke']
    assert list(block(api, 131)) == [FIRST]
    assert human(api, 131) == HUMAN_NOTES.rstrip()

    (tmp_path / SECOND).write_text('echo "second fixed" >> "$HOME/marks"\n')
    fixed = run_playbook(tmp_path, CHAIN, lab.env, name='fixed', **play)
    assert fixed.rc == 0, fixed.stdout
    assert marks(guest) == ['first v1 blue +extra', 'second broke', 'second fixed', 'third']
    assert list(block(api, 131)) == [FIRST, SECOND, THIRD]
    assert human(api, 131) == HUMAN_NOTES.rstrip()


def test_cloud_init_errors_warn_or_fail_and_a_closed_ssh_port_times_out_naming_the_address(lab, tmp_path):
    api = lab_vms.client(lab)
    key, public = lab_vms.ssh_key(tmp_path)
    write(tmp_path / 'mark.sh', 'echo marked >> "$HOME/marks"\n')
    slow, strict = (lab_vms.boot(lab, api, vmid, name, lab.address(n), public, start=False) for vmid, name, n in ((140, 'slow1', 3), (141, 'strict1', 4)))
    for guest in (slow, strict):
        guest.cloud_init_error = True
    slow.cloud_init_delay = 1.5
    slow, strict = lab_vms.start_vm(lab, api, 140), lab_vms.start_vm(lab, api, 141)
    lab_vms.clone(api, 142, 'down1')
    hosts = {
        'slow1': host(140, lab.address(3), ['mark.sh'], key),
        'strict1': host(141, lab.address(4), ['mark.sh'], key, pve_cloud_init_error='fail'),
        'down1': host(142, lab.address(5), ['mark.sh'], key, pve_ssh_timeout=2),
    }

    run = run_playbook(tmp_path, CHAIN, lab.env, inventory=inventory(hosts), name='cloud-init')
    assert run.rc != 0

    # Through Ansible's warning channel: in the task result, where callbacks (the test's record_results, AWX) count it.
    warned = role_result(run, "Warn about cloud-init's error", 'slow1')['result']
    assert len(warned['warnings']) == 1
    assert warned['warnings'][0].startswith(f'cloud-init on {lab.address(3)} (slow1) reported status: error')
    assert sum(len(r['result'].get('warnings') or ()) for r in run.results if r['host'] == 'slow1') == 1
    assert f'[WARNING]: cloud-init on {lab.address(3)} (slow1) reported status: error' in run.stderr + run.stdout
    assert 'cloud-init status --wait' in slow.commands[0]
    assert marks(slow) == ['marked'] and list(block(api, 140)) == ['mark.sh']

    refusal = role_result(run, "Fail on cloud-init's error", 'strict1')
    assert refusal['status'] == 'failed' and 'pve_cloud_init_error is fail, so no provision file ran' in refusal['result']['msg']
    assert marks(strict) == [] and block(api, 141) == {}

    timeout = role_result(run, 'Wait for the SSH port of the machine', 'down1')
    assert timeout['status'] == 'failed'
    assert timeout['result']['msg'].startswith(f'The SSH port 22 of {lab.address(5)} (down1) did not answer within 2 s')
    assert block(api, 142) == {}


def test_bad_input_fails_before_any_write_or_connection(lab, tmp_path):
    api = lab_vms.client(lab)
    write(tmp_path / 'ok.yml', '- hosts: all\n  tasks: []\n')
    write(tmp_path / 'notes.txt', 'not a provision file\n')
    write(tmp_path / 'a,b.yml', '- hosts: all\n  tasks: []\n')
    lab_vms.clone(api, 150, 'long1', description='x' * 8180)
    hosts = {
        'comma': {'pve_vmid': 150, 'pve_provision': ['a,b.yml']},
        'missing': {'pve_vmid': 150, 'pve_provision': ['ok.yml', 'gone.yml']},
        'kind': {'pve_vmid': 150, 'pve_provision': ['notes.txt']},
        'twice': {'pve_vmid': 150, 'pve_provision': ['ok.yml', 'ok.yml']},
        'long1': {'pve_vmid': 150, 'pve_provision': ['ok.yml']},
    }
    setup_writes = lab.writes()

    run = run_playbook(tmp_path, CHAIN, lab.env, inventory=inventory(hosts, pve_address=lab.address(6)), name='bad')
    messages = {name: role_result(run, 'Ask which provision files are pending', name)['result']['msg'] for name in hosts}
    assert messages == {
        'comma': "files: provision file 'a,b.yml' contains ',', which the Notes block uses to separate entries; rename the file",
        'missing': f'{tmp_path}/gone.yml does not exist',
        'kind': f'{tmp_path}/notes.txt has an unknown extension; a provision file is one of .yml, .yaml, .pp, .sh',
        'twice': "files: provision file 'ok.yml' is declared twice; each provision file runs once per chain",
        'long1': messages['long1'],
    }
    assert messages['long1'].startswith('VM 150: the Notes would be 8219 characters, 27 over the 8192 that Proxmox VE allows')
    assert lab.writes() == setup_writes and lab.ssh_connections() == 0


def test_a_recreated_vm_at_the_same_address_is_trusted_only_when_the_chain_is_told(lab, tmp_path):
    api = lab_vms.client(lab)
    key, public = lab_vms.ssh_key(tmp_path)
    write(tmp_path / 'mark.sh', 'echo marked >> "$HOME/marks"\n')
    lab_vms.boot(lab, api, 170, 'db1', lab.address(7), public)
    hosts = {'db1': host(170, lab.address(7), ['mark.sh'], key)}
    known_hosts = tmp_path / '.ansible-home' / 'puls_proxmox_known_hosts'

    def host_keys():
        """The host keys known_hosts holds for the VM's address (ssh hashes the names, so ssh-keygen looks them up)."""
        found = subprocess.run(['ssh-keygen', '-F', lab.address(7), '-f', str(known_hosts)], capture_output=True, text=True, check=False)
        return [line.split()[-1] for line in found.stdout.splitlines() if line and not line.startswith('#')]

    def run(name, **more):
        hosts['db1'].update(more)
        return run_playbook(tmp_path, CHAIN, lab.env, inventory=inventory(hosts), name=name)

    assert run('created').rc == 0
    first_key = host_keys()
    assert len(first_key) == 1
    api.run_task('POST', '/nodes/pve1/qemu/170/status/stop')
    api.run_task('DELETE', '/nodes/pve1/qemu/170', purge=1)
    guest = lab_vms.boot(lab, api, 170, 'db1', lab.address(7), public)

    refused = run('recreated-unknown')
    assert refused.rc != 0
    assert 'REMOTE HOST IDENTIFICATION HAS CHANGED' in role_result(refused, 'Wait for cloud-init to finish', 'db1')['result']['msg']
    assert marks(guest) == []

    assert run('recreated', pve_vm_recreated=True).rc == 0
    assert marks(guest) == ['marked']
    assert len(host_keys()) == 1 and host_keys() != first_key


def test_the_inner_run_gets_verbosity_diff_and_check_mode_and_pve_provision_check_checks_the_files(lab, tmp_path):
    api = lab_vms.client(lab)
    key, public = lab_vms.ssh_key(tmp_path)
    guest = lab_vms.boot(lab, api, 160, 'inner1', lab.address(6), public)
    write_project(tmp_path, guest.home)
    # The inner playbook says what it was run with, then leaves its mark (a change check mode does not make).
    write(
        tmp_path / FIRST,
        '''\
        - name: First provision file
          hosts: all
          gather_facts: false
          tasks:
            - name: Say how this run was started
              ansible.builtin.debug:
                msg: "inner check={{ ansible_check_mode }} diff={{ ansible_diff_mode }} verbosity={{ ansible_verbosity }}"
          roles:
            - marker
        ''',
    )
    hosts = {'inner1': host(160, lab.address(6), [FIRST, SECOND, THIRD], key, pve_provision_check=True)}

    checked = run_playbook(tmp_path, CHAIN, lab.env, inventory=inventory(hosts), check=True, name='checked', extra_args=('-v',))
    assert checked.rc == 0, checked.stdout + checked.stderr
    report = role_result(checked, 'Report the provision files that would run', 'inner1')['result']['msg']
    assert report.endswith(
        'pve_provision_check is true, so they run now in check mode (playbooks with --check, Puppet manifests with --noop, scripts not at all)'
    )
    inner = role_result(checked, 'Run ansible-playbook against the machine', 'inner1')['result']
    assert inner['rc'] == 0 and '"msg": "inner check=True diff=True verbosity=1"' in inner['stdout']
    assert role_result(checked, 'Report the script a check run does not run', 'inner1')['result']['msg'] == (
        f'{SECOND} is a script, which has no check mode: not run in this check run'
    )
    puppet = role_result(checked, 'Run puppet apply', 'inner1')['result']
    assert '--noop' in puppet['cmd'] and puppet['rc'] in (0, 2)
    # Nothing ran for real, and nothing is recorded: all three stay pending.
    assert marks(guest) == [] and block(api, 160) == {}

    real = run_playbook(tmp_path, CHAIN, lab.env, inventory=inventory(hosts), diff=False, name='real', extra_args=('-vv',))
    assert real.rc == 0, real.stdout + real.stderr
    inner = role_result(real, 'Run ansible-playbook against the machine', 'inner1')['result']
    assert '"msg": "inner check=False diff=False verbosity=2"' in inner['stdout']
    assert marks(guest) == ['first v1', 'second v1', 'third']
    assert list(block(api, 160)) == [FIRST, SECOND, THIRD]
