# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PVE privileges a plan needs, checked against the caller's effective permissions before its first write.

A module plans from what it read, then asks ``require`` (one ``GET /access/permissions``) whether the
credential holds what the plan's writes need; when it does not, the run fails naming every missing
privilege, its path and the ``pveum`` command that grants it, and nothing has been written. Check mode
asks too, so the plan run already says what the real run would be refused.

This file is the one place that maps writes to privileges (docs/privileges.md is its prose; a test
grants exactly that page's recipe). Where PVE accepts either of two grants (``VM.Allocate`` on the new
VM or on its pool) a need lists both. The check is never stricter than PVE: where PVE's rule depends on
more than the plan knows (the disks of a linked clone, a drive's delete) it asks nothing, and PVE
still refuses what it must.

Evaluating the answer of ``GET /access/permissions`` (PVE's ``get_effective_permissions``: the
effective privileges on the top-level paths, every ACL path and every pool member, each privilege
with its propagate flag): a privilege is held on a path when the nearest listed path at or above it
holds it, propagating unless it is the path itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError, grant_hint
from ansible_collections.puls.proxmox.plugins.module_utils._image import CLONE, IMPORT
from ansible_collections.puls.proxmox.plugins.module_utils._iso_plan import DELETE, NONE, REPLACE
from ansible_collections.puls.proxmox.plugins.module_utils._placement import clone_volumes
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import (
    _DRIVE_KEY,
    cloudinit_drive_key,
    is_cloudinit_key,
    is_cloudinit_volume,
    parse_drive,
    parse_net,
    storage_of,
    tag_set,
)
from ansible_collections.puls.proxmox.plugins.module_utils._vm_plan import (
    CONFIGURE,
    DELETE_VOLUME,
    DESTROY,
    REGENERATE_CLOUDINIT,
    RESIZE,
    SHUTDOWN,
    START,
    UPLOAD_SEED,
)

# The path of a VM whose VMID is allocated at creation: only a grant on /vms (or the pool) reaches it.
NEW_VM = '/vms/<new VMID>'
# qemu-server's check_vm_modify_config_perm, per config key (the drive and network keys are handled apart).
_KEY_PRIVILEGES = {
    'VM.Config.CPU': ('affinity', 'cores', 'cpu', 'cpulimit', 'cpuunits', 'numa', 'sockets', 'vcpus'),
    'VM.Config.Memory': ('balloon', 'memory', 'shares'),
    'VM.Config.HWType': ('acpi', 'audio0', 'hotplug', 'kvm', 'machine', 'scsihw', 'serial0', 'smbios1', 'tablet', 'vga', 'watchdog'),
    'VM.Config.Options': (
        'agent',
        'autostart',
        'bios',
        'description',
        'keyboard',
        'localtime',
        'name',
        'onboot',
        'ostype',
        'protection',
        'reboot',
        'startdate',
        'startup',
        'tags',
        'tdf',
    ),
    'VM.Config.Disk': ('boot', 'bootdisk', 'vmstatestorage'),
}
PRIVILEGE_OF_KEY = {key: privilege for privilege, keys in _KEY_PRIVILEGES.items() for key in keys}


@dataclass(frozen=True)
class Grant:
    """A privilege on a path."""

    privilege: str
    path: str


@dataclass(frozen=True)
class Need:
    """What one step of a plan needs: every grant of ``grants``, or every grant of one of ``instead`` (PVE's "or")."""

    purpose: str
    grants: tuple[Grant, ...]
    instead: tuple[tuple[Grant, ...], ...] = ()
    # A guest tag set or removed: Sys.Modify on / is needed only where the datacenter's tag settings say (require).
    tag: str | None = None


def need(purpose: str, privilege: str, path: str, *alternatives: Grant) -> Need:
    """A need of one privilege on one path; each alternative grant alone would do as well."""
    return Need(purpose, (Grant(privilege, path),), tuple((grant,) for grant in alternatives))


def vm_path(vmid: int | None) -> str:
    return NEW_VM if vmid is None else f'/vms/{vmid}'


def storage_path(volume_or_storage: str) -> str:
    return f'/storage/{storage_of(volume_or_storage) or volume_or_storage}'


# ---------------------------------------------------------------------------------------------- what plans need


def vm_needs(actions: Iterable[Any], vmid: int | None, source_config: Mapping[str, Any] | None = None) -> list[Need]:
    """The needs of pve_vm's plan actions (``_vm_plan.Action``) on VM vmid (None: a VMID allocated by a clone or import);
    ``source_config`` is the clone source's config (its disks are copied by a full clone)."""
    actions = list(actions)
    needs = []
    for action in actions:
        params, path = action.params, vm_path(vmid)
        if action.kind == CLONE:
            needs += _clone_needs(params, vmid, source_config or {})
        elif action.kind == IMPORT:
            needs.append(_allocate(f'to create VM {params["config"].get("name", "")} on {params["node"]}', vmid, params.get('pool')))
            needs += config_needs(params['config'], (), path)
        elif action.kind == CONFIGURE:
            needs += config_needs(params['set'], params['delete'], path)
        elif action.kind == RESIZE:
            needs.append(need(f'to grow {params["disk"]}', 'VM.Config.Disk', path))
        elif action.kind == REGENERATE_CLOUDINIT:
            needs.append(need('to regenerate the cloud-init drive', 'VM.Config.Cloudinit', path))
        elif action.kind in (SHUTDOWN, START):
            needs.append(need(f'to {action.kind} it', 'VM.PowerMgmt', path))
        elif action.kind == DESTROY:
            needs.append(need('to destroy it', 'VM.Allocate', path))
        elif action.kind == UPLOAD_SEED:
            needs.append(need(f'to upload the seed ISO {params["volid"]}', 'Datastore.AllocateTemplate', storage_path(params['volid'])))
        elif action.kind == DELETE_VOLUME:
            needs.append(need(f'to delete {params["volid"]}', 'Datastore.Allocate', storage_path(params['volid'])))
    pool = next((action.params.get('pool') for action in actions if action.kind in (CLONE, IMPORT)), None)
    return [through_pool(item, vm_path(vmid), pool) for item in needs] if pool else needs


# qemu-server PVE/API2/Qemu.pm create_vm checks the tags against `{}` as the old ones, which split_list makes one tag.
CREATE_OLD_TAG = 'HASH(0x...)'
# pve_vm's plan action that creates a VM with its config's tags, and the old tags PVE checks them against.
VM_CREATE_OLD_TAGS = MappingProxyType({IMPORT: frozenset({CREATE_OLD_TAG})})
_ROOT_MODIFY = Grant('Sys.Modify', '/')


def tag_needs(actions: Iterable[Any], tags_now: Any, create_old_tags: Mapping[str, frozenset[str]] = VM_CREATE_OLD_TAGS) -> list[Need]:
    """The tags a plan's actions set or remove, each a need of Sys.Modify on / that ``require`` keeps only where PVE asks
    it (pve-guest-common PVE/GuestHelpers.pm assert_tag_permissions: a tag whose count changes); ``tags_now`` the
    guest's tags before the plan (a clone's: its source's, which a clone copies); ``create_old_tags`` the action kinds
    that create the guest with their config's tags, each with the old tags its create checks them against (pve_vm's by
    default; pve_container's: ``_ct_privileges.CT_CREATE_OLD_TAGS``)."""
    needs = []
    for action in actions:
        if action.kind in create_old_tags and action.params['config'].get('tags') is not None:
            before, after = create_old_tags[action.kind], tag_set(action.params['config']['tags'])
        elif action.kind == CONFIGURE and ('tags' in action.params['set'] or 'tags' in action.params['delete']):
            before, after = tag_set(tags_now), tag_set(action.params['set'].get('tags'))
        else:
            continue
        needs += retag_needs(before, after)
        tags_now = ';'.join(sorted(after))
    return needs


def retag_needs(before: Any, after: Any) -> list[Need]:
    """A write of the tags ``after`` over ``before`` (each a ``tags`` value or a set of tags): each tag it sets or
    removes, a need of Sys.Modify on / that ``require`` keeps only where PVE asks it (assert_tag_permissions)."""
    old, new = tag_set(before), tag_set(after)
    return [
        Need(
            'to create it with tags (create_vm checks them against no old tags, read as the one tag HASH(0x...))'
            if tag == CREATE_OLD_TAG
            else f'to {"set" if tag in new else "remove"} the tag {tag}',
            (_ROOT_MODIFY,),
            tag=tag,
        )
        for tag in sorted(old ^ new)
    ]


def enforced_tags(needs: list[Need], permissions: Mapping[str, Mapping[str, Any]], options: Mapping[str, Any]) -> list[Need]:
    """needs without the tag needs PVE does not enforce (GuestHelpers.pm get_allowed_tags, assert_tag_permissions):
    a tag is refused without Sys.Modify on / when it is registered, or when ``user-allow`` is not ``free`` and the tag is
    not among the ``allowed-tags``. Those two settings show only with Sys.Audit on / (pve-manager PVE/API2/Cluster.pm
    get_options): without it, no tag need is kept, and PVE refuses what it must."""
    if not holds(permissions, Grant('Sys.Audit', '/')):
        return [item for item in needs if item.tag is None]
    registered = set(options.get('registered-tags') or ())
    free = ((options.get('user-tag-access') or {}).get('user-allow') or 'free') == 'free'
    allowed = set(options.get('allowed-tags') or ())
    return [item for item in needs if item.tag is None or item.tag in registered or (not free and item.tag not in allowed)]


def through_pool(item: Need, path: str, pool: str) -> Need:
    """A need of a VM created in pool: PVE checks the privileges of a create on /vms/NEW or /pool/P (RPCEnvironment.pm
    check_vm_perm with the pool), and a VM in a pool inherits the pool's ACLs (RPCEnvironment.pm permissions), so every
    grant on the new VM's path may come from /pool/P instead."""

    def pooled(option: tuple[Grant, ...]) -> tuple[Grant, ...]:
        return tuple(Grant(grant.privilege, f'/pool/{pool}') if grant.path == path else grant for grant in option)

    options = [item.grants, *item.instead]
    extra = tuple(pooled(option) for option in options if pooled(option) != option and pooled(option) not in options)
    return Need(item.purpose, item.grants, item.instead + extra) if extra else item


def _allocate(purpose: str, vmid: int | None, pool: str | None) -> Need:
    """PVE's rule for a new guest: VM.Allocate on its path or on the pool it is created in."""
    if pool:
        return need(purpose, 'VM.Allocate', vm_path(vmid), Grant('VM.Allocate', f'/pool/{pool}'))
    return need(f'{purpose} (VM.Allocate on /pool/NAME would do as well, with pool: NAME declared)', 'VM.Allocate', vm_path(vmid))


def _clone_needs(params: Mapping[str, Any], vmid: int | None, source_config: Mapping[str, Any]) -> list[Need]:
    purpose = f'to create VM {params["name"]} as a clone of {params["vmid"]}'
    needs = [need(purpose, 'VM.Clone', vm_path(params['vmid'])), _allocate(purpose, vmid, params.get('pool'))]
    # clone_vm checks SDN.Use on the bridges of the source's NICs (qemu-server Qemu.pm clone_vm, check_bridge_access).
    needs += [
        _bridge_need(key, value, f'{purpose}: its {key} is on') for key, value in sorted(source_config.items()) if key.startswith('net') and key[3:].isdigit()
    ]
    if params.get('full'):
        # A full clone allocates a copy of each disk (not of a CD-ROM or the cloud-init drive) on its storage or `storage`.
        storages = (
            {params['storage']}
            if params.get('storage')
            else {storage for volume in clone_volumes(source_config) if not is_cloudinit_volume(volume) and (storage := storage_of(volume))}
        )
        needs += [
            need(f'{purpose}: a full clone copies its disks to {storage}', 'Datastore.AllocateSpace', storage_path(storage)) for storage in sorted(storages)
        ]
    return needs


def config_needs(settings: Mapping[str, Any], deletions: Iterable[str], path: str) -> list[Need]:
    """The needs of one config write (a create's or an update's) on VM path: per key set or deleted."""
    by_privilege: dict[str, list[str]] = {}
    needs = []
    for key in [*settings, *deletions]:
        value = settings.get(key)
        if _DRIVE_KEY.match(key):
            needs += _drive_needs(key, value, path)
            continue
        if key.startswith('net') and key[3:].isdigit():
            by_privilege.setdefault('VM.Config.Network', []).append(key)
            if value is not None:
                needs.append(_bridge_need(key, value))
        elif is_cloudinit_key(key):
            by_privilege.setdefault('VM.Config.Cloudinit', []).append(key)
        elif key in PRIVILEGE_OF_KEY:
            by_privilege.setdefault(PRIVILEGE_OF_KEY[key], []).append(key)
    for privilege, keys in sorted(by_privilege.items()):
        # PVE still accepts VM.Config.Network for the cloud-init keys (their privilege before VM.Config.Cloudinit existed).
        instead = (Grant('VM.Config.Network', path),) if privilege == 'VM.Config.Cloudinit' else ()
        needs.insert(0, need(f'to set {", ".join(keys)}', privilege, path, *instead))
    return needs


def _drive_needs(key: str, value: Any, path: str) -> list[Need]:
    """A drive set: a new disk or cloud-init drive allocates on its storage; a disk needs VM.Config.Disk, an ISO CD-ROM
    VM.Config.CDROM. A deleted drive's kind is not known here: PVE checks it."""
    if value is None:
        return []
    volume, props = parse_drive(value)
    target = storage_of(volume)
    if is_cloudinit_volume(volume):
        # update_vm's check_drive_perms: a cloud-init drive takes both VM.Config.Cloudinit and VM.Config.CDROM.
        needs = [Need(f'to add the cloud-init drive {key}', (Grant('VM.Config.Cloudinit', path), Grant('VM.Config.CDROM', path)))]
        if target:
            needs.append(need(f'to allocate the cloud-init drive {key} on {target}', 'Datastore.AllocateSpace', storage_path(target)))
        return needs
    if props.get('media') == 'cdrom':
        return [need(f'to insert {volume} into {key}', 'VM.Config.CDROM', path)]
    needs = [need(f'to set disk {key}', 'VM.Config.Disk', path)]
    name = volume.partition(':')[2]
    if target and (name.replace('.', '', 1).isdigit() or 'import-from' in props):
        needs.append(need(f'to allocate disk {key} on {target}', 'Datastore.AllocateSpace', storage_path(target)))
    if 'import-from' in props and storage_of(props['import-from']):
        needs.append(_import_source_need(key, props['import-from']))
    return needs


# An `images` volume names its owner VM: vm-N-..., base-N-... (a linked clone's base-B-disk-0/vm-N-disk-0 is N's).
_IMAGE_OWNER = re.compile(r'(?:^|/)(?:vm|base)-(\d+)-[^/]*$')


def owner_of_image(volume: str) -> int | None:
    """The VMID owning an ``images`` volume (``local-lvm:vm-9017-disk-0``, ``local:9017/base-9017-disk-0.qcow2``); None
    for a volume of another content type (``local:import/noble.qcow2``, ``local:iso/x.iso``)."""
    name = volume.partition(':')[2]
    if name.startswith(('import/', 'iso/', 'vztmpl/', 'snippets/', 'backup/')):
        return None
    found = _IMAGE_OWNER.search(name)
    return int(found.group(1)) if found else None


def _import_source_need(key: str, source: str) -> Need:
    """qemu-server Qemu.pm check_storage_access: importing a VM's disk takes VM.Clone on that VM (it is copied as a clone
    copies it); any other volume pve-storage's check_volume_access: Datastore.Allocate, or for an ``import``
    volume Datastore.AllocateSpace or Datastore.Audit, on its storage."""
    owner = owner_of_image(source)
    if owner is not None:
        return need(f'to import {source} (a disk of VM {owner}) into {key}', 'VM.Clone', vm_path(owner))
    path = storage_path(source)
    return need(f'to read {source} for {key}', 'Datastore.Audit', path, Grant('Datastore.AllocateSpace', path), Grant('Datastore.Allocate', path))


# The zone of a bridge, until the VNet list says which it is: ``require`` puts the VNet's zone in its place.
ANY_ZONE = '*'
# The zone PVE puts every plain Linux bridge in.
LOCAL_ZONE = 'localnetwork'


def _bridge_need(key: str, value: Any, purpose: str = '') -> Need:
    """pve-guest-common GuestHelpers.pm check_vnet_access: SDN.Use on /sdn/zones/ZONE/BRIDGE, or with a VLAN tag on
    /sdn/zones/ZONE/BRIDGE/TAG, where ZONE is the zone of the SDN VNet of that name, or ``localnetwork`` for a plain
    bridge. The zone is resolved by ``require`` from the VNet list (``GET /cluster/sdn/vnets``)."""
    props = parse_net(value)
    bridge = props.get('bridge', '')
    path = f'/sdn/zones/{ANY_ZONE}/{bridge}' + (f'/{props["tag"]}' if props.get('tag') else '')
    return need(f'{purpose} {bridge}' if purpose else f'to connect {key} to {bridge}', 'SDN.Use', path)


def iso_needs(steps: Iterable[Any], storage: str, download: bool) -> list[Need]:
    """The needs of pve_iso's plan steps (``_iso_plan.Step``) on storage; ``download`` when the source is a URL. Every node acted
    on keeps the record of its files in its notes."""
    needs = []
    for step in steps:
        if step.action == NONE:
            continue
        if step.action == DELETE or (step.action == REPLACE and download):
            needs.append(need(f'to delete the old file on {step.node}', 'Datastore.Allocate', storage_path(storage)))
        if step.action != DELETE:
            needs.append(need(f'to put the file on {storage} of {step.node}', 'Datastore.AllocateTemplate', storage_path(storage)))
            if download:
                needs.append(
                    Need(
                        f'to let {step.node} download it',
                        (Grant('Sys.Audit', '/'), Grant('Sys.Modify', '/')),
                        ((Grant('Sys.AccessNetwork', f'/nodes/{step.node}'),),),
                    )
                )
        needs.append(need(f'to record the file in the notes of {step.node}', 'Sys.Modify', '/'))
    return needs


def os_template_needs(download: Mapping[str, str] | None, node: str) -> list[Need]:
    """pve_os_template's download of an OS template from the node's appliance index (``download``: {storage, template},
    None when it is on a storage already). pve-manager ``PVE/API2/Nodes.pm`` ``apl_download`` (``POST
    /nodes/{node}/aplinfo``) checks Datastore.AllocateTemplate on ``/storage/{storage}``; the reads (the appliance index:
    any user; the storages' vztmpl content: Datastore.Audit or Datastore.AllocateSpace) need nothing more."""
    if download is None:
        return []
    return [
        need(
            f'to download the OS template {download["template"]} onto storage {download["storage"]} of {node}',
            'Datastore.AllocateTemplate',
            storage_path(download['storage']),
        )
    ]


def network_needs(node: str, changes: bool) -> list[Need]:
    """pve_node_network on node: seeing every bridge, and changing the node's network when the plan ``changes`` it.

    pve-manager ``PVE/API2/Network.pm``: ``index`` (any user) lists a bridge only to who holds SDN.Audit or SDN.Use on
    ``/sdn/zones/localnetwork/BRIDGE`` (``check_sdn_bridge``); the module must see every bridge to tell the management
    interface and what exists, so it asks for them on the zone. ``create_network``, ``update_network``,
    ``delete_network`` and ``reload_network_config`` need Sys.Modify on ``/nodes/NODE``."""
    zone = f'/sdn/zones/{LOCAL_ZONE}'
    needs = [need(f"to see every bridge of {node} (PVE lists a bridge only to who may audit or use it)", 'SDN.Audit', zone, Grant('SDN.Use', zone))]
    if changes:
        needs.append(need(f'to change and apply the network of {node}', 'Sys.Modify', f'/nodes/{node}'))
    return needs


def notes_needs(vmid: int) -> list[Need]:
    """pve_notes_hash writing the provision record into a VM's Notes."""
    return [need('to write the provision record into its Notes', 'VM.Config.Options', vm_path(vmid))]


def conversion_needs(conversion: Any, write_needs: Callable[[Mapping[str, Any], Iterable[str], str], list[Need]] = config_needs) -> list[Need]:
    """pve_template's conversion (``_template_io.Conversion``) of the build VM: shutdown, the config writes (Notes, name,
    tags; the build's cloud-init settings and seed ISO drive out, an empty cloud-init drive in; a build container's
    addresses), regeneration, deleting its own seed ISO, ``POST .../template``; then renaming the previous template and
    destroying it. ``write_needs``: the needs of one config write of the guest's type, ``config_needs`` for a VM,
    ``_ct_privileges.config_needs`` for a container (whose name is ``hostname``: VM.Config.Network, pve-container
    src/PVE/LXC.pm check_ct_modify_config_perm)."""
    path = vm_path(int(conversion.build['vmid']))
    seed = conversion.seed
    settings = {'description': conversion.notes, 'tags': conversion.tags, conversion.name_key: None, **conversion.addresses}
    deletions = list(conversion.strip)
    if seed is not None and seed.cloudinit:
        settings[seed.key] = seed.cloudinit
    elif seed is not None:
        deletions.append(seed.key)
    needs = [need('to shut it down', 'VM.PowerMgmt', path)] if conversion.status != 'stopped' else []
    needs += write_needs(settings, deletions, path) + retag_needs(conversion.config.get('tags'), conversion.tags)
    if cloudinit_drive_key(conversion.config) or (seed is not None and seed.cloudinit):
        needs.append(need('to regenerate the cloud-init drive', 'VM.Config.Cloudinit', path))
    if seed is not None and seed.owned:
        needs.append(need(f'to delete its seed ISO {seed.volume}', 'Datastore.Allocate', storage_path(seed.volume)))
    needs.append(need('to convert it to a template', 'VM.Allocate', path))
    if conversion.previous is not None:
        previous = vm_path(int(conversion.previous['vmid']))
        retiring = write_needs({conversion.name_key: None, 'tags': None}, [], previous)
        retiring += retag_needs(conversion.previous_config.get('tags'), conversion.retired_tags)
        needs += [replace(each, purpose=f'to retire the previous template: {each.purpose}') for each in retiring]
        if conversion.destroy_previous:
            needs.append(need('to destroy the previous template', 'VM.Allocate', previous))
    return needs


# ---------------------------------------------------------------------------------------------- checking


def holds(permissions: Mapping[str, Mapping[str, Any]], grant: Grant) -> bool:
    """Whether the effective permissions (``GET /access/permissions``) give grant.privilege on grant.path; a path with
    ANY_ZONE is held when it is held in some zone the permissions name (or ``localnetwork``)."""
    if f'/{ANY_ZONE}/' in grant.path:
        prefix, _zone, rest = grant.path.partition(f'/{ANY_ZONE}/')
        zones = {path.split('/')[3] for path in permissions if path.startswith(f'{prefix}/')} | {LOCAL_ZONE}
        return any(holds(permissions, Grant(grant.privilege, f'{prefix}/{zone}/{rest}')) for zone in sorted(zones))
    path = grant.path
    while True:
        if path in permissions:
            flags = permissions[path]
            return grant.privilege in flags and (path == grant.path or bool(flags[grant.privilege]))
        if path == '/':
            return False
        path = path.rsplit('/', 1)[0] or '/'


def missing(permissions: Mapping[str, Mapping[str, Any]], needs: Iterable[Need]) -> list[tuple[Need, tuple[Grant, ...]]]:
    """Each need none of whose alternatives is held in full, with the grants its first alternative lacks."""
    lacking = []
    for item in needs:
        options = (item.grants, *item.instead)
        if not any(all(holds(permissions, grant) for grant in option) for option in options):
            lacking.append((item, tuple(grant for grant in item.grants if not holds(permissions, grant))))
    return lacking


def refusal(doing: str, lacking: list[tuple[Need, tuple[Grant, ...]]], credential) -> str:
    """The message for what is lacking: PVE's words per privilege and path, what it is for, and how to grant it."""
    lines: list[str] = []
    per_path: dict[str, list] = {}
    for item, grants in lacking:
        text = ', '.join(f'Permission check failed ({grant.path}, {grant.privilege})' for grant in grants)
        others = ' or '.join(' and '.join(f'{grant.privilege} on {grant.path}' for grant in option) for option in item.instead)
        lines.append(f'{text} {item.purpose}' + (f' ({others} would do as well)' if others else ''))
        for grant in grants:
            privileges = per_path.setdefault(_grant_path(grant.path), [])
            if grant.privilege not in privileges:
                privileges.append(grant.privilege)
    hints = '; '.join(grant_hint(', '.join(privileges), path, credential) for path, privileges in per_path.items())
    return f'{doing} refused before any change: {credential.description} lacks privileges the plan needs: {"; ".join(lines)}. Hint: {hints}'


def _grant_path(path: str) -> str:
    """Where to grant a privilege needed on path: a VM whose VMID is not known yet is reached through /vms."""
    return '/vms' if path == NEW_VM else path


def read_permissions(client) -> dict[str, dict[str, Any]]:
    """The credential's effective permissions, {path: {privilege: propagate}} (PVE lets anyone read their own)."""
    return client.get('/access/permissions', context='reading the permissions of the API credential') or {}


def read_vnet_zones(client) -> dict[str, str] | None:
    """{VNet: its zone} of the SDN VNets the credential may see (pve-network API2/Network/SDN/Vnets.pm index lists only
    those with SDN.Audit or SDN.Allocate on /sdn/zones/ZONE/VNET); None when the list cannot be read (no SDN)."""
    try:
        vnets = client.get('/cluster/sdn/vnets', context='reading the SDN VNets') or []
    except PveApiError:
        return None
    return {entry['vnet']: entry['zone'] for entry in vnets if entry.get('vnet') and entry.get('zone')}


def in_zones(needs: list[Need], zones: Mapping[str, str] | None) -> list[Need]:
    """The bridge needs with the zone resolved: a listed VNet's own zone. A bridge not listed is a plain Linux bridge
    (zone localnetwork) or a VNet the credential may not see: localnetwork is asked for, and SDN.Use on that bridge in
    any zone does as well, so the check is never stricter than PVE (which refuses a wrong zone itself)."""

    def resolved(grant: Grant) -> Grant:
        if f'/{ANY_ZONE}/' not in grant.path:
            return grant
        bridge = grant.path.split('/')[4]
        return Grant(grant.privilege, grant.path.replace(f'/{ANY_ZONE}/', f'/{(zones or {}).get(bridge, LOCAL_ZONE)}/', 1))

    result = []
    for item in needs:
        if not any(f'/{ANY_ZONE}/' in grant.path for option in (item.grants, *item.instead) for grant in option):
            result.append(item)
            continue
        grants = tuple(resolved(grant) for grant in item.grants)
        unlisted = [grant for grant in item.grants if f'/{ANY_ZONE}/' in grant.path and grant.path.split('/')[4] not in (zones or {})]
        instead = tuple(tuple(resolved(grant) for grant in option) for option in item.instead)
        result.append(replace(item, grants=grants, instead=instead + ((item.grants,) if unlisted else ())))
    return result


def require(client, needs: Iterable[Need], doing: str) -> None:
    """Raise PveApiError naming every privilege of needs the client's credential lacks; one request (two when a NIC's
    bridge is set: the VNet list; two when a tag changes without Sys.Modify on /: the datacenter options), none
    without needs."""
    needs = list(needs)
    if not needs:
        return
    if any(f'/{ANY_ZONE}/' in grant.path for item in needs for grant in item.grants):
        needs = in_zones(needs, read_vnet_zones(client))
    permissions = read_permissions(client)
    if any(item.tag is not None for item in needs) and not holds(permissions, _ROOT_MODIFY):
        needs = enforced_tags(needs, permissions, client.get('/cluster/options', context='reading the tag settings of the datacenter') or {})
    lacking = missing(permissions, needs)
    if lacking:
        raise PveApiError(refusal(doing, lacking, client.credential))


def sdn_needs(actions: Iterable[Any], zone_of: Mapping[str, str], deletes_vnets: bool, nodes: Iterable[str] = (), fabrics: bool = False) -> list[Need]:
    """pve_sdn: seeing every zone, VNet, controller and fabric (``fabrics``: PVE has them) and each node's network (its
    staged changes, which the apply applies, and its reload task after the apply), and what each action writes.

    pve-network ``PVE/API2/Network/SDN/Zones.pm`` and ``Vnets.pm`` ``index`` list only the objects on which the user holds
    SDN.Audit or SDN.Allocate; ``Zones.pm`` create needs SDN.Allocate on ``/sdn/zones``, update and delete on
    ``/sdn/zones/ZONE``; ``Vnets.pm`` create on ``/sdn/zones/ZONE``, update and delete (``$check_vnet_access``) and every
    subnet write (``Subnets.pm``) on ``/sdn/zones/ZONE/VNET``; ``SDN.pm`` reload (the apply) on ``/sdn``. Deleting a
    VNet reads every guest's config (VM.Audit) to refuse a VNet a NIC uses. ``zone_of`` maps a VNet to its zone.
    ``Controllers.pm`` and ``Fabrics.pm`` list only what one holds SDN.Audit or SDN.Allocate on; pve-manager
    ``PVE/API2/Network.pm`` index and ``PVE/API2/Tasks.pm`` node_tasks (other users' tasks) need Sys.Audit on the node.
    The lock and the rollback need what the apply needs (SDN.Allocate on /sdn)."""
    needs = [need('to see every SDN zone and VNet (PVE lists only those one may audit)', 'SDN.Audit', '/sdn/zones', Grant('SDN.Allocate', '/sdn/zones'))]
    needs.append(need('to see every SDN controller', 'SDN.Audit', '/sdn/controllers', Grant('SDN.Allocate', '/sdn/controllers')))
    if fabrics:
        needs.append(need('to see every SDN fabric', 'SDN.Audit', '/sdn/fabrics', Grant('SDN.Allocate', '/sdn/fabrics')))
    for node in nodes:
        purpose = f'to see the network changes staged on {node}, which the SDN apply applies, and the reload of its network'
        needs.append(need(purpose, 'Sys.Audit', f'/nodes/{node}'))
    for action in actions:
        kind, oid, verb = action.params.get('kind'), action.params.get('id'), action.kind
        if verb == 'apply':
            needs.append(need('to apply the SDN config (PUT /cluster/sdn)', 'SDN.Allocate', '/sdn'))
        elif kind == 'zone':
            needs.append(need(f'to {verb} zone {oid}', 'SDN.Allocate', '/sdn/zones' if verb == 'create' else f'/sdn/zones/{oid}'))
        elif kind == 'vnet':
            zone = zone_of.get(oid) or action.params.get('params', {}).get('zone')
            needs.append(need(f'to {verb} VNet {oid}', 'SDN.Allocate', f'/sdn/zones/{zone}' if verb == 'create' else f'/sdn/zones/{zone}/{oid}'))
        elif kind == 'subnet':
            vnet = action.params['path'].split('/')[4]
            needs.append(need(f'to {verb} subnet {oid}', 'SDN.Allocate', f'/sdn/zones/{zone_of.get(vnet)}/{vnet}'))
    if deletes_vnets:
        needs.append(need('to see which guests use a VNet it deletes', 'VM.Audit', '/vms'))
    return needs
