# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile input: quoting, newlines, unicode, long values and shell metacharacters either round-trip exactly (notes,
user-data, provision file names) or are refused naming the option before any write; nothing is ever executed.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_hostile_input.py -n 2
"""

from __future__ import annotations

import shutil
import sys
import tempfile

import lab_vms

from ansible_collections.puls.proxmox.plugins.module_utils import _notes
from playbooks import run_playbook

# Each would create a file named pwned (in the working directory: the controller's tmp_path, the guest's home) if run.
SHELL = ['$(touch pwned)', '`touch pwned`', '; touch pwned #', "' ; touch pwned ; '", '" ; touch pwned ; "', '| touch pwned', '&& touch pwned', '$(rm -rf ~)']
HUMAN_NOTES = (
    'Owner: ops — ünïcödé ✓ 日本語\n'
    + '\n'.join(SHELL)
    + '\n\t tab and \\backslash\\n literal\n'
    + '[puls-provision: looks=like,a=block] inline\n'
    + 'x' * 3000
)
CHAIN = [
    {
        'name': 'Provision',
        'hosts': 'vms',
        'gather_facts': False,
        'tasks': [{'name': 'Run the chain', 'ansible.builtin.include_role': {'name': 'puls.proxmox.reconcile', 'tasks_from': 'provision'}}],
    }
]


def play(*tasks):
    return [
        {'name': 'Hostile', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': [dict(task, ignore_errors=True) for task in tasks]}
    ]


def canaries(*directories):
    return [path for directory in directories for path in directory.rglob('pwned*')]


def test_hostile_names_and_tags_are_refused_naming_the_option_before_any_write(lab, tmp_path):
    cases = {
        'name with a command': ({'name': 'web$(touch pwned)'}, 'name'),
        'name with a newline': ({'name': 'web1\nweb2'}, 'name'),
        'name with quotes and a space': ({'name': 'web "1\''}, 'name'),
        'tag with a quote': ({'name': 'web1', 'tags': ["web'; touch pwned"]}, 'tags'),
        'tag with unicode': ({'name': 'web1', 'tags': ['wéb']}, 'tags'),
    }
    tasks = [{'name': case, 'puls.proxmox.pve_vm': dict(options, image='9017', node='pve1')} for case, (options, _o) in cases.items()]
    run = run_playbook(tmp_path, play(*tasks), dict(lab.env, XDG_CACHE_HOME=str(tmp_path / 'cache')))
    for case, (_options, option) in cases.items():
        [outcome] = run.for_task(case)
        assert outcome['status'] == 'failed' and option in outcome['result']['msg'], (case, outcome['result']['msg'])
    assert lab.writes() == [] and canaries(tmp_path) == []


def test_human_notes_and_user_data_with_metacharacters_round_trip_byte_for_byte(lab, tmp_path):
    api = lab_vms.client(lab)
    lab_vms.clone(api, 120, 'notes1', description=HUMAN_NOTES)
    (tmp_path / 'site').mkdir()
    (tmp_path / 'site/one.sh').write_text('true\n')
    user_data = '#cloud-config\nruncmd:\n  - echo "%s"\nwrite_files:\n  - path: /tmp/ü\n    content: |\n      %s\n' % (
        SHELL[0].replace('"', '\\"'),
        ' '.join(SHELL).replace('\n', ' '),
    )
    tasks = [
        {'name': 'record', 'puls.proxmox.pve_notes_hash': {'vmid': 120, 'files': ['site/one.sh'], 'state': 'applied'}},
        {'name': 'seed', 'puls.proxmox.pve_iso': {'node': 'pve1', 'filename': 'hostile.iso', 'seed': {'user_data': user_data}}},
    ]
    run = run_playbook(tmp_path, play(*tasks), lab.env)
    assert not run.failed, run.stdout
    notes = lab_vms.notes(api, 120)
    span = _notes.parse(notes).span
    assert notes[: span[0]].rstrip('\n') == HUMAN_NOTES and list(_notes.parse(notes).entries) == ['site/one.sh']
    assert user_data.encode() in lab.volume_bytes('local:iso/hostile.iso')
    assert canaries(tmp_path) == []


def test_provision_file_names_and_an_ssh_user_with_metacharacters_are_data_never_commands(lab, tmp_path):
    api = lab_vms.client(lab)
    key, public = lab_vms.ssh_key(tmp_path)
    guest = lab_vms.boot(lab, api, 130, 'prov1', lab.address(1), public)
    hostile = ['site/$(touch pwned).sh', 'site/`touch pwned2`.sh', 'site/b"; touch pwned4 #.sh', 'site/ü && touch pwned3 |.sh', "site/it's; touch pwned6.sh"]
    (tmp_path / 'site').mkdir()
    for n, path in enumerate(hostile):
        (tmp_path / path).write_text('echo ran %d >> "$HOME/marks"\n' % n)
    control_dir = tempfile.mkdtemp(prefix='cp-')  # SSH control sockets of this test's own (short path)
    common = {'pve_address': lab.address(1), 'pve_ssh_private_key_file': str(key), 'pve_guest_python': sys.executable}
    hosts = {
        'prov1': dict(common, pve_vmid=130, pve_provision=hostile, pve_ssh_user='alice'),
        'user1': dict(common, pve_vmid=130, pve_provision=['site/$(touch pwned).sh'], pve_ssh_user='alice;touch pwned5', pve_force_config_check=True),
    }
    env = dict(lab.env, ANSIBLE_SSH_CONTROL_PATH_DIR=control_dir)
    try:
        ran = run_playbook(tmp_path, CHAIN, env, inventory={'all': {'children': {'vms': {'hosts': {'prov1': hosts['prov1']}}}}})
        assert ran.rc == 0, ran.stdout + ran.stderr
        assert (guest.home / 'marks').read_text().splitlines() == ['ran 0', 'ran 1', 'ran 2', 'ran 3', 'ran 4']
        assert list(_notes.parse(lab_vms.notes(api, 130)).entries) == hostile
        refused = run_playbook(tmp_path, CHAIN, env, inventory={'all': {'children': {'vms': {'hosts': {'user1': hosts['user1']}}}}}, name='user')
    finally:
        shutil.rmtree(control_dir, ignore_errors=True)
    assert refused.rc != 0 and refused.failed[0]['status'] in ('unreachable', 'failed')
    assert len((guest.home / 'marks').read_text().splitlines()) == len(hostile)
    assert canaries(tmp_path, guest.home) == []
