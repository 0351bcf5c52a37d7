# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_vm under load and faults, through real ansible-playbook runs against the lab: 20 parallel forks, a failing
clone task, a held config lock, a flaky network, an expired login ticket.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pve_vm_faults.py -n 2
"""

from __future__ import annotations

import threading
import time

import pytest
from pve_vm_plays import TASK, inventory, names_count, sent, vm_env, vm_named, vm_play

from ansible_collections.puls.proxmox.plugins.module_utils._api import PveClient, RetryPolicy
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from playbooks import run_playbook

TEMPLATE = 9017


def once(condition, action):
    """Run action() as soon as condition() holds (checked every 50 ms, in a thread); returns the thread."""

    def watch():
        while not condition():
            time.sleep(0.05)
        action()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


@pytest.mark.lab(time_scale=0.01, clone_secs=100)
def test_twenty_forks_cloning_one_template_create_twenty_distinct_vms_once(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    vms = {'fleet-%02d' % n: {'image': TEMPLATE} for n in range(20)}
    first = run_playbook(tmp_path, vm_play(), env, inventory(vms), extra_args=('--forks', '20'), name='first')
    assert first.rc == 0 and not first.failed, first.stdout
    vmids = [first.one(TASK, host)['vmid'] for host in vms]
    assert len(set(vmids)) == 20 and len(first.changed) == 20
    counts = names_count(lab)
    assert all(counts[host] == 1 for host in vms)
    assert [vm_named(lab, host).vmid for host in vms] == vmids
    second = run_playbook(tmp_path, vm_play(), env, inventory(vms), extra_args=('--forks', '20'), name='second')
    assert second.rc == 0 and not second.changed
    assert [second.one(TASK, host)['vmid'] for host in vms] == vmids


def test_a_failing_clone_task_fails_with_its_exit_status_and_log(lab, tmp_path):
    lab.call(lambda: lab.pve.storages['local-lvm'].update(avail=1 << 30))  # the template's disk is 3.5 GiB
    run = run_playbook(tmp_path, vm_play(), vm_env(lab, tmp_path), inventory({'full1': {'image': TEMPLATE, 'cores': 2}}))
    assert run.rc != 0
    [record] = run.for_task(TASK, 'full1')
    failure = record['result']
    assert record['status'] == 'failed'
    assert failure['msg'].startswith('cloning VM 9017 on pve1 as full1 failed: task qmclone of 9017 on pve1 (UPID:pve1:')
    assert failure['task_exitstatus'] == "clone failed: unable to write to storage 'local-lvm': No space left on device"
    assert 'last lines of its log:' in failure['msg'] and failure['task_log'][-1].startswith('TASK ERROR: clone failed')
    assert names_count(lab)['full1'] == 0
    assert not sent(lab, 'POST', '/config'), 'nothing was configured after the failed clone'


@pytest.mark.lab(time_scale=0.01)
def test_a_config_lock_held_for_seconds_is_waited_out(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    assert run_playbook(tmp_path, vm_play(), env, inventory({'lock1': {'image': TEMPLATE}}), name='create').rc == 0
    vmid = vm_named(lab, 'lock1').vmid
    config_writes = '/qemu/%d/config' % vmid
    before = len(sent(lab, 'POST', config_writes))
    # Another task holds the lock until the module has been refused it and has tried again.
    lab.call(lab.pve.hold_config_lock(vmid, None))
    watcher = once(lambda: len(sent(lab, 'POST', config_writes)) >= before + 2, lambda: lab.call(lambda: lab.pve.release_config_lock(vmid)))
    run = run_playbook(tmp_path, vm_play(), env, inventory({'lock1': {'cores': 3}}), name='locked')
    watcher.join(5)
    assert not watcher.is_alive()
    assert run.rc == 0 and run.one(TASK, 'lock1')['changed'], run.stdout
    assert str(vm_named(lab, 'lock1').config['cores']) == '3'


def unreliable_answers(lab, tries=40):
    """How many of `tries` single-attempt reads failed: proof that the network really was flaky."""
    client = PveClient(lab.url, lab.user, lab.token_name, lab.token_secret, ca_path=str(lab.cafile), retry=RetryPolicy(attempts=1))
    failed = 0
    for _try in range(tries):
        try:
            client.get('/version')
        except PveApiError:
            failed += 1
    return failed


@pytest.mark.lab(time_scale=0.01)
def test_a_flaky_network_creates_each_vm_once(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    vms = {'flaky-%d' % n: {'image': TEMPLATE, 'cores': 2, 'tags': ['flaky'], 'state': 'started'} for n in range(4)}
    lab.call(lambda: lab.pve.flaky_network(drop_rate=0.2, seed=20))
    first = run_playbook(tmp_path, vm_play(), env, inventory(vms), name='first')
    second = run_playbook(tmp_path, vm_play(), env, inventory(vms), name='second')
    assert unreliable_answers(lab) > 0, 'the network dropped nothing, so this test proved nothing'
    lab.call(lambda: lab.pve.flaky_network(drop_rate=0.0))
    assert first.rc == 0 and second.rc == 0, first.stdout + second.stdout
    assert len(first.changed) == 4 and not second.changed
    counts = names_count(lab)
    assert all(counts[host] == 1 for host in vms)
    assert all(vm_named(lab, host).status == 'running' for host in vms)


@pytest.mark.lab(time_scale=0.01, clone_secs=200)
def test_a_login_ticket_expiring_mid_run_is_renewed(lab, tmp_path):
    env = vm_env(lab, tmp_path, PROXMOX_PASSWORD=lab.password)
    env.pop('PROXMOX_TOKEN_SECRET')
    # While the clone runs (2 s), the module waits for its task: the ticket goes then.
    watcher = once(lambda: any(r.path.endswith('/clone') for r in lab.requests()), lambda: lab.call(lab.pve.revoke_tickets))
    run = run_playbook(tmp_path, vm_play(), env, inventory({'ticket1': {'image': TEMPLATE, 'state': 'started'}}))
    watcher.join(5)
    assert not watcher.is_alive()
    assert run.rc == 0, run.stdout
    assert names_count(lab)['ticket1'] == 1 and vm_named(lab, 'ticket1').status == 'running'
    logins = [r for r in lab.requests() if r.path.endswith('/access/ticket')]
    assert len(logins) == 2, 'one login, and one more after the ticket was revoked'
    assert lab.password not in run.stdout + run.stderr + repr(run.results)
