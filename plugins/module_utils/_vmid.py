# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""Creating a guest under a VMID nobody else takes at the same time.

GET /cluster/nextid reserves nothing: parallel callers get the same id and the loser's create
fails. Between the processes of one controller (parallel forks, two ansible-playbook runs) an
exclusive file lock serialises picking an id and sending the create, and a small ledger next to the
lock remembers the ids handed out in the last minute (PVE's create task may write the new config
only after the POST has answered, so nextid can offer the id again). Between controllers, a create
refused because its id is taken (``vmid_collision``) is retried with another id.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import tempfile
import time
from contextlib import contextmanager

from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError, transient_reason, vmid_taken
from ansible_collections.puls.proxmox.plugins.module_utils._tasks import TaskResult

RESERVATION_SECONDS = 90
LOCK_WAIT_SECONDS = 300
CREATE_ATTEMPTS = 5
# nextid?vmid=N probes before giving up on finding a free id above the reserved ones.
MAX_PROBES = 200


def vmid_collision(message, vmid):
    """Whether PVE refused a create or clone (in its answer or its task) because VMID vmid is taken.

    The texts: "VM N already exists on node 'X'" (create_vm: pve-cluster PVE/Cluster.pm, check_vmid_unused),
    "unable to create VM N: config file already exists" (clone_vm, the config on the source's node), and
    "close (rename) atomic file '/etc/pve/nodes/X/qemu-server/N.conf' failed: File exists" when the id is held on
    another node: pmxcfs refuses the config there (pve-cluster pmxcfs/memdb.c, memdb_rename), as a clone always
    meets it and a create does while this node's vmlist has not seen the other node's config yet.
    """
    if vmid_taken(message, vmid):
        return True
    return re.search(r"/(?:qemu-server|lxc)/%d\.conf' failed: File exists" % vmid, message or '') is not None


def lock_dir():
    """A private directory for the lock and ledger: $XDG_CACHE_HOME/puls-proxmox, ~/.cache/..., else the temp dir."""
    cache = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    for path in (os.path.join(cache, 'puls-proxmox'), os.path.join(tempfile.gettempdir(), 'puls-proxmox-%d' % os.getuid())):
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError:
            continue
        # Another user could have made a shared temp dir first: use only a directory of our own.
        if os.stat(path).st_uid == os.getuid() and os.access(path, os.W_OK):
            return path
    raise PveApiError('no writable private directory for the VMID lock (tried %s and the temp dir)' % cache)


class Ledger:
    """The ids this controller handed out recently, for one API URL; use only while holding the lock."""

    def __init__(self, path):
        self.path = path
        now = time.time()
        try:
            with open(path, encoding='utf-8') as handle:
                entries = json.load(handle)
        except (OSError, ValueError):
            entries = {}
        self.entries = {int(vmid): stamp for vmid, stamp in entries.items() if now - stamp < RESERVATION_SECONDS}

    def reserve(self, vmid):
        self.entries[vmid] = time.time()
        scratch = self.path + '.tmp'
        with open(scratch, 'w', encoding='utf-8') as handle:
            json.dump({str(vmid): stamp for vmid, stamp in self.entries.items()}, handle)
        os.replace(scratch, self.path)


@contextmanager
def controller_lock(base_url, name, wait, what, directory=None):
    """Hold the controller-wide exclusive lock ``name`` for the cluster at base_url (an flock shared by every process
    of this user), waiting up to ``wait`` seconds; yields the lock's path without its ``.lock``. ``what`` names it in
    the error when the wait runs out."""
    directory = directory or lock_dir()
    key = os.path.join(directory, hashlib.sha256(base_url.encode()).hexdigest()[:16] + name)
    with open(key + '.lock', 'a', encoding='utf-8') as lock:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise PveApiError('waited %g s for %s %s.lock held by another process' % (wait, what, key)) from None
                time.sleep(0.05)
        try:
            yield key
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextmanager
def vmid_lock(base_url, directory=None):
    """Hold the cross-process lock for allocating VMIDs on the cluster at base_url; yields its Ledger."""
    with controller_lock(base_url, '', LOCK_WAIT_SECONDS, 'the VMID lock', directory) as key:
        yield Ledger(key + '.json')


def pick_vmid(client, reserved):
    """The cluster's next free VMID that is not in reserved (one request unless reserved ids are in the way)."""
    vmid = int(client.get('/cluster/nextid', context='asking PVE for a free VMID'))
    if vmid not in reserved:
        return vmid
    for _probe in range(MAX_PROBES):
        vmid += 1
        if vmid in reserved:
            continue
        try:
            return int(client.get('/cluster/nextid', vmid=vmid, context='checking that VMID %d is free' % vmid))
        except PveApiError as exc:
            if exc.status != 400:  # 400: taken
                raise
    raise PveApiError('found no free VMID within %d ids after the ones reserved by this controller' % MAX_PROBES)


def create_with_new_vmid(client, create_fn, *, vmid=None, task_timeout=600, attempts=CREATE_ATTEMPTS, directory=None, context=None):
    """Create a guest and wait for its task; returns (vmid, TaskResult).

    create_fn(vmid) sends the create or clone and returns its UPID (client.create_vm does, and returns
    None when it recovered a create whose answer was lost and whose task already ended). Without an
    explicit vmid one is allocated under the lock, and a create refused because the id is taken (by
    PVE or in its task, ``vmid_collision``) is retried with another id. A create task that failed on a lock timeout did
    nothing, so it is retried too (an explicit vmid keeps its id, and is never replaced by another).
    directory holds the lock and ledger (default: lock_dir()); context says what is being created, for a failed task's error.
    """
    started = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        chosen = vmid
        try:
            if vmid is None:
                with vmid_lock(client.base_url, directory) as ledger:
                    chosen = pick_vmid(client, ledger.entries)
                    ledger.reserve(chosen)
                    upid = create_fn(chosen)
            else:
                upid = create_fn(chosen)
            return chosen, client.wait_task(upid, task_timeout, context) if upid else TaskResult(None)
        except PveApiError as exc:
            why = exc.exitstatus or exc.reason
            collided = vmid is None and chosen is not None and vmid_collision(why, chosen)
            if not (collided or transient_reason(None, exc.exitstatus)) or attempt >= attempts:
                raise
            # A collision is with another controller: try the next id at once.
            delay = 0 if collided else client.retry.next_delay(attempt, started)
            if delay is None:
                raise
        time.sleep(delay)
