# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""Waiting for tasks and locks, over HTTPS against the scripted stand-in on 127.0.0.1."""

from __future__ import annotations

import json
import time

import pytest
from pve_stub import PveStub, Reply

from ansible_collections.puls.proxmox.plugins.module_utils._api import PveClient, RetryPolicy
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._progress import ProgressNotes
from ansible_collections.puls.proxmox.plugins.module_utils._tasks import TaskResult, describe_task, parse_upid, wait_power_state

FAST = RetryPolicy(attempts=4, budget=5.0, base_delay=0.01, max_delay=0.02)
UPID = 'UPID:pve1:000003E8:00001B58:6B0CCF68:qmclone:9000:root@pam!puls:'
STATUS = '/nodes/pve1/tasks/%s/status' % UPID
LOG = '/nodes/pve1/tasks/%s/log' % UPID
CLONE = '/nodes/pve1/qemu/9000/clone'
RUNNING = Reply(data={'status': 'running', 'upid': UPID})


def stopped(exitstatus):
    return Reply(data={'status': 'stopped', 'exitstatus': exitstatus, 'upid': UPID})


def log(*lines):
    return Reply(data=[{'n': n + 1, 't': line} for n, line in enumerate(lines)])


@pytest.fixture
def stub(tmp_path):
    server = PveStub(tmp_path)
    yield server
    server.close()


@pytest.fixture
def client(stub):
    return PveClient(stub.url, 'root@pam', 'puls', stub.token_secret, ca_path=stub.cafile, retry=FAST)


def test_upid_names_node_type_and_object():
    assert parse_upid(UPID) == ('pve1', 'qmclone', '9000')
    assert describe_task(UPID) == 'task qmclone of 9000 on pve1'
    with pytest.raises(PveApiError, match='not a PVE task id'):
        parse_upid('not-a-upid')


def test_task_ok_after_running_polls(stub, client):
    stub.route('POST', CLONE, Reply(data=UPID))
    stub.route('GET', STATUS, RUNNING, RUNNING, stopped('OK'))
    assert client.run_task('POST', CLONE, newid=104, task_timeout=10) == TaskResult(UPID, 'OK', ())
    assert len(stub.requests('GET', STATUS)) == 3 and stub.requests('GET', LOG) == []


def test_status_failing_right_after_the_post_is_tolerated(stub, client):
    stub.route('GET', STATUS, Reply(400, message="unable to parse worker upid '%s'" % UPID), RUNNING, stopped('OK'))
    assert client.wait_task(UPID, 10).exitstatus == 'OK'


def test_task_with_warnings_succeeds_and_returns_them(stub, client):
    stub.route('GET', STATUS, stopped('WARNINGS: 2'))
    stub.route('GET', LOG, log('create full clone of drive scsi0', 'WARN: no efidisk configured', 'WARN: cannot copy notes', 'TASK WARNINGS: 2'))
    result = client.wait_task(UPID, 10)
    assert result.exitstatus == 'WARNINGS: 2'
    assert result.warnings == ('WARN: no efidisk configured', 'WARN: cannot copy notes')


def test_failed_task_raises_with_exit_status_and_log_tail(stub, client):
    lines = ['line %d' % n for n in range(1, 15)] + ["TASK ERROR: clone failed: cfs-lock 'storage-local-lvm' error: disk full"]
    stub.route('POST', CLONE, Reply(data=UPID))
    stub.route('GET', STATUS, stopped('clone failed: disk full'))
    stub.route('GET', LOG, log(*lines))
    with pytest.raises(PveApiError) as caught:
        client.run_task('POST', CLONE, newid=104, context='cloning template 9000 to VM 104 on pve1')
    error = caught.value
    assert (error.exitstatus, error.upid, error.log) == ('clone failed: disk full', UPID, lines[-10:])
    message = str(error)
    assert message.startswith('cloning template 9000 to VM 104 on pve1 failed: task qmclone of 9000 on pve1 (%s) ended with: clone failed: disk full' % UPID)
    assert 'line 6\n' in message and 'line 5\n' not in message and lines[-1] in message
    assert error.details()['task_exitstatus'] == 'clone failed: disk full'


def test_task_deadline_raises_a_timeout_naming_task_and_upid(stub, client):
    stub.route('GET', STATUS, RUNNING)
    started = time.monotonic()
    with pytest.raises(PveApiError) as caught:
        client.wait_task(UPID, 0.6, context='cloning template 9000 to VM 104 on pve1')
    assert 0.6 <= time.monotonic() - started < 2.5
    assert str(caught.value).startswith('cloning template 9000 to VM 104 on pve1: timed out after 0.6 s waiting for task qmclone of 9000 on pve1 (%s)' % UPID)
    assert caught.value.upid == UPID


def test_polling_starts_fast_and_slows_down(stub, client):
    stub.route('GET', STATUS, RUNNING)
    with pytest.raises(PveApiError):
        client.wait_task(UPID, 1.5)
    # 0.2 + 0.3 + 0.45 + 0.675 > 1.5: five polls, not one every 0.2 s (eight).
    assert 4 <= len(stub.requests('GET', STATUS)) <= 5


def test_task_failed_on_a_lock_timeout_is_run_again(stub, client):
    stub.route('POST', '/nodes/pve1/qemu/104/status/start', Reply(data=UPID))
    stub.route('GET', STATUS, stopped("can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout"), stopped('OK'))
    stub.route('GET', LOG, log("TASK ERROR: can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout"))
    assert client.run_task('POST', '/nodes/pve1/qemu/104/status/start').exitstatus == 'OK'
    assert len(stub.requests('POST', '/nodes/pve1/qemu/104/status/start')) == 2


def test_task_failure_that_is_not_transient_is_not_run_again(stub, client):
    stub.route('POST', '/nodes/pve1/qemu/104/status/start', Reply(data=UPID))
    stub.route('GET', STATUS, stopped('QEMU exited with code 1'))
    stub.route('GET', LOG, log('TASK ERROR: QEMU exited with code 1'))
    with pytest.raises(PveApiError, match='QEMU exited with code 1'):
        client.run_task('POST', '/nodes/pve1/qemu/104/status/start')
    assert len(stub.requests('POST', '/nodes/pve1/qemu/104/status/start')) == 1


def test_synchronous_answer_needs_no_wait(stub, client):
    stub.route('PUT', '/nodes/pve1/qemu/104/config', Reply(data=None))
    assert client.run_task('PUT', '/nodes/pve1/qemu/104/config', idempotent=True, cores=2) == TaskResult(None)


def test_task_timeout_is_not_confused_with_an_api_parameter_named_timeout(stub, client):
    stub.route('POST', '/nodes/pve1/qemu/104/status/shutdown', Reply(data=UPID))
    stub.route('GET', STATUS, stopped('OK'))
    client.run_task('POST', '/nodes/pve1/qemu/104/status/shutdown', timeout=60, task_timeout=5)
    assert stub.requests('POST')[0].form == {'timeout': '60'}


def test_lock_is_waited_out(stub, client):
    config = '/nodes/pve1/qemu/104/config'
    stub.route('GET', config, Reply(data={'lock': 'clone', 'name': 'web1'}), Reply(data={'lock': 'clone'}), Reply(data={'name': 'web1'}))
    assert client.wait_unlocked('pve1', 104, 10) == {'name': 'web1'}
    assert len(stub.requests('GET', config)) == 3


def test_lock_that_stays_times_out_naming_it(stub, client):
    stub.route('GET', '/nodes/pve1/qemu/104/config', Reply(data={'lock': 'backup'}))
    with pytest.raises(PveApiError, match=r'timed out after 0.5 s waiting for VM 104 on pve1 to be unlocked \(lock: backup\)'):
        client.wait_unlocked('pve1', 104, 0.5)


def test_with_progress_notes_each_poll_notes_the_log_lines_pve_added_since_the_last(stub, client, tmp_path):
    notes = tmp_path / 'notes.jsonl'
    client.progress = ProgressNotes(str(notes))
    stub.route('GET', STATUS, RUNNING, RUNNING, RUNNING, stopped('OK'))
    # dump_logfile (pve-common PVE::Tools) answers an empty log with a line 'no content', a read past the end with none.
    # A log that cannot be read (here: a refusal) is no new line; the wait goes on.
    stub.route(
        'GET',
        LOG,
        log('no content'),
        log('create full clone of drive scsi0 (local-lvm:base-9000-disk-0)', 'transferred 1.0 GiB of 10.0 GiB (10.00%)'),
        Reply(403, message='Permission check failed'),
        Reply(data=[{'n': 3, 't': 'transferred 10.0 GiB of 10.0 GiB (100.00%)'}]),
    )
    assert client.wait_task(UPID, 10, 'cloning VM 9000 on pve1 as web1').exitstatus == 'OK'
    noted = [json.loads(line) for line in notes.read_text().splitlines()]
    assert [(note['what'], note['upid'], note['lines']) for note in noted] == [
        ('cloning VM 9000 on pve1 as web1', UPID, []),
        (
            'cloning VM 9000 on pve1 as web1',
            UPID,
            ['create full clone of drive scsi0 (local-lvm:base-9000-disk-0)', 'transferred 1.0 GiB of 10.0 GiB (10.00%)'],
        ),
        ('cloning VM 9000 on pve1 as web1', UPID, []),
        ('cloning VM 9000 on pve1 as web1', UPID, ['transferred 10.0 GiB of 10.0 GiB (100.00%)']),
    ]
    assert [seen.query.get('start') for seen in stub.requests('GET', LOG)] == ['0', '0', '2', '2']


def test_a_wait_for_an_ha_managed_vms_state_notes_each_read_that_finds_another(stub, client, tmp_path):
    notes = tmp_path / 'notes.jsonl'
    client.progress = ProgressNotes(str(notes))
    queued = Reply(data={'status': 'stopped', 'ha': {'managed': 1, 'state': 'started'}})
    stub.route('GET', '/nodes/pve1/qemu/104/status/current', queued, queued, Reply(data={'status': 'running'}))
    assert wait_power_state(client, 'pve1', 104, 'running', time.monotonic() + 10, 'starting VM web1 (104 on pve1)')['status'] == 'running'
    noted = [json.loads(line)['what'] for line in notes.read_text().splitlines()]
    assert noted == ['starting VM web1 (104 on pve1): waiting for VM 104 on pve1 to be running'] * 2
