# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_notes_hash on its own against the lab: the four-run pattern, a Puls block taken over, concurrent
Notes edits merged, what a hash cannot cover warned about, bad input refused before any request, and the
module's EXAMPLES as written."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import lab_vms
import yaml

from ansible_collections.puls.proxmox.plugins.module_utils import _notes
from playbooks import four_runs, run_playbook

MODULE = Path(__file__).resolve().parents[2] / 'plugins' / 'modules' / 'pve_notes_hash.py'
HUMAN = 'Built by hand — ünïcödé [keep me]\n  second line, indented\n\n[puls-provision: inside a sentence]'
# The examples delegate to localhost, as a real play on remote hosts does; here it is the controller itself.
LOCALHOST = {'all': {'hosts': {'localhost': {'ansible_connection': 'local'}}}}
PVE_DIGEST_ERROR = 'detected modified configuration - file changed by other user? Try again.'


def short_sha(data):
    return hashlib.sha256(data).hexdigest()[:12]


def play(*tasks):
    return [{'name': 'Notes', 'hosts': 'localhost', 'gather_facts': False, 'tasks': list(tasks)}]


def task(title, **options):
    return {'name': title, 'puls.proxmox.pve_notes_hash': options, 'register': re.sub(r'\W', '_', title.lower())}


def test_a_puls_block_reads_as_applied_in_file_mode_and_is_rewritten_with_full_paths(lab, tmp_path):
    api = lab_vms.client(lab)
    content = b'- hosts: all\n  tasks: []\n'
    (tmp_path / 'provision').mkdir()
    (tmp_path / 'provision' / 'docker.yaml').write_bytes(content)
    (tmp_path / 'provision' / 'new.sh').write_bytes(b'true\n')
    lab_vms.clone(api, 160, 'legacy', description=f'{HUMAN}\n\n[puls-provision: docker.yaml={short_sha(content)},gone.yaml=0123456789ab]')
    files = ['provision/docker.yaml', 'provision/new.sh']

    runs = four_runs(
        tmp_path,
        play(
            task('Query', name='legacy', files=files, hash_mode='file'),
            task('Record', name='legacy', files=files, hash_mode='file', state='applied', record=[]),
        ),
        lab.env,
        inventory=LOCALHOST,
    )

    query = runs.check.one('Query')
    assert (query['pending'], query['applied'], query['stale'], query['vmid']) == (
        ['provision/new.sh'],
        ['provision/docker.yaml'],
        ['docker.yaml', 'gone.yaml'],
        160,
    )
    record = runs.real.one('Record')
    assert record['changed'] and record['diff']['after'] == f'{HUMAN}\n\n[puls-provision: provision/docker.yaml={short_sha(content)}]'
    assert record['diff']['before'].startswith(HUMAN + '\n\n[puls-provision: docker.yaml=')
    assert runs.real_again.one('Query')['stale'] == []
    assert lab_vms.notes(api, 160) == record['diff']['after']


def test_a_concurrent_notes_change_between_read_and_write_is_merged_not_lost(lab, tmp_path):
    api = lab_vms.client(lab)
    (tmp_path / 'base.yml').write_text('- hosts: all\n  tasks: []\n')
    for vmid, name in ((161, 'busy1'), (162, 'busy2')):
        lab_vms.clone(api, vmid, name, description=HUMAN)
    original = lab.pve._apply_config
    edits = []

    async def edit_first(vm, user, params):
        # A person saves the Notes of VM 161 just before the module's digest-checked write lands.
        if vm.vmid == 161 and params.get('digest') and not edits:
            edits.append(params['digest'])
            vm.config['description'] = HUMAN + '\nadded meanwhile'
        return await original(vm, user, params)

    lab.pve._apply_config = edit_first
    # PVE's own wording of the refusal, for VM 162 (fakepve says "checksum mismatch (file change by other user?)").
    lab.call(lambda: lab.pve.fail('PUT', '/nodes/pve1/qemu/162/config', 500, PVE_DIGEST_ERROR, times=1))

    run = run_playbook(
        tmp_path,
        play(
            task('Record busy1', name='busy1', files=['base.yml'], state='applied'),
            task('Record busy2', name='busy2', files=['base.yml'], state='applied'),
        ),
        lab.env,
        inventory=LOCALHOST,
    )

    assert run.rc == 0, run.stdout
    recorded = f"[puls-provision: base.yml={run.one('Record busy1')['hashes']['base.yml']}]"
    assert lab_vms.notes(api, 161) == f'{HUMAN}\nadded meanwhile\n\n{recorded}'
    assert lab_vms.notes(api, 162) == f'{HUMAN}\n\n{recorded}'
    puts = [r.path.rsplit('/', 2)[-2] for r in lab.writes() if r.method == 'PUT' and 'digest=' in r.body]
    assert puts.count('161') == 2 and puts.count('162') == 2


def test_a_reference_the_hash_cannot_follow_is_warned_about(lab, tmp_path):
    (tmp_path / 'base.yml').write_text('- hosts: all\n  tasks:\n    - ansible.builtin.include_tasks: "{{ flavour }}.yml"\n')
    lab_vms.clone(lab_vms.client(lab), 164, 'open1')

    run = run_playbook(tmp_path, play(task('Query', name='open1', files=['base.yml'])), lab.env, inventory=LOCALHOST)

    assert run.rc == 0 and run.one('Query')['pending'] == ['base.yml']
    assert "the hash of base.yml does not cover base.yml: include_tasks/import_tasks '{{ flavour }}.yml' (templated)" in run.stderr


def test_a_path_the_block_cannot_hold_is_refused_before_any_request(lab, tmp_path):
    (tmp_path / 'a=b.yml').write_text('- hosts: all\n  tasks: []\n')
    before = len(lab.requests())

    run = run_playbook(tmp_path, play(task('Query', name='any', files=['a=b.yml'])), lab.env, inventory=LOCALHOST)

    assert run.rc != 0
    assert run.for_task('Query')[0]['result']['msg'] == (
        "files: provision file 'a=b.yml' contains '=', which the Notes block uses to separate a path from its hash; rename the file"
    )
    assert len(lab.requests()) == before


def test_the_examples_run_as_documented(lab, tmp_path):
    api = lab_vms.client(lab)
    for path in ('playbooks/base.yml', 'playbooks/web.yml', 'provision/docker.yaml'):
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text(f'- hosts: all  # {path}\n  tasks: []\n')
    docker = short_sha((tmp_path / 'provision/docker.yaml').read_bytes())
    lab_vms.clone(api, 163, 'web1', description='web server')
    lab_vms.clone(api, 105, 'builder', description=f'[puls-provision: docker.yaml={docker}]')
    examples = yaml.safe_load(re.search(r"EXAMPLES = r'''(.*?)'''", MODULE.read_text(), re.S).group(1))

    run = run_playbook(tmp_path, play(*examples), lab.env, inventory=LOCALHOST)

    assert run.rc == 0, run.stdout
    assert run.one('Show them')['msg'] == ['playbooks/base.yml', 'playbooks/web.yml']
    base = run.one('Ask which provision files web1 still needs')['hashes']['playbooks/base.yml']
    assert _notes.parse(lab_vms.notes(api, 163)).entries == {'playbooks/base.yml': base}
    assert lab_vms.notes(api, 163).startswith('web server\n\n')
    assert run.one('Take over a record written by Puls, which hashed each file alone')['pending'] == []
