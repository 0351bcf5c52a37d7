# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Least privilege: a lab token with privilege separation holding exactly what docs/privileges.md's recipe grants (read
from the page) converges pve_vm, pve_iso and pve_notes_hash, and puls.proxmox.site on a fleet shaped like
examples/inventory; a token missing one privilege is refused before any write, naming it, its path and the grant.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_least_privilege.py -n 2
"""

from __future__ import annotations

import shlex
import sys

import pytest
from lab import images
from lab_vms import ssh_key

from playbooks import REPO, four_runs, run_playbook

DOC = REPO / 'docs' / 'privileges.md'
USER, TOKEN, SECRET = 'puls@pve', 'automation', 'b7a0c3e2-least-privilege'
NOBLE_IMG = images.seed_files()['noble-server-cloudimg-amd64.img']


def recipe_lines(section='## The recipe', end='### PVE 8'):
    """The lines of docs/privileges.md from the heading section to the heading end."""
    text = DOC.read_text()
    start = text.index(section + '\n')
    return text[start : text.index(end + '\n', start)].splitlines()


def documented_grants():
    """{path: {privileges}} as the (PVE 9) recipe's pveum commands grant them to both the user and the token."""
    roles, grants = {}, {}
    for line in recipe_lines():
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
    return dict(lab.env, PROXMOX_USER=USER, PROXMOX_TOKEN_NAME=TOKEN, PROXMOX_TOKEN_SECRET=SECRET, XDG_CACHE_HOME=str(tmp_path / 'cache'))


def play(*tasks):
    return [{'name': 'Least privilege', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': list(tasks)}]


def test_the_documented_privileges_on_the_documented_paths_are_enough_to_converge(lab, tmp_path):
    _key, public = ssh_key(tmp_path)
    (tmp_path / 'site').mkdir()
    (tmp_path / 'site/one.sh').write_text('true\n')
    url, sums = lab.serve('noble-server-cloudimg-amd64.img', NOBLE_IMG)
    env = token_env(lab, tmp_path, documented_grants())
    plays = play(
        {
            'name': 'download',
            'puls.proxmox.pve_iso': {'node': 'pve1', 'filename': 'noble.qcow2', 'content': 'import', 'url': url, 'checksum': 'sha256:' + sums['sha256']},
        },
        {'name': 'seed', 'puls.proxmox.pve_iso': {'node': 'pve1', 'filename': 'lp-seed.iso', 'seed': {'user_data': '#cloud-config\npackages: [jq]\n'}}},
        {
            'name': 'static',
            'puls.proxmox.pve_vm': {
                'name': 'lp-web1',
                'image': '9017',
                'node': 'pve1',
                'cores': 2,
                'memory': 2048,
                'state': 'started',
                'ci_user': 'alice',
                'ssh_keys': [public],
                'ip': lab.address(1) + '/24',
                'gateway': lab.gateway,
                'tags': ['web'],
            },
        },
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


def test_the_pve_8_recipe_reads_the_guest_agent_with_vm_monitor_and_is_otherwise_the_same():
    """pve-access-control 9.0.2 dropped VM.Monitor for the VM.GuestAgent.* privileges; PVE 8 knows only VM.Monitor."""

    def role(lines):
        [line] = [line for line in lines if line.startswith('pveum role add PulsVM ')]
        return set(shlex.split(line)[5].split())

    nine, eight = role(recipe_lines()), role(recipe_lines('### PVE 8', '### SDN VNets'))
    assert nine - eight == {'VM.GuestAgent.Audit'} and eight - nine == {'VM.Monitor'}


# (privilege, path it is granted on, the task, what the refusal says): each is refused before the first write.
MISSING = {
    'VM.Clone': ('/vms', 'static', 'Permission check failed (/vms/9017, VM.Clone)'),
    # PVE's clone rule is "VM.Allocate on /vms/NEW or on the pool": the refusal names both.
    'VM.Allocate': ('/vms', 'static', 'Permission check failed (/vms/100, VM.Allocate)'),
    'Datastore.AllocateSpace': ('/storage/local-lvm', 'static', 'Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)'),
    'VM.Config.Cloudinit': ('/vms', 'static', 'Permission check failed (/vms/100, VM.Config.Cloudinit)'),
    'VM.PowerMgmt': ('/vms', 'static', 'Permission check failed (/vms/100, VM.PowerMgmt)'),
    'Sys.Modify': ('/', 'download', 'Permission check failed (/, Sys.Modify)'),
    'Datastore.AllocateTemplate': ('/storage/local', 'seed', 'Permission check failed (/storage/local, Datastore.AllocateTemplate)'),
    'VM.Config.Options': ('/vms', 'record', 'Permission check failed (/vms/9017, VM.Config.Options)'),
}


@pytest.mark.parametrize('privilege', sorted(MISSING))
def test_a_token_missing_one_privilege_is_refused_before_any_write_naming_it_its_path_and_the_grant(lab, tmp_path, privilege):
    path, task, refusal = MISSING[privilege]
    grants = documented_grants()
    grants[path] = grants[path] - {privilege}
    env = token_env(lab, tmp_path, grants)
    url, sums = lab.serve('tools.iso', images.seed_files()['lab-tools.iso'])
    (tmp_path / 'one.sh').write_text('true\n')
    tasks = {
        'static': {
            'puls.proxmox.pve_vm': {
                'name': 'lp-web1',
                'vmid': 100,
                'image': '9017',
                'node': 'pve1',
                'state': 'started',
                'ip': lab.address(1) + '/24',
                'gateway': lab.gateway,
            }
        },
        'download': {'puls.proxmox.pve_iso': {'node': 'pve1', 'filename': 'tools.iso', 'url': url, 'checksum': 'sha256:' + sums['sha256']}},
        'seed': {'puls.proxmox.pve_iso': {'node': 'pve1', 'filename': 'lp-seed.iso', 'seed': {'user_data': '#cloud-config\npackages: [jq]\n'}}},
        'record': {'puls.proxmox.pve_notes_hash': {'vmid': 9017, 'files': ['one.sh'], 'state': 'applied'}},
    }
    # The plan (check mode) is refused as the real run is: a plan that cannot be applied is known before anything is applied.
    run = run_playbook(tmp_path, play(dict(tasks[task], name='plan', check_mode=True, ignore_errors=True), dict(tasks[task], name=task)), env)
    assert run.rc != 0
    for message in (run.one('plan')['msg'], run.one(task)['msg']):
        assert refusal in message and 'refused before any change' in message, message
        assert 'grant %s on %s to API token %s!%s' % (privilege, refusal.split('(')[1].split(',')[0], USER, TOKEN) in message
    assert lab.writes() == []
    assert SECRET not in run.stdout + run.stderr
    if privilege == 'VM.Allocate':
        assert 'VM.Allocate on /pool/NAME would do as well, with pool: NAME declared' in message


def test_the_demo_fleet_converges_through_site_with_only_the_documented_privileges(lab, tmp_path):
    """examples/inventory trimmed: an ISO, a golden template baked from a provision playbook, and full clones of it
    (grown disk; a static address, or its own user-data and its address from DNS) that are provisioned too."""
    lab.dns.set('web3', lab.address(3))
    key, public = ssh_key(tmp_path)
    # An OS identity under the guest's home for the bake's generalization (pve_generalize_root), and a mark.
    (tmp_path / 'base.yml').write_text(
        '- {name: Base, hosts: all, gather_facts: false, tasks: [{name: Mark, changed_when: true, '
        'ansible.builtin.shell: \'mkdir -p "$HOME/etc/ssh" "$HOME/var/lib/dbus"; echo base >> "$HOME/marks"\'}]}\n'
    )
    url, sums = lab.serve('lab-tools.iso', images.seed_files()['lab-tools.iso'])
    template = {
        'pve_image': 'ubuntu-24.04-cloud',
        'pve_node': 'pve1',
        'pve_cores': 2,
        'pve_storage': 'local-lvm',
        'pve_tags': ['golden'],
        'pve_provision': ['base.yml'],
        'pve_generalize_root': '~alice',
        'pve_template_wait_delay': 1,
    }
    # The clones inherit the template's record of base.yml: only web.yml runs on them.
    (tmp_path / 'web.yml').write_text(
        '- {name: Web, hosts: all, gather_facts: false, tasks: [{name: Mark, changed_when: true, ansible.builtin.shell: echo web >> "$HOME/marks"}]}\n'
    )
    vm = {
        'pve_image': 'golden-web',
        'pve_storage': 'local-lvm',
        'pve_disk_size': '10G',
        'pve_memory': 1024,
        'pve_tags': ['demo'],
        'pve_provision': ['base.yml', 'web.yml'],
    }
    inventory = {
        'all': {
            'vars': {
                'pve_ssh_user': 'alice',
                'pve_ssh_keys': [public],
                'pve_ssh_private_key_file': str(key),
                'pve_guest_python': sys.executable,
                'pve_provision_dir': str(tmp_path),
                'pve_nodes': lab.nodes,
                'pve_isos': [{'filename': 'lab-tools.iso', 'storage': 'local', 'node': 'pve1', 'url': url, 'checksum': 'sha256:' + sums['sha256']}],
            },
            'children': {
                'pve_templates': {'hosts': {'golden-web': template}},
                'pve_vms': {
                    'hosts': {
                        'web1': dict(vm, pve_ip=lab.address(1) + '/24', pve_gateway=lab.gateway),
                        # As in the demo, a VM with its own user-data runs only what the template's record covers: no SSH.
                        'web3': dict(vm, pve_provision=['base.yml'], pve_user_data='#cloud-config\nhostname: web3\n'),
                    }
                },
            },
        }
    }
    env = token_env(lab, tmp_path, documented_grants())
    site = '- import_playbook: puls.proxmox.site\n'
    applied = run_playbook(tmp_path, site, env, inventory=inventory, name='apply')
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert applied.plans == {
        'lab-tools.iso': ['create'],
        'golden-web': ['build', 'provision base.yml'],
        'web1': ['create', 'provision web.yml'],
        'web3': ['create'],
    }, applied.stdout
    names = lab.call(lambda: {vm.config.get('name'): dict(vm.config) for vm in lab.pve.vms})
    assert names['golden-web']['template'] == 1 and {'web1', 'web3'} <= set(names) and 'golden-web-build' not in names
    writes = len(lab.writes())
    again = run_playbook(tmp_path, site, env, inventory=inventory, name='again')
    assert again.rc == 0 and not again.changed, again.stdout
    assert len(lab.writes()) == writes


def test_a_token_without_sys_modify_is_refused_before_any_write_a_tag_the_datacenters_settings_do_not_allow(lab, tmp_path):
    # pve-guest-common GuestHelpers.pm assert_tag_permissions: with user-tag-access `list`, a tag not listed needs
    # Sys.Modify on /; the token holds Sys.Audit on /, so it sees those settings (pve-manager Cluster.pm get_options).
    grants = documented_grants()
    grants['/'] = (grants['/'] - {'Sys.Modify'}) | {'Sys.Audit'}
    env = token_env(lab, tmp_path, grants)
    lab.call(lambda: lab.pve.datacenter.update({'user-tag-access': {'user-allow': 'list', 'user-allow-list': ['web']}}))
    task = {'puls.proxmox.pve_vm': {'name': 'lp-tags', 'vmid': 100, 'image': '9017', 'node': 'pve1', 'tags': ['web']}}
    run = run_playbook(tmp_path, play(dict(task, name='plan', check_mode=True, ignore_errors=True), dict(task, name='real')), env)
    assert run.rc != 0
    for message in (run.one('plan')['msg'], run.one('real')['msg']):
        assert 'refused before any change' in message, message
        assert 'Permission check failed (/, Sys.Modify) to set the tag puls-managed' in message and 'the tag web' not in message
    assert lab.writes() == []

    # Listed, the owner tag needs nothing more, nor do the template's tags (puls-base, ubuntu) the clone drops: the VM is made.
    allowed = ['puls-base', 'puls-managed', 'ubuntu', 'web']
    lab.call(lambda: lab.pve.datacenter.update({'user-tag-access': {'user-allow': 'list', 'user-allow-list': allowed}}))
    made = run_playbook(tmp_path, play(dict(task, name='real')), env)
    assert made.rc == 0, made.stdout
