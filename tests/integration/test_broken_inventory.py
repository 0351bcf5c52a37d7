# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An inventory that did not parse, or declares nothing, fails puls.proxmox.site with a non-zero exit status and a
message naming the file, the document and the field, before the API is asked anything: from the command line (also
under --limit, and a limit to the broken manifest's machine alone, which names no host at all), under ansible-runner
as AWX runs a job, and as the systemd recipe (examples/systemd) runs a tick. An empty fleet on purpose needs
pve_allow_empty_fleet; prune never runs on a fleet that did not parse.

Run inside a network namespace: hacking/netns-run .venv/bin/python -m pytest tests/integration/test_broken_inventory.py -p no:xdist
"""

from __future__ import annotations

import subprocess

import ansible_runner
import lab_vms
import pytest
from integration import test_awx_runner
from integration.test_awx_runner import awx_inventory, awx_job
from test_gitops import git
from test_scheduled_reconcile import tick_command

from playbooks import ansible_env, run_playbook

# The AWX runner test's fixture: the collection as an execution environment installs it.
collections_path = test_awx_runner.collections_path

SITE = '- import_playbook: puls.proxmox.site\n'
CONFIG = 'plugin: puls.proxmox.manifests\npath: proxmox\nprune: true\n'
VM = """\
apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: web-01
  node: pve1
spec:
  fromTemplate: {template}
  cores: {cores}
  state: stopped
"""
# What every message of a broken web-01.yaml says: the file, the document and the field, and the value refused.
REFUSED = "proxmox/vms/web-01.yaml (document 1): spec.cores must be a positive integer, got 'two'"


def repository(directory, cores):
    """A proxmops repository beside the plugin's configuration (prune on): web-01, with spec.cores as given."""
    (directory / 'proxmox' / 'vms').mkdir(parents=True, exist_ok=True)
    (directory / 'proxmox' / 'vms' / 'web-01.yaml').write_text(VM.format(template=lab_vms.TEMPLATE, cores=cores))
    (directory / 'cluster.proxmops.yml').write_text(CONFIG)
    return directory / 'cluster.proxmops.yml'


def site(lab, tmp_path, name, *args):
    (tmp_path / 'inventory.yml').write_text('all: {}\n')
    return run_playbook(tmp_path, SITE, lab.env, name=name, extra_args=args)


def refused(run):
    assert run.rc != 0, run.stdout
    return run.stdout + run.stderr


def owned_stray(lab):
    """An owned VM that no manifest declares: what prune destroys once the fleet parses."""
    api = lab_vms.client(lab)
    lab_vms.clone(api, 150, 'stray-01', **lab_vms.owned(150))
    return api


def names(api):
    return {entry['name'] for entry in api.cluster_vms()}


def test_a_manifest_that_does_not_parse_fails_the_run_before_any_request_and_prune_never_runs(lab, tmp_path):
    api = owned_stray(lab)
    config = repository(tmp_path, 'two')
    requests = len(lab.requests())
    # A second source that parses, and a limit to its machine: the first play (on localhost) does not run, the
    # check of the machines' play does.
    other = tmp_path / 'other.yml'
    other.write_text(f'pve_vms:\n  hosts:\n    other-01:\n      pve_image: "{lab_vms.TEMPLATE}"\n      pve_power: stopped\n')
    # A limit to the machine of the broken manifest alone: it names no host at all, so no play would run.
    runs = (
        ('broken', ()),
        ('broken-check', ('--check',)),
        ('broken-limit', ('-i', str(other), '--limit', 'other-01')),
        ('broken-limit-to-it', ('--limit', 'web-01')),
        ('broken-limit-to-it-check', ('--limit', 'web-01', '--check')),
    )
    for name, args in runs:
        output = refused(site(lab, tmp_path, name, '-i', str(config), *args))
        assert f'Nothing was read or written: inventory source {config} did not parse: {REFUSED}' in output, output
    # Not one request, so no prune: the stray is still there.
    assert len(lab.requests()) == requests
    assert 'stray-01' in names(api)

    repository(tmp_path, 1)
    fixed = site(lab, tmp_path, 'fixed', '-i', str(config))
    assert fixed.rc == 0, fixed.stdout + fixed.stderr
    assert fixed.plans == {'web-01': ['create'], 'stray-01': ['prune']}
    assert names(api) >= {'web-01'} and 'stray-01' not in names(api)


def test_an_inventory_that_declares_nothing_fails_the_run_unless_the_empty_fleet_is_on_purpose(lab, tmp_path):
    api = owned_stray(lab)
    requests = len(lab.requests())
    output = refused(site(lab, tmp_path, 'empty', '-e', 'pve_prune=true'))
    assert 'Nothing was read or written: the inventory' in output and 'declares no machine' in output, output
    assert 'set pve_allow_empty_fleet to true' in output, output
    assert len(lab.requests()) == requests and 'stray-01' in names(api)
    writes = len(lab.writes())

    # On purpose: the run succeeds and does nothing; the play of the machines has no host, so nothing is pruned.
    emptied = site(lab, tmp_path, 'emptied', '-e', 'pve_prune=true', '-e', 'pve_allow_empty_fleet=true')
    assert emptied.rc == 0, emptied.stdout + emptied.stderr
    assert len(lab.writes()) == writes and 'stray-01' in names(api)


def test_a_missing_source_names_itself(lab, tmp_path):
    output = refused(site(lab, tmp_path, 'no-source', '-i', str(tmp_path / 'missing.yml')))
    assert f'inventory source {tmp_path / "missing.yml"} does not exist' in output, output


@pytest.mark.slow(minutes=2)
def test_under_ansible_runner_a_broken_manifest_and_an_empty_inventory_fail_the_job(lab, tmp_path, collections_path):
    # AWX's copy of an inventory whose manifests source failed to import: no host, no cluster object.
    job = awx_job(tmp_path / 'empty', lab, collections_path, awx_inventory(lab, {}, {'pve_vms': [], 'pve_templates': []}), 'playbooks/site.yml')
    assert (job.status, job.rc != 0) == ('failed', True), job.stdout
    assert 'declares no machine' in job.stdout and 'pve_allow_empty_fleet' in job.stdout

    # ansible-runner with the repository's own inventory, the manifests, as a project's local inventory.
    root = tmp_path / 'local'
    config = repository(root / 'project' / 'inventory', 'two')
    (root / 'project' / 'site.yml').write_text(SITE)
    env = ansible_env(tmp_path, lab.env, tmp_path / 'local.results.jsonl')
    runner = ansible_runner.run(private_data_dir=str(root), playbook='site.yml', inventory=str(config), envvars=env, quiet=True)
    stdout = runner.stdout.read()
    assert (runner.status, runner.rc != 0) == ('failed', True), stdout
    assert REFUSED in stdout


def test_a_tick_of_the_systemd_recipe_fails_on_a_broken_manifest(lab, tmp_path):
    origin, checkout = tmp_path / 'origin.git', tmp_path / 'checkout'
    git(tmp_path, 'init', '-q', '--bare', str(origin))
    git(tmp_path, 'clone', '-q', str(origin), str(checkout))
    repository(checkout, 'two')
    git(checkout, 'add', '.')
    git(checkout, '-c', 'user.name=Puls Test', '-c', 'user.email=test@puls.invalid', 'commit', '-q', '-m', 'web-01 with a typo')
    git(checkout, 'push', '-q', 'origin', 'HEAD')
    history = tmp_path / 'history'
    env = ansible_env(
        tmp_path,
        dict(lab.env, PULS_REPO=str(checkout), PULS_INVENTORY='cluster.proxmops.yml', PULS_HISTORY_DIR=str(history)),
        tmp_path / 'tick.results.jsonl',
    )
    requests = len(lab.requests())
    for mode in ('detect', 'apply'):
        done = subprocess.run(tick_command(mode, tmp_path / 'lock'), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode not in (0, 75), done.stdout + done.stderr
        assert REFUSED in done.stdout + done.stderr
    assert len(lab.requests()) == requests
