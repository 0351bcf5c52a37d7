"""The plan summary callback (puls.proxmox.plan_summary), driven by real ansible-playbook runs of a tiny
playbook that records puls_plan facts as the reconcile role's task "Record the plan" does. No lab."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from integration.playbooks import COLLECTIONS, run_playbook

ENABLED = {'ANSIBLE_CALLBACKS_ENABLED': 'puls.proxmox.plan_summary'}
COUNTED = ('create', 'update', 'rebuild', 'provision', 'replace', 'destroy', 'prune')
SECRET = 'Sup3r-s3cret-ci-password'

FIRST_RUN = {
    'golden-web': {'kind': 'template', 'name': 'golden-web', 'actions': ['create', 'provision base.yml, web.yml']},
    # Extra keys are never printed: the callback reads kind, name and actions only.
    'web1': {'kind': 'vm', 'name': 'web1', 'actions': ['create', 'provision base.yml, web.yml'], 'ci_password': SECRET},
    'web2': {'kind': 'vm', 'name': 'web2', 'actions': ['update (reboot needed)']},
    'web3': {'kind': 'vm', 'name': 'web3', 'actions': ['rebuild (user-data changed)']},
    'web4': {'kind': 'vm', 'name': 'web4', 'actions': ['create', 'provision base.yml, web.yml', 'replace web-old']},
    'web5': {'kind': 'vm', 'name': 'web5', 'actions': ['destroy']},
    'old-db': {'kind': 'vm', 'name': 'old-db', 'actions': ['prune']},
}
FIRST_RUN_ISOS = [
    {'kind': 'iso', 'name': 'lab-tools.iso', 'actions': ['create']},
    {'kind': 'iso', 'name': 'extra.iso', 'actions': ['ok']},
]


def recording_play(plans, isos):
    """A play that sets puls_plan per host, and for the ISOs on localhost one per loop item."""
    return [{
        'name': 'Record plans as the reconcile role does',
        'hosts': 'all',
        'connection': 'local',
        'gather_facts': False,
        'vars': {'plans': plans, 'iso_plans': isos},
        'tasks': [
            {'name': 'Record the plan', 'ansible.builtin.set_fact': {'puls_plan': '{{ plans[inventory_hostname] }}'},
             'when': 'inventory_hostname in plans'},
            {'name': 'Record the plan of each ISO', 'ansible.builtin.set_fact': {'puls_plan': '{{ item }}'},
             'loop': '{{ iso_plans }}', 'when': "inventory_hostname == 'localhost'"},
        ],
    }]


def inventory(*hosts):
    return {'all': {'hosts': {host: {'ansible_python_interpreter': '{{ ansible_playbook_python }}'} for host in hosts}}}


def summary_block(stdout, header):
    """The lines the callback printed under its banner, up to the blank line that ends them."""
    lines = stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(header + ' *')]
    assert len(starts) == 1, 'expected one {0!r} banner in:\n{1}'.format(header, stdout)
    block = []
    for line in lines[starts[0] + 1:]:
        if not line:
            break
        block.append(line)
    return block


def total_line(ok=0, failed=None, **counts):
    parts = ['{0} to {1}'.format(counts.get(kind, 0), kind) for kind in COUNTED] + ['{0} ok'.format(ok)]
    return ', '.join(parts + (['{0} failed'.format(failed)] if failed else []))


def test_check_run_prints_the_plan_one_line_per_machine_and_the_totals_and_writes_them_as_json(tmp_path):
    json_path = tmp_path / 'plan.json'
    hosts = ('localhost',) + tuple(FIRST_RUN)
    run = run_playbook(tmp_path, recording_play(FIRST_RUN, FIRST_RUN_ISOS), dict(ENABLED, PULS_PLAN_JSON=str(json_path)),
                       inventory=inventory(*hosts), check=True)
    assert run.rc == 0, run.stdout + run.stderr

    # ISOs, then templates, then VMs, each by name; a machine counts once per kind of action.
    assert summary_block(run.stdout, 'Plan (check mode: nothing was changed)') == [
        'extra.iso: ok',
        'lab-tools.iso: create',
        'golden-web: create, provision base.yml, web.yml',
        'old-db: prune',
        'web1: create, provision base.yml, web.yml',
        'web2: update (reboot needed)',
        'web3: rebuild (user-data changed)',
        'web4: create, provision base.yml, web.yml, replace web-old',
        'web5: destroy',
        total_line(create=4, update=1, rebuild=1, provision=3, replace=1, destroy=1, prune=1, ok=1),
    ]
    assert 'Summary (real run)' not in run.stdout
    written = json.loads(json_path.read_text())
    assert written['check_mode'] is True
    assert written['nothing_to_do'] is False
    assert written['failed'] == []
    assert written['totals'] == {'create': 4, 'update': 1, 'rebuild': 1, 'provision': 3, 'replace': 1,
                                 'destroy': 1, 'prune': 1, 'ok': 1}
    assert written['machines'][4] == {'kind': 'vm', 'name': 'web1', 'actions': ['create', 'provision base.yml, web.yml']}
    assert [m['name'] for m in written['machines']] == ['extra.iso', 'lab-tools.iso', 'golden-web', 'old-db', 'web1',
                                                        'web2', 'web3', 'web4', 'web5']
    assert SECRET not in run.stdout + run.stderr + json_path.read_text()


def test_real_run_with_nothing_to_do_is_a_summary_of_ok_machines_and_passes_the_json_gate(tmp_path):
    json_path = tmp_path / 'plan.json'
    settled = {host: dict(plan, actions=['ok']) for host, plan in FIRST_RUN.items()}
    run = run_playbook(tmp_path, recording_play(settled, [dict(iso, actions=['ok']) for iso in FIRST_RUN_ISOS]),
                       dict(ENABLED, PULS_PLAN_JSON=str(json_path)), inventory=inventory('localhost', *FIRST_RUN))
    assert run.rc == 0, run.stdout + run.stderr

    block = summary_block(run.stdout, 'Summary (real run)')
    assert block[-1] == total_line(ok=9)
    assert block[:-1] == [line.split(':')[0] + ': ok' for line in block[:-1]] and len(block) == 10
    assert 'Plan (check mode' not in run.stdout
    written = json.loads(json_path.read_text())
    assert (written['check_mode'], written['nothing_to_do'], written['totals']['ok']) == (False, True, 9)


def test_failed_hosts_are_listed_and_fail_the_gate_while_rescued_and_ignored_failures_do_not(tmp_path):
    json_path = tmp_path / 'plan.json'
    plays = [{
        'name': 'Hosts that fail in different ways',
        'hosts': 'all',
        'connection': 'local',
        'gather_facts': False,
        'tasks': [
            {'name': 'A failure that is ignored', 'ansible.builtin.fail': {'msg': 'ignored'},
             'ignore_errors': True, 'when': "inventory_hostname == 'steady'"},
            {'name': 'A failure that stops the host', 'ansible.builtin.fail': {'msg': 'broken'},
             'when': "inventory_hostname == 'broken'"},
            {'name': 'A failure that is rescued', 'when': "inventory_hostname == 'rescued'",
             'block': [{'name': 'Fail first', 'ansible.builtin.fail': {'msg': 'rescued'}}],
             'rescue': [{'name': 'Record the plan', 'ansible.builtin.set_fact': {
                 'puls_plan': {'kind': 'vm', 'name': 'rescued', 'actions': ['update']}}}]},
            {'name': 'Record the plan', 'when': "inventory_hostname == 'steady'",
             'ansible.builtin.set_fact': {'puls_plan': {'kind': 'vm', 'name': 'steady', 'actions': ['ok']}}},
            {'name': 'Record a plan without actions', 'when': "inventory_hostname == 'malformed'",
             'ansible.builtin.set_fact': {'puls_plan': {'kind': 'vm', 'name': 'malformed', 'actions': []}}},
        ],
    }]
    run = run_playbook(tmp_path, plays, dict(ENABLED, PULS_PLAN_JSON=str(json_path)),
                       inventory=inventory('steady', 'broken', 'rescued', 'malformed'))
    assert run.rc == 2, run.stdout + run.stderr

    assert summary_block(run.stdout, 'Summary (real run)') == [
        'rescued: update',
        'steady: ok',
        'broken: failed',
        total_line(update=1, ok=1, failed=1),
    ]
    assert 'host malformed set puls_plan without a kind, a name and a non-empty list of actions' in run.stderr
    written = json.loads(json_path.read_text())
    assert (written['failed'], written['nothing_to_do']) == (['broken'], False)


def test_json_path_from_ansible_cfg_replaces_a_stale_file_and_a_run_without_plans_prints_nothing(tmp_path):
    json_path = tmp_path / 'gate' / 'plan.json'
    json_path.parent.mkdir()
    json_path.write_text('{"nothing_to_do": false, "stale": true}\n')
    # ansible-playbook runs in tmp_path and reads its ansible.cfg.
    (tmp_path / 'ansible.cfg').write_text('[puls_plan]\njson_path = {0}\n'.format(json_path))
    plays = [{'name': 'A play that is no reconcile run', 'hosts': 'all', 'connection': 'local', 'gather_facts': False,
              'tasks': [{'name': 'Say hello', 'ansible.builtin.debug': {'msg': 'hello'}}]}]
    run = run_playbook(tmp_path, plays, ENABLED, inventory=inventory('localhost'))
    assert run.rc == 0, run.stdout + run.stderr

    assert 'Summary (real run)' not in run.stdout
    assert json.loads(json_path.read_text()) == {
        'check_mode': False, 'machines': [], 'totals': dict(dict.fromkeys(COUNTED, 0), ok=0), 'failed': [],
        'nothing_to_do': True,
    }


def test_ansible_doc_renders_the_callback_with_its_json_option():
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([str(Path(sys.executable).parent / 'ansible-doc'), '-t', 'callback', 'puls.proxmox.plan_summary'],
                          env=env, capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert 'PULS_PLAN_JSON' in proc.stdout and 'section: puls_plan' in proc.stdout
    assert 'update (reboot needed)' in ' '.join(proc.stdout.split())
