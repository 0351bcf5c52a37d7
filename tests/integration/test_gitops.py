# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GitOps without a daemon (docs/gitops.md), through ansible-playbook puls.proxmox.site against the lab: orphans in the
plan, the commit the plan was made from, adoption from the inventory, the run history and its status page.

Run inside a network namespace: hacking/netns-run .venv/bin/python -m pytest tests/integration/test_gitops.py -p no:xdist
"""

from __future__ import annotations

import json
import re
import subprocess

import lab_vms
import yaml
from test_plan_equals_run import fleet, machines, printed_plan, site, why

STOPPED = {'pve_image': str(lab_vms.TEMPLATE), 'pve_power': 'stopped'}


def names(lab):
    return {entry['name'] for entry in lab_vms.client(lab).cluster_vms()}


def test_an_owned_vm_no_longer_declared_is_an_orphan_left_alone_with_prune_off_and_pruned_with_it_on(lab, tmp_path):
    made = site(lab, tmp_path, fleet(lab, tmp_path, {}, {'keep1': dict(STOPPED), 'gone1': dict(STOPPED)}), 'made')
    assert made.rc == 0, why(made)

    inventory = fleet(lab, tmp_path, {}, {'keep1': dict(STOPPED)})
    writes = len(lab.writes())
    for name, check in (('orphan-plan', True), ('orphan-run', False)):
        run = site(lab, tmp_path, inventory, name, check=check)
        assert run.rc == 0, why(run)
        assert machines(run.plan) == {('vm', 'gone1'): ['orphan'], ('vm', 'keep1'): ['ok']}
        assert (run.plan['totals']['orphan'], run.plan['totals']['prune'], run.plan['nothing_to_do']) == (1, 0, True)
        header = 'Plan (check mode: nothing was changed)' if check else 'Summary (real run)'
        lines = printed_plan(run, header)
        assert 'gone1: orphan' in lines and lines[-1].endswith(', 1 ok, 1 orphan'), lines
    # Left alone: nothing written, gone1 still there.
    assert len(lab.writes()) == writes and 'gone1' in names(lab)

    # The check run of prune is test_reconcile.py's.
    inventory['all']['vars']['pve_prune'] = True
    pruned = site(lab, tmp_path, inventory, 'prune')
    assert pruned.rc == 0, why(pruned)
    assert machines(pruned.plan) == {('vm', 'gone1'): ['prune'], ('vm', 'keep1'): ['ok']}
    assert (pruned.plan['totals']['orphan'], pruned.plan['totals']['prune']) == (0, 1)
    assert 'gone1' not in names(lab) and 'keep1' in names(lab)


def test_a_declared_vm_without_the_owner_tag_stops_the_run_before_any_change_until_pve_adopt_takes_it_over(lab, tmp_path):
    api = lab_vms.client(lab)
    lab_vms.clone(api, 150, 'handmade1', description='made by hand')
    lab_vms.clone(api, 151, 'lost1', description='kept by ops\n[puls-provision: base.yml=3f2a9c1b7d4e]')
    declared = dict(STOPPED, pve_cores=2)
    inventory = fleet(lab, tmp_path, {}, {'handmade1': dict(declared), 'lost1': dict(declared)})
    writes = len(lab.writes())
    for run in [site(lab, tmp_path, inventory, 'refused')]:
        assert run.rc != 0
        assert (
            'handmade1: VM 150 (handmade1 on pve1) lacks the owner tag puls-managed, so this collection did not create '
            'it; to take it over set pve_adopt: true for handmade1'
        ) in run.stdout, run.stdout
        assert (
            'lost1: VM 151 (lost1 on pve1) lacks the owner tag puls-managed, but its Notes hold a [puls-provision: ...] record, so Puls provisioned it'
        ) in run.stdout, run.stdout
        assert not run.for_task('puls.proxmox.reconcile : Create or converge the VM')
    assert len(lab.writes()) == writes

    # Adopted from the inventory, the pve_vm timeouts given as role variables.
    adopt = dict(declared, pve_adopt=True, pve_shutdown_timeout=30, pve_agent_timeout=5, pve_timeout=120)
    inventory = fleet(lab, tmp_path, {}, {'handmade1': dict(adopt), 'lost1': dict(adopt)})
    planned = site(lab, tmp_path, inventory, 'adopt-plan', check=True)
    adopted = site(lab, tmp_path, inventory, 'adopt')
    assert planned.rc == adopted.rc == 0, why(planned, adopted)
    assert machines(planned.plan) == machines(adopted.plan) == {('vm', 'handmade1'): ['update'], ('vm', 'lost1'): ['update']}
    args = adopted.one('puls.proxmox.reconcile : Create or converge the VM', 'handmade1')['invocation']['module_args']
    assert (args['adopt'], args['shutdown_timeout'], args['agent_timeout'], args['timeout']) == (True, 30, 5, 120)
    for vmid in (150, 151):
        config = api.vm_config('pve1', vmid)
        assert 'puls-managed' in config['tags'].split(';') and config['cores'] == 2
        assert f'[puls-owner: puls-managed={vmid}]' in config['description']
    assert '[puls-provision: base.yml=3f2a9c1b7d4e]' in api.vm_config('pve1', 151)['description']


def git(repo, *args):
    return subprocess.run(['git', '-C', str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def inventory_in_git(tmp_path, inventory):
    """The inventory as tmp_path/inventory.yml in a Git work tree of its own, committed; returns the commit."""
    (tmp_path / '.gitignore').write_text('*\n!.gitignore\n!inventory.yml\n')
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inventory))
    git(tmp_path, 'init', '-q')
    git(tmp_path, 'add', '.gitignore', 'inventory.yml')
    git(tmp_path, '-c', 'user.name=Puls Test', '-c', 'user.email=test@puls.invalid', 'commit', '-q', '-m', 'the fleet')
    return git(tmp_path, 'rev-parse', 'HEAD')


def chromium(page, tmp_path):
    """The page opened by a real headless Chromium from file://: (its DOM once loaded, its console messages)."""
    profile = tmp_path / f'chromium-{len(list(tmp_path.glob("chromium-*")))}'
    done = subprocess.run(
        [
            'chromium',
            '--headless',
            '--no-sandbox',
            '--disable-gpu',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
            '--no-first-run',
            f'--user-data-dir={profile}',
            '--enable-logging=stderr',
            '--v=0',
            '--dump-dom',
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, [line for line in done.stderr.splitlines() if ':CONSOLE' in line]


def test_the_plan_names_its_commit_the_history_keeps_each_run_and_the_status_page_shows_it_in_chromium(lab, tmp_path):
    history = tmp_path / 'history'
    declared = {'web1': dict(STOPPED, pve_cores=1), 'web2': dict(STOPPED)}
    commit = inventory_in_git(tmp_path, fleet(lab, tmp_path, {}, declared))
    applied = site(lab, tmp_path, None, 'apply', PULS_HISTORY_DIR=str(history))
    assert applied.rc == 0, why(applied)
    assert applied.plan['git'] == {'commit': commit, 'dirty': False, 'work_tree': str(tmp_path)}
    assert printed_plan(applied, 'Summary (real run)')[1] == f'From commit {commit[:12]}'

    # web1 given another core and web2 dropped, not committed yet: the check run finds the drift and says so.
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(fleet(lab, tmp_path, {}, {'web1': dict(STOPPED, pve_cores=2)})))
    detected = site(lab, tmp_path, None, 'detect', check=True, PULS_HISTORY_DIR=str(history))
    assert detected.rc == 0, why(detected)
    assert detected.plan['git'] == {'commit': commit, 'dirty': True, 'work_tree': str(tmp_path)}
    assert printed_plan(detected)[1] == f'From commit {commit[:12]} (the work tree has uncommitted changes)'
    assert f'Status page: {history / "index.html"}' in detected.stdout

    documents = [json.loads(path.read_text()) for path in sorted(history.glob('*.json'))]
    assert [(doc['check_mode'], doc['outcome'], doc['git']['commit'], doc['git']['dirty']) for doc in documents] == [
        (False, 'applied', commit, False),
        (True, 'drifted', commit, True),
    ]
    assert {m['name']: (m['actions'], m['state']) for m in documents[0]['machines']} == {'web1': (['create'], 'in sync'), 'web2': (['create'], 'in sync')}
    latest = {m['name']: m for m in documents[1]['machines']}
    assert {name: (m['actions'], m['state']) for name, m in latest.items()} == {'web1': (['update'], 'drifted'), 'web2': (['orphan'], 'orphan')}
    cores = [entry for entry in latest['web1']['differences'] if entry['field'] == 'cores']
    assert [(str(entry['observed']), str(entry['declared'])) for entry in cores] == [('1', '2')], latest['web1']

    dom, console = chromium(history / 'index.html', tmp_path)
    assert console == []
    rows = dict(re.findall(r'<tr data-machine="([^"]+)">(.*?)</tr>', dom, flags=re.S))
    assert set(rows) == {'web1', 'web2'}
    assert 'class="state drifted"' in rows['web1'] and '<code>cores</code>: declared <code>2</code>' in rows['web1']
    assert 'class="state orphan"' in rows['web2']
    runs = re.findall(r'<tr data-run="[^"]+">(.*?)</tr>', dom, flags=re.S)
    assert len(runs) == 2 and all(f'<code>{commit[:12]}</code>' in run for run in runs)
    assert 'drifted' in runs[0] and '(uncommitted changes)' in runs[0] and 'applied' in runs[1]
