"""Run ansible-playbook for real, as a user would, against a lab, and read back what each task did."""

import dataclasses
import json
import os
import pty
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
COLLECTIONS = REPO / '.build' / 'collections'


@dataclasses.dataclass
class PlaybookRun:
    rc: int
    stdout: str
    stderr: str
    results: list

    def for_task(self, task, host=None):
        """The results of the task with this name (on this host), in run order."""
        return [r for r in self.results if r['task'] == task and (host is None or r['host'] == host)]

    def one(self, task, host=None):
        found = self.for_task(task, host)
        assert len(found) == 1, f'expected one result of {task!r}, got {len(found)}:\n{self.stdout}'
        return found[0]['result']

    @property
    def plans(self):
        """Machine name -> actions of every puls_plan fact recorded (what the plan summary callback reads)."""
        found = {}
        for record in self.results:
            if record['status'] != 'ok':
                continue
            for result in [record['result']] + list(record['result'].get('results') or ()):
                plan = (result.get('ansible_facts') or {}).get('puls_plan')
                if plan:
                    found[plan['name']] = plan['actions']
        return found

    @property
    def changed(self):
        return [r for r in self.results if r['result'].get('changed')]

    @property
    def failed(self):
        return [r for r in self.results if r['status'] in ('failed', 'unreachable')]


def _control_path_dir(tmp_path):
    """A private, short directory for SSH control sockets (a socket path must stay under 108 bytes)."""
    marker = tmp_path / '.ssh-control-dir'
    if not marker.exists():
        marker.write_text(tempfile.mkdtemp(prefix='puls-cp-'))
    return marker.read_text()


def run_playbook(tmp_path, plays, env, inventory=None, check=False, diff=True, extra_args=(), name='play', terminal=False):
    """Write plays (a list of play dicts or YAML text) to tmp_path and run ansible-playbook on them.

    env holds the lab's PROXMOX_* variables; the collection comes from this checkout through
    ANSIBLE_COLLECTIONS_PATH, the controller Python is the venv's own. terminal=True runs it with its output on a
    pseudo-terminal, as in a user's shell: stdout then holds stdout and stderr, with plain line ends.
    """
    playbook = tmp_path / f'{name}.yml'
    playbook.write_text(plays if isinstance(plays, str) else yaml.safe_dump(plays, sort_keys=False))
    inventory_file = tmp_path / 'inventory.yml'
    if not inventory_file.exists() or inventory is not None:
        inventory_file.write_text(yaml.safe_dump(inventory or {'all': {'hosts': {'localhost': {}}}}))
    results_file = tmp_path / f'{name}.results.jsonl'
    if results_file.exists():
        results_file.unlink()
    run_env = ansible_env(tmp_path, env, results_file)
    cmd = [str(Path(sys.executable).parent / 'ansible-playbook'), '-i', str(inventory_file), str(playbook)]
    cmd += ['--check'] if check else []
    cmd += ['--diff'] if diff else []
    cmd += list(extra_args)
    if terminal:
        proc = _run_in_terminal(cmd, run_env, tmp_path)
    else:
        proc = subprocess.run(cmd, env=run_env, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    results = []
    if results_file.exists():
        results = [json.loads(line) for line in results_file.read_text().splitlines() if line]
    return PlaybookRun(proc.returncode, proc.stdout, proc.stderr, results)


def _run_in_terminal(cmd, env, cwd, timeout=600):
    """cmd with its stdout and stderr on a pseudo-terminal: a CompletedProcess with what it wrote as stdout."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    proc.wait(timeout)
    output = b''.join(chunks).decode('utf-8', 'replace').replace('\r\n', '\n')
    return subprocess.CompletedProcess(cmd, proc.returncode, output, '')


def ansible_env(tmp_path, env, results_file):
    """The environment of an ansible-playbook run of this checkout's collection, with env (the lab's PROXMOX_*
    variables...) and the test callback recording each result to results_file; the venv's ansible-playbook first on
    PATH, for a command that runs it by name."""
    run_env = dict(os.environ)
    run_env.update(env)
    run_env.update(
        {
            'PATH': os.pathsep.join([str(Path(sys.executable).parent), os.environ.get('PATH', '')]),
            'ANSIBLE_COLLECTIONS_PATH': str(COLLECTIONS),
            'ANSIBLE_CALLBACK_PLUGINS': str(HERE / 'plugins' / 'callback'),
            # The test's own callbacks (env) run alongside the one that records results.
            'ANSIBLE_CALLBACKS_ENABLED': ','.join(filter(None, ['record_results', env.get('ANSIBLE_CALLBACKS_ENABLED')])),
            'ANSIBLE_PYTHON_INTERPRETER': sys.executable,
            'ANSIBLE_LOCAL_TEMP': str(tmp_path / '.ansible-local'),
            'ANSIBLE_HOME': str(tmp_path / '.ansible-home'),
            'ANSIBLE_NOCOLOR': '1',
            'ANSIBLE_FORCE_COLOR': '0',
            'PULS_TEST_RESULTS': str(results_file),
        }
    )
    # SSH control sockets live outside network namespaces: a shared directory would let one test's
    # ansible-playbook reuse another test's connection to a guest at the same address.
    run_env.setdefault('ANSIBLE_SSH_CONTROL_PATH_DIR', _control_path_dir(tmp_path))
    return run_env


@dataclasses.dataclass
class FourRuns:
    check: PlaybookRun
    real: PlaybookRun
    check_again: PlaybookRun
    real_again: PlaybookRun


def _changes(run):
    """(host, task) -> (changed, diff) of every task result, to compare a check run with a real one."""
    return {(r['host'], r['task']): (bool(r['result'].get('changed')), r['result'].get('diff')) for r in run.results if r['status'] == 'ok'}


def four_runs(tmp_path, plays, env, inventory=None):
    """The four-run pattern every module is held to: check, real, idempotent check, idempotent real.

    The check run must report exactly what the real run then does (changed flags and diffs), and
    both runs after it must change nothing.
    """
    runs = []
    for index, check in enumerate((True, False, True, False)):
        run = run_playbook(tmp_path, plays, env, inventory=inventory, check=check, name=f'run{index + 1}')
        assert run.rc == 0, 'run {0} ({1}) failed:\n{2}\n{3}'.format(index + 1, 'check' if check else 'real', run.stdout, run.stderr)
        runs.append(run)
    check, real, check_again, real_again = runs
    assert _changes(check) == _changes(real), f'the check run did not predict the real run:\n{check.stdout}\n{real.stdout}'
    for again in (check_again, real_again):
        assert not again.changed, f'a second run changed something:\n{again.stdout}'
    return FourRuns(*runs)
