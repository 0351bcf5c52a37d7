"""The plan summary callback (puls.proxmox.plan_summary), driven by real ansible-playbook runs of a tiny
playbook that records puls_plan facts as the reconcile role's task "Record the plan" does. No lab."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

if __name__ == '__main__':  # run as a script to regenerate docs/index.md's table: the paths pytest.ini gives
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2] / '.build' / 'collections')]

from integration.playbooks import COLLECTIONS, REPO, run_playbook  # noqa: E402

from ansible_collections.puls.proxmox.plugins.filter.plan_actions import plan_actions  # noqa: E402
from ansible_collections.puls.proxmox.plugins.module_utils import _sdn_plan  # noqa: E402
from ansible_collections.puls.proxmox.plugins.module_utils._plan_words import ACTIONS, COUNTED, LEFT_ALONE, network_plans, sdn_plans, words_table  # noqa: E402
from ansible_collections.puls.proxmox.plugins.module_utils._sdn_io import _describe  # noqa: E402

ENABLED = {'ANSIBLE_CALLBACKS_ENABLED': 'puls.proxmox.plan_summary'}
INDEX = REPO / 'docs' / 'index.md'
TABLE_START = '<!-- plan-words: generated from plugins/module_utils/_plan_words.py -->'
TABLE_END = '<!-- end of plan-words -->'
SECRET = 'Sup3r-s3cret-ci-password'

FIRST_RUN = {
    'golden-web': {'kind': 'template', 'name': 'golden-web', 'actions': ['build', 'provision base.yml, web.yml']},
    # Extra keys are never printed: the callback reads kind, name and actions only.
    'web1': {'kind': 'vm', 'name': 'web1', 'actions': ['create', 'provision base.yml, web.yml'], 'ci_password': SECRET},
    'web2': {'kind': 'vm', 'name': 'web2', 'actions': ['update (reboot needed)']},
    'web3': {'kind': 'template', 'name': 'web3', 'actions': ['rebuild (provision file base.yml changed)', 'provision base.yml']},
    'web4': {'kind': 'vm', 'name': 'web4', 'actions': ['create', 'provision base.yml, web.yml', 'replace web-old']},
    'web5': {'kind': 'vm', 'name': 'web5', 'actions': ['destroy']},
    'old-db': {'kind': 'vm', 'name': 'old-db', 'actions': ['prune']},
    'old-web': {'kind': 'vm', 'name': 'old-web', 'actions': ['orphan']},
}
FIRST_RUN_ISOS = [
    {'kind': 'iso', 'name': 'lab-tools.iso', 'actions': ['create']},
    {'kind': 'iso', 'name': 'extra.iso', 'actions': ['ok']},
]


def recording_play(plans, isos):
    """A play that sets puls_plan per host, and for the ISOs on localhost one per loop item."""
    return [
        {
            'name': 'Record plans as the reconcile role does',
            'hosts': 'all',
            'connection': 'local',
            'gather_facts': False,
            'vars': {'plans': plans, 'iso_plans': isos},
            'tasks': [
                {
                    'name': 'Record the plan',
                    'ansible.builtin.set_fact': {'puls_plan': '{{ plans[inventory_hostname] }}'},
                    'when': 'inventory_hostname in plans',
                },
                {
                    'name': 'Record the plan of each ISO',
                    'ansible.builtin.set_fact': {'puls_plan': '{{ item }}'},
                    'loop': '{{ iso_plans }}',
                    'when': "inventory_hostname == 'localhost'",
                },
            ],
        }
    ]


def inventory(*hosts):
    return {'all': {'hosts': {host: {'ansible_python_interpreter': '{{ ansible_playbook_python }}'} for host in hosts}}}


def summary_block(stdout, header):
    """The lines the callback printed under its banner, up to the blank line that ends them."""
    lines = stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(header + ' *')]
    assert len(starts) == 1, f'expected one {header!r} banner in:\n{stdout}'
    block = []
    for line in lines[starts[0] + 1 :]:
        if not line:
            break
        block.append(line)
    return block


def total_line(ok=0, failed=None, **counts):
    parts = [f'{counts.get(kind, 0)} to {kind}' for kind in COUNTED if kind not in LEFT_ALONE] + [f'{ok} ok']
    parts += [f'{counts[kind]} {kind}' for kind in LEFT_ALONE if counts.get(kind)]
    return ', '.join(parts + ([f'{failed} failed'] if failed else []))


def test_check_run_prints_the_plan_one_line_per_machine_and_the_totals_and_writes_them_as_json(tmp_path):
    json_path = tmp_path / 'plan.json'
    hosts = ('localhost',) + tuple(FIRST_RUN)
    run = run_playbook(
        tmp_path, recording_play(FIRST_RUN, FIRST_RUN_ISOS), dict(ENABLED, PULS_PLAN_JSON=str(json_path)), inventory=inventory(*hosts), check=True
    )
    assert run.rc == 0, run.stdout + run.stderr

    # ISOs, then templates, then VMs, each by name; a machine counts once per kind of action.
    assert summary_block(run.stdout, 'Plan (check mode: nothing was changed)') == [
        'extra.iso: ok',
        'lab-tools.iso: create',
        'golden-web: build, provision base.yml, web.yml',
        'web3: rebuild (provision file base.yml changed), provision base.yml',
        'old-db: prune',
        'old-web: orphan',
        'web1: create, provision base.yml, web.yml',
        'web2: update (reboot needed)',
        'web4: create, provision base.yml, web.yml, replace web-old',
        'web5: destroy',
        total_line(create=3, update=1, build=1, rebuild=1, provision=4, replace=1, destroy=1, prune=1, ok=1, orphan=1),
    ]
    assert 'Summary (real run)' not in run.stdout
    written = json.loads(json_path.read_text())
    assert written['check_mode'] is True
    assert written['nothing_to_do'] is False
    assert written['failed'] == []
    assert written['totals'] == {
        'create': 3,
        'update': 1,
        'build': 1,
        'rebuild': 1,
        'provision': 4,
        'replace': 1,
        'destroy': 1,
        'prune': 1,
        'orphan': 1,
        'ok': 1,
    }
    assert written['machines'][6] == {'kind': 'vm', 'name': 'web1', 'actions': ['create', 'provision base.yml, web.yml']}
    assert [m['name'] for m in written['machines']] == ['extra.iso', 'lab-tools.iso', 'golden-web', 'web3', 'old-db', 'old-web', 'web1', 'web2', 'web4', 'web5']
    assert SECRET not in run.stdout + run.stderr + json_path.read_text()


def test_real_run_with_nothing_to_do_is_a_summary_of_ok_machines_and_passes_the_json_gate(tmp_path):
    json_path = tmp_path / 'plan.json'
    # An orphan stays out of sync, left alone: no work to do, so the gate passes.
    settled = {host: dict(plan, actions=['orphan' if host == 'old-web' else 'ok']) for host, plan in FIRST_RUN.items()}
    run = run_playbook(
        tmp_path,
        recording_play(settled, [dict(iso, actions=['ok']) for iso in FIRST_RUN_ISOS]),
        dict(ENABLED, PULS_PLAN_JSON=str(json_path)),
        inventory=inventory('localhost', *FIRST_RUN),
    )
    assert run.rc == 0, run.stdout + run.stderr

    block = summary_block(run.stdout, 'Summary (real run)')
    assert block[-1] == total_line(ok=9, orphan=1) and block[-1].endswith(', 9 ok, 1 orphan')
    assert block[:-1] == [line.split(':')[0] + (': orphan' if line.startswith('old-web:') else ': ok') for line in block[:-1]]
    assert len(block) == 11
    assert 'Plan (check mode' not in run.stdout
    written = json.loads(json_path.read_text())
    assert (written['check_mode'], written['nothing_to_do'], written['totals']['ok'], written['totals']['orphan']) == (False, True, 9, 1)


def test_failed_hosts_are_listed_and_fail_the_gate_while_rescued_and_ignored_failures_do_not(tmp_path):
    json_path = tmp_path / 'plan.json'
    plays = [
        {
            'name': 'Hosts that fail in different ways',
            'hosts': 'all',
            'connection': 'local',
            'gather_facts': False,
            'tasks': [
                {
                    'name': 'A failure that is ignored',
                    'ansible.builtin.fail': {'msg': 'ignored'},
                    'ignore_errors': True,
                    'when': "inventory_hostname == 'steady'",
                },
                {'name': 'A failure that stops the host', 'ansible.builtin.fail': {'msg': 'broken'}, 'when': "inventory_hostname == 'broken'"},
                {
                    'name': 'A failure that is rescued',
                    'when': "inventory_hostname == 'rescued'",
                    'block': [{'name': 'Fail first', 'ansible.builtin.fail': {'msg': 'rescued'}}],
                    'rescue': [
                        {'name': 'Record the plan', 'ansible.builtin.set_fact': {'puls_plan': {'kind': 'vm', 'name': 'rescued', 'actions': ['update']}}}
                    ],
                },
                {
                    'name': 'Record the plan',
                    'when': "inventory_hostname == 'steady'",
                    'ansible.builtin.set_fact': {'puls_plan': {'kind': 'vm', 'name': 'steady', 'actions': ['ok']}},
                },
                {
                    'name': 'Record a plan without actions',
                    'when': "inventory_hostname == 'malformed'",
                    'ansible.builtin.set_fact': {'puls_plan': {'kind': 'vm', 'name': 'malformed', 'actions': []}},
                },
            ],
        }
    ]
    run = run_playbook(tmp_path, plays, dict(ENABLED, PULS_PLAN_JSON=str(json_path)), inventory=inventory('steady', 'broken', 'rescued', 'malformed'))
    assert run.rc == 2, run.stdout + run.stderr

    assert summary_block(run.stdout, 'Summary (real run)') == [
        'rescued: update',
        'steady: ok',
        'broken: failed',
        total_line(update=1, ok=1, failed=1),
    ]
    # ' '.join(split()): before 2.19 ansible-core wraps a warning at 80 columns.
    assert 'host malformed set puls_plan without a kind, a name and a non-empty list of actions' in ' '.join(run.stderr.split())
    written = json.loads(json_path.read_text())
    assert (written['failed'], written['nothing_to_do']) == (['broken'], False)


def test_json_path_from_ansible_cfg_replaces_a_stale_file_and_a_run_without_plans_prints_nothing(tmp_path):
    json_path = tmp_path / 'gate' / 'plan.json'
    json_path.parent.mkdir()
    json_path.write_text('{"nothing_to_do": false, "stale": true}\n')
    # ansible-playbook runs in tmp_path and reads its ansible.cfg.
    (tmp_path / 'ansible.cfg').write_text(f'[puls_plan]\njson_path = {json_path}\n')
    plays = [
        {
            'name': 'A play that is no reconcile run',
            'hosts': 'all',
            'connection': 'local',
            'gather_facts': False,
            'tasks': [{'name': 'Say hello', 'ansible.builtin.debug': {'msg': 'hello'}}],
        }
    ]
    run = run_playbook(tmp_path, plays, ENABLED, inventory=inventory('localhost'))
    assert run.rc == 0, run.stdout + run.stderr

    assert 'Summary (real run)' not in run.stdout
    assert json.loads(json_path.read_text()) == {
        'check_mode': False,
        'git': None,
        'machines': [],
        'totals': dict(dict.fromkeys(COUNTED, 0), ok=0),
        'failed': [],
        'nothing_to_do': True,
    }


def test_ansible_doc_renders_the_callback_with_its_json_option():
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR='1')
    proc = subprocess.run(
        [str(Path(sys.executable).parent / 'ansible-doc'), '-t', 'callback', 'puls.proxmox.plan_summary'],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert 'PULS_PLAN_JSON' in proc.stdout and 'section: puls_plan' in proc.stdout
    assert 'update (reboot needed)' in ' '.join(proc.stdout.split())


def test_the_role_says_build_provision_and_the_other_plan_words_only_as_the_code_defines_them():
    query_new, query_stale = {'current': False, 'vmid': None}, {'current': False, 'vmid': 120, 'reason': 'provision file web.yml changed'}
    assert plan_actions({'template': query_new, 'provision': ['base.yml', 'web.yml']}) == ['build', 'provision base.yml, web.yml']
    assert plan_actions({'template': query_stale, 'provision': ['web.yml']}) == ['rebuild (provision file web.yml changed)', 'provision web.yml']
    assert plan_actions({'template': {'current': True, 'vmid': 120}}) == ['ok']
    created = {'changed': True, 'changes': ['state'], 'reboot_required': []}
    assert plan_actions({'vm': created, 'provision': ['app.yml'], 'replaced': 'web-old'}) == ['create', 'provision app.yml', 'replace web-old']
    assert plan_actions({'vm': {'changed': True, 'changes': ['cores'], 'reboot_required': ['cores']}}) == ['update (reboot needed)']
    assert plan_actions({'vm': {'changed': False}, 'provision': [], 'replaced': '', 'destroyed': False}) == ['ok']
    assert plan_actions({'destroyed': True}) == ['destroy']
    assert plan_actions({'pve1': 'download', 'pve2': 'none'}, iso=True) == ['create']
    assert plan_actions({'pve1': 'none'}, iso=True) == ['ok']
    # Each word the role writes literally (fleet.yml, prune_guest.yml) is one of the defined words.
    defined = {word.split(' ', 1)[0] for word, _total, _meaning in ACTIONS}
    for path in (REPO / 'roles' / 'reconcile' / 'tasks').glob('*.yml'):
        for task in yaml.safe_load(path.read_text()) or ():
            plan = (task.get('ansible.builtin.set_fact') or {}).get('puls_plan') or {}
            actions = plan.get('actions')
            if isinstance(actions, list):
                assert set(actions) <= defined, (path.name, actions)


def test_each_interface_of_a_node_has_its_plan_and_a_delete_is_destroy_when_declared_and_prune_when_not():
    result = {
        'changed': True,
        'actions': ['update vmbr2 (release the ports it no longer has)', 'delete vmbr3', 'delete vmbr9', 'create vmbr1', 'update vmbr2', 'apply'],
    }
    plans = network_plans(result, 'pve1', ['vmbr1', 'vmbr2', 'vmbr3', 'vmbr4'])
    assert plans == [
        {'kind': 'network', 'name': 'pve1/vmbr1', 'actions': ['create']},
        {'kind': 'network', 'name': 'pve1/vmbr2', 'actions': ['update']},
        {'kind': 'network', 'name': 'pve1/vmbr3', 'actions': ['destroy']},
        {'kind': 'network', 'name': 'pve1/vmbr4', 'actions': ['ok']},
        {'kind': 'network', 'name': 'pve1/vmbr9', 'actions': ['prune']},
    ]
    defined = {word for word, _total, _meaning in ACTIONS}
    assert {action for plan in plans for action in plan['actions']} <= defined
    # A run that changes nothing (and the apply alone, of changes staged before) is ok for every declared interface.
    assert network_plans({'changed': True, 'actions': ['apply (with the changes staged before)']}, 'pve2', ['vmbr1']) == [
        {'kind': 'network', 'name': 'pve2/vmbr1', 'actions': ['ok']}
    ]


def sdn_result(options, zones=None, vnets=None, subnets=None):
    """pve_sdn's result (its actions and changes) for options against the SDN config given, from the module's own plan."""
    params = {'zones': [], 'vnets': [], 'subnets': [], 'prune': False, **options}
    plan = _sdn_plan.plan(_sdn_plan.check_options(params), _sdn_plan.Observed(zones or {}, vnets or {}, subnets or {}, {}))
    return {'changed': plan.changed, 'actions': [_describe(action) for action in plan.actions], 'changes': list(plan.changes)}


def test_each_sdn_object_has_its_plan_named_as_the_module_names_it_and_a_delete_is_destroy_or_prune():
    zones = {'lab': {'zone': 'lab', 'type': 'simple'}, 'old': {'zone': 'old', 'type': 'simple'}}
    vnets = {
        'web': {'vnet': 'web', 'zone': 'lab', 'alias': 'puls-managed'},
        'db': {'vnet': 'db', 'zone': 'lab', 'alias': 'puls-managed'},
        'gone': {'vnet': 'gone', 'zone': 'lab', 'alias': 'puls-managed'},
    }
    subnets = {('web', '127.200.1.0/24'): {'subnet': 'lab-127.200.1.0-24', 'cidr': '127.200.1.0/24', 'vnet': 'web', 'gateway': '127.200.1.1'}}
    options = {
        'prune': True,
        'zones': [{'name': 'lab', 'type': 'simple'}, {'name': 'old', 'state': 'absent'}],
        'vnets': [{'name': 'web', 'zone': 'lab'}, {'name': 'db', 'zone': 'lab', 'alias': 'Databases'}, {'name': 'app', 'zone': 'lab'}],
        # Declared as written, not normalized: the plan names it as the module does.
        'subnets': [{'vnet': 'web', 'cidr': '127.200.1.0/24', 'gateway': '127.200.1.1'}, {'vnet': 'app', 'cidr': '127.200.3.0/24'}],
    }
    plans = sdn_plans(sdn_result(options, zones, vnets, subnets), options)
    assert plans == [
        {'kind': 'sdn', 'name': 'zone lab', 'actions': ['ok']},
        {'kind': 'sdn', 'name': 'zone old', 'actions': ['destroy']},
        {'kind': 'sdn', 'name': 'vnet web', 'actions': ['ok']},
        {'kind': 'sdn', 'name': 'vnet db', 'actions': ['update']},
        {'kind': 'sdn', 'name': 'vnet app', 'actions': ['create']},
        {'kind': 'sdn', 'name': 'subnet web 127.200.1.0/24', 'actions': ['ok']},
        {'kind': 'sdn', 'name': 'subnet app 127.200.3.0/24', 'actions': ['create']},
        {'kind': 'sdn', 'name': 'vnet gone', 'actions': ['prune']},
    ]
    defined = {word for word, _total, _meaning in ACTIONS}
    assert {action for plan in plans for action in plan['actions']} <= defined
    # A subnet of an owned VNet no longer declared is pruned; one declared absent is destroyed.
    options = {'prune': True, 'vnets': [{'name': 'web', 'zone': 'lab'}], 'subnets': []}
    assert sdn_plans(sdn_result(options, zones, vnets, subnets), options)[1] == {'kind': 'sdn', 'name': 'subnet web 127.200.1.0/24', 'actions': ['prune']}
    options = {'subnets': [{'vnet': 'web', 'cidr': '127.200.1.0/24', 'state': 'absent'}]}
    assert sdn_plans(sdn_result(options, zones, vnets, subnets), options) == [{'kind': 'sdn', 'name': 'subnet web 127.200.1.0/24', 'actions': ['destroy']}]
    # Nothing to do (and no result, as a skipped task has none): ok for every declared object.
    assert sdn_plans(None, {'vnets': [{'name': 'web', 'zone': 'lab'}]}) == [{'kind': 'sdn', 'name': 'vnet web', 'actions': ['ok']}]


def documented_table():
    text = INDEX.read_text()
    assert TABLE_START in text and TABLE_END in text, 'docs/index.md lacks the plan words table markers'
    return text[text.index(TABLE_START) + len(TABLE_START) : text.index(TABLE_END)].strip()


def test_the_plan_words_table_of_the_user_guide_is_the_one_the_code_defines():
    # After changing the words, regenerate the table: .venv/bin/python tests/unit/test_plan_summary.py
    assert documented_table() == words_table()
    index = INDEX.read_text()
    plan_section = index[index.index('## Check mode and the plan') : index.index('## Troubleshooting')]
    # Every action of the example plan is a defined word (a provision file list goes on after its comma).
    for line in re.findall(r'^[\w.-]+: (.+)$', plan_section, flags=re.MULTILINE):
        for action in line.split(', '):
            assert action.split(' ', 1)[0] in COUNTED + ('ok', 'failed') or re.fullmatch(r'[\w./-]+\.(ya?ml|sh|pp)', action), line


def regenerate():
    text = INDEX.read_text()
    head, rest = text.split(TABLE_START)
    _old, tail = rest.split(TABLE_END)
    INDEX.write_text(head + TABLE_START + '\n' + words_table() + '\n' + TABLE_END + tail)


if __name__ == '__main__':
    regenerate()
