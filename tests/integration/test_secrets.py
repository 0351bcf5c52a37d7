# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No secret in anything the collection produces: the modules and the provisioning chain run with an API token, then
with a password, in check and real mode at -vvv, with a cloud-init password, secret user-data, a secret seed ISO and a
private key for SSH; then stdout, stderr, every task result (diffs included), the VM and node notes and every file
left under the test's directory (HOME, Ansible's temporary directories, TMPDIR) are searched for each secret.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_secrets.py -n 2
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile

from lab_vms import ssh_key

from playbooks import run_playbook

CI_PASSWORDS = ('Ci-pass-7f3e9a-first', 'Ci-pass-b41c07-second')
USER_DATA_SECRET = 'ud-secret-5c2e81d94a'
SEED_SECRET = 'seed-secret-0e6f3b77a2'
VENDOR_SECRET = 'vendor-secret-9d1a4c6e05'
VALIDATE_WARNING = 'validate_certs is false'

VM_TASKS = [
    {
        'name': 'VM with a cloud-init password and a key',
        'puls.proxmox.pve_vm': {
            'name': 'sec1',
            'vmid': 140,
            'image': '9017',
            'node': 'pve1',
            'state': 'started',
            'cores': '{{ sec_cores }}',
            'ci_user': 'alice',
            'ci_password': "{{ lookup('ansible.builtin.env', 'SECRET_CI_PASSWORD') }}",
            'ssh_keys': ['{{ sec_public_key }}'],
            'ip': '{{ sec_address }}/24',
            'gateway': '{{ sec_gateway }}',
        },
    },
    {
        'name': 'VM with secret user-data',
        'puls.proxmox.pve_vm': {
            'name': 'sec2',
            'vmid': 141,
            'image': '9017',
            'node': 'pve1',
            'cores': '{{ sec_cores }}',
            'user_data': "#cloud-config\nruncmd:\n  - echo {{ lookup('ansible.builtin.env', 'SECRET_USER_DATA') }}\n",
        },
    },
    {
        'name': 'Seed ISO with secret user-data and vendor-data',
        'puls.proxmox.pve_iso': {
            'filename': 'sec-seed.iso',
            'node': 'pve1',
            'seed': {
                'user_data': "#cloud-config\nruncmd:\n  - echo {{ lookup('ansible.builtin.env', 'SECRET_SEED') }}\n",
                'vendor_data': "#cloud-config\nruncmd:\n  - echo {{ lookup('ansible.builtin.env', 'SECRET_VENDOR') }}\n",
            },
        },
    },
]
PLAYS = [
    {'name': 'Machines', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': VM_TASKS},
    {
        'name': 'Provision',
        'hosts': 'vms',
        'gather_facts': False,
        'tasks': [{'name': 'Run the chain', 'ansible.builtin.include_role': {'name': 'puls.proxmox.reconcile', 'tasks_from': 'provision'}}],
    },
]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def secrets_found(secrets, text, where):
    return [(name, where) for name, value in secrets.items() if value in text]


def files_under(root, skip):
    """(path, text) of every file under root but those in skip, read as text whatever its bytes."""
    for path in sorted(root.rglob('*')):
        if path.is_file() and path not in skip:
            yield path, path.read_bytes().decode('utf-8', 'replace')


def test_no_secret_reaches_output_results_notes_or_files_in_check_and_real_runs_with_token_and_password(lab, tmp_path):
    (tmp_path / 'key').mkdir()
    key, public = ssh_key(tmp_path / 'key')
    private_lines = [line for line in key.read_text().splitlines() if line and not line.startswith('-----')]
    write(tmp_path / 'site/one.sh', 'echo one >> "$HOME/marks"\n')
    write(tmp_path / 'site/two.yml', '- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.command: echo two\n')
    inventory = {
        'all': {
            'hosts': {'localhost': {'ansible_connection': 'local'}},
            'vars': {'sec_public_key': public, 'sec_address': lab.address(1), 'sec_gateway': lab.gateway},
            'children': {
                'vms': {
                    'hosts': {
                        'sec1': {
                            'pve_vmid': 140,
                            'pve_address': lab.address(1),
                            'pve_provision': ['site/one.sh', 'site/two.yml'],
                            'pve_ssh_user': 'alice',
                            'pve_ssh_private_key_file': str(key),
                            'pve_guest_python': sys.executable,
                            'pve_force_config_check': '{{ sec_force }}',
                        }
                    }
                }
            },
        }
    }
    secrets = {
        'token secret': lab.token_secret,
        'root password': lab.password,
        'user-data': USER_DATA_SECRET,
        'seed user-data': SEED_SECRET,
        'seed vendor-data': VENDOR_SECRET,
    }
    secrets.update(('ci_password %d' % n, value) for n, value in enumerate(CI_PASSWORDS))
    secrets.update(('private key line %d' % n, line) for n, line in enumerate(private_lines))
    (tmp_path / 'tmpdir').mkdir()
    # SSH control sockets of this test's own: ~/.ansible/cp is shared by every lab on the machine, whose guests
    # can have the same address and user (a path of its own in /tmp, as a socket path must be short).
    control_dir = tempfile.mkdtemp(prefix='cp-')
    base_env = dict(
        lab.env,
        ANSIBLE_SSH_CONTROL_PATH_DIR=control_dir,
        ANSIBLE_REMOTE_TMP=str(tmp_path / 'remote-tmp'),
        TMPDIR=str(tmp_path / 'tmpdir'),
        XDG_CACHE_HOME=str(tmp_path / 'cache'),
        SECRET_USER_DATA=USER_DATA_SECRET,
        SECRET_SEED=SEED_SECRET,
        SECRET_VENDOR=VENDOR_SECRET,
    )
    token_env = dict(base_env, SECRET_CI_PASSWORD=CI_PASSWORDS[0])
    # The second pair logs in with root@pam's password, with another cloud-init password and a changed VM.
    password_env = dict(base_env, PROXMOX_TOKEN_NAME='', PROXMOX_TOKEN_SECRET='', PROXMOX_PASSWORD=lab.password, SECRET_CI_PASSWORD=CI_PASSWORDS[1])

    runs = []
    try:
        for name, env, check, cores, force in (
            ('token-check', token_env, True, 1, False),
            ('token-real', token_env, False, 1, False),
            ('password-check', password_env, True, 2, True),
            ('password-real', password_env, False, 2, True),
        ):
            run = run_playbook(
                tmp_path,
                PLAYS,
                env,
                inventory=inventory,
                check=check,
                name=name,
                extra_args=('-vvv', '-e', 'sec_cores=%d' % cores, '-e', 'sec_force=%s' % force),
            )
            assert run.rc == 0, run.stdout + run.stderr
            runs.append((name, run))
    finally:
        shutil.rmtree(control_dir, ignore_errors=True)

    # The runs did what carries the secrets: the VMs, the seed ISO, both provision files twice (forced the second time).
    guest = lab.guest(140)
    assert (guest.home / 'marks').read_text().splitlines() == ['one', 'one']
    assert USER_DATA_SECRET.encode() in lab.volume_bytes(lab.call(lambda: lab.pve.vm(141).config['ide2']).split(',')[0])
    assert SEED_SECRET.encode() in lab.volume_bytes('local:iso/sec-seed.iso')
    assert dict(runs)['password-real'].one('VM with secret user-data', 'localhost')['diff']['after']['cores'] == 2

    leaks = []
    for name, run in runs:
        leaks += secrets_found(secrets, run.stdout, name + ' stdout')
        leaks += secrets_found(secrets, run.stderr, name + ' stderr')
        leaks += secrets_found(secrets, json.dumps(run.results), name + ' results')
    notes = lab.call(lambda: {'VM %d' % vm.vmid: str(vm.config.get('description', '')) for vm in lab.pve.vms})
    notes.update(lab.call(lambda: {'node ' + node: '\n'.join(config.get('description', ())) for node, config in lab.pve.node_configs.items()}))
    assert '[puls-provision: ' in notes['VM 140'] and '[puls-files: ' in notes['node pve1']
    for where, text in notes.items():
        leaks += secrets_found(secrets, text, where + ' notes')
    written = list(files_under(tmp_path, skip={key}))
    assert any(path.name == 'puls_proxmox_known_hosts' for path, _text in written)
    for path, text in written:
        leaks += secrets_found(secrets, text, str(path.relative_to(tmp_path)))
    assert leaks == []


def test_validate_certs_false_warns_once_per_module_run_and_is_shown_once_per_playbook_run(lab, tmp_path):
    (tmp_path / 'site').mkdir()
    (tmp_path / 'site/one.sh').write_text('true\n')
    tasks = [
        {'name': 'VM', 'puls.proxmox.pve_vm': {'name': 'plain1', 'image': '9017', 'node': 'pve1'}},
        {'name': 'ISO', 'puls.proxmox.pve_iso': {'filename': 'plain.iso', 'node': 'pve1', 'seed': {'user_data': '#cloud-config\npackages: [jq]\n'}}},
        {'name': 'Notes', 'puls.proxmox.pve_notes_hash': {'name': 'plain1', 'files': ['site/one.sh'], 'state': 'applied'}},
    ]
    play = [{'name': 'Unverified', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': tasks}]
    env = dict(lab.env, PROXMOX_VERIFY_SSL='false', PROXMOX_CA_PATH='', XDG_CACHE_HOME=str(tmp_path / 'cache'))
    run = run_playbook(tmp_path, play, env)
    assert run.rc == 0, run.stdout + run.stderr
    for task in ('VM', 'ISO', 'Notes'):
        warnings = run.one(task).get('warnings', [])
        assert [w for w in warnings if VALIDATE_WARNING in w] == [warnings[0]] and len(warnings) == 1, (task, warnings)
    # Each module run returns it once; Ansible shows an identical warning once per playbook run.
    assert run.stdout.count(VALIDATE_WARNING) + run.stderr.count(VALIDATE_WARNING) == 1

    verified = run_playbook(tmp_path, play, dict(lab.env, XDG_CACHE_HOME=str(tmp_path / 'cache')), name='verified')
    assert verified.rc == 0 and VALIDATE_WARNING not in verified.stdout + verified.stderr
