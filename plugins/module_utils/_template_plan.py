# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_template's pure core: what built a template, whether it is current, and what conversion and retirement write.

A template records what built it in its Notes, on two managed lines (``_notes``):

    [puls-provision: playbooks/base.yml=3f2a9c1b7d4e,playbooks/web.yml=0c1d2e3f4a5b]
    [puls-template: spec=9e107d9d372b,cores=77de68daecd8,image=1b6453892473,memory=ac3478d69a3c]

The first is the provision block every provisioned VM carries (pve_notes_hash reads it too). The
second holds the spec hash (``spec``: everything that built the template, provision hashes included)
and one hash per declared spec key, so that a changed spec says which keys changed. Values are not
stored (the block holds hashes only); the old value of a hardware key is read from the template's own
config, which the build VM had, so the reason can say ``cores 2 -> 4``.

What enters the spec hash: the declared spec (a dict, or one string) with ``image`` replaced by the
identity of what it resolves to (the VMID and name of a template, or the volume and the source
pve_iso recorded for it), secrets left out (a password changes nothing a clone gets: it is stripped
at conversion), and the provision hashes.

Pure: the caller reads PVE and resolves the image; this decides.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils import _notes, _provision_hash
from ansible_collections.puls.proxmox.plugins.module_utils._guest import GUEST_TYPES, LXC, QEMU
from ansible_collections.puls.proxmox.plugins.module_utils._guest_options import template_config_keys
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import (
    _PARSERS,
    DEFAULT_OWNER_TAG,
    MASK,
    SpecError,
    as_bool,
    boot_disk_key,
    cloudinit_drive_key,
    decode_sshkeys,
    disk_size,
    drive_volumes,
    format_property_string,
    format_size,
    is_seed_of,
    normalize_tags,
    parse_drive,
    parse_property_string,
    seed_drive_key,
    storage_of,
    tag_set,
)

STATES = ('present', 'converted', 'retired', 'absent')
TEMPLATE_TAG = 'puls-template'  # the Notes block of the spec hashes
RETIRED_TAG = 'puls-retired'
BUILDING_TAG = 'puls-building'  # marks a build VM: only such a VM is converted
BUILD_SUFFIX = '-build'  # the build VM of template NAME is NAME-build
SPEC_KEY = 'spec'  # the block's entry holding the hash of the whole spec
HASH_LENGTH = 12
RETIRE_SUFFIX_LENGTH = 8
# Spec keys whose values are secrets: never hashed into the Notes (and stripped from the template anyway).
SECRET_SPEC_KEYS = frozenset(('ci_password', 'cipassword', 'password'))
# Build-time cloud-init settings PVE keeps in a VM's config; conversion deletes them (besides ipconfigN).
BUILD_CLOUDINIT_KEYS = ('ciuser', 'cipassword', 'sshkeys', 'nameserver', 'searchdomain', 'cicustom')
_IPCONFIG_KEY = re.compile(r'^ipconfig\d+$')
# A container's network devices, and what conversion makes of a static address of the build in one: the automatic
# method of its family, without the gateway (pve-container src/PVE/LXC/Config.pm, $netconf_desc: ip dhcp, ip6 auto).
_CT_NET_KEY = re.compile(r'^net\d+$')
_CT_AUTOMATIC_ADDRESS = {'ip': ('dhcp', 'gw'), 'ip6': ('auto', 'gw6')}
_CT_METHODS = frozenset(('dhcp', 'auto', 'manual'))
# Storage types that cannot hold a container template: pve-storage src/PVE/Storage/LVMPlugin.pm volume_has_feature has
# its `template` entry commented out, and pve-container's conversion dies "Template feature is not available for
# 'VOLID'" there (src/PVE/LXC.pm, template_create). qemu-server's template_create leaves such a VM disk as it is.
TEMPLATE_LESS_TYPES = frozenset(('lvm',))
_UNUSED_KEY = re.compile(r'^unused\d+$')
# A container's volumes: its root file system and mount points (pve-container src/PVE/LXC/Config.pm, foreach_volume).
_CT_VOLUME_KEY = re.compile(r'^(?:rootfs|mp\d+)$')
_SPEC_KEY_NAME = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]*$')
# Hardware spec keys (pve_vm's option names) whose value the template's config still holds.
_CONFIG_KEYS = template_config_keys()
# pve_vm's checks of the options both modules have.
_VM_OPTIONS = dict(_PARSERS, timeout=_PARSERS['shutdown_timeout'])


def short_hash(text: str, length: int = HASH_LENGTH) -> str:
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:length]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(',', ':'), ensure_ascii=False, default=str)


# ---------------------------------------------------------------------------------------------- the request


@dataclass(frozen=True)
class TemplateRequest:
    """The checked options of pve_template (``spec`` a dict, a string, or None when not given)."""

    name: str
    state: str = 'present'
    vmid: int | None = None
    spec: Mapping[str, Any] | str | None = None
    provision_hashes: Mapping[str, str] | None = None
    owner_tag: str = DEFAULT_OWNER_TAG
    shutdown_timeout: int | None = None  # the module's defaults: pve_vm's and the client's task timeout
    timeout: int | None = None
    wait: int = 0  # seconds to wait while a build runs (state present)
    wait_delay: int = 10
    guest_type: str = QEMU  # a VM template (qemu) or a container template (lxc)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> TemplateRequest:
        """The request of the module's params; SpecError naming the option for anything that cannot work, before any call.

        Name, VMID, owner tag and timeouts are checked as pve_vm checks its options of the same names.
        """
        state = params.get('state') or 'present'
        if state not in STATES:
            raise SpecError('state', f'must be one of {", ".join(STATES)}, got {state!r}')
        if state == 'converted' and params.get('vmid') is None:
            raise SpecError('vmid', 'is required with state converted: give the VMID of the build VM to convert')
        spec = params.get('spec')
        if state == 'converted' and spec is None:
            raise SpecError('spec', 'is required with state converted: declare what built the template (image, hardware, ...)')
        check_spec(spec)
        hashes = params.get('provision_hashes')
        check_provision_hashes(hashes)
        checked = {
            option: _VM_OPTIONS[option](option, params[option])
            for option in ('name', 'vmid', 'owner_tag', 'shutdown_timeout', 'timeout')
            if params.get(option) is not None
        }
        wait, wait_delay = params.get('wait') or 0, params.get('wait_delay') or 10
        if wait < 0:
            raise SpecError('wait', f'is {wait}: give the seconds to wait while another run builds the template, 0 not to wait')
        if wait_delay < 1:
            raise SpecError('wait_delay', f'is {wait_delay}: give the seconds between two looks, at least 1')
        guest_type = params.get('guest_type') or QEMU
        if guest_type not in GUEST_TYPES:
            raise SpecError('guest_type', f'must be one of {", ".join(GUEST_TYPES)}, got {guest_type!r}')
        hashes = None if hashes is None else dict(hashes)
        return cls(state=state, spec=spec, provision_hashes=hashes, wait=wait, wait_delay=wait_delay, guest_type=guest_type, **checked)


def check_spec(spec: Any) -> None:
    """SpecError naming ``spec`` for a value that cannot be hashed into the Notes block."""
    if spec is None or isinstance(spec, str):
        return
    if not isinstance(spec, Mapping):
        raise SpecError('spec', f'must be a dict of what builds the template, or a string, got {type(spec).__name__}')
    for key in spec:
        if not isinstance(key, str) or not _SPEC_KEY_NAME.match(key) or key == SPEC_KEY:
            raise SpecError('spec', f'key {key!r} cannot be recorded: use letters, digits, _ . - (and not {SPEC_KEY!r})')


def check_provision_hashes(hashes: Any) -> None:
    """SpecError naming ``provision_hashes`` for a path or hash the provision block cannot hold."""
    if hashes is None:
        return
    if not isinstance(hashes, Mapping):
        raise SpecError('provision_hashes', f'must be a dict of provision file path to hash, got {type(hashes).__name__}')
    try:
        if hashes:
            _notes.format_block(hashes)
    except _notes.ProvisionKeyError as exc:
        raise SpecError('provision_hashes', str(exc)) from None


# ---------------------------------------------------------------------------------------------- finding


def _is_template(entry: Mapping[str, Any]) -> bool:
    return as_bool(entry.get('template'))


def describe(entry: Mapping[str, Any]) -> str:
    """How messages name a guest: kind, name, VMID and node."""
    kind = 'template' if _is_template(entry) else 'container' if entry.get('type') == 'lxc' else 'VM'
    return f"{kind} {entry.get('name')!r} ({entry['vmid']} on {entry.get('node')})"


def name_key(guest_type: str) -> str:
    """The config key of a guest's name: ``name`` for a VM, ``hostname`` for a container (pve-container's config)."""
    return 'hostname' if guest_type == LXC else 'name'


def _of_type(entry: Mapping[str, Any], guest_type: str) -> bool:
    return entry.get('type', QEMU) == guest_type


def _by_vmid(resources: Iterable[Mapping[str, Any]], vmid: int) -> Mapping[str, Any] | None:
    return next((entry for entry in resources if int(entry['vmid']) == vmid), None)


def find_template(resources: Iterable[Mapping[str, Any]], name: str, vmid: int | None = None, guest_type: str = QEMU) -> Mapping[str, Any] | None:
    """The ``/cluster/resources`` entry of template ``name`` (or of ``vmid``, which must then be that template or a
    retired generation of it), or None when there is none. Several templates named ``name`` are an error."""
    entries = list(resources)
    if vmid is not None:
        entry = _by_vmid(entries, vmid)
        if entry is None:
            return None
        if not _of_type(entry, guest_type) or not _is_template(entry):
            raise SpecError('vmid', f'{vmid} is {describe(entry)}, not a template; correct vmid, or leave it out to find template {name!r} by name')
        if entry.get('name') != name and not is_retired_version(entry.get('name'), entry.get('tags'), name):
            raise SpecError('vmid', f'{vmid} is {describe(entry)}, not {name!r}; correct vmid or name')
        return entry
    named = sorted(
        (entry for entry in entries if _of_type(entry, guest_type) and _is_template(entry) and entry.get('name') == name),
        key=lambda entry: int(entry['vmid']),
    )
    if len(named) > 1:
        listing = ', '.join(describe(entry) for entry in named)
        raise SpecError(
            'name', f'{name!r} is the name of {len(named)} templates ({listing}); PVE does not keep names unique: give vmid, or rename or retire all but one'
        )
    return named[0] if named else None


def find_building(resources: Iterable[Mapping[str, Any]], name: str, guest_type: str = QEMU) -> Mapping[str, Any] | None:
    """The entry of a build of template ``name`` in progress: a guest of ``guest_type`` named ``NAME-build`` tagged ``puls-building``.

    Converted already or not: the conversion keeps the tag until the build takes the name, so a waiter never sees the
    moment between the conversion and the rename (when ``name`` is still the previous template, or nothing) as the end.
    """
    return next(
        (
            entry
            for entry in resources
            if _of_type(entry, guest_type) and entry.get('name') == name + BUILD_SUFFIX and BUILDING_TAG in normalize_tags(entry.get('tags'))
        ),
        None,
    )


def find_build_vm(resources: Iterable[Mapping[str, Any]], vmid: int, guest_type: str = QEMU) -> Mapping[str, Any]:
    """The entry of the build guest ``vmid`` to convert: it must exist and be of ``guest_type``."""
    entry = _by_vmid(resources, vmid)
    if entry is None:
        raise SpecError('vmid', f'{vmid} does not exist in the cluster: give the VMID of the provisioned build VM to convert')
    if not _of_type(entry, guest_type):
        wanted = 'container' if guest_type == LXC else 'QEMU VM'
        raise SpecError('vmid', f'{vmid} is {describe(entry)}: give the VMID of a {wanted} (guest_type {guest_type})')
    return entry


# ---------------------------------------------------------------------------------------------- the spec hash


def spec_entries(spec: Mapping[str, Any] | str, image_identity: str | None, provision_hashes: Mapping[str, str]) -> dict[str, str]:
    """The template block's entries for ``spec``: ``spec`` (the hash of it all) first, then one hash per key, sorted.

    ``image_identity`` replaces the value of ``spec['image']`` (see the module docstring); secret keys are left out.
    A string spec is hashed whole and has no per-key entries.
    """
    if isinstance(spec, str):
        values: dict[str, Any] | str = spec
        per_key: dict[str, str] = {}
    else:
        values = {key: value for key, value in spec.items() if key not in SECRET_SPEC_KEYS}
        if 'image' in values and image_identity is not None:
            values['image'] = image_identity
        per_key = {key: short_hash(_canonical(values[key])) for key in sorted(values)}
    total = short_hash(_canonical({'spec': values, 'provision': dict(sorted((provision_hashes or {}).items()))}))
    return {SPEC_KEY: total, **per_key}


def recorded_entries(description: str | None) -> dict[str, str]:
    """The template block's entries in a template's Notes (empty when it has none)."""
    return _notes.parse(description, tag=TEMPLATE_TAG).entries


def recorded_provision(description: str | None) -> dict[str, str]:
    """The provision block's entries in a template's Notes."""
    return _notes.parse(description).entries


# ---------------------------------------------------------------------------------------------- current or not


def decide(
    description: str | None,
    config: Mapping[str, Any],
    wanted: Mapping[str, str],
    spec: Mapping[str, Any] | str,
    provision_hashes: Mapping[str, str],
    image_description: str | None = None,
) -> list[str]:
    """What differs between the template (its Notes and config) and what is declared; empty when it is current.

    ``wanted`` is ``spec_entries`` of the declaration, ``image_description`` how the resolved image is named.
    """
    recorded = recorded_entries(description)
    if SPEC_KEY not in recorded:
        return ['it records no spec (it was not made by pve_template)']
    if recorded[SPEC_KEY] == wanted[SPEC_KEY]:
        return []
    reasons = _provision_reasons(recorded_provision(description), provision_hashes)
    for key in sorted(set(wanted) | set(recorded)):
        if key == SPEC_KEY or recorded.get(key) == wanted.get(key):
            continue
        if key not in wanted:
            reasons.append(f'{key} is no longer declared')
        elif key not in recorded:
            reasons.append(f'{key} is newly declared')
        else:
            reasons.append(_changed(key, config, spec, image_description))
    return reasons or ['the spec changed']


def _provision_reasons(recorded: Mapping[str, str], declared: Mapping[str, str]) -> list[str]:
    paths = list(declared)
    reasons = []
    for path in paths:
        old = _provision_hash.recorded_hash(path, recorded, paths)
        if old is None:
            reasons.append(f'provision file {path} is new')
        elif old != declared[path]:
            reasons.append(f'provision file {path} changed')
    # A Puls entry is keyed by the basename of a declared path.
    declared_keys = set(paths) | {posixpath.basename(path) for path in paths}
    reasons.extend(f'provision file {path} is no longer declared' for path in recorded if path not in declared_keys)
    return reasons


def _changed(key: str, config: Mapping[str, Any], spec: Mapping[str, Any] | str, image_description: str | None) -> str:
    new = spec.get(key) if isinstance(spec, Mapping) else None
    if key == 'image':
        return f'base image changed (now {image_description or new})'
    if key in _CONFIG_KEYS and config.get(key) is not None:
        return f'{key} {config[key]} -> {new}'
    if key == 'disk_size':
        disk = boot_disk_key(config)
        size = disk_size(config, disk) if disk else None
        if size is not None:
            return f'disk_size {format_size(size)} -> {new}'
    return f'{key} changed'


# ---------------------------------------------------------------------------------------------- what is written


def build_settings(config: Mapping[str, Any], guest_type: str = QEMU) -> list[str]:
    """The build-time cloud-init keys in a VM's ``config`` that conversion deletes, sorted. A container has no cloud-init:
    its ``nameserver`` and ``searchdomain`` are its DNS settings (pve-container src/PVE/LXC/Config.pm), which the
    template keeps for its clones (without them a container gets the node's resolvers: src/PVE/LXC/Setup/Base.pm,
    lookup_dns_conf); its build's addresses are ``build_addresses``'."""
    if guest_type == LXC:
        return []
    return sorted(key for key in config if key in BUILD_CLOUDINIT_KEYS or _IPCONFIG_KEY.match(key))


def build_addresses(config: Mapping[str, Any], guest_type: str = QEMU) -> dict[str, str]:
    """netN -> the value conversion writes, for each network device of a build container with a static address: DHCP
    for IPv4 and SLAAC for IPv6 instead, without the gateway. pve-container's clone_vm copies netN with only a new MAC
    (src/PVE/API2/LXC.pm), and each start rewrites the container's interfaces from it (src/PVE/LXC/Setup/Debian.pm,
    setup_network; a device without an address is left as the root file system has it, the build's address
    included): so a clone that declares no address asks for one, and never comes up on the build's. A VM's address
    is its ipconfigN (``build_settings``)."""
    if guest_type != LXC:
        return {}
    rewritten = {}
    for key in sorted(key for key in config if _CT_NET_KEY.match(key)):
        props = parse_property_string(config[key])
        changed = dict(props)
        for family, (automatic, gateway) in _CT_AUTOMATIC_ADDRESS.items():
            if props.get(family) and props[family] not in _CT_METHODS:
                changed[family] = automatic
                changed.pop(gateway, None)
        if changed != props:
            rewritten[key] = format_property_string(changed)
    return rewritten


def volume_storages(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, storage) of each volume of a container's config, its root file system and mount points (not a bind mount)."""
    return [(key, storage) for key, value in sorted(config.items()) if _CT_VOLUME_KEY.match(key) and (storage := storage_of(parse_drive(value)[0]))]


def declared_storages(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(option, storage) of each storage a container template's spec (pve_container's options) puts a volume on."""
    places = [('storage', str(spec['storage']))] if spec.get('storage') else []
    points = spec.get('mount_points') or []
    for index, point in enumerate(points if isinstance(points, list) else []):
        if isinstance(point, Mapping) and point.get('storage'):
            places.append((f'mount_points[{index}].storage', str(point['storage'])))
    return places


def template_storage_refusal(places: Iterable[tuple[str, str]], storage_types: Mapping[str, str], name: str) -> str | None:
    """Why a container template ``name`` cannot have a volume where ``places`` ((key or option, storage)) put them, or None."""
    for where, storage in places:
        kind = storage_types.get(storage)
        if kind in TEMPLATE_LESS_TYPES:
            return (
                f'{where} is on {storage!r}, a thick LVM storage (type {kind}), which cannot hold a container template: PVE '
                f"would fail its conversion with 'Template feature is not available'; put template {name!r} on a storage "
                'that can (LVM-thin, ZFS, Ceph RBD, a directory)'
            )
    return None


def show_setting(key: str, value: Any) -> Any:
    """A config value as the diff shows it: keys decoded, the password masked."""
    if value is None:
        return None
    if key == 'cipassword':
        return MASK
    if key == 'sshkeys':
        return list(decode_sshkeys(value))
    return value


def template_notes(description: str | None, wanted: Mapping[str, str], provision_hashes: Mapping[str, str]) -> str:
    """The Notes of the new template: human text kept, the provision block holding exactly ``provision_hashes``
    (none without), and the template block. Raises ``_notes.NotesTooLongError`` past PVE's limit."""
    with_provision = _notes.render(description, provision_hashes)
    return _notes.render(with_provision, wanted, tag=TEMPLATE_TAG)


@dataclass(frozen=True)
class SeedDrive:
    """The NoCloud seed ISO drive of a build VM made with user_data, which conversion detaches so that the template
    carries no build user-data: an empty cloud-init drive takes its slot (a clone then gets one, as from a template
    built without user_data), and the ISO file is deleted when it is the build VM's own (pve_vm names it after the VM)."""

    key: str
    volume: str
    cloudinit: str | None  # 'STORAGE:cloudinit' beside the boot disk; None when there is no disk or a cloud-init drive already
    owned: bool

    def diff(self, before: dict[str, Any], after: dict[str, Any]) -> None:
        """Both sides of the conversion's diff, in pve_vm's words (``user_data`` is the seed's volume ID)."""
        before['user_data'], after['user_data'] = self.volume, None
        if self.cloudinit:
            before['cloudinit_drive'], after['cloudinit_drive'] = None, f'{self.key}: {self.cloudinit}'


def seed_drive(config: Mapping[str, Any], build_name: str | None) -> SeedDrive | None:
    """The build VM's seed ISO drive (see SeedDrive), or None when it has none."""
    key = seed_drive_key(config)
    if key is None:
        return None
    volume = parse_drive(config[key])[0]
    disk = boot_disk_key(config)
    storage = storage_of(parse_drive(config[disk])[0]) if disk else None
    cloudinit = f'{storage}:cloudinit' if storage and not cloudinit_drive_key(config) else None
    return SeedDrive(key, volume, cloudinit, is_seed_of(volume, build_name or ''))


def template_tags(tags: Any, owner_tag: str) -> str:
    """The tags of the new template: the build VM's as PVE spells them (its tag-style may keep their case), without the
    building mark, with the owner tag (each mark told in any case, as ownership is)."""
    return ';'.join(sorted({tag for tag in tag_set(tags) if tag.lower() not in (BUILDING_TAG, owner_tag)} | {owner_tag}))


def retire_name(name: str, vmid: int, description: str | None) -> str:
    """``NAME-<8 hex>``: the suffix hashes the VMID with the recorded spec hash, so two generations never share it."""
    spec_hash = recorded_entries(description).get(SPEC_KEY, '')
    return f'{name}-{short_hash(f"{vmid}:{spec_hash}", RETIRE_SUFFIX_LENGTH)}'


def retired_tags(tags: Any) -> str:
    """The tags of a retired template: its own as PVE spells them, with the retired mark."""
    return ';'.join(sorted({tag for tag in tag_set(tags) if tag.lower() != RETIRED_TAG} | {RETIRED_TAG}))


def is_retired_version(entry_name: str | None, tags: Any, name: str) -> bool:
    """Whether a template named ``entry_name`` with ``tags`` is a retired generation of template ``name``."""
    pattern = re.escape(name) + r'-[0-9a-f]{%d}' % RETIRE_SUFFIX_LENGTH
    return RETIRED_TAG in normalize_tags(tags) and bool(re.fullmatch(pattern, entry_name or ''))


def protected(config: Mapping[str, Any]) -> bool:
    return as_bool(config.get('protection'))


# ---------------------------------------------------------------------------------------------- linked clones


def uses_base(config: Mapping[str, Any], template_vmid: int) -> bool:
    """Whether a guest's config has a disk made from a base volume of ``template_vmid``.

    PVE names a linked clone's volume after its base where the storage tracks it: ``base-100-disk-0/vm-101-disk-0``
    (ZFS, Ceph RBD), ``basevol-100-disk-0/subvol-101-disk-0`` (a container's on ZFS), ``100/base-100-disk-0.qcow2/101/
    vm-101-disk-0.qcow2`` (directory storages). Detached disks (``unusedN``) count too: they still hold the base.
    """
    base = re.compile(r'(?:^|[:/])%s(?:\.[a-z0-9]+)?/' % base_volume_pattern(template_vmid))
    return any(base.search(volume) for volume in guest_volumes(config))


def base_volume_pattern(template_vmid: int) -> str:
    """A regular expression of the name of a base volume of ``template_vmid``: ``base-100-disk-0``, or on ZFS a
    container's ``basevol-100-disk-0`` (pve-storage src/PVE/Storage/ZFSPoolPlugin.pm, create_base: ``s/^subvol-/basevol-/``)."""
    return r'(?:base|basevol)-%d-disk-\d+' % template_vmid


def guest_volumes(config: Mapping[str, Any]) -> list[str]:
    """Every volume of a VM's or a container's config: a VM's drives, a container's root file system and mount points,
    and the detached ones (``unusedN``)."""
    volumes = list(drive_volumes(config).values())
    return volumes + [parse_drive(value)[0] for key, value in config.items() if _CT_VOLUME_KEY.match(key) or _UNUSED_KEY.match(key)]


def linked_clone_candidates(resources: Iterable[Mapping[str, Any]], template_vmid: int, guest_type: str = QEMU) -> list[Mapping[str, Any]]:
    """The guests whose configs may use the template's base: every other guest of its type, by VMID."""
    return sorted((entry for entry in resources if _of_type(entry, guest_type) and int(entry['vmid']) != template_vmid), key=lambda entry: int(entry['vmid']))
