# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Least privilege: a lab token with privilege separation holding exactly what docs/privileges.md's recipe grants (read
from the page) converges pve_vm, pve_iso and pve_notes_hash; a token missing one privilege fails naming it and its path.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_least_privilege.py -n 2
"""

from __future__ import annotations

import re
import shlex

import pytest
from lab_vms import ssh_key
from playbooks import REPO, four_runs, run_playbook

from lab import images

DOC = REPO / 'docs' / 'privileges.md'
USER, TOKEN, SECRET = 'puls@pve', 'automation', 'b7a0c3e2-least-privilege'
NOBLE_IMG = images.seed_files()['noble-server-cloudimg-amd64.img']


def documented_grants():
    """{path: {privileges}} as the recipe's pveum commands grant them to both the user and the token."""
    roles, grants = {}, {}
    for line in DOC.read_text().splitlines():
        words = shlex.split(line) if line.startswith('pveum ') else []
        if words[1:3] == ['role', 'add']:
            roles[words[3]] = set(words[words.index('--privs') + 1].split())
        elif words[1:3] == ['acl', 'modify']:
            assert words[words.index('--users') + 1] == USER and words[words.index('--tokens') + 1] == USER + '!' + TOKEN
            grants.setdefault(words[3], set()).update(roles[words[words.index('--roles') + 1]])
    assert grants and roles
    return grants


def token_env(lab, tmp_path, grants):
    lab.call(lambda: lab.pve.add_api_token(USER, TOKEN, SECRET, grants))
    return dict(lab.env, PROXMOX_USER=USER, PROXMOX_TOKEN_NAME=TOKEN, PROXMOX_TOKEN_SECRET=SECRET,
                XDG_CACHE_HOME=str(tmp_path / 'cache'))


def play(*tasks):
    return [{'name': 'Least privilege', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': list(tasks)}]


def test_the_documented_privileges_on_the_documented_paths_are_enough_to_converge(lab, tmp_path):
    _key, public = ssh_key(tmp_path)
    (tmp_path / 'site').mkdir()
    (tmp_path / 'site/one.sh').write_text('true\n')
    url, sums = lab.serve('noble-server-cloudimg-amd64.img', NOBLE_IMG)
    env = token_env(lab, tmp_path, documented_grants())
    plays = play(
        {'name': 'download', 'puls.proxmox.pve_iso': {
            'node': 'pve1', 'filename': 'noble.qcow2', 'content': 'import', 'url': url, 'checksum': 'sha256:' + sums['sha256']}},
        {'name': 'seed', 'puls.proxmox.pve_iso': {
            'node': 'pve1', 'filename': 'lp-seed.iso', 'seed': {'user_data': '#cloud-config\npackages: [jq]\n'}}},
        {'name': 'static', 'puls.proxmox.pve_vm': {
            'name': 'lp-web1', 'image': '9017', 'node': 'pve1', 'cores': 2, 'memory': 2048, 'state': 'started', 'ci_user': 'alice',
            'ssh_keys': [public], 'ip': lab.address(1) + '/24', 'gateway': lab.gateway, 'tags': ['web']}},
        {'name': 'dhcp', 'puls.proxmox.pve_vm': {'name': 'lp-dhcp1', 'image': '9017', 'node': 'pve1', 'state': 'started'}},
    )
    runs = four_runs(tmp_path, plays, env)
    real = runs.real
    assert [r['task'] for r in real.changed] == ['download', 'seed', 'static', 'dhcp']
    assert real.one('static')['address'] == lab.address(1) and real.one('static')['status'] == 'running'
    assert runs.real_again.one('dhcp')['address'] in lab.dhcp_pool
    assert lab.volume_bytes('local:import/noble.qcow2') == NOBLE_IMG
    # A record needs the VM to exist (in check mode too), so it runs after the VMs: once recorded, then unchanged.
    record = play({'name': 'record', 'puls.proxmox.pve_notes_hash': {'name': 'lp-web1', 'files': ['site/one.sh'], 'state': 'applied'}})
    recorded, again = (run_playbook(tmp_path, record, env, name=name) for name in ('record', 'record-again'))
    assert (recorded.rc, again.rc) == (0, 0), recorded.stdout + again.stdout
    assert recorded.one('record')['changed'] and not again.one('record')['changed']


# (privilege, path it is granted on, the task, what PVE refuses, the writes made before the refusal).
MISSING = {
    'VM.Clone': ('/vms', 'static', 'Permission check failed (/vms/9017, VM.Clone)', []),
    # PVE's clone rule is "VM.Allocate on /vms/NEW or on the pool": a refusal by an alternative names no privilege.
    'VM.Allocate': ('/vms', 'static', 'Permission check failed. Hint: API token puls@pve!automation lacks a privilege', []),
    'Datastore.AllocateSpace': ('/storage/local-lvm', 'static', 'Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)', []),
    'VM.Config.Cloudinit': ('/vms', 'static', 'Permission check failed (/vms/100, VM.Config.Cloudinit)', ['clone', 'config']),
    'VM.PowerMgmt': ('/vms', 'static', 'Permission check failed (/vms/100, VM.PowerMgmt)', ['clone', 'config', 'cloud-init drive']),
    'Sys.Modify': ('/', 'download', 'Permission check failed (/, Sys.Modify)', []),
    'Datastore.AllocateTemplate': ('/storage/local', 'seed', 'Permission check failed (/storage/local, Datastore.AllocateTemplate)', []),
    'VM.Config.Options': ('/vms', 'record', 'Permission check failed (/vms/9017, VM.Config.Options)', []),
}
WRITE_KINDS = (('clone', re.compile(r'/qemu/\d+/clone$')), ('config', re.compile(r'/qemu/\d+/config$')),
               ('cloud-init drive', re.compile(r'/qemu/\d+/cloudinit$')), ('start', re.compile(r'/status/start$')), ('download', re.compile(r'/download-url$')),
               ('upload', re.compile(r'/upload$')), ('node notes', re.compile(r'/nodes/\w+/config$')))


def kind(request):
    return next((name for name, pattern in WRITE_KINDS if pattern.search(request.path)), request.method + ' ' + request.path)


@pytest.mark.parametrize('privilege', sorted(MISSING))
def test_a_token_missing_one_privilege_fails_naming_it_and_its_path(lab, tmp_path, privilege):
    path, task, refusal, before = MISSING[privilege]
    grants = documented_grants()
    grants[path] = grants[path] - {privilege}
    env = token_env(lab, tmp_path, grants)
    url, sums = lab.serve('tools.iso', images.seed_files()['lab-tools.iso'])
    (tmp_path / 'one.sh').write_text('true\n')
    tasks = {
        'static': {'puls.proxmox.pve_vm': {'name': 'lp-web1', 'vmid': 100, 'image': '9017', 'node': 'pve1', 'state': 'started',
                                           'ip': lab.address(1) + '/24', 'gateway': lab.gateway}},
        'download': {'puls.proxmox.pve_iso': {'node': 'pve1', 'filename': 'tools.iso', 'url': url, 'checksum': 'sha256:' + sums['sha256']}},
        'seed': {'puls.proxmox.pve_iso': {'node': 'pve1', 'filename': 'lp-seed.iso', 'seed': {'user_data': '#cloud-config\npackages: [jq]\n'}}},
        'record': {'puls.proxmox.pve_notes_hash': {'vmid': 9017, 'files': ['one.sh'], 'state': 'applied'}},
    }
    run = run_playbook(tmp_path, play(dict(tasks[task], name=task)), env)
    assert run.rc != 0
    message = run.one(task)['msg']
    assert refusal in message, message
    if '(' in refusal:
        assert 'grant %s on %s to API token %s!%s' % (privilege, refusal.split('(')[1].split(',')[0], USER, TOKEN) in message
    writes = lab.writes()
    # The refused write is the last one, made once; before it only the steps that needed nothing more.
    assert [kind(w) for w in writes[:-1]] == before
    assert SECRET not in run.stdout + run.stderr
