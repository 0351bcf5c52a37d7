# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One measured ansible-playbook run: wall time, API requests, module processes, SSH connections, memory."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import subprocess
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
COLLECTIONS = REPO / '.build' / 'collections'
PAGE_KIB = os.sysconf('SC_PAGE_SIZE') // 1024
SAMPLE_SECONDS = 0.05


@dataclasses.dataclass
class Measurement:
    """What one run cost. peak_rss_mb: the largest single process of the run (wait4's ru_maxrss: ansible-playbook
    or one of its descendants); peak_tree_rss_mb: the largest sum of the RSS of the whole process tree, sampled
    every 50 ms from /proc (shared pages of the forked workers count once per process, so it overstates)."""

    rc: int
    wall_seconds: float
    api_requests: int
    api_writes: int
    api_requests_by_path: dict
    module_processes: int
    # Module runs in all: the processes, and the collection's modules run inside a task's worker (_in_worker.py).
    module_runs: int
    modules: dict
    ssh_connections: int
    peak_rss_mb: float
    peak_tree_rss_mb: float
    changed_tasks: int
    failed_tasks: int
    slowest_tasks: list
    stdout_tail: str


def _children(pid):
    try:
        with open(f'/proc/{pid}/task/{pid}/children', encoding='ascii') as handle:
            return [int(child) for child in handle.read().split()]
    except OSError:
        return []


def _rss_kib(pid):
    try:
        with open(f'/proc/{pid}/statm', encoding='ascii') as handle:
            return int(handle.read().split()[1]) * PAGE_KIB
    except (OSError, IndexError, ValueError):
        return 0


def _tree_rss_kib(root):
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        total += _rss_kib(pid)
        pending.extend(_children(pid))
    return total


class _TreeSampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak_kib, self.done = pid, 0, threading.Event()

    def run(self):
        while not self.done.wait(SAMPLE_SECONDS):
            self.peak_kib = max(self.peak_kib, _tree_rss_kib(self.pid))


def _recap_counts(stdout):
    """changed and failed task counts summed over the PLAY RECAP lines."""
    changed = failed = 0
    for line in stdout.splitlines():
        if ' : ok=' in line:
            fields = dict(part.split('=', 1) for part in line.split(':', 1)[1].split() if '=' in part)
            changed += int(fields.get('changed', 0))
            failed += int(fields.get('failed', 0)) + int(fields.get('unreachable', 0))
    return changed, failed


def run_playbook(lab, workdir, ansible_bin, playbook, inventory, env, name, forks, check=False):
    """Run ansible-playbook (from ansible_bin, a venv's bin/) on playbook and inventory in workdir; measure it."""
    workdir = pathlib.Path(workdir)
    modules_file = workdir / f'{name}.modules'
    tasks_file = workdir / f'{name}.tasks.json'
    for stale in (modules_file, tasks_file):
        stale.unlink(missing_ok=True)
    run_env = dict(os.environ)
    run_env.update(env)
    run_env.update(
        {
            'ANSIBLE_CALLBACK_PLUGINS': str(HERE / 'callback'),
            'ANSIBLE_CALLBACKS_ENABLED': 'bench_modules',
            'ANSIBLE_FORKS': str(forks),
            'ANSIBLE_PYTHON_INTERPRETER': str(pathlib.Path(ansible_bin) / 'python'),
            'ANSIBLE_LOCAL_TEMP': str(workdir / '.ansible-local'),
            'ANSIBLE_HOME': str(workdir / '.ansible-home'),
            'ANSIBLE_HOST_KEY_CHECKING': 'False',
            'ANSIBLE_NOCOLOR': '1',
            'ANSIBLE_RETRY_FILES_ENABLED': 'False',
            'PULS_BENCH_MODULES': str(modules_file),
            'PULS_BENCH_TASKS': str(tasks_file),
        }
    )
    cmd = [str(pathlib.Path(ansible_bin) / 'ansible-playbook'), '-i', str(inventory), str(playbook)]
    cmd += ['--check', '--diff'] if check else []
    requests_before, writes_before = len(lab.requests()), len(lab.writes())
    ssh_before = lab.ssh_connections()
    log = workdir / f'{name}.log'
    with open(log, 'w', encoding='utf-8') as out:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, env=run_env, cwd=workdir, stdout=out, stderr=subprocess.STDOUT)
        sampler = _TreeSampler(proc.pid)
        sampler.start()
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - started
        sampler.done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    stdout = log.read_text(encoding='utf-8')
    names = modules_file.read_text(encoding='utf-8').split() if modules_file.exists() else []
    changed, failed = _recap_counts(stdout)
    return Measurement(
        rc=proc.returncode,
        wall_seconds=round(wall, 3),
        api_requests=len(lab.requests()) - requests_before,
        api_writes=len(lab.writes()) - writes_before,
        api_requests_by_path=_by_path(lab.requests()[requests_before:]),
        module_processes=len([name for name in names if not name.startswith('in-worker:')]),
        module_runs=len(names),
        modules={name: names.count(name) for name in sorted(set(names))},
        ssh_connections=lab.ssh_connections() - ssh_before,
        peak_rss_mb=round(usage.ru_maxrss / 1024, 1),
        peak_tree_rss_mb=round(sampler.peak_kib / 1024, 1),
        changed_tasks=changed,
        failed_tasks=failed,
        slowest_tasks=_slowest(tasks_file),
        stdout_tail='\n'.join(stdout.splitlines()[-40:]),
    )


def _by_path(requests):
    """Request counts by method and path, VMIDs, node names and task ids folded: where the requests go."""
    counts = {}
    for request in requests:
        path = re.sub(r'/nodes/[^/]+', '/nodes/{node}', request.path.split('?')[0])
        path = re.sub(r'/(qemu|lxc)/\d+', r'/\1/{vmid}', path)
        path = re.sub(r'/tasks/[^/]+', '/tasks/{upid}', path)
        key = f'{request.method} {path}'
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def _slowest(tasks_file, count=8):
    """The count tasks that took longest, with their seconds (a task included per host appears once per host)."""
    if not tasks_file.exists():
        return []
    return sorted(json.loads(tasks_file.read_text(encoding='utf-8')), key=lambda task: -task[1])[:count]
