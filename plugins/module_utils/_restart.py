# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What awaits a restart that PVE does not report: a managed record in the VM's Notes.

PVE applies a changed cloud-init option to a running VM's config at once, and the guest sees it only when the
cloud-init drive is regenerated and the VM restarts. ``GET .../cloudinit`` (qemu-server ``PVE/API2/Qemu.pm``,
``cloudinit_pending``) lists old and new values only for ``$cloudinitoptions`` (cicustom, cipassword, citype,
ciupgrade, ciuser, nameserver, searchdomain, sshkeys): a modified ``ipconfigN`` is never listed. The old value is
kept in the config's ``[special:cloudinit]`` section (``vmconfig_hotplug_pending``, ``$cloudinit_record_changed``),
but ``GET .../config`` drops that section (``PVE/QemuConfig.pm``, ``load_current_config``), so no API call tells
that a running guest still has its old address. So pve_vm keeps its own record, one line of the VM's Notes::

    [puls-pending: vmid=105,started=1764590000,ipconfig0=3f2a9c0d1e4b5a67]

written in the same config write that changes a key on a running VM in ``apply_mode: report``: the VMID it was
written for (a clone, which copies the Notes, does not inherit it), when the guest's current boot started, and for
each key a hash of the value the guest booted with.

Boot identity: the start time of the VM's QEMU process, as the controller's clock minus PVE's ``uptime`` (seconds
since that process started, computed on the node from the process's start time, so the node's clock and time zone
play no part). ``uptime`` is in the ``/cluster/resources`` listing every run reads anyway, so judging the record
costs no request; the QEMU ``pid`` of ``status/current`` would cost one per VM and is reused after a node reboot.
A guest that reboots from inside keeps its QEMU process and its old cloud-init drive, so it rightly still counts
as not restarted. Two readings of one boot differ by the listing's age (pvestatd refreshes it every few seconds)
and the controllers' clock difference, so a start up to ``START_TOLERANCE`` seconds later than the recorded one is
the same boot. The error is on the safe side: a restart within that tolerance of the recorded start (a VM
restarted less than a minute after it booted) is not recognized, and ``reboot_required`` stays until the next
restart; a record is never taken for done while the guest still runs its recorded boot.

A new QEMU process is not always a new boot of the guest. A live migration starts the VM on its target with
``qm start --migratedfrom`` (qemu-server ``PVE/QemuMigrate.pm``, ``phase2``), a ``qmstart`` task of root@pam on the
target node, and the guest goes on running its boot there, with its old cloud-init drive (``PVE/QemuServer.pm``,
``vm_start_nolock``: no regeneration ``if ($migratedfrom)``); a start of a VM hibernated by a ``qmsuspend`` task
(``vm_suspend`` with ``todisk``) resumes the saved guest, whether a ``qmstart`` or a ``qmresume`` task runs it
(``PVE/API2/Qemu.pm``, ``vm_resume``: ``vm_start`` for a VM with the lock ``suspended``). Each of them says so in
its own log (``vm_start_nolock``): ``migration listens on ...`` for a migration's start (printed only for the
incoming state ``tcp`` or ``unix`` that ``--migratedfrom`` brings), ``Resumed VM, removing state`` for a resume. So
a process later than the recorded one counts as a restart only when the VM's tasks since the record hold a
``qmreboot``, or a ``qmstart`` whose log says neither (``restarted``); a ``qmresume`` never boots. The log, not the
``qmigrate`` task, tells a migration's start: the source node's task list may be unreadable (a node evacuated and
then shut down for maintenance), or the migration may have begun before the record's boot plus ``START_TOLERANCE``.

A key counts as awaiting a restart while the VM runs that boot and the key's value differs from the recorded one
(a value set back to what the guest booted with awaits nothing). The record is dropped by the next config write
once it awaits nothing (after a restart, or in a run that restarts the VM), never by a write of its own.

Pure: strings and mappings in, strings out.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils import _notes

PENDING_BLOCK = 'puls-pending'
START_TOLERANCE = 60
_VMID = 'vmid'
_STARTED = 'started'
_ABSENT = '0'  # the hash of a key the guest booted without (a real hash has 16 digits)
# What PVE applies to a running VM's config and lists as pending nowhere: GET .../cloudinit lists only
# $cloudinitoptions, other keys a restart waits for stay in the config's pending section.
_UNREPORTED_KEY = re.compile(r'^ipconfig\d+$')
# What qemu-server PVE/QemuServer.pm vm_start_nolock prints when a start is no boot of the guest: the incoming
# migration's address (QemuMigrate.pm phase2 reads it from the target's `qm start`), and a resume from hibernation.
INCOMING_MIGRATION = 'migration listens on '
RESUMED = 'Resumed VM, removing state'


@dataclass(frozen=True)
class RestartRecord:
    """The record in a VM's Notes: the VMID and boot start it was written for, and key -> hash of the booted value."""

    vmid: int | None
    started: int | None
    values: Mapping[str, str] = field(default_factory=dict)

    def same_boot(self, vmid: int, started: int | None) -> bool:
        """Whether VM ``vmid``, whose current boot started at ``started`` (None: unknown), still runs the recorded boot."""
        if self.vmid != vmid:
            return False
        if started is None or self.started is None:
            return True  # unknown: never take the record for done
        return started <= self.started + START_TOLERANCE


def restarted(tasks: Iterable[Mapping[str, Any]], vmid: int, since: int, log_of: Callable[[Mapping[str, Any]], Iterable[str]]) -> bool:
    """Whether VM ``vmid``'s guest booted again after ``since`` (epoch seconds), as its tasks (``GET
    /nodes/{node}/tasks`` of every node) tell: a ``qmreboot`` that succeeded, or a ``qmstart`` that succeeded and whose
    log (``log_of(task)``: its lines, asked from the latest start on and only until one booted) shows neither a
    migration's start on its target nor a resume after hibernation."""
    own = [task for task in tasks if str(task.get('id')) == str(vmid) and _start(task) > since and _succeeded(task)]
    if any(task.get('type') == 'qmreboot' for task in own):
        return True
    starts = sorted((task for task in own if task.get('type') == 'qmstart'), key=_start, reverse=True)
    return any(not any(line.startswith(INCOMING_MIGRATION) or line == RESUMED for line in log_of(task)) for task in starts)


def _start(task: Mapping[str, Any]) -> int:
    return int(task.get('starttime') or 0)


def _succeeded(task: Mapping[str, Any]) -> bool:
    # A finished task's status: OK, "WARNINGS: N" (done, with warnings), or the error it ended with.
    status = str(task.get('status') or '')
    return status == 'OK' or status.startswith('WARNINGS')


def unreported(keys: Iterable[str]) -> list[str]:
    """The keys among ``keys`` whose wait for a restart PVE reports nowhere, so the record must keep it."""
    return sorted(key for key in keys if _UNREPORTED_KEY.match(key))


def value_hash(value: Any) -> str:
    """The hash the record keeps of a config value (None: the key is absent)."""
    if value is None:
        return _ABSENT
    return hashlib.sha256(str(value).encode()).hexdigest()[:16]


def read_record(notes: str | None) -> RestartRecord | None:
    """The record in ``notes``, or None when there is none."""
    parsed = _notes.parse(notes, PENDING_BLOCK)
    if parsed.span is None:
        return None
    values = dict(parsed.entries)
    return RestartRecord(_number(values.pop(_VMID, None)), _number(values.pop(_STARTED, None)), values)


def awaiting(notes: str | None, config: Mapping[str, Any], vmid: int, started: int | None, running: bool) -> frozenset[str]:
    """The recorded keys that still await a restart of VM ``vmid``: it runs the recorded boot and their value in
    ``config`` (the config now, pending values merged) is not the one the guest booted with."""
    record = _running_boot_record(notes, vmid, started, running)
    if record is None:
        return frozenset()
    return frozenset(key for key, booted in record.values.items() if value_hash(config.get(key)) != booted)


def set_back(notes: str | None, written: Mapping[str, Any], vmid: int, started: int | None, running: bool) -> frozenset[str]:
    """The keys of ``written`` (key -> new value, None: deleted) that the record of the boot VM ``vmid`` runs holds
    with that very value: the guest booted with it, so writing it back awaits no restart."""
    record = _running_boot_record(notes, vmid, started, running)
    if record is None:
        return frozenset()
    return frozenset(key for key, value in written.items() if record.values.get(key) == value_hash(value))


def with_record(notes: str | None, booted: Mapping[str, Any], written: Mapping[str, Any], vmid: int, started: int | None, waiting: Iterable[str]) -> str:
    """``notes`` with the record after a write of ``written`` (key -> new value, None: deleted) to the running VM
    ``vmid``; ``booted`` holds the values the guest runs with (the running config), ``waiting`` the written keys that
    await a restart. Keys recorded for the same boot keep their booted value; a stale record is replaced; no key
    left awaiting drops the record. Raises ``_notes.NotesTooLongError`` past PVE's limit."""
    record = read_record(notes)
    kept = dict(record.values) if record is not None and record.same_boot(vmid, started) else {}
    for key in waiting:
        kept.setdefault(key, value_hash(booted.get(key)))
    values = {key: booted_hash for key, booted_hash in kept.items() if value_hash(written.get(key)) != booted_hash or key not in written}
    if not values:
        return _notes.render(notes, {}, tag=PENDING_BLOCK)
    boot = {_STARTED: str(started)} if started is not None else {}  # unknown: the record holds while the VM runs
    return _notes.render(notes, {_VMID: str(vmid), **boot, **dict(sorted(values.items()))}, tag=PENDING_BLOCK)


def without_record(notes: str | None) -> str:
    """``notes`` without the record (stripped as PVE stores them)."""
    return _notes.render(notes, {}, tag=PENDING_BLOCK)


def _running_boot_record(notes: str | None, vmid: int, started: int | None, running: bool) -> RestartRecord | None:
    """The record in ``notes`` when VM ``vmid`` runs the boot it was written for, else None."""
    record = read_record(notes)
    return record if record is not None and running and record.same_boot(vmid, started) else None


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
