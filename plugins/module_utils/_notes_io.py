# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_notes_hash's work: the provision block in one guest's Notes, read, planned and written on PVE.

The guest, a VM (``qemu``) or a container (``lxc``, ``guest_type``), is found by name or VMID (``_vm_plan.find_vm``,
``_ct_plan.find_container``): PVE keeps a container's Notes in the same ``description`` key of its config
(pve-container src/PVE/LXC/Config.pm, $confdesc description). Its Notes are read together with the config
digest and written with that digest; when someone changed the config in between, PVE refuses the
write and the Notes are read again and the recording merged into what is there now (a few times).
Only the block changes; every other character of the Notes stays as it is.

The hashes of the files come in with the request (the action plugin computes them on the controller):
nothing here reads a provision file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ansible_collections.puls.proxmox.plugins.module_utils import _notes, _provision_hash
from ansible_collections.puls.proxmox.plugins.module_utils._ct_plan import find_container
from ansible_collections.puls.proxmox.plugins.module_utils._errors import DIGEST_WRITE_ATTEMPTS, PveApiError, is_concurrent_change
from ansible_collections.puls.proxmox.plugins.module_utils._guest import GUEST_TYPES, LXC, QEMU, guest_path, noun
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import notes_needs, require
from ansible_collections.puls.proxmox.plugins.module_utils._vm_plan import find_vm

# The options of pve_notes_hash besides the connection; its action plugin validates with them too.
ARGUMENT_SPEC = {
    'name': {'type': 'str'},
    'vmid': {'type': 'int'},
    'files': {'type': 'list', 'elements': 'str', 'required': True},
    'state': {'type': 'str', 'choices': ['query', 'applied'], 'default': 'query'},
    'record': {'type': 'list', 'elements': 'str'},
    'force': {'type': 'bool', 'default': False},
    'hash_mode': {'type': 'str', 'choices': ['closure', 'file'], 'default': 'closure'},
    'hash_include': {'type': 'list', 'elements': 'path', 'default': []},
    'base_dir': {'type': 'path'},
    'hashes': {'type': 'dict'},
    'guest_type': {'type': 'str', 'choices': list(GUEST_TYPES), 'default': QEMU},
}
REQUIRED_ONE_OF = [('name', 'vmid')]

_HASH = re.compile(r'[0-9a-f]+')


class NotesError(ValueError):
    """A request pve_notes_hash cannot carry out; the message names the option or the VM."""


@dataclass(frozen=True)
class NotesRequest:
    """What the task asks for, checked: the VM, the declared files in order, their hashes now, and what to record."""

    name: str | None
    vmid: int | None
    files: tuple[str, ...]
    hashes: Mapping[str, str]
    state: str = 'query'
    record: tuple[str, ...] = ()
    force: bool = False
    guest_type: str = QEMU

    @classmethod
    def from_params(cls, params: Mapping) -> NotesRequest:
        """The request of a module's params; raises NotesError for input the block cannot hold, before any API call."""
        files, record = check_files(params['files'], params.get('record'))
        hashes = params.get('hashes') or {}
        for path in files:
            if not isinstance(hashes.get(path), str) or not _HASH.fullmatch(hashes[path]):
                raise NotesError(
                    f'hashes: no hash (lower-case hex) for {path!r}; leave hashes unset so that the action plugin '
                    'computes them on the controller, or give one for every file'
                )
        return cls(
            params.get('name'),
            params.get('vmid'),
            files,
            {path: hashes[path] for path in files},
            params.get('state') or 'query',
            record,
            bool(params.get('force')),
            params.get('guest_type') or QEMU,
        )


def check_files(files: Sequence[str], record: Sequence[str] | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``files`` and ``record`` (default: all files) as tuples; raises NotesError for a path the block cannot hold."""
    try:
        _provision_hash.check_declared(files)
    except _notes.ProvisionKeyError as exc:
        raise NotesError(f'files: {exc}') from None
    for path in record or ():
        if path not in files:
            raise NotesError(f'record: {path!r} is not in files; list every declared provision file in files, in order')
    return tuple(files), tuple(files if record is None else record)


@dataclass(frozen=True)
class VmNotes:
    """One guest's Notes as read: where the guest is, the text, and the config digest to write with."""

    node: str
    vmid: int
    description: str
    digest: str | None
    guest_type: str = QEMU

    def __str__(self) -> str:
        return f'{noun(self.guest_type)} {self.vmid}'


@dataclass(frozen=True)
class NotesPlan:
    """What the Notes become: ``after`` (stripped as PVE stores it), the files pending or applied once it is written,
    and the keys of the record a write drops or rewrites (``stale``: files not declared, Puls basenames)."""

    before: str
    after: str
    pending: list[str]
    applied: list[str]
    stale: list[str]

    @property
    def changed(self) -> bool:
        return not _notes.same_notes(self.before, self.after)


def plan_notes(description: str | None, request: NotesRequest) -> NotesPlan:
    """Pure: the Notes after the request, and which files are then pending (all with ``force``) and applied.

    A query changes nothing, but fails (``NotesTooLongError``) when recording every file would not fit,
    so that a chain stops before it runs anything rather than after its first file.
    """
    recorded = _notes.parse(description).entries
    if request.state == 'applied':
        entries = _provision_hash.record_all(recorded, {path: request.hashes[path] for path in request.record}, request.files)
        after = _notes.render(description, entries)
    else:
        entries = recorded
        _notes.render(description, _provision_hash.record_all(recorded, request.hashes, request.files))  # raises when it would not fit
        after = _notes.normalize(description)
    pending = _provision_hash.pending(request.files, entries, request.hashes, request.force)
    applied = [path for path in request.files if _provision_hash.recorded_hash(path, entries, request.files) == request.hashes[path]]
    stale = [key for key in entries if key not in request.files]
    return NotesPlan(_notes.normalize(description), after, pending, applied, stale)


def read_notes(client, node: str, vmid: int, guest_type: str = QEMU) -> VmNotes:
    config = client.vm_config(node, vmid, guest_type=guest_type)
    return VmNotes(node, vmid, config.get('description') or '', config.get('digest'), guest_type)


def write_notes(client, notes: VmNotes, request: NotesRequest) -> tuple[VmNotes, NotesPlan]:
    """Write the plan for ``notes`` with their digest; on a concurrent change, read again and merge into that.

    Returns the Notes the write was based on and its plan (unchanged when the re-read found it done).
    """
    attempt = 1
    plan = plan_notes(notes.description, request)
    while plan.changed:
        params = {'description': plan.after} if plan.after else {'delete': 'description'}
        try:
            # Repeating it is harmless: a write that did land makes the digest stale, and the re-read finds it done.
            client.put(
                guest_path(notes.node, notes.vmid, '/config', notes.guest_type),
                idempotent=True,
                digest=notes.digest,
                context=f'writing the provision record into the Notes of {notes} on {notes.node}',
                **params,
            )
            break
        except PveApiError as exc:
            if not is_concurrent_change(exc.reason) or attempt >= DIGEST_WRITE_ATTEMPTS:
                raise
        attempt += 1
        notes = read_notes(client, notes.node, notes.vmid, notes.guest_type)
        plan = plan_notes(notes.description, request)
    return notes, plan


def reconcile(client, request: NotesRequest, check_mode: bool = False) -> dict:
    """Query or record, as pve_notes_hash does; the result dict the module exits with.

    A query of a VM that does not exist yet reports every file pending in check mode (an earlier task
    of the same check run may create it) and fails otherwise, as recording always does.
    """
    find = find_container if request.guest_type == LXC else find_vm
    vm = find(client.cluster_vms(), request.name, request.vmid)
    if vm is None:
        if request.state == 'query' and check_mode:
            return {
                'changed': False,
                'vmid': request.vmid,
                'node': None,
                'pending': list(request.files),
                'applied': [],
                'stale': [],
                'hashes': dict(request.hashes),
            }
        kind = noun(request.guest_type)
        what = f'{kind} {request.name!r}' if request.vmid is None else f'{kind} {request.vmid}'
        raise NotesError(f'{what} does not exist in the cluster: create it before its provision files are queried or recorded, or correct name/vmid')
    notes = read_notes(client, vm['node'], int(vm['vmid']), request.guest_type)
    try:
        if request.state == 'applied' and plan_notes(notes.description, request).changed:
            require(client, notes_needs(notes.vmid), f'recording provision files in the Notes of {notes}')
        if request.state == 'applied' and not check_mode:
            notes, plan = write_notes(client, notes, request)
        else:
            plan = plan_notes(notes.description, request)
    except _notes.NotesTooLongError as exc:
        raise NotesError(f'{notes}: {exc}') from None
    result = {
        'changed': plan.changed,
        'vmid': notes.vmid,
        'node': notes.node,
        'pending': plan.pending,
        'applied': plan.applied,
        'stale': plan.stale,
        'hashes': dict(request.hashes),
    }
    if request.state == 'applied':
        result['diff'] = {'before': plan.before, 'after': plan.after, 'before_header': f'{notes} Notes', 'after_header': f'{notes} Notes'}
    return result
