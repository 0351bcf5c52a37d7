# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""Waiting for what PVE does in the background: tasks (UPIDs) and guest config locks."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._guest import QEMU, guest_path, ha_resource, noun

LOG_TAIL_LINES = 10
# A task log is fetched in one request; PVE's default page is 50 lines.
LOG_FETCH_LIMIT = 50000
# Polling starts fast (most tasks take a second) and slows down for long ones.
FIRST_POLL = 0.2
POLL_GROWTH = 1.5
MAX_POLL = 3.0
# A status request right after the POST can fail (PVE has not registered the task yet); this long, it is tolerated.
STATUS_GRACE = 20.0


@dataclass(frozen=True)
class TaskResult:
    """A finished task: exitstatus is 'OK' or 'WARNINGS: n'; warnings are the WARN lines of its log."""

    upid: str | None
    exitstatus: str = 'OK'
    warnings: tuple = ()


def parse_upid(upid):
    """(node, task type, object id) of a UPID: UPID:node:pid:pstart:starttime:type:id:user:"""
    parts = str(upid).split(':')
    if len(parts) < 8 or parts[0] != 'UPID':
        raise PveApiError('not a PVE task id (UPID): %r' % (upid,))
    return parts[1], parts[5], parts[6]


def describe_task(upid):
    node, task_type, object_id = parse_upid(upid)
    return 'task %s%s on %s' % (task_type, ' of ' + object_id if object_id else '', node)


def _polls(deadline):
    """Sleep between polls with growing intervals; yields until the deadline has passed."""
    interval = FIRST_POLL
    while True:
        yield
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        time.sleep(min(interval, remaining))
        interval = min(interval * POLL_GROWTH, MAX_POLL)


def wait_task(client, upid, timeout, context=None):
    """Wait until task upid stops; return its TaskResult, or raise PveApiError with its exit status and log tail.

    With client.progress (a _progress.ProgressNotes), every poll also reads the log lines PVE added since the last
    one and notes them, for the action plugin to show the task's progress."""
    node, _type, _id = parse_upid(upid)
    what = describe_task(upid)
    context = context or what
    started = time.monotonic()
    status = None
    progress = getattr(client, 'progress', None)
    seen = 0
    for _poll in _polls(started + timeout):
        try:
            status = client.get('/nodes/%s/tasks/%s/status' % (node, upid), context='reading the status of %s' % what)
        except PveApiError as exc:
            if status is not None or exc.status in (401, 403) or time.monotonic() - started > STATUS_GRACE:
                raise
            continue
        if progress is not None:
            seen = _note_progress(client, progress, upid, node, context, seen)
        if status.get('status') == 'stopped':
            return _finished(client, upid, what, context, str(status.get('exitstatus', '')))
    raise PveApiError(
        '%s: timed out after %g s waiting for %s (%s); it may still be running, see its log in PVE' % (context, timeout, what, upid),
        reason='task timeout',
        upid=upid,
    )


def task_upids(client, node, vmid, task_type):
    """The UPIDs of the tasks of ``task_type`` on guest vmid that the node lists, running and finished alike (pve-manager
    PVE/API2/Tasks.pm node_tasks: ``source`` all; archive, the default, lists only finished ones)."""
    listed = client.get(
        '/nodes/%s/tasks' % node, vmid=vmid, typefilter=task_type, source='all', context='listing the %s tasks of %s on %s' % (task_type, vmid, node)
    )
    return {str(item['upid']) for item in listed or [] if item.get('type') == task_type}


def wait_forked_task(client, node, vmid, task_type, known, timeout, context, done):
    """Wait for the worker of an endpoint that forks it and answers null (pve-container's template: src/PVE/API2/LXC.pm):
    the task of ``task_type`` on vmid that the node lists and ``known`` (its UPIDs before the call) does not. Returns its
    TaskResult, as wait_task does; TaskResult(None) when ``done()`` (what the task does, read from PVE) holds before it is
    listed. PveApiError when neither shows within STATUS_GRACE seconds. (fork_worker lists the task among the node's
    active ones before the call answers: pve-common src/PVE/RESTEnvironment.pm, active_workers.)"""
    started = time.monotonic()
    for _poll in _polls(started + STATUS_GRACE):
        fresh = task_upids(client, node, vmid, task_type) - set(known)
        if fresh:
            # One task per call; should several show, the last started (UPIDs of one node sort by start time).
            upid = max(fresh, key=lambda text: int(text.split(':')[4], 16))
            return wait_task(client, upid, max(timeout - (time.monotonic() - started), FIRST_POLL), context)
        if done():
            return TaskResult(None)
    raise PveApiError(
        '%s: PVE accepted the request but listed no %s task of %s on %s within %g s, and the change is not made; see the'
        " node's tasks in PVE" % (context, task_type, vmid, node, STATUS_GRACE),
        reason='no %s task' % task_type,
    )


def _note_progress(client, progress, upid, node, context, seen):
    """Note the log lines after line number seen; returns the number of the last line noted.

    PVE numbers the lines from 1 (``n``) and answers a read past the end with no line, or with one line ``no content``
    numbered 1 while the log is empty (pve-common src/PVE/Tools.pm dump_logfile), which ``n`` tells from a real one.
    Progress never fails the wait: a log that cannot be read is noted as no new line."""
    try:
        entries = (
            client.get('/nodes/%s/tasks/%s/log' % (node, upid), context='reading the log of %s' % describe_task(upid), start=seen, limit=LOG_FETCH_LIMIT) or []
        )
    except PveApiError:
        entries = []
    fresh = [entry for entry in entries if int(entry.get('n', 0)) > seen]
    if fresh and seen == 0 and len(entries) == 1 and entries[0].get('t') == 'no content':
        fresh = []
    progress.note(context, upid, [str(entry.get('t', '')) for entry in fresh])
    return max([seen] + [int(entry['n']) for entry in fresh])


def _finished(client, upid, what, context, exitstatus):
    if exitstatus == 'OK':
        return TaskResult(upid)
    lines = read_log(client, upid)
    if exitstatus.startswith('WARNINGS'):
        return TaskResult(upid, exitstatus, tuple(line for line in lines if line.startswith('WARN')))
    tail = lines[-LOG_TAIL_LINES:]
    raise PveApiError(
        '%s failed: %s (%s) ended with: %s\nlast lines of its log:\n  %s' % (context, what, upid, exitstatus, '\n  '.join(tail)),
        reason=exitstatus,
        upid=upid,
        exitstatus=exitstatus,
        log=tail,
    )


def read_log(client, upid):
    """The lines of task upid's log, from its first (one request)."""
    node, _type, _id = parse_upid(upid)
    entries = client.get('/nodes/%s/tasks/%s/log' % (node, upid), context='reading the log of %s' % describe_task(upid), start=0, limit=LOG_FETCH_LIMIT)
    return [str(entry.get('t', '')) for entry in entries or ()]


def wait_unlocked(client, node, vmid, timeout, guest_type=QEMU):
    """Wait until guest vmid's config has no lock (clone, create, backup, ...); return that config."""
    deadline = time.monotonic() + timeout
    config = {}
    progress = getattr(client, 'progress', None)
    guest = f'{noun(guest_type)} {vmid} on {node}'
    for _poll in _polls(deadline):
        config = client.get(guest_path(node, vmid, '/config', guest_type), context=f'reading the config of {guest}')
        if not config.get('lock'):
            return config
        if progress is not None:
            progress.note(f'waiting for {guest} to be unlocked (lock: {config.get("lock")})')
    raise PveApiError(
        f'timed out after {timeout:g} s waiting for {guest} to be unlocked (lock: {config.get("lock")})',
        reason=f'{noun(guest_type)} is locked ({config.get("lock")})',
    )


def wait_power_state(client, node, vmid, wanted, deadline, context, guest_type=QEMU):
    """Wait until guest vmid's ``status/current`` shows ``wanted`` ('running' or 'stopped'), up to ``deadline``
    (time.monotonic()); return that status. A power task of a VM that HA manages only queues a request to the HA
    manager (qemu-server PVE/API2/Qemu.pm vm_start, vm_stop, vm_shutdown: ``hastart``/``hastop`` tasks) and ends
    before the VM changes state; any other power task ends with the state reached, and one read shows it. With
    client.progress, each read that finds another state is noted, for the action plugin's progress line."""
    path = guest_path(node, vmid, '/status/current', guest_type)
    what = noun(guest_type)
    status = {}
    progress = getattr(client, 'progress', None)
    for _poll in _polls(deadline):
        status = client.get(path, context=f'reading the status of {what} {vmid} on {node}')
        if status.get('status') == wanted:
            return status
        if progress is not None:
            progress.note(f'{context}: waiting for {what} {vmid} on {node} to be {wanted}')
    ha = status.get('ha') or {}
    managed = str(ha.get('managed', 0)) in ('1', 'True', 'true')
    how = (
        f' {what} {vmid} is HA-managed (HA state: {ha.get("state") or "unknown"}): PVE queued the request to the HA manager,'
        f' which has not carried it out; see the HA status of {ha_resource(vmid, guest_type)} (ha-manager status, or'
        ' Datacenter > HA in the web UI)'
        if managed
        else f' check the {what} in PVE'
    )
    state = status.get('status') or 'unknown'
    raise PveApiError(
        f'{context}: the task ended, but {what} {vmid} on {node} is {state}, not {wanted}, after waiting until the timeout;{how}',
        reason=f'{what} is {state}, not {wanted}',
    )
