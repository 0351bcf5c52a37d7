# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""The API client against the lab: auth, permission wording, failed tasks, locks, a flaky network,
ticket expiry, and VMIDs allocated by parallel processes.

Run inside a network namespace: unshare -rn sh -c 'ip link set lo up && .venv/bin/pytest tests/integration/test_client_lab.py'.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils import _api
from ansible_collections.puls.proxmox.plugins.module_utils._api import PveClient
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._progress import ProgressNotes
from ansible_collections.puls.proxmox.plugins.module_utils._vmid import create_with_new_vmid
from ansible_collections.puls.proxmox.plugins.module_utils._volumes import upload_volume

TEMPLATE = 9017
CLONE = '/nodes/pve1/qemu/%d/clone' % TEMPLATE
COLLECTIONS = str(pathlib.Path(__file__).resolve().parents[2] / '.build' / 'collections')


def token_client(lab, **options):
    return PveClient(lab.url, lab.user, lab.token_name, lab.token_secret, ca_path=str(lab.cafile), **options)


def password_client(lab, user=None, password=None, **options):
    return PveClient(lab.url, user or lab.user, api_password=password or lab.password, ca_path=str(lab.cafile), **options)


def clone(client, name, vmid=None):
    """Clone the lab's template as name; returns (vmid, TaskResult)."""
    return create_with_new_vmid(client, lambda new: client.create_vm(CLONE, new, name=name), vmid=vmid, task_timeout=60)


@pytest.fixture(autouse=True)
def private_lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))


def test_token_and_password_both_read_the_cluster(lab):
    for client in (token_client(lab), password_client(lab)):
        guests = {guest['vmid']: guest['name'] for guest in client.cluster_vms()}
        assert guests[TEMPLATE] == 'ubuntu-24.04-cloud'
        assert client.vm_config('pve1', TEMPLATE)['template'] == 1


def test_an_upload_is_streamed_with_token_and_with_ticket_auth_noting_the_bytes_sent(lab, tmp_path):
    data = bytes(range(256)) * 4096
    for auth, client in (('token', token_client(lab)), ('ticket', password_client(lab))):
        client.progress = ProgressNotes(str(tmp_path / ('%s.jsonl' % auth)))
        volid = upload_volume(client, 'pve1', 'local', '%s.iso' % auth, data, 'iso')
        assert lab.volume_bytes(volid) == data
        notes = [json.loads(line) for line in (tmp_path / ('%s.jsonl' % auth)).read_text().splitlines()]
        sent = [(note['sent'], note['total']) for note in notes if 'sent' in note]
        assert sent[-1] == (len(data), len(data)) and sent == sorted(sent)
        assert {note['what'] for note in notes if 'sent' in note} == {'uploading %s.iso (%d bytes) to storage local of node pve1' % (auth, len(data))}


def test_wrong_token_secret_is_reported_naming_the_token_not_the_secret(lab):
    client = PveClient(lab.url, lab.user, lab.token_name, 'wrong-Secret-42', ca_path=str(lab.cafile))
    with pytest.raises(PveApiError) as caught:
        client.cluster_vms()
    message = str(caught.value)
    assert caught.value.status == 401
    assert 'PVE rejected API token root@pam!puls' in message and 'wrong-Secret-42' not in message
    assert lab.token_secret not in message


def test_missing_privilege_is_reported_with_privilege_path_and_grant_hint(lab):
    def restrict():
        lab.pve.users['alice@pve'] = 'alice-Pass-1'
        lab.pve.grant('alice@pve', '/', 'VM.Audit', 'Sys.Audit')

    lab.call(restrict)
    client = password_client(lab, 'alice@pve', 'alice-Pass-1')
    with pytest.raises(PveApiError) as caught:
        client.put('/nodes/pve1/qemu/%d/config' % TEMPLATE, cores=4, idempotent=True, context='updating config of VM %d on pve1' % TEMPLATE)
    message = str(caught.value)
    assert caught.value.status == 403
    assert message.startswith('updating config of VM 9017 on pve1 failed (HTTP 403): Permission check failed (/vms/9017, VM.Config.CPU)')
    assert 'grant VM.Config.CPU on /vms/9017 to user alice@pve' in message and 'alice-Pass-1' not in message


def test_failed_task_surfaces_its_exit_status_and_log(lab):
    client = token_client(lab)
    vmid, _result = clone(client, 'boot-fails')
    start = '/nodes/pve1/qemu/%d/status/start' % vmid
    lab.call(lambda: lab.pve.fail('POST', start, error='qemu_exited_code'))
    with pytest.raises(PveApiError) as caught:
        client.run_task('POST', start, context='starting VM %d on pve1' % vmid)
    error = caught.value
    assert error.exitstatus == 'QEMU exited with code 1'
    assert error.log[-1] == 'TASK ERROR: QEMU exited with code 1'
    assert str(error).startswith('starting VM %d on pve1 failed: task qmstart of %d on pve1 (UPID:pve1:' % (vmid, vmid))
    assert 'TASK ERROR: QEMU exited with code 1' in str(error)


@pytest.mark.lab(time_scale=0.01)
def test_config_lock_held_for_seconds_is_waited_out(lab):
    client = token_client(lab)
    vmid, _result = clone(client, 'locked')
    lab.call(lab.pve.hold_config_lock(vmid, 250))  # 2.5 real seconds
    started = time.monotonic()
    client.put('/nodes/pve1/qemu/%d/config' % vmid, description='waited', idempotent=True)
    assert time.monotonic() - started >= 2
    assert len([r for r in lab.writes() if r.path.endswith('/qemu/%d/config' % vmid)]) > 1
    assert client.vm_config('pve1', vmid)['description'] == 'waited'


@pytest.mark.lab(time_scale=0.01, clone_secs=200)
def test_clone_lock_is_waited_for_before_the_vm_is_used(lab):
    client = token_client(lab)
    vmid = 150
    upid = client.create_vm(CLONE, vmid, name='slow-clone')
    started = time.monotonic()
    config = client.wait_unlocked('pve1', vmid, 30)
    assert 'lock' not in config and config['name'] == 'slow-clone'
    assert time.monotonic() - started >= 1
    assert client.wait_task(upid, 30).exitstatus == 'OK'


def test_flaky_network_loses_and_duplicates_nothing_while_creating_vms(lab, monkeypatch):
    monkeypatch.setattr(_api, 'CREATE_SETTLE_SECONDS', 0.2)
    client = token_client(lab)
    lab.call(lambda: lab.pve.flaky_network(drop_rate=0.2, seed=20))
    created = {}
    for n in range(6):
        vmid, result = clone(client, 'flaky-%d' % n)
        created['flaky-%d' % n] = vmid
        assert result.exitstatus == 'OK'
    lab.call(lambda: lab.pve.flaky_network(drop_rate=0.0))
    dropped = client.request_count - len(lab.requests())
    names = collections.Counter(guest['name'] for guest in token_client(lab).cluster_vms())
    assert all(names['flaky-%d' % n] == 1 for n in range(6))
    assert sorted(guest['vmid'] for guest in token_client(lab).cluster_vms() if guest['name'].startswith('flaky-')) == sorted(created.values())
    assert dropped > 0, 'the network dropped nothing, so this test proved nothing'


def test_expired_ticket_is_renewed_by_logging_in_again(lab):
    logins = []
    client = password_client(lab, on_request=lambda method, path, status: logins.append(status) if path == '/access/ticket' else None)
    client.cluster_vms()
    lab.call(lab.pve.revoke_tickets)
    assert any(guest['vmid'] == TEMPLATE for guest in client.cluster_vms())
    assert logins == [200, 200]


ALLOCATE = '''
import json, os, sys
from ansible_collections.puls.proxmox.plugins.module_utils._api import PveClient
from ansible_collections.puls.proxmox.plugins.module_utils._vmid import create_with_new_vmid
from ansible_collections.puls.proxmox.plugins.module_utils._volumes import upload_volume
env = os.environ
client = PveClient(env['PROXMOX_URL'], env['PROXMOX_USER'], env['PROXMOX_TOKEN_NAME'], env['PROXMOX_TOKEN_SECRET'],
                   ca_path=env['PROXMOX_CA_PATH'])
tag, count = sys.argv[1], int(sys.argv[2])
created = []
for n in range(count):
    name = '%s-%d' % (tag, n)
    vmid, _ = create_with_new_vmid(client, lambda new: client.create_vm('/nodes/pve1/qemu/9017/clone', new, name=name),
                                   task_timeout=60)
    created.append(vmid)
print(json.dumps(created))
'''


def allocate_in_parallel(lab, tmp_path, lock_dirs, count=4):
    """Run one allocating process per lock dir at once; returns {tag: [vmid, ...]}."""
    processes = {}
    for n, lock_dir in enumerate(lock_dirs):
        env = dict(os.environ, PYTHONPATH=COLLECTIONS, XDG_CACHE_HOME=str(tmp_path / lock_dir), **lab.env)
        processes['p%d' % n] = subprocess.Popen(
            [sys.executable, '-c', ALLOCATE, 'p%d' % n, str(count)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    created = {}
    for tag, process in processes.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        created[tag] = json.loads(out)
    return created


def assert_each_vm_exists_once(lab, created):
    ids = [vmid for vmids in created.values() for vmid in vmids]
    assert len(set(ids)) == len(ids)
    guests = {guest['vmid']: guest['name'] for guest in token_client(lab).cluster_vms()}
    for tag, vmids in created.items():
        assert [guests[vmid] for vmid in vmids] == ['%s-%d' % (tag, n) for n in range(len(vmids))]


@pytest.mark.lab(time_scale=0.01, clone_secs=20)
def test_two_processes_creating_vms_at_once_never_collide(lab, tmp_path):
    created = allocate_in_parallel(lab, tmp_path, ['shared', 'shared'])
    assert_each_vm_exists_once(lab, created)
    clone_posts = [r for r in lab.requests() if r.method == 'POST' and r.path.endswith('/clone')]
    assert len(clone_posts) == 8, 'with one controller, no clone should have needed another id'


@pytest.mark.lab(time_scale=0.01, clone_secs=20)
def test_two_controllers_creating_vms_at_once_end_with_distinct_vmids(lab, tmp_path):
    """No shared lock (two machines): PVE's 'already exists' sends the loser to another id."""
    assert_each_vm_exists_once(lab, allocate_in_parallel(lab, tmp_path, ['controller-a', 'controller-b']))


def test_refused_input_is_sent_once_and_never_retried(lab):
    client = token_client(lab)
    config = '/nodes/pve1/qemu/%d/config' % TEMPLATE
    with pytest.raises(PveApiError) as caught:
        client.put(config, cores='many', idempotent=True, context='updating config of VM %d on pve1' % TEMPLATE)
    assert caught.value.status == 400
    assert 'cores' in caught.value.errors
    assert [(r.method, r.path) for r in lab.writes()] == [('PUT', '/api2/json' + config)]
    assert lab.call(lambda: lab.pve.vm(TEMPLATE).config['cores']) != 'many'
