# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""VMID allocation: parallel processes never pick the same id, collisions move on to another id.

The cluster here is a file several processes share. Like PVE, its nextid reserves nothing and a
create's config appears only when its task runs, after the POST has answered.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import time
from contextlib import contextmanager

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils import _vmid
from ansible_collections.puls.proxmox.plugins.module_utils._api import RetryPolicy
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._tasks import TaskResult
from ansible_collections.puls.proxmox.plugins.module_utils._vmid import Ledger, create_with_new_vmid, lock_dir, vmid_collision, vmid_lock

FAST = RetryPolicy(attempts=4, budget=5.0, base_delay=0.01, max_delay=0.02)


class FileCluster:
    """A fake cluster in a JSON file: which VMIDs have a config, and how many creates collided."""

    def __init__(self, path, taken=None):
        """The cluster in file path; with taken, a new cluster where those VMIDs exist."""
        self.path = str(path)
        if taken is not None:
            with self.state() as state:
                state['configs'] = sorted(taken)

    @contextmanager
    def state(self):
        with open(self.path + '.lock', 'a') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                with open(self.path) as handle:
                    state = json.load(handle)
            except (OSError, ValueError):
                state = {'configs': [], 'collisions': 0, 'created': []}
            try:
                yield state
            finally:
                with open(self.path, 'w') as handle:
                    json.dump(state, handle)

    def read(self):
        with self.state() as state:
            return state


class FakeClient:
    """The parts of PveClient that allocation uses, over a FileCluster; create_task_delay is the worker's lag."""

    base_url = 'https://pve.test:8006/api2/json'
    retry = FAST

    def __init__(self, cluster, create_task_delay=0.0, write_config=True):
        self.cluster = cluster
        self.create_task_delay = create_task_delay
        self.write_config = write_config
        self.posts = []

    def get(self, path, context=None, vmid=None):
        assert path == '/cluster/nextid'
        configs = set(self.cluster.read()['configs'])
        if vmid is not None:
            if vmid in configs:
                raise PveApiError('%s failed (HTTP 400)' % context, reason='VM %d already exists' % vmid, status=400)
            return str(vmid)
        return str(min(set(range(100, 10000)) - configs))

    def create(self, vmid):
        self.posts.append(vmid)
        return 'UPID:pve1:0:0:0:qmcreate:%d:root@pam:' % vmid

    def wait_task(self, upid, timeout, context=None):
        vmid = int(upid.split(':')[6])
        time.sleep(self.create_task_delay)
        with self.cluster.state() as state:
            if vmid in state['configs']:
                state['collisions'] += 1
                status = 'unable to create VM %d: config file already exists' % vmid
                raise PveApiError('creating failed: ' + status, reason=status, exitstatus=status, upid=upid)
            if self.write_config:
                state['configs'].append(vmid)
            state['created'].append(vmid)
        return TaskResult(upid)


def allocate_in_a_process(cluster_path, lock_directory, count, barrier, results):
    client = FakeClient(FileCluster(cluster_path), create_task_delay=0.02)
    barrier.wait()
    results.put([create_with_new_vmid(client, client.create, directory=lock_directory)[0] for _create in range(count)])


def test_two_processes_allocating_at_once_never_pick_the_same_id(tmp_path):
    cluster = FileCluster(tmp_path / 'cluster.json', taken=(100, 102))
    context = multiprocessing.get_context('fork')
    barrier, results = context.Barrier(2), context.Queue()
    workers = [context.Process(target=allocate_in_a_process, args=(cluster.path, str(tmp_path), 5, barrier, results)) for _worker in range(2)]
    for worker in workers:
        worker.start()
    ids = results.get(timeout=60) + results.get(timeout=60)
    for worker in workers:
        worker.join(10)
        assert worker.exitcode == 0
    state = cluster.read()
    assert len(set(ids)) == 10 and not set(ids) & {100, 102}
    assert state['collisions'] == 0 and sorted(state['created']) == sorted(ids)


def test_an_id_handed_out_before_its_config_exists_is_not_handed_out_again(tmp_path):
    client = FakeClient(FileCluster(tmp_path / 'cluster.json', taken=()), write_config=False)
    first = create_with_new_vmid(client, client.create, directory=str(tmp_path))
    second = create_with_new_vmid(client, client.create, directory=str(tmp_path))
    assert (first[0], second[0]) == (100, 101)
    assert second[1] == TaskResult('UPID:pve1:0:0:0:qmcreate:101:root@pam:')


def test_ids_after_a_reserved_one_are_checked_with_pve(tmp_path):
    client = FakeClient(FileCluster(tmp_path / 'cluster.json', taken=(101,)), write_config=False)
    assert create_with_new_vmid(client, client.create, directory=str(tmp_path))[0] == 100
    # nextid says 100 again (its config is not written yet); 101 is taken, so 102.
    assert create_with_new_vmid(client, client.create, directory=str(tmp_path))[0] == 102


def test_create_refused_as_existing_moves_on_to_another_id(tmp_path):
    """Another controller took 100 after nextid answered: PVE's HTTP error leads to 101."""
    client = FakeClient(FileCluster(tmp_path / 'cluster.json', taken=()))

    def create(vmid):
        if vmid == 100 and 100 not in client.posts:
            client.posts.append(100)
            raise PveApiError('creating VM 100 failed (HTTP 500)', reason="unable to create VM 100 - VM 100 already exists on node 'pve2'", status=500)
        return client.create(vmid)

    assert create_with_new_vmid(client, create, directory=str(tmp_path))[0] == 101
    assert client.posts == [100, 101]


def test_create_task_failing_as_existing_moves_on_to_another_id(tmp_path):
    cluster = FileCluster(tmp_path / 'cluster.json', taken=())
    client = FakeClient(cluster)

    def create(vmid):
        upid = client.create(vmid)
        if vmid == 100:
            with cluster.state() as state:  # another controller's clone wrote its config first
                state['configs'].append(100)
        return upid

    vmid, result = create_with_new_vmid(client, create, directory=str(tmp_path))
    assert (vmid, client.posts, cluster.read()['collisions']) == (101, [100, 101], 1)
    assert result.upid.endswith(':101:root@pam:')


HELD_ON_PVE2 = "close (rename) atomic file '/etc/pve/nodes/pve1/qemu-server/%d.conf' failed: File exists"


@pytest.mark.parametrize(
    'message',
    [
        "unable to create VM 130 - VM 130 already exists on node 'pve2'",
        'unable to create VM 130: config file already exists',
        HELD_ON_PVE2 % 130,
        'unable to create VM 130 - ' + HELD_ON_PVE2 % 130,
        "close (rename) atomic file '/etc/pve/nodes/pve2/lxc/130.conf' failed: File exists",
    ],
)
def test_every_text_pve_gives_for_a_taken_vmid_is_a_collision(message):
    assert vmid_collision(message, 130)


@pytest.mark.parametrize(
    'message',
    [
        HELD_ON_PVE2 % 1130,
        "unable to create VM 130 - close (rename) atomic file '/etc/pve/storage.cfg' failed: File exists",
        "close (rename) atomic file '/etc/pve/nodes/pve1/qemu-server/130.conf' failed: No space left on device",
        'clone failed: no such logical volume pve/vm-130-disk-0',
        None,
    ],
)
def test_other_failures_or_another_vmid_are_no_collision(message):
    assert not vmid_collision(message, 130)


def test_a_create_refused_by_pmxcfs_moves_on_to_another_id(tmp_path):
    """Another controller's VM 100 on pve2 had not reached pve1's vmlist: pmxcfs refused the config, 101 follows."""
    client = FakeClient(FileCluster(tmp_path / 'cluster.json', taken=()))

    def create(vmid):
        if vmid == 100 and 100 not in client.posts:
            client.posts.append(100)
            reason = 'unable to create VM 100 - ' + HELD_ON_PVE2 % 100
            raise PveApiError('creating VM 100 failed (HTTP 500)', reason=reason, status=500)
        return client.create(vmid)

    assert create_with_new_vmid(client, create, directory=str(tmp_path))[0] == 101
    assert client.posts == [100, 101]


def test_a_clone_task_refused_by_pmxcfs_moves_on_to_another_id(tmp_path):
    client = FakeClient(FileCluster(tmp_path / 'cluster.json', taken=()))

    def clone(vmid):
        if vmid == 100 and 100 not in client.posts:
            client.posts.append(100)
            raise PveApiError('cloning failed: ' + HELD_ON_PVE2 % 100, exitstatus=HELD_ON_PVE2 % 100, upid='UPID:pve1:0:0:0:qmclone:9017:root@pam:')
        return client.create(vmid)

    assert create_with_new_vmid(client, clone, directory=str(tmp_path))[0] == 101
    assert client.posts == [100, 101]


def test_explicit_vmid_held_on_another_node_is_never_replaced(tmp_path):
    client = FakeClient(FileCluster(tmp_path / 'cluster.json', taken=()))

    def clone(vmid):
        client.posts.append(vmid)
        raise PveApiError('cloning failed: ' + HELD_ON_PVE2 % vmid, exitstatus=HELD_ON_PVE2 % vmid)

    with pytest.raises(PveApiError, match='File exists'):
        create_with_new_vmid(client, clone, vmid=130, directory=str(tmp_path))
    assert client.posts == [130]


def test_explicit_vmid_is_never_replaced_by_another(tmp_path):
    client = FakeClient(FileCluster(tmp_path / 'cluster.json', taken=(104,)))
    with pytest.raises(PveApiError, match='config file already exists'):
        create_with_new_vmid(client, client.create, vmid=104, directory=str(tmp_path))
    assert client.posts == [104]


def test_create_task_failing_on_a_lock_timeout_is_repeated_with_the_same_explicit_id(tmp_path):
    client = FakeClient(FileCluster(tmp_path / 'cluster.json', taken=()))
    failures = ["cfs-lock 'storage-local-lvm' error: got lock request timeout"]

    def wait_task(upid, timeout, context=None):
        if failures:
            status = failures.pop()
            raise PveApiError('cloning failed: ' + status, reason=status, exitstatus=status, upid=upid)
        return TaskResult(upid)

    client.wait_task = wait_task
    assert create_with_new_vmid(client, client.create, vmid=104, directory=str(tmp_path))[0] == 104
    assert client.posts == [104, 104]


def test_allocation_gives_up_after_its_attempts(tmp_path):
    client = FakeClient(FileCluster(tmp_path / 'cluster.json', taken=()))

    def always_taken(vmid):
        client.posts.append(vmid)
        raise PveApiError('creating failed: VM %d already exists on node pve1' % vmid, reason='VM %d already exists on node pve1' % vmid, status=500)

    with pytest.raises(PveApiError, match='already exists'):
        create_with_new_vmid(client, always_taken, attempts=3, directory=str(tmp_path))
    assert client.posts == [100, 101, 102]


def test_other_failures_are_not_retried(tmp_path):
    client = FakeClient(FileCluster(tmp_path / 'cluster.json', taken=()))

    def refused(vmid):
        client.posts.append(vmid)
        raise PveApiError(
            'creating failed: Permission check failed (/vms/100, VM.Allocate)', reason='Permission check failed (/vms/100, VM.Allocate)', status=403
        )

    with pytest.raises(PveApiError, match='Permission check failed'):
        create_with_new_vmid(client, refused, directory=str(tmp_path))
    assert client.posts == [100]


def test_reservations_expire(tmp_path, monkeypatch):
    path = str(tmp_path / 'ledger.json')
    Ledger(path).reserve(105)
    assert Ledger(path).entries.keys() == {105}
    monkeypatch.setattr(_vmid, 'RESERVATION_SECONDS', 0)
    assert Ledger(path).entries == {}


def test_the_lock_is_exclusive_across_open_files(tmp_path, monkeypatch):
    monkeypatch.setattr(_vmid, 'LOCK_WAIT_SECONDS', 0.2)
    with vmid_lock('https://pve.test:8006/api2/json', str(tmp_path)):
        # A second open file description, as another process would have.
        with pytest.raises(PveApiError, match='held by another process'), vmid_lock('https://pve.test:8006/api2/json', str(tmp_path)):
            pass
        with vmid_lock('https://other.test:8006/api2/json', str(tmp_path)):
            pass


def test_lock_dir_is_private_and_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    path = lock_dir()
    assert path == str(tmp_path / 'cache' / 'puls-proxmox') and os.stat(path).st_mode & 0o777 == 0o700


def test_lock_dir_falls_back_to_the_temp_dir(tmp_path, monkeypatch):
    blocker = tmp_path / 'not-a-dir'
    blocker.write_text('')
    monkeypatch.setenv('XDG_CACHE_HOME', str(blocker))
    monkeypatch.setenv('TMPDIR', str(tmp_path / 'tmp'))
    (tmp_path / 'tmp').mkdir()
    monkeypatch.setattr(_vmid.tempfile, 'tempdir', None)
    assert lock_dir() == str(tmp_path / 'tmp' / ('puls-proxmox-%d' % os.getuid()))


def test_a_failed_create_task_is_reported_with_the_callers_context(tmp_path):
    client = FakeClient(FileCluster(tmp_path / 'cluster.json', taken=()))
    contexts = []

    def wait_task(upid, timeout, context=None):
        contexts.append(context)
        return TaskResult(upid)

    client.wait_task = wait_task
    create_with_new_vmid(client, client.create, vmid=104, directory=str(tmp_path), context='cloning VM 9017 on pve1 as web')
    assert contexts == ['cloning VM 9017 on pve1 as web']
