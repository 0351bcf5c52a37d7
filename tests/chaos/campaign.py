# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make chaos: the demo-like fleet reconciled round after round by `ansible-playbook puls.proxmox.site` while the
lab injects faults drawn from a seed; the invariants are checked after every round.

    hacking/netns-run .venv/bin/python tests/chaos/campaign.py [--rounds 20] [--seed 2026] [--faults 4]

Each round: maybe a change of the declared state (fleet.py), a fault schedule (lab/faults.py) started on the lab's
loop, one real run, the faults stopped, the invariants checked (invariants.py). The campaign's own fault kind,
overlapping_run, starts a second run of the same inventory within the first seconds of a round's run (two runs at
once, docs/concurrency.md): the invariants must hold after both. After the last round one more run
without faults must converge, and a final one must change nothing and open no SSH connection. Prints the figures and
writes tests/chaos/results/campaign-<seed>.json; exits 1 on any violation or without convergence.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import logging
import os
import pathlib
import platform
import random
import shutil
import subprocess
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE), str(REPO / 'tests'), str(REPO / 'tests' / 'integration'), str(REPO / '.build' / 'collections')]

import fleet as fleet_module  # noqa: E402
import invariants  # noqa: E402
from lab.faults import KINDS, FaultDriver  # noqa: E402
from lab.serving import Lab  # noqa: E402

from playbooks import run_playbook  # noqa: E402

# PVE seconds x TIME_SCALE = real seconds: a 60 s shutdown timeout lasts 3 s, a clone 0.25 s.
TIME_SCALE = 0.05
CLONE_SECS = 5
SITE = '- import_playbook: puls.proxmox.site\n'
# Kinds that need password logins: an API token has no ticket to revoke.
TICKET_KINDS = ('revoked_tickets',)
# The campaign's own kind: a second run of the round's inventory, started this many real seconds into the round's run.
OVERLAPPING_RUN = 'overlapping_run'
OVERLAP_START = (0.0, 3.0)
# The share of rounds that overlap when the kind is chosen, drawn from a generator of its own, so that the seeds'
# mutations and lab faults stay what they were without it.
OVERLAP_SHARE = 0.5
# aiohttp logs a traceback for every request the flaky network drops.
logging.getLogger('aiohttp.server').setLevel(logging.CRITICAL)


def auth_env(lab, password):
    """The lab's PROXMOX_* settings with token auth, or with root's password (login tickets, which can be revoked)."""
    env = dict(lab.env)
    if password:
        for name in ('PROXMOX_TOKEN_NAME', 'PROXMOX_TOKEN_SECRET'):
            env.pop(name)
        env['PROXMOX_PASSWORD'] = lab.password
    return env


def recap(run):
    """(changed, failed) task results of a run, and the hosts that failed."""
    failed_hosts = sorted({r['host'] for r in run.failed})
    return len(run.changed), len(run.failed), failed_hosts


def last_error(run):
    for record in reversed(run.failed):
        message = record['result'].get('msg') or ''
        if message:
            return '{0}: {1}'.format(record['host'], ' '.join(str(message).split())[:300])
    return ''.join((run.stderr or run.stdout).strip().splitlines()[-1:])


class Campaign:
    def __init__(self, args):
        self.args = args
        self.random = random.Random(args.seed)
        self.overlap_random = random.Random(f'overlap-{args.seed}')
        self.workdir = args.results / 'work' / f'seed-{args.seed}'
        self.rounds = []
        self.violations = []

    def run(self):
        if self.workdir.exists():
            shutil.rmtree(self.workdir)
        self.workdir.mkdir(parents=True)
        started = time.monotonic()
        with Lab(self.workdir / 'lab', time_scale=TIME_SCALE, clone_secs=CLONE_SECS) as lab:
            self.lab = lab
            self.fleet = fleet_module.Fleet(lab, self.workdir, small=self.args.fleet == 'small')
            self.checker = invariants.Checker(lab, self.fleet)
            self.driver = FaultDriver(lab, self.args.seed)
            print(
                f'chaos: seed {self.args.seed}, {self.args.rounds} rounds, {self.args.faults} faults a round, {self.args.fleet} fleet, lab {lab.url}',
                flush=True,
            )
            warm = self.playbook('round-00-warm-up', password=False)
            self.report_round(0, 'none', [], warm)
            if warm.rc != 0:
                raise SystemExit('chaos: the warm-up run without faults failed:\n' + warm.stdout[-4000:])
            self.checker.write_human_notes()
            self.check(0, warm)
            for number in range(1, self.args.rounds + 1):
                mutation = self.fleet.mutate(self.random, number)
                password = number % 2 == 0
                kinds = [kind for kind in self.args.kinds if (password or kind not in TICKET_KINDS) and kind != OVERLAPPING_RUN]
                faults = self.driver.plan(self.args.faults, self.args.window, kinds) if kinds else []
                overlap = OVERLAPPING_RUN in self.args.kinds and self.overlap_random.random() < OVERLAP_SHARE
                delay = round(self.overlap_random.uniform(*OVERLAP_START), 2)
                self.driver.start(faults)
                try:
                    run, second = self.rounds_runs(f'round-{number:02d}', password, delay if overlap else None)
                finally:
                    self.driver.stop()
                self.report_round(number, mutation, faults, run, overlap=second)
                self.check(number, run, second)
            converge = self.playbook('converge', password=False)
            self.report_round('converge', 'none', [], converge)
            self.check('converge', converge)
            connections = lab.ssh_connections()
            final = self.playbook('final', password=False)
            final_ssh = lab.ssh_connections() - connections
            self.report_round('final', 'none', [], final, ssh=final_ssh)
            self.check('final', final)
        changed, _failed, _hosts = recap(final)
        self.final = {
            'converge_rc': converge.rc,
            'final_rc': final.rc,
            'final_changed': changed,
            'final_ssh_connections': final_ssh,
            'holds': converge.rc == 0 and final.rc == 0 and changed == 0 and final_ssh == 0,
        }
        self.wall = round(time.monotonic() - started, 1)
        return self.summary()

    def playbook(self, name, password, directory=None):
        inventory = self.fleet.inventory()
        started = time.monotonic()
        directory = directory or self.workdir
        directory.mkdir(exist_ok=True)
        # Ansible's own log: every task with its start time.
        env = dict(auth_env(self.lab, password), ANSIBLE_LOG_PATH=str(self.workdir / f'{name}.ansible.log'))
        run = run_playbook(directory, SITE, env, inventory=inventory, diff=False, name=name)
        run.wall = round(time.monotonic() - started, 1)
        run.password = password
        return run

    def rounds_runs(self, name, password, overlap_delay):
        """The round's run, and with overlap_delay (real seconds) a second run of the same inventory started then, in a
        directory of its own; (run, second run or None)."""
        if overlap_delay is None:
            return self.playbook(name, password), None
        second = {}

        def overlapping():
            threading.Event().wait(overlap_delay)
            second['run'] = self.playbook(name + '-overlap', password, self.workdir / (name + '-overlap'))
            second['run'].delay = overlap_delay

        thread = threading.Thread(target=overlapping)
        thread.start()
        run = self.playbook(name, password)
        thread.join()
        return run, second['run']

    def check(self, number, run, second=None):
        found = self.checker.check(succeeded=run.rc == 0 and (second is None or second.rc == 0))
        for violation in found:
            print(f'  VIOLATION round {number}: {violation}', flush=True)
        self.violations += [{'round': number, 'violation': violation} for violation in found]
        self.rounds[-1]['violations'] = found
        self.rounds[-1]['figures'] = self.checker.figures()

    def report_round(self, number, mutation, faults, run, ssh=None, overlap=None):
        changed, failed, hosts = recap(run)
        record = {
            'round': number,
            'mutation': mutation,
            'auth': 'password' if run.password else 'token',
            'rc': run.rc,
            'wall_seconds': run.wall,
            'changed': changed,
            'failed': failed,
            'failed_hosts': hosts,
            # A fault with no detail never started: the run ended first, or it found nothing to hit.
            'faults': [{'kind': fault.kind, 'at': fault.at, 'secs': fault.secs, 'injected': bool(fault.detail), 'detail': fault.detail} for fault in faults],
        }
        if run.rc:
            record['error'] = last_error(run)
        if ssh is not None:
            record['ssh_connections'] = ssh
        if overlap is not None:
            overlap_changed, overlap_failed, overlap_hosts = recap(overlap)
            record['overlap'] = {
                'after_seconds': overlap.delay,
                'rc': overlap.rc,
                'wall_seconds': overlap.wall,
                'changed': overlap_changed,
                'failed': overlap_failed,
                'failed_hosts': overlap_hosts,
            }
            if overlap.rc:
                record['overlap']['error'] = last_error(overlap)
        self.rounds.append(record)
        kinds = collections.Counter(fault.kind for fault in faults if fault.detail)
        if overlap is not None:
            kinds[OVERLAPPING_RUN] += 1
        print(
            'round {0:>8}  rc={1} {2:6.1f} s  changed={3:<3} failed={4:<2} {5:<8} mutation: {6:<28} faults: {7}'.format(
                number,
                run.rc,
                run.wall,
                changed,
                failed,
                record['auth'],
                mutation,
                ', '.join(f'{count}x{kind}' for kind, count in sorted(kinds.items())) or '-',
            ),
            flush=True,
        )
        if run.rc:
            print('          failed: {0}'.format(record['error']), flush=True)
        if overlap is not None:
            print(
                '          overlapping run after {0} s: rc={1} {2:6.1f} s  changed={3} failed={4}{5}'.format(
                    overlap.delay, overlap.rc, overlap.wall, overlap_changed, overlap_failed, '  failed: ' + record['overlap']['error'] if overlap.rc else ''
                ),
                flush=True,
            )

    def summary(self):
        fault_rounds = [r for r in self.rounds if isinstance(r['round'], int) and r['round'] > 0]
        return {
            'seed': self.args.seed,
            'fleet': self.args.fleet,
            'rounds': len(fault_rounds),
            'faults_per_round': self.args.faults,
            'fault_window_seconds': self.args.window,
            'time_scale': TIME_SCALE,
            'wall_seconds': self.wall,
            'faults_injected': dict(
                sorted((self.driver.injected + collections.Counter({OVERLAPPING_RUN: len([r for r in fault_rounds if 'overlap' in r])})).items())
            ),
            'faults_skipped': dict(sorted(self.driver.skipped.items())),
            'task_errors_met': self.driver.hit['task_error'],
            'rounds_failed': [r['round'] for r in fault_rounds if r['rc'] or r.get('overlap', {}).get('rc')],
            'violations': self.violations,
            'violations_by_invariant': dict(collections.Counter(v['violation'].split(':')[0] for v in self.violations)),
            'invariant_checks': self.checker.checks,
            'final_convergence': self.final,
            'per_round': self.rounds,
            'machine': machine(),
        }


def machine():
    commit = subprocess.run(['git', '-C', str(REPO), 'describe', '--always', '--dirty'], capture_output=True, text=True, check=False).stdout.strip()
    return {
        'cpus': os.cpu_count(),
        'python': platform.python_version(),
        'platform': platform.platform(),
        'commit': commit,
        'date': datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds'),
    }


def print_figures(result):
    print('\n== chaos figures (seed {0})'.format(result['seed']))
    print('rounds with faults      {0}'.format(result['rounds']))
    print(
        'faults injected         {0} ({1})'.format(
            sum(result['faults_injected'].values()), ', '.join(f'{kind} {count}' for kind, count in result['faults_injected'].items())
        )
    )
    print('task errors met         {0} of {1} armed'.format(result['task_errors_met'], result['faults_injected'].get('task_error', 0)))
    print('rounds that failed      {0} {1}'.format(len(result['rounds_failed']), result['rounds_failed'] or ''))
    print('invariant checks        {0}'.format(', '.join(f'{k} {v}' for k, v in result['invariant_checks'].items())))
    print('invariant violations    {0} (must be 0) {1}'.format(len(result['violations']), result['violations_by_invariant'] or ''))
    final = result['final_convergence']
    print(
        'final convergence       {0} (converge rc={1}; final rc={2}, changed={3}, SSH connections={4})'.format(
            'holds' if final['holds'] else 'DOES NOT HOLD', final['converge_rc'], final['final_rc'], final['final_changed'], final['final_ssh_connections']
        )
    )
    print('wall                    {0} s'.format(result['wall_seconds']))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--rounds', type=int, default=20, help='rounds with faults (default 20)')
    parser.add_argument('--seed', type=int, default=2026, help='seed of every random choice (default 2026)')
    parser.add_argument('--faults', type=int, default=4, help='faults drawn per round (default 4)')
    parser.add_argument(
        '--fleet', choices=('demo', 'small'), default='demo', help='demo: a golden template and four VMs (default); small: two VMs of the base template'
    )
    parser.add_argument('--window', type=float, default=15.0, help='real seconds from the start of a run within which its faults start (default 15)')
    parser.add_argument('--kinds', default=','.join(KINDS + (OVERLAPPING_RUN,)), help='fault kinds, comma-separated (default: all)')
    parser.add_argument('--results', type=pathlib.Path, default=HERE / 'results')
    args = parser.parse_args(argv)
    args.kinds = [kind for kind in args.kinds.split(',') if kind]
    unknown = set(args.kinds) - set(KINDS + (OVERLAPPING_RUN,))
    if unknown or args.rounds < 1 or args.faults < 0 or args.window <= 0:
        parser.error('kinds are {0}; rounds >= 1, faults >= 0, window > 0'.format(', '.join(KINDS + (OVERLAPPING_RUN,))))
    args.results = args.results.absolute()
    # The runs talk to the campaign's lab only, with its settings alone (a password round must not inherit a token).
    for name in [name for name in os.environ if name.startswith('PROXMOX_')]:
        del os.environ[name]
    args.results.mkdir(parents=True, exist_ok=True)
    result = Campaign(args).run()
    path = args.results / f'campaign-{args.seed}.json'
    path.write_text(json.dumps(result, indent=2) + '\n', encoding='utf-8')
    print_figures(result)
    print(f'JSON in {path}')
    return 0 if not result['violations'] and result['final_convergence']['holds'] else 1


if __name__ == '__main__':
    sys.exit(main())
