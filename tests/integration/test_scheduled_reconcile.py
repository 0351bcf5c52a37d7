# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scheduled reconcile without AWX (examples/systemd, docs/gitops.md): the command of puls-reconcile@.service,
run as systemd runs it, against the lab, from a local Git repository that a commit is pushed to; its lock; and the
units as systemd-analyze verifies them.

Run inside a network namespace: hacking/netns-run .venv/bin/python -m pytest tests/integration/test_scheduled_reconcile.py -p no:xdist
"""

from __future__ import annotations

import configparser
import fcntl
import json
import shlex
import shutil
import subprocess

import lab_vms
import yaml
from test_gitops import STOPPED, git
from test_plan_equals_run import fleet

from playbooks import REPO, ansible_env

UNITS = REPO / 'examples' / 'systemd'
INSTALLED_SCRIPT = '/usr/local/bin/puls-reconcile'


def unit(name):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read(UNITS / name)
    return parser


def tick_command(mode, lock):
    """ExecStart of puls-reconcile@MODE.service, with the specifier %i expanded as systemd does, the script at its
    installed path taken from examples/, and the lock in the test's directory."""
    words = shlex.split(unit('puls-reconcile@.service')['Service']['ExecStart'])
    assert words[:4] == ['/usr/bin/flock', '--nonblock', '--conflict-exit-code', '75'] and words[-2:] == [INSTALLED_SCRIPT, '%i']
    return words[:4] + [str(lock)] + [str(UNITS / 'puls-reconcile'), mode]


def test_a_tick_pulls_the_repository_detect_reports_a_pushed_change_apply_applies_it_and_the_lock_keeps_runs_apart(lab, tmp_path):
    api = lab_vms.client(lab)
    origin, author, checkout = tmp_path / 'origin.git', tmp_path / 'author', tmp_path / 'checkout'
    git(tmp_path, 'init', '-q', '--bare', str(origin))
    git(tmp_path, 'clone', '-q', str(origin), str(author))

    def push(cores, message):
        (author / 'inventory.yml').write_text(yaml.safe_dump(fleet(lab, tmp_path, {}, {'tick1': dict(STOPPED, pve_cores=cores)})))
        git(author, 'add', 'inventory.yml')
        git(author, '-c', 'user.name=Puls Test', '-c', 'user.email=test@puls.invalid', 'commit', '-q', '-m', message)
        git(author, 'push', '-q', 'origin', 'HEAD')
        return git(author, 'rev-parse', 'HEAD')

    first = push(1, 'tick1 with one core')
    git(tmp_path, 'clone', '-q', str(origin), str(checkout))
    history, lock = tmp_path / 'history', tmp_path / 'puls-reconcile.lock'
    env = ansible_env(
        tmp_path, dict(lab.env, PULS_REPO=str(checkout), PULS_INVENTORY='inventory.yml', PULS_HISTORY_DIR=str(history)), tmp_path / 'tick.results.jsonl'
    )

    def tick(mode):
        done = subprocess.run(tick_command(mode, lock), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
        documents = [json.loads(path.read_text()) for path in sorted(history.glob('*.json'))] if history.exists() else []
        return done, documents

    def tick1():
        entry = next(entry for entry in api.cluster_vms() if entry['name'] == 'tick1')
        return api.vm_config(entry['node'], entry['vmid'])

    done, documents = tick('apply')
    assert done.returncode == 0, done.stdout + done.stderr
    assert (documents[-1]['outcome'], documents[-1]['git']['commit']) == ('applied', first)
    assert tick1()['cores'] == 1

    second = push(2, 'tick1 with two cores')
    done, documents = tick('detect')
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(checkout, 'rev-parse', 'HEAD') == second
    assert (documents[-1]['check_mode'], documents[-1]['outcome'], documents[-1]['git']) == (
        True,
        'drifted',
        {'commit': second, 'dirty': False, 'work_tree': str(checkout)},
    )
    assert {m['name']: m['actions'] for m in documents[-1]['machines']} == {'tick1': ['update']}
    assert 'Plan (check mode: nothing was changed)' in done.stdout and (history / 'index.html').exists()
    assert tick1()['cores'] == 1  # reported, not applied

    done, documents = tick('apply')
    assert done.returncode == 0, done.stdout + done.stderr
    assert (documents[-1]['check_mode'], documents[-1]['outcome'], documents[-1]['git']['commit']) == (False, 'applied', second)
    assert tick1()['cores'] == 2

    # While another run holds the lock, a tick ends at once with the status the unit counts as success, running nothing.
    with open(lock, 'w', encoding='utf-8') as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        done, later = tick('apply')
    assert done.returncode == 75 and int(unit('puls-reconcile@.service')['Service']['SuccessExitStatus']) == 75
    assert later == documents


def test_the_units_pass_systemd_analyze_verify_for_both_modes(tmp_path):
    for mode in ('detect', 'apply'):
        for kind in ('service', 'timer'):
            shutil.copy(UNITS / f'puls-reconcile@.{kind}', tmp_path / f'puls-reconcile@{mode}.{kind}')
    units = sorted(str(path) for path in tmp_path.glob('puls-reconcile@*'))
    done = subprocess.run(['systemd-analyze', 'verify', *units], capture_output=True, text=True, timeout=120, check=False)
    # Warnings (an unknown setting, a value that does not parse) go to stderr with status 0: none allowed.
    assert (done.returncode, done.stderr) == (0, ''), done.stderr
    assert unit('puls-reconcile@.timer')['Install']['WantedBy'] == 'timers.target'
    script = subprocess.run(['sh', '-n', str(UNITS / 'puls-reconcile')], capture_output=True, text=True, check=False)
    assert script.returncode == 0, script.stderr
