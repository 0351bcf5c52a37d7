# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declared vs observed -> the ordered actions that converge one VM, and the diff they show.

One plan drives both modes (community.docker's DifferenceTracker idea): the module builds it once
from what it read, reports ``changed``, ``diff``, ``changes`` and ``reboot_required`` from it, and in
a real run executes ``actions`` in order; check mode and the real run cannot disagree. Pure: the
module finds the VM (``find_vm`` on ``/cluster/resources``), reads its config, resolves the image
and the node for a create, and passes what it read in.

Actions, as (kind, params), on the VM found or just created:
- ``clone``: vmid, node (the source's), name, full, newid (the declared vmid; absent: allocate one),
  target (only when another node), storage (full clones only), pool; notes (the source's Notes) and owner_tag: the
  clone is made with those Notes and its owner record (``_ownership``), written once the new VMID is known.
- ``import``: node, newid, pool, config (the whole create config; ``scsi0`` is ``STORAGE:0,import-from=VOLUME``, or for
  an empty VM, made when no ``image`` is declared, ``STORAGE:SIZE``), owner_tag: the create writes the owner record
  naming the new VMID.
- ``configure``: set (key: value) and delete (keys), one config update.
- ``resize``: disk, size (PVE form); ``verify_size`` when the current size was unknown while planning
  (after an import): the module reads it and asks ``grow_needed`` first.
- ``regenerate_cloudinit``; ``shutdown``: timeout (graceful, then a forced stop); ``start``;
  ``destroy``: purge and destroy-unreferenced-disks (qemu-server ``PVE/API2/Qemu.pm``, ``destroy_vm``).
- ``upload_seed``: volid, the NoCloud seed ISO of ``user_data`` (first, so a failed upload creates nothing);
  ``delete_volume``: volid, a seed ISO the VM no longer uses (after the config points elsewhere, or
  after the destroy).

Decisions:
- Declared values are compared with the pending-merged config (``GET config``): a value an earlier
  report-mode run wrote is not written again. What waits for a restart is ``reboot_required``:
  PVE's pending keys (``config`` vs ``current=1``, qemu-server ``PVE/API2/Qemu.pm``, ``vm_config``), the cloud-init keys not yet on
  the drive (``GET .../cloudinit``), the keys this run writes that PVE holds pending or that
  the guest reads only at boot (every cloud-init key, A.5), and the keys of the VM's restart record
  (``_restart``) that still await a restart of the boot it was written in.
- ``apply_mode: reboot`` restarts a running VM with anything waiting (graceful shutdown, then
  start), after regenerating cloud-init. In report mode a running VM's cloud-init drive is left for
  PVE to regenerate at the next start. PVE applies the keys to the config at once and lists a changed
  ``ipconfigN`` nowhere (``GET .../cloudinit`` lists only some cloud-init keys), so the config write
  that changes keys awaiting a restart on a running VM also writes the restart record into the Notes
  (``_restart``): ``reboot_required`` stays true until the VM restarts. The record is dropped by the
  next config write once it awaits nothing, and after the restart of a run that restarts the VM (a
  config write of its own). A VM that is stopped, or is being stopped or restarted, gets its drive
  regenerated right after the config is written.
- Ownership (``_ownership``): a VM is pve_vm's when it carries the owner tag and an owner record naming its own VMID.
  One with the tag and no record (made by an earlier release) is managed too, and gets the record in the plan's config
  write (``owner_record`` in the diff); one whose record names another VMID is a clone made outside the collection,
  refused like a VM without the tag unless ``adopt``.
- Placement and source (``image``, ``linked_clone``, ``node``, ``nodes``, ``vmid``, ``pool``,
  ``storage``) apply at creation only; an existing VM is neither moved nor re-cloned.
- The diff holds only what is declared: the managed PVE keys (before = the config now, after = what
  it will be; an unchanged key shows PVE's own form on both sides), ``disk_size``, ``cloudinit_drive``
  when one is added, ``status`` when the state is a power state, ``state`` on create and destroy.
  ``cipassword`` shows as a mask on both sides. ``changes`` lists the diff keys whose value changes.
- Devices (``disks``, ``nets``, ``efidisk``, ``tpm``, ``cdrom``): each shows in the diff under its config key with its
  declared properties only (``_vm_devices``); a disk's size grows by a ``resize`` after the config write; a disk
  neither declared nor the boot disk is detached only with ``remove_undeclared_disks`` (PVE keeps it as ``unusedN``).
  What a running VM takes at once follows qemu-server (``_vm_config.held_until_restart``).
- ``user_data``: the module passes the seed ISO's volume ID (its name holds the content hash). The ISO
  takes the slot of the VM's seed ISO, else of PVE's cloud-init drive (which goes: two NoCloud sources
  would compete), else the first free IDE/SATA slot. A replaced seed of this VM is deleted, another VM's
  never. The guest reads it at boot, so a running VM lists the slot in ``reboot_required``. The diff
  shows the seed's volume ID as ``user_data``, never its content.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils import _ownership, _restart
from ansible_collections.puls.proxmox.plugins.module_utils._actions import Action, Plan
from ansible_collections.puls.proxmox.plugins.module_utils._image import CLONE, IMPORT, ImageSource
from ansible_collections.puls.proxmox.plugins.module_utils._notes import NotesTooLongError
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import (
    CLOUDINIT_OPTIONS,
    DEFAULT_BRIDGE,
    DEFAULT_NIC_MODEL,
    SpecError,
    VmSpec,
    as_bool,
    boot_disk_key,
    cdrom_drive_key,
    cdrom_volume,
    cloudinit_drive_key,
    desired_config,
    disk_size,
    display_value,
    format_net,
    format_property_string,
    format_size,
    grow_needed,
    held_until_restart,
    is_bus_disk,
    is_cloudinit_key,
    is_disk,
    is_net_key,
    is_seed_of,
    parse_drive,
    parse_net,
    same_drive_properties,
    same_net,
    same_value,
    seed_drive_key,
    storage_of,
)
from ansible_collections.puls.proxmox.plugins.module_utils._vm_devices import allocation, disk_view, new_disk_value, nic_view

CONFIGURE = 'configure'
RESIZE = 'resize'
REGENERATE_CLOUDINIT = 'regenerate_cloudinit'
SHUTDOWN = 'shutdown'
START = 'start'
DESTROY = 'destroy'
UPLOAD_SEED = 'upload_seed'
DELETE_VOLUME = 'delete_volume'

POWER_STATES = ('started', 'stopped', 'restarted')
# A Creation's source kind besides _image's CLONE and IMPORT: no image, an empty VM.
BLANK = 'blank'
# Where a missing cloud-init drive goes: ide2 as PVE's own docs and GUI do, else the next free slot.
_CLOUDINIT_SLOTS = ('ide2', 'ide0', 'ide1', 'ide3', 'sata0', 'sata1', 'sata2', 'sata3', 'sata4', 'sata5')
# The disk controller, console and boot order a cloud image needs (the Proxmox VE wiki, Cloud-Init Support: cloud images expect a serial console).
_IMPORT_BASE = {'scsihw': 'virtio-scsi-single', 'boot': 'order=scsi0', 'serial0': 'socket', 'vga': 'serial0'}


@dataclass(frozen=True)
class Observed:
    """What PVE says about the VM found: ``config`` is ``GET config`` (pending merged), ``current`` the same with
    ``current=1`` (None when it cannot differ, e.g. a stopped VM), ``cloudinit_pending`` the keys ``GET .../cloudinit``
    lists as not yet on the drive."""

    vmid: int
    node: str
    status: str
    config: Mapping[str, Any]
    current: Mapping[str, Any] | None = None
    cloudinit_pending: frozenset[str] = frozenset()
    started: int | None = None  # when the running VM's QEMU process started (epoch seconds; ``_restart``), None if unknown
    names: Mapping[int, str] = field(default_factory=dict)  # how a message names another guest, by VMID (optional)

    @property
    def running(self) -> bool:
        return self.status == 'running'

    @property
    def template(self) -> bool:
        return as_bool(self.config.get('template'))

    @property
    def pending(self) -> frozenset[str]:
        """The keys whose pending value differs from what runs (set, changed or deleted)."""
        if self.current is None:
            return frozenset()
        keys = (set(self.config) | set(self.current)) - {'digest'}
        return frozenset(key for key in keys if self.config.get(key) != self.current.get(key))

    def describe(self) -> str:
        return f"VM {self.config.get('name', '')!r} ({self.vmid} on {self.node})"


@dataclass(frozen=True)
class Creation:
    """How a missing VM is made: the resolved source, the chosen node, and the source's config (a clone's; {} for an import)."""

    source: ImageSource
    node: str
    source_config: Mapping[str, Any] = field(default_factory=dict)


def find_vm(resources: Iterable[Mapping[str, Any]], name: str | None, vmid: int | None = None) -> Mapping[str, Any] | None:
    """The ``/cluster/resources?type=vm`` entry of the declared VM, or None when it does not exist.

    A declared vmid identifies the VM; its name, when given, must then match (an empty name, which PVE
    reports for a few seconds after a create, A.14, does not count). Without vmid the name must be unique.
    """
    entries = list(resources)
    if vmid is not None:
        found = next((entry for entry in entries if int(entry['vmid']) == vmid), None)
        if found is not None and found.get('type', 'qemu') != 'qemu':
            raise SpecError('vmid', f"{vmid} is taken by a {found['type']} ({found.get('name')!r}); choose another vmid")
        if found is not None and name is not None and found.get('name') and found['name'] != name:
            raise SpecError('vmid', f"{vmid} is VM {found['name']!r} on {found.get('node')}, not {name!r}; pve_vm does not rename VMs: correct vmid or name")
        return found
    named = sorted((entry for entry in entries if entry.get('type', 'qemu') == 'qemu' and entry.get('name') == name), key=lambda entry: int(entry['vmid']))
    if len(named) > 1:
        vmids = ', '.join(f"{entry['vmid']} on {entry.get('node')}" for entry in named)
        raise SpecError(
            'name',
            f'{name!r} is the name of {len(named)} VMs (VMIDs {vmids}); PVE does not keep names unique, so rename or remove all but one, or declare vmid',
        )
    return named[0] if named else None


def plan_vm(spec: VmSpec, observed: Observed | None = None, creation: Creation | None = None, seed: str | None = None) -> Plan:
    """The plan for ``spec`` given the VM found (``observed``, None when missing) and, for a missing VM, ``creation``;
    ``seed`` is the volume ID of the seed ISO of ``user_data`` (see the module docstring)."""
    if spec.user_data is not None and seed is None and spec.state != 'absent':
        raise ValueError('user_data is declared: plan_vm needs the volume ID of its seed ISO')
    if spec.state == 'absent':
        return _plan_absent(spec, observed)
    if observed is not None:
        return _plan_existing(spec, observed, seed)
    if creation is None:
        raise ValueError('the VM does not exist: plan_vm needs a creation (resolve_image, choose_node) to create it')
    return _plan_create(spec, creation, seed)


def _check_ours(spec: VmSpec, observed: Observed) -> str:
    """The VM's ownership (``_ownership.state``), when pve_vm may act on it; SpecError saying why not, and what to do."""
    if observed.template:
        raise SpecError(
            'name',
            f'{spec.name!r} is a template ({observed.vmid} on {observed.node}); pve_vm manages VMs: '
            'choose another name, and manage the template with pve_template',
        )
    owner = _ownership.state(observed.config, observed.vmid, spec.owner_tag)
    if owner == _ownership.FOREIGN and not spec.adopt:
        raise SpecError(
            'name',
            f'{spec.name!r} is {observed.describe()}, which lacks the owner tag {spec.owner_tag!r}, so pve_vm '
            'did not create it; set adopt: true to take it over (the tag is then added), or choose another name',
        )
    if owner == _ownership.INHERITED and not spec.adopt:
        recorded = _ownership.recorded_vmid(observed.config.get('description'), spec.owner_tag)
        recorded_name = None if recorded is None else observed.names.get(recorded)
        raise SpecError('name', _ownership.inherited_message(spec.name, observed.describe(), recorded, recorded_name, spec.owner_tag))
    return owner


def _record_owner(spec: VmSpec, observed: Observed, owner: str, updates: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> None:
    """Write the owner record naming the VM's own VMID when it has none (a VM of an earlier release), another (adopt),
    or none at all (adopt); in the same config write as the tags. The diff shows it as ``owner_record``."""
    description = observed.config.get('description')
    recorded = _ownership.recorded_vmid(description, spec.owner_tag)
    if owner == _ownership.OWNED or recorded == observed.vmid:
        return
    try:
        updates['description'] = _ownership.with_record(description, spec.owner_tag, observed.vmid)
    except NotesTooLongError as exc:
        raise SpecError('name', f'{observed.describe()} cannot take its owner record in its Notes: {exc}') from None
    before['owner_record'] = _ownership.record_text(spec.owner_tag, recorded)
    after['owner_record'] = _ownership.record_text(spec.owner_tag, observed.vmid)


def _plan_absent(spec: VmSpec, observed: Observed | None) -> Plan:
    if observed is None:
        return Plan((), {'state': 'absent'}, {'state': 'absent'})
    _check_ours(spec, observed)
    if as_bool(observed.config.get('protection')):
        raise SpecError('state', f'absent refused: {observed.describe()} is protected; declare protection: false with state: present first, then state: absent')
    actions = [_shutdown(spec)] if observed.running else []
    actions.append(Action(DESTROY, {'purge': 1, 'destroy-unreferenced-disks': 1}))
    before = {'state': 'present', 'vmid': observed.vmid, 'node': observed.node, 'status': observed.status}
    seed_key = seed_drive_key(observed.config)
    seed = parse_drive(observed.config[seed_key])[0] if seed_key else None
    if is_seed_of(seed, spec.name):
        # purge removes the VM's disks, not an ISO file on a storage.
        actions.append(Action(DELETE_VOLUME, {'volid': seed}))
        before['user_data'] = seed
    return Plan(tuple(actions), before, {'state': 'absent'})


def _plan_existing(spec: VmSpec, observed: Observed, seed: str | None) -> Plan:
    owner = _check_ours(spec, observed)
    config = observed.config
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    updates, deletions = _converge_config(spec, config, before, after)
    _record_owner(spec, observed, owner, updates, before, after)
    drive_added = _add_cloudinit_drive(spec, config, updates, before, after)
    upload, replaced = _attach_seed(spec, seed, config, updates, deletions, before, after)
    resizes = _converge_devices(spec, config, updates, deletions, before, after)
    written = [*updates, *deletions]
    _check_not_hibernated(observed, [*written, *resizes, *upload])
    running = observed.running
    notes = config.get('description')
    held = {key for key in written if held_until_restart(key, config, updates.get(key))}
    # A value set back to the one the guest booted with (the restart record knows it) awaits nothing.
    held -= _restart.set_back(notes, {key: updates.get(key) for key in held}, observed.vmid, observed.started, running)
    # Judged by the config as this run leaves it.
    written_config = {**{key: value for key, value in config.items() if key not in deletions}, **updates}
    recorded = _restart.awaiting(notes, written_config, observed.vmid, observed.started, running)
    waiting = observed.pending | observed.cloudinit_pending | held | recorded
    stop = running and spec.state == 'stopped'
    restart = running and not stop and (spec.state == 'restarted' or bool(waiting and spec.apply_mode == 'reboot'))
    start = not running and spec.state in ('started', 'restarted')
    stays_running_unrestarted = running and not (stop or restart)
    ci_written = drive_added or any(is_cloudinit_key(key) for key in written)
    _track_restart(observed, updates, deletions, held, stays_running_unrestarted, keep=restart)
    actions = [*upload, *_write_actions(updates, deletions, resizes, regenerate=ci_written and not stays_running_unrestarted), *replaced]
    if stop or restart:
        actions.append(_shutdown(spec))
    if start or restart:
        actions.append(Action(START))
    if restart:
        actions.extend(_drop_restart_record(updates.get('description', config.get('description'))))
    if spec.state in POWER_STATES:
        before['status'] = observed.status
        after['status'] = 'stopped' if stop or not (running or start) else 'running'
    reboot_required = tuple(sorted(waiting)) if stays_running_unrestarted else ()
    return Plan(tuple(actions), before, after, reboot_required)


def _check_not_hibernated(observed: Observed, changes: list[Any]) -> None:
    """SpecError when the plan changes a hibernated VM: locked ``suspended`` until its next start resumes it (qemu-server
    PVE/API2/Qemu.pm vm_suspend with todisk) or its saved state is deleted, it takes no other config write (update_vm:
    check_lock) and no resize."""
    if changes and observed.config.get('lock') == 'suspended':
        raise SpecError(
            'state',
            f'{observed.describe()} is hibernated (lock suspended): PVE changes none of its settings until it resumes; '
            'resume it first (declare only state: started, whose start resumes it), or discard its saved state in PVE '
            f'(qm set {observed.vmid} --delete vmstate), then declare the change again',
        )


def _track_restart(observed: Observed, updates: dict[str, Any], deletions: list[str], held: set[str], keeps_running: bool, keep: bool) -> None:
    """Put the restart record (``_restart``) into the config write of ``updates``/``deletions``, if there is one: with
    the ``held`` keys while the VM keeps running unrestarted (those PVE reports nowhere: ``_restart.unreported``),
    without it when the VM is or will be stopped; as it is when the run restarts the VM (``keep``: dropped after the
    restart). It never makes a write of its own."""
    notes = updates.get('description', observed.config.get('description'))
    tracked = _restart.unreported(held)
    if not (updates or deletions) or keep or not (tracked or _restart.read_record(notes)):
        return
    if keeps_running:
        booted = observed.current if observed.current is not None else observed.config
        written = {**dict.fromkeys(deletions), **updates}
        try:
            after = _restart.with_record(notes, booted, written, observed.vmid, observed.started, tracked)
        except NotesTooLongError as exc:
            raise SpecError(
                'name', f'{observed.describe()} cannot take the record of what awaits its restart in its Notes: {exc}; or set apply_mode: reboot'
            ) from None
    else:
        after = _restart.without_record(notes)
    if not after and notes:
        updates.pop('description', None)
        deletions.append('description')
    elif after != (notes or '').rstrip():
        updates['description'] = after


def _drop_restart_record(notes: str | None) -> list[Action]:
    """A config write dropping the restart record, for after a restart; none when there is no record."""
    if _restart.read_record(notes) is None:
        return []
    after = _restart.without_record(notes)
    return [Action(CONFIGURE, {'set': {'description': after}, 'delete': []} if after else {'set': {}, 'delete': ['description']})]


def _plan_create(spec: VmSpec, creation: Creation, seed: str | None) -> Plan:
    after: dict[str, Any] = {'state': 'present', 'node': creation.node, 'image': creation.source.describe()}
    make = _clone_actions if creation.source.kind == CLONE else _create_actions
    actions = make(spec, creation, seed, after)
    if creation.source.kind == BLANK:
        after['image'] = None
    if spec.state in POWER_STATES:
        after['status'] = 'stopped' if spec.state == 'stopped' else 'running'
    if spec.state in ('started', 'restarted'):
        actions.append(Action(START))
    return Plan(tuple(actions), {'state': 'absent'}, after)


def _converge_devices(spec: VmSpec, config: Mapping[str, Any], updates, deletions, before, after) -> list:
    """The CD-ROM, further disks and NICs, firmware drives and the boot disk's size, for a VM that exists or a clone
    about to: updates and deletions added to, the resizes returned; a boot order naming a missing device refused."""
    _insert_cdrom(spec, config, updates, before, after)
    resizes = _converge_disks(spec, config, updates, deletions, before, after)
    _converge_nets(spec, config, updates, before, after)
    _add_firmware_drives(spec, config, updates, before, after)
    resizes += _resize(spec, config, before, after)
    _check_boot_order(spec, config, updates, deletions)
    return resizes


def _clone_actions(spec: VmSpec, creation: Creation, seed: str | None, after: dict[str, Any]) -> list[Action]:
    source = creation.source
    base = _clone_config(creation.source_config)
    discarded: dict[str, Any] = {}  # a new VM has no "before" beyond state: absent
    updates, deletions = _converge_config(spec, base, discarded, after)
    drive_added = _add_cloudinit_drive(spec, base, updates, discarded, after)
    upload, _nothing_replaced = _attach_seed(spec, seed, base, updates, deletions, discarded, after)
    resizes = _converge_devices(spec, base, updates, deletions, discarded, after)
    # The clone's Notes: the source's (clone_vm copies them), with the owner record naming the new VMID once it is known.
    clone = Action(
        CLONE,
        _given(
            vmid=source.vmid,
            node=source.node,
            name=spec.name,
            newid=spec.vmid,
            full=not spec.linked_clone,
            target=creation.node if creation.node != source.node else None,
            storage=spec.storage,
            pool=spec.pool,
            notes=creation.source_config.get('description') or '',
            owner_tag=spec.owner_tag,
        ),
    )
    ci_written = drive_added or any(is_cloudinit_key(key) for key in [*updates, *deletions])
    return [*upload, clone, *_write_actions(updates, deletions, resizes, regenerate=ci_written)]


def _create_actions(spec: VmSpec, creation: Creation, seed: str | None, after: dict[str, Any]) -> list[Action]:
    """A VM made by one create request with its whole config: an import of a disk image, or an empty VM (no image)."""
    updates, _nothing_to_delete = _converge_config(spec, {}, {}, after)
    if creation.source.kind == BLANK:
        config = {**_blank_config(spec, after), **updates}
    elif creation.source.volume is None:
        raise ValueError(f'{creation.source.describe()} has no volume to import')
    else:
        config = {**_import_config(spec, creation.source.volume), **updates}
    upload, _nothing_replaced = _attach_seed(spec, seed, config, config, [], {}, after)
    _insert_cdrom(spec, config, config, {}, after)
    if creation.source.kind == BLANK:
        # After the ISO, which so keeps ide2, as an installer's drive usually is.
        _add_cloudinit_drive(spec, config, config, {}, after)
    # A new VM's disks and devices are all new: the create allocates them.
    _converge_disks(spec, config, config, [], {}, after)
    _converge_nets(spec, config, config, {}, after)
    _add_firmware_drives(spec, config, config, {}, after)
    _check_boot_order(spec, config, config, [])
    resizes = []
    if spec.disk_size is not None and creation.source.kind == IMPORT:
        # The imported image's size is known only after the import: the module checks it then (verify_size).
        after['disk_size'] = format_size(spec.disk_size)
        resizes.append(Action(RESIZE, {'disk': 'scsi0', 'size': format_size(spec.disk_size), 'verify_size': True}))
    # The IMPORT action is the create request of a VM from its config, an empty VM's too.
    create = Action(IMPORT, _given(node=creation.node, newid=spec.vmid, pool=spec.pool, config=config, owner_tag=spec.owner_tag))
    return [*upload, create, *_write_actions({}, [], resizes, regenerate=any(is_cloudinit_key(key) for key in updates))]


def _given(**params: Any) -> dict[str, Any]:
    return {key: value for key, value in params.items() if value is not None}


def _shutdown(spec: VmSpec) -> Action:
    return Action(SHUTDOWN, _given(timeout=spec.shutdown_timeout))


def _write_actions(updates: Mapping[str, Any], deletions: list[str], resizes: list[Action], regenerate: bool) -> list[Action]:
    actions = []
    if updates or deletions:
        actions.append(Action(CONFIGURE, {'set': dict(updates), 'delete': list(deletions)}))
    actions.extend(resizes)
    if regenerate:
        actions.append(Action(REGENERATE_CLOUDINIT))
    return actions


def _converge_config(spec: VmSpec, config: Mapping[str, Any], before: dict[str, Any], after: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The keys to set and to delete so that ``config`` holds the declared values; fills both diff sides."""
    updates: dict[str, Any] = {}
    deletions: list[str] = []
    for key, value in desired_config(spec, config).items():
        observed = config.get(key)
        before[key] = display_value(key, observed)
        if same_value(key, observed, value):
            after[key] = before[key]
        elif value is None:
            after[key] = None
            deletions.append(key)
        else:
            after[key] = display_value(key, value)
            updates[key] = value
    return updates, deletions


def _add_cloudinit_drive(spec: VmSpec, config: Mapping[str, Any], updates: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Add a cloud-init drive to ``updates`` when cloud-init options are declared and the VM has none; whether it did."""
    if not spec.declares_cloudinit() or cloudinit_drive_key(config):
        return False
    first_option = next(option for option in CLOUDINIT_OPTIONS if spec.declares(option))
    slot = next((key for key in _CLOUDINIT_SLOTS if key not in config), None)
    if slot is None:
        raise SpecError(first_option, 'needs a cloud-init drive, and the VM has no free IDE or SATA slot for one; free ide2')
    disk = boot_disk_key(config)
    storage = spec.storage or (storage_of(parse_drive(config[disk])[0]) if disk else None)
    if storage is None:
        raise SpecError(
            'storage', f'is needed for the cloud-init drive that {first_option} needs: the VM has no disk on a storage to put it beside; declare storage'
        )
    updates[slot] = f'{storage}:cloudinit'
    before['cloudinit_drive'] = None
    after['cloudinit_drive'] = f'{slot}: {storage}:cloudinit'
    return True


def _attach_seed(
    spec: VmSpec, seed: str | None, config: Mapping[str, Any], updates: dict[str, Any], deletions: list[str], before: dict[str, Any], after: dict[str, Any]
) -> tuple[list[Action], list[Action]]:
    """Point a CD-ROM drive at the seed ISO ``seed`` in ``updates`` (PVE's cloud-init drive goes to ``deletions``); fills
    both diff sides. Returns the actions before the config write (the upload) and after it (deleting the replaced seed)."""
    if seed is None:
        return [], []
    seed_key, cloudinit_key = seed_drive_key(config), cloudinit_drive_key(config)
    current = parse_drive(config[seed_key])[0] if seed_key else None
    before['user_data'], after['user_data'] = current, seed
    slot = seed_key or cloudinit_key or next((key for key in _CLOUDINIT_SLOTS if key not in config), None)
    if slot is None:
        raise SpecError('user_data', 'needs a CD-ROM drive for its seed ISO, and the VM has no free IDE or SATA slot; free ide2')
    if cloudinit_key is not None:
        before['cloudinit_drive'], after['cloudinit_drive'] = f'{cloudinit_key}: {parse_drive(config[cloudinit_key])[0]}', None
        if cloudinit_key != slot:
            deletions.append(cloudinit_key)
    if current == seed:
        return [], []
    updates[slot] = f'{seed},media=cdrom'
    replaced = [Action(DELETE_VOLUME, {'volid': current})] if is_seed_of(current, spec.name) else []
    return [Action(UPLOAD_SEED, {'volid': seed})], replaced


def _resize(spec: VmSpec, config: Mapping[str, Any], before: dict[str, Any], after: dict[str, Any]) -> list[Action]:
    if spec.disk_size is None:
        return []
    disk = boot_disk_key(config)
    if disk is None:
        raise SpecError('disk_size', 'is declared but the VM has no disk to grow; drop disk_size or give the VM a disk image')
    current = disk_size(config, disk)
    before['disk_size'] = format_size(current) if current is not None else None
    if not grow_needed(spec.disk_size, current, disk):
        after['disk_size'] = before['disk_size']
        return []
    after['disk_size'] = format_size(spec.disk_size)
    return [Action(RESIZE, {'disk': disk, 'size': format_size(spec.disk_size)})]


def _converge_disks(
    spec: VmSpec, config: Mapping[str, Any], updates: dict[str, Any], deletions: list[str], before: dict[str, Any], after: dict[str, Any]
) -> list[Action]:
    """The declared disks (``disks``) into ``updates`` (a new one allocated, declared properties set over the others), and
    with ``remove_undeclared_disks`` the other disks but the boot disk into ``deletions``; fills both diff sides, one
    entry per slot. Returns the resizes of disks that grow."""
    boot = boot_disk_key(config)
    resizes = []
    for disk in spec.disks or ():
        current = config.get(disk.slot)
        if disk.slot == boot:
            raise SpecError(disk.option('slot'), f'is {disk.slot}, the boot disk of the VM; disks declares further disks, disk_size the boot disk\'s size')
        if current is not None and not is_disk(current):
            raise SpecError(disk.option('slot'), f'is {disk.slot}, which holds a CD-ROM drive of the VM ({parse_drive(current)[0]}); choose a free slot')
        if current is None:
            storage = _new_volume_storage(spec, config, disk.storage, disk.option('storage'), disk.slot)
            updates[disk.slot] = new_disk_value(disk, storage)
            before[disk.slot], after[disk.slot] = None, disk_view(disk, f'{storage}:', dict(disk.properties), format_size(disk.size))
            continue
        volume, properties = parse_drive(current)
        size = disk_size(config, disk.slot)
        shown = format_size(size) if size is not None else None
        wanted = {**properties, **dict(disk.properties)}
        if not same_drive_properties(properties, wanted):
            updates[disk.slot] = format_property_string({'file': volume, **wanted}, 'file')
        if grow_needed(disk.size, size, disk.slot, disk.option('size')):
            resizes.append(Action(RESIZE, {'disk': disk.slot, 'size': format_size(disk.size)}))
            shown = format_size(disk.size)
        before[disk.slot] = disk_view(disk, volume, properties, format_size(size) if size is not None else None)
        after[disk.slot] = disk_view(disk, volume, wanted, shown)
    if spec.remove_undeclared_disks:
        declared = {disk.slot for disk in spec.disks or ()}
        for key in sorted(key for key, value in config.items() if is_bus_disk(key, value) and key != boot and key not in declared):
            # PVE keeps the volume as unusedN (qemu-server PVE/QemuServer.pm, vmconfig_delete_or_detach_drive).
            deletions.append(key)
            before[key], after[key] = parse_drive(config[key])[0], None
    return resizes


def _new_volume_storage(spec: VmSpec, config: Mapping[str, Any], declared: str | None, option: str, key: str) -> str:
    """Where a new volume of the VM goes: its declared storage, else ``storage``, else beside the boot disk."""
    boot = boot_disk_key(config)
    storage = declared or spec.storage or (storage_of(parse_drive(config[boot])[0]) if boot else None)
    if storage is None:
        raise SpecError(option, f'is needed to allocate {key}: the VM has no disk on a storage to put it beside; declare it, or storage')
    return storage


def _insert_cdrom(spec: VmSpec, config: Mapping[str, Any], updates: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> None:
    """The declared ISO (``cdrom``) into the VM's CD-ROM drive (not the cloud-init drive's nor a seed's), or the drive
    emptied for an empty ``cdrom``; a VM without one gets one in the first free IDE/SATA slot. The diff shows the ISO."""
    if spec.cdrom is None:
        return
    key = cdrom_drive_key(config)
    current, wanted = cdrom_volume(config.get(key)) if key else None, spec.cdrom or None
    before['cdrom'], after['cdrom'] = current, wanted
    if current == wanted:
        return
    if key is None:
        key = next((slot for slot in _CLOUDINIT_SLOTS if slot not in config and slot not in updates), None)
        if key is None:
            raise SpecError('cdrom', 'needs a CD-ROM drive, and the VM has no free IDE or SATA slot for one; free ide2')
    updates[key] = f"{wanted or 'none'},media=cdrom"


def _check_boot_order(spec: VmSpec, config: Mapping[str, Any], updates: Mapping[str, Any], deletions: list[str]) -> None:
    """PVE refuses a boot order naming a device the VM lacks (qemu-server PVE/API2/Qemu.pm, "invalid bootorder")."""
    present = {key for key in (*config, *updates) if key not in deletions}
    missing = [device for device in spec.boot or () if device not in present]
    if missing:
        raise SpecError('boot', f"lists {', '.join(missing)}, which the VM does not have (nor will after this run); declare the device or drop it from boot")


def _add_firmware_drives(spec: VmSpec, config: Mapping[str, Any], updates: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> None:
    """The declared EFI disk and TPM state into ``updates`` when the VM has none; an existing one is kept (the EFI vars
    hold the boot entries; a TPM state's version cannot change: qemu-server PVE/API2/Qemu.pm, prohibit_tpm_version_change)."""
    for drive in (spec.efidisk, spec.tpm):
        if drive is None:
            continue
        current = config.get(drive.key)
        if current:
            volume, properties = parse_drive(current)
            declared, found = dict(drive.properties).get('version'), properties.get('version', 'v1.2')
            if drive.key == 'tpmstate0' and declared != found:
                raise SpecError(
                    f'{drive.option}.version',
                    f'is {declared}, but the TPM state of the VM ({volume}) is {found}, and PVE cannot change the version of a TPM '
                    f'state; declare {found}, or remove tpmstate0 from the VM by hand (the keys it holds are lost)',
                )
            before[drive.key] = after[drive.key] = drive.view(volume, properties)
            continue
        storage = _new_volume_storage(spec, config, drive.storage, f'{drive.option}.storage', drive.key)
        updates[drive.key] = drive.new_value(storage)
        before[drive.key], after[drive.key] = None, drive.view(f'{storage}:', dict(drive.properties))


def _converge_nets(spec: VmSpec, config: Mapping[str, Any], updates: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> None:
    """The declared network devices (``nets``) into ``updates``, each written over the current one (its MAC and other
    properties kept; a new one VirtIO on the default bridge); fills both diff sides with the declared properties."""
    for nic in spec.nets or ():
        current = config.get(nic.slot)
        properties = parse_net(current) if current else {'model': DEFAULT_NIC_MODEL, 'bridge': DEFAULT_BRIDGE}
        wanted = {**properties, **dict(nic.properties)}
        value = format_net(wanted)
        if not current or not same_net(current, value):
            updates[nic.slot] = value
        before[nic.slot], after[nic.slot] = nic_view(nic, parse_net(current) if current else None), nic_view(nic, wanted)


def _clone_config(source_config: Mapping[str, Any]) -> dict[str, Any]:
    """The config PVE gives a clone of ``source_config``: the same, not a template, with a new MAC PVE draws (unknown yet)
    for every network device (qemu-server PVE/API2/Qemu.pm, clone_vm: "always change MAC! address")."""
    config = {key: value for key, value in source_config.items() if key not in ('template', 'digest')}
    for key, value in source_config.items():
        if is_net_key(key) and value:
            props = parse_net(value)
            props.pop('macaddr', None)
            config[key] = format_net(props)
    return config


def _blank_config(spec: VmSpec, after: dict[str, Any]) -> dict[str, Any]:
    """The create config of an empty VM: a new boot disk of ``disk_size`` on ``storage`` and a network; the boot order is
    PVE's default unless declared (the disks, then CD-ROM drives, then the network: an empty disk lets an installer ISO
    boot, qemu-server PVE/QemuServer.pm get_default_bootdevices)."""
    if spec.storage is None or spec.disk_size is None:
        raise SpecError(
            'storage' if spec.storage is None else 'disk_size',
            f'is required to create {spec.name!r} without an image (an empty VM, with a new boot disk of disk_size on '
            'storage); declare it, or an image to clone or import',
        )
    after['disk_size'] = format_size(spec.disk_size)
    return {
        'name': spec.name,
        'scsihw': _IMPORT_BASE['scsihw'],
        'scsi0': allocation(spec.storage, spec.disk_size),
        'net0': format_net({'model': DEFAULT_NIC_MODEL, 'bridge': DEFAULT_BRIDGE}),
    }


def _import_config(spec: VmSpec, volume: str) -> dict[str, Any]:
    """The create config of a VM whose disk is imported: what a cloud image needs, a network, a cloud-init drive."""
    if spec.storage is None:
        raise SpecError('storage', f'is required to import {volume}: name the storage for the VM disk, e.g. local-lvm')
    config = {
        'name': spec.name,
        **_IMPORT_BASE,
        'scsi0': f'{spec.storage}:0,import-from={volume}',  # size 0: A.9
        'net0': format_net({'model': DEFAULT_NIC_MODEL, 'bridge': DEFAULT_BRIDGE}),
    }
    if spec.user_data is None:  # user_data brings its own NoCloud seed ISO instead
        config['ide2'] = f'{spec.storage}:cloudinit'
    return config
