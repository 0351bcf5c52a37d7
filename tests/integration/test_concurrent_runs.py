# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Overlapping runs of puls.proxmox.site on one fleet, against the lab (docs/concurrency.md): a golden template
baked with a provision playbook and two clones of it. Two and three runs started together on an empty lab all
succeed, no guest exists twice and a further run changes nothing (the two-run case ROUNDS times in a row, each on an
idle lease node whose empty config both runs read before either writes); a rebuild and
a replace by two runs at once with prune on; a run killed with SIGKILL mid-build is recovered by the next one once
its lease expires.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_concurrent_runs.py -p no:xdist
"""

from __future__ import annotations

import collections
import os
import signal
import threading
from pathlib import Path

import lab_vms
import pytest
from lab import seed
from polling import wait_until
from test_plan_equals_run import fleet, mark_playbook, site, why, write

from ansible_collections.puls.proxmox.plugins.module_utils import _lease_plan
from ansible_collections.puls.proxmox.plugins.module_utils._files_record import MAX_NODE_NOTES_LENGTH, update_notes

GOLDEN = 'ci-golden'
BASE_TEMPLATE = 'ubuntu-24.04-cloud'
CONVERT = 'puls.proxmox.reconcile : Convert the build VM into the template'
# How often the two-run race is repeated: 3 in `make test` (each round is about two minutes of the CI's time), more
# with `make soak` (PULS_CONCURRENCY_ROUNDS=10), which hunts races that show once in several rounds.
ROUNDS = int(os.environ.get('PULS_CONCURRENCY_ROUNDS', '3'))


def declared(lab, tmp_path, vms=('web1', 'web2'), **cluster):
    """The fleet: GOLDEN baked from base.yml, and linked clones of it at static addresses."""
    clones = {
        name: {'pve_image': GOLDEN, 'pve_linked_clone': True, 'pve_ip': f'{lab.address(index + 1)}/24', 'pve_gateway': lab.gateway}
        for index, name in enumerate(vms)
    }
    clones.update(cluster.pop('extra_vms', {}))
    return fleet(lab, tmp_path, {GOLDEN: {'pve_image': BASE_TEMPLATE, 'pve_provision': ['base.yml']}}, clones, **cluster)


def at_once(lab, tmp_path, inventory, label, count, envs=None):
    """count runs of the site started together, each in a directory of its own (and with envs[index]'s environment
    variables, when given); their results in start order."""
    runs, threads = {}, []
    for index in range(count):
        directory = tmp_path / f'{label}-{index}'
        directory.mkdir(exist_ok=True)
        env = envs[index] if envs else {}
        threads.append(threading.Thread(target=lambda d=directory, i=index, e=env: runs.update({i: site(lab, d, inventory, 'site', **e)})))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    assert len(runs) == count, f'runs {sorted(set(range(count)) - set(runs))} did not end within 600 s (waiting on each other?)'
    return [runs[index] for index in range(count)]


def names(lab):
    """Name -> how many guests have it."""
    return collections.Counter(entry['name'] for entry in lab_vms.client(lab).cluster_vms())


def leases(lab):
    return _lease_plan.parse(lab_vms.client(lab).get('/nodes/pve1/config').get('description'))


def converged(lab, tmp_path, inventory, expected):
    """Each declared guest exists once, no build VM or lease is left, and one more run changes nothing."""
    counted = names(lab)
    assert {name: counted[name] for name in expected} == dict.fromkeys(expected, 1), counted
    assert max(counted.values()) == 1 and not [name for name in counted if name.endswith('-build')], counted
    assert leases(lab) == {}
    writes, connections = len(lab.writes()), lab.ssh_connections()
    again = site(lab, tmp_path, inventory, 'again')
    assert again.rc == 0 and again.plan['nothing_to_do'] and not again.changed, why(again)
    assert (len(lab.writes()), lab.ssh_connections()) == (writes, connections), why(again)


def idle_lease_node(lab):
    """The lease node's config emptied, as on a fresh node (its read then has no digest), and held by another writer
    (pve-manager PVE/NodeConfig.pm lock_config) until released_once_both_write lets it go."""

    def empty():
        lab.pve.node_configs.pop('pve1', None)
        lab.pve.hold_node_config_lock('pve1')

    lab.call(empty)


def released_once_both_write(lab, tokens):
    """A thread that lets the lease node's config lock go once a write of each run (each with its own API token) met
    it: both runs have then read the empty config and decided on that read before either write could land."""

    def release():
        try:
            wait_until(lambda: lab.call(lambda: lab.pve.node_config_lock_met['pve1']) >= set(tokens), timeout=300)
        finally:
            lab.call(lambda: lab.pve.release_node_config_lock('pve1'))

    thread = threading.Thread(target=release)
    thread.start()
    return thread


def own_tokens(lab, count):
    """An API token of the lab's user for each of count runs (the first is the lab's own): {token id: env}."""
    tokens = {lab.token_id: {}}
    for index in range(1, count):
        name, secret = f'run{index}', f'run{index}-{lab.token_secret}'
        lab.call(lambda name=name, secret=secret: lab.pve.apitokens.update({f'{seed.USER}!{name}': secret}))
        tokens[f'{seed.USER}!{name}'] = {'PROXMOX_TOKEN_NAME': name, 'PROXMOX_TOKEN_SECRET': secret}
    return tokens


def bakers(runs):
    """The conversion of each run that built the template (the others found it built, or waited for it)."""
    return [record['result'] for run in runs for record in run.for_task(CONVERT, GOLDEN) if record['status'] == 'ok']


def all_succeeded(runs):
    assert [run.rc for run in runs] == [0] * len(runs), why(*runs)


@pytest.mark.slow(minutes=4)
def test_two_runs_of_a_fleet_started_together_on_an_empty_lab_both_succeed_round_after_round(lab, tmp_path):
    mark_playbook(tmp_path, 'base.yml')
    inventory = declared(lab, tmp_path)
    tokens = own_tokens(lab, 2)
    for attempt in range(ROUNDS):
        idle_lease_node(lab)
        releaser = released_once_both_write(lab, tokens)
        runs = at_once(lab, tmp_path, inventory, f'pair{attempt}', 2, list(tokens.values()))
        releaser.join()
        all_succeeded(runs)
        # The template was built once: one run baked it, the other waited for its lease and used it.
        assert len(bakers(runs)) == 1, why(*runs)
        converged(lab, tmp_path, inventory, (GOLDEN, 'web1', 'web2'))
        empty(lab, (GOLDEN, 'web1', 'web2'))


def test_three_runs_started_together_all_succeed_and_build_the_template_once(lab, tmp_path):
    mark_playbook(tmp_path, 'base.yml')
    inventory = declared(lab, tmp_path)
    runs = at_once(lab, tmp_path, inventory, 'three', 3)
    all_succeeded(runs)
    converted = bakers(runs)
    assert len(converted) == 1, why(*runs)
    # The template's provision playbook ran once, on the one build VM.
    assert len((lab.guest(converted[0]['vmid']).home / 'marks').read_text().splitlines()) == 1
    converged(lab, tmp_path, inventory, (GOLDEN, 'web1', 'web2'))


def test_a_rebuild_and_a_replace_by_two_runs_at_once_with_prune_on_never_undo_each_other(lab, tmp_path):
    mark_playbook(tmp_path, 'base.yml')
    api = lab_vms.client(lab)
    first = site(lab, tmp_path, declared(lab, tmp_path, vms=('web1', 'web2', 'web3')), 'first')
    assert first.rc == 0, why(first)
    old_template = names_to_vmids(api)[GOLDEN]

    # base.yml changes (a rebuild), web4 replaces web3, and web2 is no longer declared (pruned).
    write(tmp_path / 'base.yml', (tmp_path / 'base.yml').read_text().replace('Leave a mark', 'Leave the new mark'))
    web4 = {'pve_image': GOLDEN, 'pve_linked_clone': True, 'pve_ip': f'{lab.address(4)}/24', 'pve_gateway': lab.gateway, 'pve_replace': 'web3'}
    inventory = declared(lab, tmp_path, vms=('web1',), extra_vms={'web4': web4}, pve_prune=True)
    runs = at_once(lab, tmp_path, inventory, 'rebuild', 2)
    all_succeeded(runs)
    assert len(bakers(runs)) == 1, why(*runs)
    replaced = [
        record['result']['changed'] for run in runs for record in run.for_task('puls.proxmox.reconcile : Destroy the machine this one replaces', 'web4')
    ]
    assert sorted(replaced) == [False, True], why(*runs)
    vmids = names_to_vmids(api)
    assert vmids[GOLDEN] != old_template and 'web3' not in vmids and 'web2' not in vmids
    # The old template stays, retired, while web1 (a linked clone of it) is declared.
    assert len([name for name in vmids if name.startswith(GOLDEN + '-')]) == 1, vmids
    converged(lab, tmp_path, inventory, (GOLDEN, 'web1', 'web4'))


def empty(lab, machines):
    """Destroy the machines through the API, clones before templates, so that the lab is as empty as at its start."""
    api = lab_vms.client(lab)
    entries = sorted(
        (entry for entry in api.cluster_vms() if entry['name'] in machines or entry['name'].startswith(GOLDEN + '-')),
        key=lambda entry: bool(entry.get('template')),
    )
    for entry in entries:
        path = f"/nodes/{entry['node']}/qemu/{entry['vmid']}"
        if entry.get('status') == 'running':
            api.run_task('POST', path + '/status/stop')
        api.run_task('DELETE', path)
    assert not names(lab).keys() & set(machines)


def names_to_vmids(api):
    return {entry['name']: int(entry['vmid']) for entry in api.cluster_vms()}


def kill_run(directory):
    """SIGKILL every process of the run started in directory: ansible-playbook, its forks and their modules."""
    killed = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            command = (Path('/proc') / pid / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
            environ = (Path('/proc') / pid / 'environ').read_bytes()
        except OSError:
            continue
        if str(directory) in command or f'PULS_TEST_RESULTS={directory}/'.encode() in environ:
            os.kill(int(pid), signal.SIGKILL)
            killed.append(int(pid))
    return killed


def test_a_run_killed_mid_build_is_recovered_by_the_next_run_once_its_lease_expires(lab, tmp_path):
    mark_playbook(tmp_path, 'base.yml')
    api = lab_vms.client(lab)
    # The killed run's lease lasts 3 s, so the next run takes it over soon.
    dying = declared(lab, tmp_path, pve_lease_ttl=3, pve_run_id='killed-run')
    killed_dir = tmp_path / 'killed'
    killed_dir.mkdir()
    outcome = {}
    runner = threading.Thread(target=lambda: outcome.update(run=site(lab, killed_dir, dying, 'site')))
    runner.start()
    # Mid-build: its build VM is being provisioned over SSH.
    assert wait_until(lambda: f'{GOLDEN}-build' in names(lab) and lab.ssh_connections() > 0 or not runner.is_alive(), timeout=300)
    assert runner.is_alive(), why(outcome['run'])
    assert kill_run(killed_dir)
    runner.join(60)
    assert outcome['run'].rc == -signal.SIGKILL
    dead_build = names_to_vmids(api)[f'{GOLDEN}-build']
    assert leases(lab)[f'template/{GOLDEN}'].run == 'killed-run'

    inventory = declared(lab, tmp_path)
    recovered = site(lab, tmp_path, inventory, 'recover')
    assert recovered.rc == 0, why(recovered)
    message = recovered.one('puls.proxmox.reconcile : Report the build VM a dead run left behind', GOLDEN)['msg']
    assert message.startswith(f'destroying build VM {GOLDEN}-build ({dead_build} on pve1), left by run killed-run on controller ')
    assert "whose lease expired" in message
    destroyed = recovered.one('puls.proxmox.reconcile : Destroy the build VM a dead run left behind', GOLDEN)
    assert destroyed['changed'] and destroyed['vmid'] == dead_build
    assert dead_build not in names_to_vmids(api).values()
    converged(lab, tmp_path, inventory, (GOLDEN, 'web1', 'web2'))


def set_lease(api, key, holder):
    """Write another run's lease on key (holder None: drop it) into the lease node's notes, with the collection's own
    compare-and-swap writer."""

    def change(notes):
        leases = {name: held for name, held in _lease_plan.parse(notes.description).items() if name != key}
        leases.update({key: holder} if holder else {})
        return _lease_plan.render(notes.description, leases, MAX_NODE_NOTES_LENGTH)

    update_notes(api, 'pve1', change, f'setting the lease {key}')


def lease_reads(lab):
    """How often the lease node's notes were read."""
    return len([r for r in lab.requests() if r.method == 'GET' and r.path.endswith('/nodes/pve1/config')])


def test_a_run_that_waits_for_one_vms_lease_holds_no_other_meanwhile_so_two_runs_never_wait_on_each_other(lab, tmp_path):
    # Two runs that each held one VM's lease and waited for the other's would wait until the timeout. The leases of
    # a run's VMs are taken all together or none (pve_lease's keys): waiting for web1, a run has not taken web2's.
    api = lab_vms.client(lab)
    vms = {
        name: {'pve_image': BASE_TEMPLATE, 'pve_ip': f'{lab.address(index + 1)}/24', 'pve_gateway': lab.gateway} for index, name in enumerate(('web1', 'web2'))
    }
    inventory = fleet(lab, tmp_path, {}, vms)
    set_lease(api, 'vm/web1', _lease_plan.Holder('other-run', 'elsewhere', 2**40))
    outcome = {}
    runner = threading.Thread(target=lambda: outcome.update(run=site(lab, tmp_path, inventory, 'site')))
    reads = lease_reads(lab)
    runner.start()
    # The run asks for web1's lease again and again (a read of the lease node's notes each time).
    assert wait_until(lambda: lease_reads(lab) >= reads + 5 or not runner.is_alive(), timeout=300)
    assert runner.is_alive(), why(outcome['run'])
    assert set(leases(lab)) == {'vm/web1'}, leases(lab)
    assert 'web1' not in names(lab) and 'web2' not in names(lab)
    set_lease(api, 'vm/web1', None)
    runner.join(300)
    assert outcome['run'].rc == 0, why(outcome['run'])
    converged(lab, tmp_path, inventory, ('web1', 'web2'))
