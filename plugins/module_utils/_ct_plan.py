# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declared vs observed -> the ordered actions that converge one container, and the diff they show.

Pure, as ``_vm_plan``: the I/O half (``_ct_io``) finds the container (``find_container`` on ``/cluster/resources``),
reads its config, resolves the source of a new one (``resolve_source``) and passes what it read in. One plan drives
the check run and the real run.

Actions, as (kind, params), on the container found or just created:
- ``create``: node, newid (the declared vmid; absent: allocate one), config (the create parameters but the secrets),
  pool, owner_tag; ``secrets`` (password, ssh-public-keys) are sent with it and never shown. POST /nodes/N/lxc.
- ``clone``: vmid, node (the source's), name, full, newid, target, storage, pool, notes, owner_tag.
  POST .../lxc/SRC/clone; the rest of the declared config follows in one ``configure``.
- ``configure``: set and delete, one PUT .../config; ``resize``: disk (rootfs, mpN), size (absolute, PVE's form);
- ``shutdown``: timeout (graceful, then forced); ``start``; ``destroy``: purge, destroy-unreferenced-disks.

Decisions:
- Declared values are compared with the pending-merged config (``GET config``). What waits for a restart is
  ``reboot_required``: the container's pending keys (``config`` vs ``current=1``, src/PVE/API2/LXC/Config.pm,
  vm_config) and the keys this run writes that a running container takes only at its next start (``held_until_restart``).
  ``apply_mode: reboot`` restarts a running container with anything waiting (shutdown, then start).
- Ownership is pve_vm's (``_ownership``): the owner tag and an owner record naming the container's own VMID in its
  Notes; a container without them is refused unless ``adopt``.
- Placement and source (``image``, ``linked_clone``, ``node``, ``vmid``, ``pool``, ``storage``) and the secrets PVE
  writes into the root file system once (``password``, ``ssh_keys``) apply at creation only.
- The diff holds only what is declared: the managed config keys, ``disk_size``, ``mpN`` (path and size), ``status``
  for a power state, ``state`` on create and destroy; ``password`` shows as a mask.
- A volume whose config ``size=`` is below the declared size is measured before a resize is planned (``volumes_to_measure``;
  the I/O half reads the storage's size of it): PVE's resize compares with the volume's own size
  (src/PVE/API2/LXC.pm, resize_vm: volume_size_info, "disk is already at specified size"), which LVM rounds up to
  whole extents and an earlier create may have recorded a MiB short. One already at least the declared size is left
  as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils import _ownership
from ansible_collections.puls.proxmox.plugins.module_utils._actions import Action, Plan
from ansible_collections.puls.proxmox.plugins.module_utils._ct_config import (
    CtSpec,
    desired_config,
    display_value,
    grow_needed,
    held_until_restart,
    is_template_volume,
    mount_path,
    mount_size,
    new_volume,
    nic_properties,
    render_mount_point,
    render_nic,
    same_value,
)
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import MASK, SpecError, as_bool, format_size, parse_property_string
from ansible_collections.puls.proxmox.plugins.module_utils._vm_devices import nic_view
from ansible_collections.puls.proxmox.plugins.module_utils._vm_plan import Observed as VmObserved
from ansible_collections.puls.proxmox.plugins.module_utils._vm_plan import _record_owner

CREATE = 'create'
CLONE = 'clone'
CONFIGURE = 'configure'
RESIZE = 'resize'
SHUTDOWN = 'shutdown'
START = 'start'
DESTROY = 'destroy'

POWER_STATES = ('started', 'stopped', 'restarted')
# The storage types PVE ships that hold container volumes but make no linked clone of one: clone_vm asks
# volume_has_feature('clone', ...) with valid_target_formats raw and subvol (src/PVE/API2/LXC.pm), which pve-storage
# src/PVE/Storage/Plugin.pm answers no for a directory, NFS, CIFS or GlusterFS storage ("clone_image creates a qcow2
# volume") and LVMPlugin.pm offers no clone; LvmThinPlugin, ZFSPoolPlugin, RBDPlugin and BTRFSPlugin make one. A type
# not named here (a storage plugin outside PVE's own) is left to PVE, which knows what it can do.
NO_LINKED_CLONE_TYPES = frozenset(('dir', 'nfs', 'cifs', 'glusterfs', 'lvm'))
LINKED_CLONE_STORAGES = 'LVM-thin, ZFS, Ceph RBD and BTRFS'
DEFAULT_ROOTFS_SIZE = 4 * 1024**3


@dataclass(frozen=True)
class Observed(VmObserved):
    """The container found, read as a VM is (``config`` is ``GET config`` with pending merged, ``current`` with
    ``current=1``, None when it cannot differ: a stopped container); its name in messages differs, and
    ``volume_sizes`` holds the storage's size (bytes) of the volumes ``volumes_to_measure`` named."""

    volume_sizes: Mapping[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        return f"container {self.config.get('hostname', '')!r} ({self.vmid} on {self.node})"


@dataclass(frozen=True)
class Source:
    """A container template to clone (vmid, node, name), or an OS template volume (``volume``)."""

    vmid: int | None = None
    node: str | None = None
    name: str | None = None
    volume: str | None = None

    def describe(self) -> str:
        return self.volume or f'{self.name} ({self.vmid})'


@dataclass(frozen=True)
class Creation:
    """How a missing container is made: its source, the node, and a clone source's config ({} for an OS template)
    with the sizes of its volumes that ``volumes_to_measure`` named (a clone's volume is as large as its source's:
    src/PVE/LXC.pm, copy_volume, for a full clone; a linked one is a snapshot of the source's)."""

    source: Source
    node: str
    source_config: Mapping[str, Any] = field(default_factory=dict)
    volume_sizes: Mapping[str, int] = field(default_factory=dict)
    storage_types: Mapping[str, str] = field(default_factory=dict)  # storage ID -> type, read for a linked clone


def find_container(resources: Iterable[Mapping[str, Any]], name: str | None, vmid: int | None = None) -> Mapping[str, Any] | None:
    """The ``/cluster/resources?type=vm`` entry of the declared container, or None when it does not exist. A declared
    vmid identifies it (and must be a container, of that name when one is given); else the name must be unique among
    containers."""
    entries = list(resources)
    if vmid is not None:
        found = next((entry for entry in entries if int(entry['vmid']) == vmid), None)
        if found is not None and found.get('type') != 'lxc':
            raise SpecError('vmid', f"{vmid} is taken by a {found.get('type', 'qemu')} VM ({found.get('name')!r}); choose another vmid")
        if found is not None and name is not None and found.get('name') and found['name'] != name:
            raise SpecError('vmid', f"{vmid} is container {found['name']!r} on {found.get('node')}, not {name!r}; correct vmid or name")
        return found
    named = sorted((entry for entry in entries if entry.get('type') == 'lxc' and entry.get('name') == name), key=lambda entry: int(entry['vmid']))
    if len(named) > 1:
        vmids = ', '.join(f"{entry['vmid']} on {entry.get('node')}" for entry in named)
        raise SpecError('name', f'{name!r} is the host name of {len(named)} containers (VMIDs {vmids}); rename or remove all but one, or declare vmid')
    return named[0] if named else None


def resolve_source(spec: CtSpec, resources: Iterable[Mapping[str, Any]]) -> Source:
    """The source of a new container: the OS template volume, or the container template named or numbered by ``image``."""
    if spec.image is None:
        raise SpecError('image', f'is required to create container {spec.name}: give STORAGE:vztmpl/FILE, or the VMID or name of a container template')
    return source_of(spec.image, resources)


def source_of(image: str, resources: Iterable[Mapping[str, Any]]) -> Source:
    """What ``image`` names: an OS template volume (STORAGE:vztmpl/FILE), or one container template by VMID or exact name."""
    if is_template_volume(image):
        return Source(volume=image)
    templates = [entry for entry in resources if entry.get('type') == 'lxc' and as_bool(entry.get('template'))]
    if image.isdigit():
        found = [entry for entry in templates if int(entry['vmid']) == int(image)]
    else:
        found = [entry for entry in templates if entry.get('name') == image]
    if len(found) != 1:
        what = 'no container template' if not found else f'{len(found)} container templates'
        raise SpecError('image', f'{image!r} names {what}; give the VMID or exact name of one, or an OS template volume STORAGE:vztmpl/FILE')
    entry = found[0]
    return Source(int(entry['vmid']), entry['node'], entry.get('name'))


def plan_container(spec: CtSpec, observed: Observed | None = None, creation: Creation | None = None) -> Plan:
    if spec.state == 'absent':
        return _plan_absent(spec, observed)
    if observed is not None:
        return _plan_existing(spec, observed)
    if creation is None:
        raise ValueError('the container does not exist: plan_container needs a creation')
    return _plan_create(spec, creation)


def _check_ours(spec: CtSpec, observed: Observed) -> str:
    if observed.template:
        raise SpecError('name', f'{spec.name!r} is a container template ({observed.vmid} on {observed.node}); choose another name')
    owner = _ownership.state(observed.config, observed.vmid, spec.owner_tag)
    if owner == _ownership.FOREIGN and not spec.adopt:
        raise SpecError(
            'name',
            f'{spec.name!r} is {observed.describe()}, which lacks the owner tag {spec.owner_tag!r}, so pve_container did not create it; '
            'set adopt: true to take it over (the tag is then added), or choose another name',
        )
    if owner == _ownership.INHERITED and not spec.adopt:
        recorded = _ownership.recorded_vmid(observed.config.get('description'), spec.owner_tag)
        recorded_name = None if recorded is None else observed.names.get(recorded)
        raise SpecError('name', _ownership.inherited_message(spec.name, observed.describe(), recorded, recorded_name, spec.owner_tag))
    return owner


def _plan_absent(spec: CtSpec, observed: Observed | None) -> Plan:
    if observed is None:
        return Plan((), {'state': 'absent'}, {'state': 'absent'})
    _check_ours(spec, observed)
    if as_bool(observed.config.get('protection')):
        raise SpecError('state', f'absent refused: {observed.describe()} is protected; declare protection: false with state: present first, then state: absent')
    # PVE refuses to destroy a running container without force (src/PVE/API2/LXC.pm, destroy_vm): shut it down first.
    actions = [_shutdown(spec)] if observed.running else []
    actions.append(Action(DESTROY, {'purge': 1, 'destroy-unreferenced-disks': 1}))
    before = {'state': 'present', 'vmid': observed.vmid, 'node': observed.node, 'status': observed.status}
    return Plan(tuple(actions), before, {'state': 'absent'})


def _plan_existing(spec: CtSpec, observed: Observed) -> Plan:
    owner = _check_ours(spec, observed)
    config = observed.config
    if spec.unprivileged is not None and spec.unprivileged != as_bool(config.get('unprivileged')):
        kind = 'unprivileged' if as_bool(config.get('unprivileged')) else 'privileged'
        raise SpecError(
            'unprivileged',
            f'is {spec.unprivileged}, but {observed.describe()} is {kind}, which PVE cannot change; drop unprivileged, or recreate the container',
        )
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    updates, deletions = _converge_config(spec, config, before, after, observed.volume_sizes)
    # pve_vm's owner record write: it reads only the owner tag, the config's Notes, the VMID and describe(), as a container has them.
    _record_owner(spec, observed, owner, updates, before, after)  # type: ignore[arg-type]
    resizes = _resizes(spec, config, before, after, observed.volume_sizes)
    running = observed.running
    held = {key for key in [*updates, *deletions] if held_until_restart(key, config)}
    waiting = observed.pending | held
    stop = running and spec.state == 'stopped'
    restart = running and not stop and (spec.state == 'restarted' or bool(waiting and spec.apply_mode == 'reboot'))
    start = not running and spec.state in ('started', 'restarted')
    actions = _write_actions(updates, deletions, resizes)
    if stop or restart:
        actions.append(_shutdown(spec))
    if start or restart:
        actions.append(Action(START))
    if spec.state in POWER_STATES:
        before['status'] = observed.status
        after['status'] = 'stopped' if stop or not (running or start) else 'running'
    reboot_required = tuple(sorted(waiting)) if running and not (stop or restart) else ()
    return Plan(tuple(actions), before, after, reboot_required)


def _plan_create(spec: CtSpec, creation: Creation) -> Plan:
    after: dict[str, Any] = {'state': 'present', 'node': creation.node, 'image': creation.source.describe()}
    actions = _create_actions(spec, creation, after) if creation.source.volume else _clone_actions(spec, creation, after)
    if spec.state in POWER_STATES:
        after['status'] = 'stopped' if spec.state == 'stopped' else 'running'
    if spec.state in ('started', 'restarted'):
        actions.append(Action(START))
    return Plan(tuple(actions), {'state': 'absent'}, after)


def _create_actions(spec: CtSpec, creation: Creation, after: dict[str, Any]) -> list[Action]:
    if spec.storage is None:
        raise SpecError('storage', f'is required to create container {spec.name} from {spec.image}: name the storage of its root file system, e.g. local-lvm')
    config: dict[str, Any] = {'ostemplate': creation.source.volume}
    for key, value in desired_config(spec, {}).items():
        if value is not None:
            config[key] = value
            after[key] = display_value(key, value)
    # Always rootfs: PVE refuses mount points without it ("mount points configured, but 'rootfs' not set"), and makes
    # it 4 GiB when it is not given (src/PVE/API2/LXC.pm, create_vm).
    config['rootfs'] = new_volume(spec.storage, spec.disk_size or DEFAULT_ROOTFS_SIZE)
    if spec.disk_size is not None:
        after['disk_size'] = format_size(spec.disk_size)
    _converge_nets(spec, {}, config, {}, after)
    for point in spec.mount_points or ():
        config[point.key] = render_mount_point(point, None, spec.storage)
        after[point.key] = {'path': point.path, 'size': format_size(point.size)}
    if spec.unprivileged is not None:
        config['unprivileged'] = int(spec.unprivileged)
        after['unprivileged'] = spec.unprivileged
    secrets = {}
    if spec.ssh_keys:
        secrets['ssh-public-keys'] = '\n'.join(spec.ssh_keys)
        after['ssh_keys'] = list(spec.ssh_keys)
    if spec.password:
        secrets['password'] = spec.password
        after['password'] = MASK
    params = {'node': creation.node, 'config': config, 'secrets': secrets, 'owner_tag': spec.owner_tag}
    return [Action(CREATE, _given(newid=spec.vmid, pool=spec.pool, **params))]


def _clone_actions(spec: CtSpec, creation: Creation, after: dict[str, Any]) -> list[Action]:
    source = creation.source
    if spec.unprivileged is not None and spec.unprivileged != as_bool(creation.source_config.get('unprivileged')):
        raise SpecError('unprivileged', f'is {spec.unprivileged}, but a clone of {source.describe()} is not; drop unprivileged, or clone another template')
    if spec.linked_clone:
        _check_linked_clone(source, creation.source_config, creation.storage_types)
    base = _clone_config(creation.source_config)
    discarded: dict[str, Any] = {}  # a new container has no "before" beyond state: absent
    updates, deletions = _converge_config(spec, base, discarded, after, creation.volume_sizes)
    updates.pop('hostname', None)  # the clone request names it
    resizes = _resizes(spec, base, discarded, after, creation.volume_sizes)
    clone = Action(
        CLONE,
        _given(
            vmid=source.vmid,
            node=source.node,
            name=spec.name,
            newid=spec.vmid,
            full=not spec.linked_clone,
            target=spec.node if spec.node and spec.node != source.node else None,
            storage=spec.storage,
            pool=spec.pool,
            notes=creation.source_config.get('description') or '',
            owner_tag=spec.owner_tag,
        ),
    )
    return [clone, *_write_actions(updates, deletions, resizes)]


def _check_linked_clone(source: Source, source_config: Mapping[str, Any], storage_types: Mapping[str, str]) -> None:
    """Refuse a linked clone of a template with a volume on a storage of a type that makes none (NO_LINKED_CLONE_TYPES)."""
    for key in sorted(key for key in source_config if key == 'rootfs' or (key.startswith('mp') and key[2:].isdigit())):
        storage = parse_property_string(source_config[key], 'volume').get('volume', '').partition(':')[0]
        kind = storage_types.get(storage)
        if kind in NO_LINKED_CLONE_TYPES:
            raise SpecError(
                'linked_clone',
                f'is true, but container template {source.describe()} keeps {key} on storage {storage!r} ({kind}), where PVE makes no linked '
                f'clone (it refuses: "Linked clone feature ... is not available"; {LINKED_CLONE_STORAGES} storages do): '
                'set linked_clone: false for a full clone, or build the template on such a storage',
            )


def _clone_config(source_config: Mapping[str, Any]) -> dict[str, Any]:
    """The config PVE gives a clone: the template's, not a template, each NIC with a new MAC (src/PVE/API2/LXC.pm, clone_vm)."""
    config = {key: value for key, value in source_config.items() if key not in ('template', 'digest', 'lock')}
    for key, value in source_config.items():
        if key.startswith('net') and key[3:].isdigit():
            props = {name: item for name, item in parse_property_string(value).items() if name != 'hwaddr'}
            config[key] = ','.join(f'{name}={item}' for name, item in props.items())
    return config


def _given(**params: Any) -> dict[str, Any]:
    return {key: value for key, value in params.items() if value is not None}


def _shutdown(spec: CtSpec) -> Action:
    return Action(SHUTDOWN, _given(timeout=spec.shutdown_timeout))


def _write_actions(updates: Mapping[str, Any], deletions: list[str], resizes: list[Action]) -> list[Action]:
    actions = []
    if updates or deletions:
        actions.append(Action(CONFIGURE, {'set': dict(updates), 'delete': list(deletions)}))
    return actions + resizes


def _converge_config(
    spec: CtSpec, config: Mapping[str, Any], before: dict[str, Any], after: dict[str, Any], volume_sizes: Mapping[str, int]
) -> tuple[dict[str, Any], list[str]]:
    """The keys to set and to delete so that ``config`` holds the declared values; fills both diff sides. Mount
    points: a new one is added with its volume, an existing one gets its declared path (its size: ``_resizes``)."""
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
    _converge_nets(spec, config, updates, before, after)
    for point in spec.mount_points or ():
        current = config.get(point.key)
        size = _current_size(point.key, config, point.size, volume_sizes)
        before[point.key] = {'path': mount_path(current), 'size': format_size(size) if size else None} if current else None
        # grow_needed is False only for an equal size, so the declared size is the one after the run.
        grow_needed(point.size, size, point.key, 'mount_points')
        after[point.key] = {'path': point.path, 'size': format_size(point.size)}
        if current is None or mount_path(current) != point.path:
            updates[point.key] = render_mount_point(point, current, spec.storage)
    return updates, deletions


def _converge_nets(spec: CtSpec, config: Mapping[str, Any], updates: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> None:
    """The declared network devices (``nets``) into ``updates``, each written over the current one (its MAC and other
    properties kept); fills both diff sides with the declared properties only."""
    for nic in spec.nets or ():
        current = config.get(nic.slot)
        value = render_nic(nic, current)
        if nic_properties(current) != nic_properties(value):
            updates[nic.slot] = value
        before[nic.slot], after[nic.slot] = nic_view(nic, nic_properties(current)), nic_view(nic, nic_properties(value))


def _declared_sizes(spec: CtSpec) -> dict[str, int]:
    """The declared size in bytes of each volume, by its config key (rootfs, mpN)."""
    sizes = {} if spec.disk_size is None else {'rootfs': spec.disk_size}
    return {**sizes, **{point.key: point.size for point in spec.mount_points or ()}}


def volumes_to_measure(spec: CtSpec, config: Mapping[str, Any]) -> dict[str, str]:
    """The volumes (config key -> volume id) whose config size is below the declared one: their own size decides
    whether they need a resize (see the module's decisions)."""
    volumes = {}
    for key, declared in _declared_sizes(spec).items():
        size = mount_size(config.get(key)) if config.get(key) else None
        volume = parse_property_string(config.get(key), 'volume').get('volume', '') if size is not None else ''
        if size is not None and size < declared and ':' in volume:
            volumes[key] = volume
    return volumes


def _current_size(key: str, config: Mapping[str, Any], declared: int, volume_sizes: Mapping[str, int]) -> int | None:
    """The size of volume ``key`` to compare ``declared`` with: its config's, or ``declared`` when the volume itself
    holds that much already (PVE would refuse to grow it)."""
    size = mount_size(config.get(key)) if config.get(key) else None
    if size is not None and size < declared <= volume_sizes.get(key, 0):
        return declared
    return size


def _resizes(spec: CtSpec, config: Mapping[str, Any], before: dict[str, Any], after: dict[str, Any], volume_sizes: Mapping[str, int]) -> list[Action]:
    """Grow the root file system to ``disk_size`` and each existing mount point to its size (SpecError for a shrink)."""
    actions = []
    if spec.disk_size is not None:
        current = _current_size('rootfs', config, spec.disk_size, volume_sizes)
        before['disk_size'] = format_size(current) if current else None
        after['disk_size'] = format_size(spec.disk_size)
        if grow_needed(spec.disk_size, current, 'rootfs', 'disk_size'):
            actions.append(Action(RESIZE, {'disk': 'rootfs', 'size': format_size(spec.disk_size)}))
        else:
            after['disk_size'] = before['disk_size']
    for point in spec.mount_points or ():
        if config.get(point.key) and grow_needed(point.size, _current_size(point.key, config, point.size, volume_sizes), point.key, 'mount_points'):
            actions.append(Action(RESIZE, {'disk': point.key, 'size': format_size(point.size)}))
    return actions
