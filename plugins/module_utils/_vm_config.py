# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A VM's declared options <-> Proxmox VE config strings: validation, rendering, normalized comparison.

Pure: values in, values out. ``VmSpec.from_params`` validates the pve_vm options (``SpecError`` names
the option); ``desired_config`` renders the PVE config keys the declared options manage;
``same_value`` compares what PVE returns with what we would write, per key, in normalized form;
``display_value`` gives the diff's readable form with secrets masked. An option left unset (None) is
not managed: its PVE key is neither compared nor written.

Decisions:
- ``disk_size`` is an absolute size: a number with K, M, G or T (binary units), a bare number means
  GiB (a VM disk of N bytes is never what is meant), no fractions, no relative ``+8G`` (the declared
  state must not grow on every run). Sizes are compared in bytes.
- ``machine``: q35 is written ``q35``, i440fx ``pc`` (qemu-server ``PVE/QemuServer/Machine.pm``). A pinned version
  (``pc-q35-9.0``, ``pc-i440fx-8.1``) counts as its family: re-writing it would change the guest's
  virtual hardware for no declared reason. A missing key is PVE's default, i440fx.
- ``ci_password``: PVE returns it masked (``**********``), so a changed password cannot be detected.
  It is written when the VM has none (at creation, or after it was removed) and never reported as drift.
- ``net0`` is written over the existing one: its MAC, model and every undeclared property are kept
  (PVE draws a new random MAC when ``net0`` is sent without one). A new ``net0`` is ``virtio`` on
  ``vmbr0`` unless ``bridge`` says otherwise.
- ``ip`` is IPv4 (the /24 default prefix and the ``.1`` gateway default are IPv4 notions); an existing
  ``ip6`` in ``ipconfig0`` is kept. ``gateway`` needs ``ip`` (or ``dns_domain`` to resolve one).
- An empty ``nameservers``, ``searchdomain``, ``ci_user``, ``ci_password`` or ``ssh_keys`` removes the key.
- ``user_data`` replaces PVE's own cloud-init drive, so every PVE cloud-init option is refused with it
  (the issue names ci_user, ci_password, ssh_keys and ip; gateway, nameservers and searchdomain would
  equally be written to a drive that is not there). Its NoCloud seed ISO is ``puls-seed-NAME-HASH.iso``
  on ``user_data_storage``: the VM's name says whose it is, the content hash when it must be replaced.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar
from urllib.parse import quote, unquote

from ansible_collections.puls.proxmox.plugins.module_utils._guest_options import OPTIONS_BY_NAME, VM_OPTIONS, Option, Qemu
from ansible_collections.puls.proxmox.plugins.module_utils._vm_devices import (
    BUSES_OF,
    CACHE_MODES,
    DISK_FLAGS,
    DISK_KEYS,
    DISK_SLOTS,
    EFIDISK_KEYS,
    MAX_NETS,
    NET_KEYS,
    SLOT,
    TPM_KEYS,
    TPM_VERSIONS,
    VGA_TYPES,
    DiskSpec,
    FirmwareDrive,
    NicSpec,
)

_Value = TypeVar('_Value')

DEFAULT_OWNER_TAG = 'puls-managed'
DEFAULT_SEED_STORAGE = 'local'
SEED_PREFIX = 'puls-seed-'
DEFAULT_BRIDGE = 'vmbr0'
DEFAULT_NIC_MODEL = 'virtio'
MASK = '********'
# PVE calls i440fx "pc" (qemu-server PVE/QemuServer/Machine.pm).
MACHINE_TYPES = {'q35': 'q35', 'i440fx': 'pc'}
SSH_KEY_TYPES = frozenset(
    (
        'ssh-ed25519',
        'ssh-rsa',
        'ecdsa-sha2-nistp256',
        'ecdsa-sha2-nistp384',
        'ecdsa-sha2-nistp521',
        'sk-ssh-ed25519@openssh.com',
        'sk-ecdsa-sha2-nistp256@openssh.com',
    )
)
# qemu-server's $nic_model_list: each model name doubles as the key of the MAC ("virtio=BC:24:11:...").
NIC_MODELS = frozenset(
    (
        'e1000',
        'e1000-82540em',
        'e1000-82544gc',
        'e1000-82545em',
        'e1000e',
        'i82551',
        'i82557b',
        'i82559er',
        'ne2k_isa',
        'ne2k_pci',
        'pcnet',
        'rtl8139',
        'virtio',
        'vmxnet3',
    )
)
# The pve_vm options that end up on PVE's cloud-init drive.
CLOUDINIT_OPTIONS = ('ip', 'gateway', 'nameservers', 'searchdomain', 'ci_user', 'ci_password', 'ssh_keys')
# PVE config keys read by cloud-init; PVE applies them to the config of a running VM at once (qemu-server
# 71d9006b), but the guest sees them only after the drive is regenerated and the VM restarts (qemu-server PVE/QemuServer.pm, vmconfig_hotplug_pending).
CLOUDINIT_KEYS = frozenset(('ciuser', 'cipassword', 'citype', 'ciupgrade', 'cicustom', 'nameserver', 'searchdomain', 'sshkeys'))
# What PVE applies to a running VM at once (QemuServer.pm vmconfig_hotplug_pending, the fast-plug list).
APPLIED_LIVE = frozenset(('name', 'description', 'onboot', 'tags', 'protection', 'startup', 'hookscript', 'lock', 'shares', 'vmstatestorage'))
# PVE's default "hotplug" value; "1" means the same, "0" nothing.
DEFAULT_HOTPLUG = ('network', 'disk', 'usb')
# A NIC change of these needs the NIC unplugged, so hotplug "network" (qemu-server QemuServer.pm vmconfig_update_net).
NET_REPLUG_PROPERTIES = ('model', 'macaddr', 'queues', 'mtu')
# qemu-server Memory.pm $STATICMEM: memory hot-plug refuses less.
MIN_HOTPLUG_MEMORY = 1024

_SIZE_UNITS = {'': 1, 'K': 1024, 'M': 1024**2, 'G': 1024**3, 'T': 1024**4}
_PVE_SIZE = re.compile(r'^(\d+(?:\.\d+)?)([KMGT]?)$')
_DECLARED_SIZE = re.compile(r'^(\d+)([KMGT]?)$', re.IGNORECASE)
# pve-common PVE/JSONSchema.pm $PVE_TAG_RE, case-insensitive.
_TAG = re.compile(r'^[a-z0-9_][a-z0-9_+.-]*$', re.IGNORECASE)
_TAG_SEPARATORS = re.compile(r'[,;\s]+')
_LIST_SEPARATORS = re.compile(r'[,;\s]+')
_DNS_NAME = re.compile(r'^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?\.)*[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$')
_BRIDGE = re.compile(r'^[\w.-]+$')
_STORAGE_ID = re.compile(r'^[A-Za-z][A-Za-z0-9_.-]*[A-Za-z0-9]$')
_IPCONFIG_KEY = re.compile(r'^ipconfig\d+$')
_NET_KEY = re.compile(r'^net\d+$')
_BUS_DRIVE_KEY = re.compile(r'^(ide|sata|scsi|virtio)(\d+)$')
# qemu-server PVE/API2/Qemu.pm create_disks: "[STORAGE:]SIZE" (GiB) allocates a new volume.
_ISO_VOLUME = re.compile(r'^[A-Za-z][A-Za-z0-9_.-]*[A-Za-z0-9]:iso/[^/,]+$')
_NEW_VOLUME = re.compile(r'^(?:[^/:\s]+:)?\d+(?:\.\d+)?$')
# Boolean drive properties of qemu-server PVE/QemuServer/Drive.pm.
_DRIVE_FLAGS = frozenset(('ssd', 'iothread', 'backup', 'replicate', 'ro', 'shared'))
# What vmconfig_update_disk (qemu-server PVE/QemuServer.pm) cannot change on a running VM's disk: "skip", so pending.
_COLD_DRIVE_PROPERTIES = ('aio', 'discard', 'iothread', 'queues', 'product', 'cache', 'ssd', 'vendor', 'ro')
_BUS_ORDER = ('scsi', 'virtio', 'sata', 'ide')
_DRIVE_KEY = re.compile(r'^(?:(?:ide|sata|scsi|virtio)\d+|efidisk0|tpmstate0)$')
# qemu-server Drive.pm drive_is_cloudinit: PVE knows its cloud-init drive by the volume's name.
_CLOUDINIT_VOLUME = re.compile(r'[:/](?:vm-\d+-)?cloudinit(?:\.(?:raw|cow|qcow|qed|qcow2|vmdk|cloop))?$')


class SpecError(ValueError):
    """A declared option PVE would refuse or pve_vm cannot honour. ``option`` names it, and the message starts with it."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f'{option} {problem}')
        self.option = option


# Property strings ("key=value,key=value", one bare value for the default key).


def parse_property_string(text: Any, default_key: str | None = None) -> dict[str, str]:
    """Split a PVE property string into its properties, in order; a bare part is ``default_key``'s value."""
    props: dict[str, str] = {}
    for part in str(text or '').split(','):
        if not part:
            continue
        key, has_value, value = part.partition('=')
        if has_value:
            props[key] = value
        elif default_key is not None:
            props[default_key] = key
        else:
            raise ValueError(f'{text!r}: {part!r} has no key')
    return props


def format_property_string(props: Mapping[str, Any], default_key: str | None = None) -> str:
    """The property string for ``props``, the default key's value first and bare."""
    head = [str(props[default_key])] if default_key is not None and default_key in props else []
    return ','.join(head + [f'{key}={value}' for key, value in props.items() if key != default_key])


def parse_net(value: Any) -> dict[str, str]:
    """A ``netN`` value as properties: ``model``, ``macaddr`` (from PVE's ``virtio=MAC`` form) and the rest, in order."""
    props: dict[str, str] = {}
    for key, item in parse_property_string(value, 'model').items():
        if key in NIC_MODELS:
            props['model'], props['macaddr'] = key, item
        else:
            props[key] = item
    return props


def format_net(props: Mapping[str, str]) -> str:
    """A ``netN`` value in PVE's own form: ``MODEL=MAC`` first (or the bare model when no MAC is known), then the rest."""
    head = props.get('model', DEFAULT_NIC_MODEL)
    if props.get('macaddr'):
        head += f"={props['macaddr']}"
    return ','.join([head] + [f'{key}={value}' for key, value in props.items() if key not in ('model', 'macaddr')])


# Sizes.


def parse_size(text: Any) -> int:
    """Bytes of a size as PVE writes it in a drive's ``size=``: a number with K/M/G/T, or bytes without a unit."""
    match = _PVE_SIZE.match(str(text).strip())
    if not match:
        raise ValueError(f'{text!r} is not a PVE size')
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2)])


def format_size(size: int) -> str:
    """A size in PVE's form: the largest binary unit that divides it exactly (PVE::JSONSchema::format_size)."""
    for unit in ('T', 'G', 'M', 'K'):
        if size and size % _SIZE_UNITS[unit] == 0:
            return f'{size // _SIZE_UNITS[unit]}{unit}'
    return str(size)


def parse_disk_size(option: str, value: Any) -> int:
    """Bytes of a declared disk size (see the module's decisions: absolute, a bare number is GiB)."""
    text = str(value).strip()
    if text.startswith('+'):
        raise SpecError(option, f'is the size the disk should have, not an increment (got {text!r}); declare the total size, e.g. 40G')
    match = _DECLARED_SIZE.match(text) if not isinstance(value, bool) else None
    if not match or int(match.group(1)) == 0:
        raise SpecError(option, f'must be a positive whole size such as 32G, 512M or 1T (a bare number is GiB), got {value!r}')
    unit = match.group(2).upper() or 'G'
    return int(match.group(1)) * _SIZE_UNITS[unit]


def grow_needed(declared: int, current: int | None, disk: str, option: str = 'disk_size') -> bool:
    """Whether ``disk`` must grow to ``declared`` bytes; a smaller declared size is an error naming ``option`` (qemu-server
    PVE/API2/Qemu.pm, resize_vm: "shrinking disks is not supported")."""
    if current is None or declared > current:
        return True
    if declared < current:
        raise SpecError(
            option,
            f'{format_size(declared)} is below the current size {format_size(current)} of {disk}; '
            f'PVE cannot shrink a disk: declare at least {format_size(current)}',
        )
    return False


# Drives.


def parse_drive(value: Any) -> tuple[str, dict[str, str]]:
    """A drive value (``local-lvm:vm-100-disk-0,size=32G,iothread=1``) as (volume, other properties)."""
    props = parse_property_string(value, 'file')
    return props.pop('file', ''), props


def storage_of(volume: str) -> str | None:
    """The storage ID of a volume ID (``local-lvm`` of ``local-lvm:vm-100-disk-0``); None for a path."""
    storage, has_colon, _name = volume.partition(':')
    return storage if has_colon else None


def drive_volumes(config: Mapping[str, Any]) -> dict[str, str]:
    """Every drive key of a config with its volume, empty CD-ROM drives ("none", "cdrom") left out."""
    volumes = {}
    for key, value in config.items():
        if _DRIVE_KEY.match(key):
            volume = parse_drive(value)[0]
            if volume not in ('', 'none', 'cdrom'):
                volumes[key] = volume
    return volumes


def seed_volume(storage: str, vm_name: str, content_hash: str) -> str:
    """The volume ID of the NoCloud seed ISO of VM ``vm_name`` whose content has ``content_hash``."""
    return f'{storage}:iso/{SEED_PREFIX}{vm_name}-{content_hash}.iso'


def is_seed_of(volume: str | None, vm_name: str) -> bool:
    """Whether ``volume`` is a seed ISO pve_vm made for VM ``vm_name`` (and not one of another VM)."""
    filename = str(volume or '').rpartition('/')[2]
    return re.fullmatch(rf'{re.escape(SEED_PREFIX + vm_name)}-[0-9a-f]+\.iso', filename) is not None


def seed_drive_key(config: Mapping[str, Any]) -> str | None:
    """The key of the drive holding a pve_vm seed ISO (``ide2`` for ``local:iso/puls-seed-web-....iso,media=cdrom``), or None."""
    return next((key for key, volume in drive_volumes(config).items() if volume.rpartition('/')[2].startswith(SEED_PREFIX)), None)


def is_cloudinit_volume(volume: str) -> bool:
    """Whether PVE takes the volume for its generated cloud-init drive (qemu-server drive_is_cloudinit)."""
    return bool(_CLOUDINIT_VOLUME.search(volume))


def cloudinit_drive_key(config: Mapping[str, Any]) -> str | None:
    """The key of the VM's cloud-init drive (``ide2`` for ``local-lvm:vm-100-cloudinit,media=cdrom``), or None."""
    return next((key for key, volume in drive_volumes(config).items() if is_cloudinit_volume(volume)), None)


def is_disk(value: Any) -> bool:
    """Whether a drive value is a disk: not an empty or ISO CD-ROM drive, not the cloud-init drive."""
    return _is_disk(value)


def cdrom_drive_key(config: Mapping[str, Any]) -> str | None:
    """The key of the VM's CD-ROM drive for ISOs (``cdrom``): the first CD-ROM drive that holds neither PVE's cloud-init
    drive nor a pve_vm seed ISO, or None."""
    for key in sorted((key for key in config if _BUS_DRIVE_KEY.match(key)), key=_bus_position):
        volume, props = parse_drive(config[key])
        cdrom = props.get('media') == 'cdrom' or volume in ('none', 'cdrom')
        if cdrom and not is_cloudinit_volume(volume) and not volume.rpartition('/')[2].startswith(SEED_PREFIX):
            return key
    return None


def cdrom_volume(value: Any) -> str | None:
    """The ISO in a CD-ROM drive value, None when it is empty."""
    volume = parse_drive(value)[0] if value else ''
    return None if volume in ('', 'none', 'cdrom') else volume


def is_net_key(key: str) -> bool:
    """Whether ``key`` is a network device's (``net0``..)."""
    return bool(_NET_KEY.match(key))


def is_bus_disk(key: str, value: Any) -> bool:
    """Whether config key ``key`` is a disk on an IDE, SATA, SCSI or VirtIO slot (not the EFI disk, the TPM state, a CD-ROM)."""
    return bool(_BUS_DRIVE_KEY.match(key)) and _is_disk(value)


def allocates_volume(value: Any) -> bool:
    """Whether writing the drive value makes PVE allocate a volume (``STORAGE:SIZE`` or ``STORAGE:cloudinit``, qemu-server
    PVE/API2/Qemu.pm create_disks): such a write must not be sent twice."""
    volume = parse_drive(value)[0]
    return is_cloudinit_volume(volume) or bool(_NEW_VOLUME.match(volume))


def same_drive_properties(observed: Mapping[str, str], desired: Mapping[str, str]) -> bool:
    """Whether two drives' properties are the same, flags compared as flags (PVE writes ``1``, accepts ``yes``/``on``)."""

    def canonical(props: Mapping[str, str]) -> dict[str, Any]:
        return {key: (as_bool(value) if key in _DRIVE_FLAGS else value) for key, value in props.items()}

    return canonical(observed) == canonical(desired)


def same_net(observed: Any, desired: Any) -> bool:
    """Whether two ``netN`` values are the same device settings (the MAC compared case-blind)."""
    return _net_value(observed) == _net_value(desired)


def _is_disk(value: Any) -> bool:
    volume, props = parse_drive(value)
    return volume not in ('', 'none', 'cdrom') and props.get('media') != 'cdrom' and not is_cloudinit_volume(volume)


def _bus_position(key: str) -> tuple[int, int]:
    found = _BUS_DRIVE_KEY.match(key)
    if found is None:
        raise ValueError(f'{key} is not a drive key')
    bus, number = found.groups()
    return _BUS_ORDER.index(bus), int(number)


def boot_disk_key(config: Mapping[str, Any]) -> str | None:
    """The VM's boot disk: the first disk of ``boot: order=...`` (or legacy ``bootdisk``), else its first scsi/virtio/sata/ide disk."""
    disks = sorted((key for key, value in config.items() if _BUS_DRIVE_KEY.match(key) and _is_disk(value)), key=_bus_position)
    boot = parse_property_string(config.get('boot'), 'legacy')
    order = boot['order'].split(';') if 'order' in boot else [config.get('bootdisk')]
    return next((key for key in order if key in disks), disks[0] if disks else None)


def disk_size(config: Mapping[str, Any], key: str) -> int | None:
    """Bytes of the ``size=`` of drive ``key``, or None when PVE gave none."""
    size = parse_drive(config[key])[1].get('size')
    return parse_size(size) if size else None


# Scalars as PVE returns them (integers, 0/1, strings: qemu-server PVE/QemuServer.pm, parse_vm_config and check_type).


def as_bool(value: Any, default: bool = False) -> bool:
    """A PVE or Ansible boolean (True, 1, "1", "yes", "on", ...) as bool; None is ``default``."""
    if value is None or value == '':
        return default
    text = str(value).strip().lower()
    if text in ('1', 'true', 'yes', 'on'):
        return True
    if text in ('0', 'false', 'no', 'off'):
        return False
    raise ValueError(f'{value!r} is not a boolean')


def normalize_tags(value: Any) -> frozenset[str]:
    """Tags as PVE's default tag-style stores them (get_unique_tags): split on ``,; `` and blanks, lower-cased,
    deduplicated; what ownership is told by, whatever the tag-style."""
    return frozenset(tag.lower() for tag in tag_set(value))


def tag_set(value: Any) -> frozenset[str]:
    """The tags of a value (a PVE ``tags`` string or a list), split on ``,; `` and blanks, each spelled as written."""
    items = [value] if isinstance(value, str) or value is None else list(value)
    return frozenset(tag for item in items for tag in _TAG_SEPARATORS.split(str(item or '')) if tag)


def render_tags(declared: frozenset[str] | None, current: Any, owner_tag: str) -> str:
    """The ``tags`` to write: the declared ones (undeclared: the current ones, as PVE spells them) and the owner tag.
    The declared tags are already spelled as PVE stores them (``_tag_style.as_stored``), so PVE's answer reads back
    the same and compares exactly (``tag_set``)."""
    tags = declared if declared is not None else tag_set(current)
    return ';'.join(sorted(tags | {owner_tag}))


def encode_sshkeys(keys: Iterable[str]) -> str:
    """The ``sshkeys`` value: keys joined by newlines, percent-encoded (``+`` for space is refused by pve-common
    ``PVE/JSONSchema.pm``, format ``urlencoded``)."""
    return quote('\n'.join(keys), safe='')


def decode_sshkeys(value: Any) -> tuple[str, ...]:
    """The keys of an ``sshkeys`` value, decoded, one stripped line each, empty lines dropped."""
    return tuple(line.strip() for line in unquote(str(value or '')).splitlines() if line.strip())


def machine_family(value: Any) -> str:
    """``q35`` or ``i440fx`` for a PVE machine value (versioned forms included); absent is PVE's default, i440fx."""
    machine_type = parse_property_string(value, 'type').get('type', 'pc')
    if machine_type == 'q35' or machine_type.startswith('pc-q35-'):
        return 'q35'
    if machine_type == 'pc' or machine_type.startswith('pc-'):
        return 'i440fx'
    return machine_type


def held_until_restart(key: str, config: Mapping[str, Any], value: Any = None) -> bool:
    """Whether a change of ``key`` to ``value`` (None: removed) on a running VM takes effect only after a restart.

    PVE keeps it pending (everything but the fast-plug keys and what it hot-plugs), or, for the cloud-init keys,
    applies it to the config but the guest reads it only at the next boot (A.5). What PVE hot-plugs follows
    qemu-server ``PVE/QemuServer.pm``, ``vmconfig_hotplug_pending``: a NIC whose bridge, VLAN tag, trunks, firewall,
    rate or link_down change is re-plugged at once whatever ``hotplug`` says (``vmconfig_update_net``); a new or
    removed NIC, or one whose model, MAC, queues or MTU change, needs hotplug ``network``; memory needs hotplug
    ``memory`` (and at least 1024 MiB, ``PVE/QemuServer/Memory.pm``, ``qemu_memory_hotplug``); a balloon target is set
    at once unless the change turns the balloon device on or off.
    """
    if key in CLOUDINIT_KEYS or _IPCONFIG_KEY.match(key):
        return True
    if key in APPLIED_LIVE:
        return False
    enabled = hotplug_features(config.get('hotplug'))
    if _NET_KEY.match(key):
        if 'network' in enabled:
            return False
        if config.get(key) is None or value is None:
            return True
        before, after = _net_value(config[key]), _net_value(value)
        return any(before.get(prop) != after.get(prop) for prop in NET_REPLUG_PROPERTIES) or not (before.get('bridge') and after.get('bridge'))
    if _BUS_DRIVE_KEY.match(key) and all(item is not None and _is_iso_drive(item) for item in (config.get(key), value)):
        return False  # a medium change: vmconfig_update_disk's CD-ROM branch changes it at once
    if _BUS_DRIVE_KEY.match(key) and all(item is None or _is_disk(item) for item in (config.get(key), value)):
        return _disk_held(key, config.get(key), value, 'disk' in enabled)
    if key == 'memory':
        return 'memory' not in enabled or (value is not None and _KEYS['memory'].canonical(value) < MIN_HOTPLUG_MEMORY)
    if key == 'balloon':
        # A new target is set at once; turning the balloon device on or off (0 is off, no key on) waits for a restart.
        return _balloon_on(config.get(key)) != _balloon_on(value)
    return True


def _is_iso_drive(value: Any) -> bool:
    volume, props = parse_drive(value)
    iso = not is_cloudinit_volume(volume) and not volume.rpartition('/')[2].startswith(SEED_PREFIX)
    return iso and (props.get('media') == 'cdrom' or volume in ('none', 'cdrom'))


def _disk_held(key: str, old: Any, new: Any, hotplug: bool) -> bool:
    """qemu-server PVE/QemuServer.pm: a new or removed disk is (un)plugged at once only with hotplug ``disk`` and never on
    IDE or SATA (vmconfig_hotplug_pending, vmconfig_update_disk); a disk keeping its volume takes every change at once
    but those of ``_COLD_DRIVE_PROPERTIES``."""
    if old is None or new is None:
        return not hotplug or key.startswith(('ide', 'sata'))
    (old_volume, before), (new_volume, after) = parse_drive(old), parse_drive(new)
    if old_volume != new_volume:
        return not hotplug
    return any(before.get(prop) != after.get(prop) for prop in _COLD_DRIVE_PROPERTIES)


def _balloon_on(value: Any) -> bool:
    return value is None or value == '' or int(value) != 0


def hotplug_features(value: Any) -> frozenset[str]:
    """The features a ``hotplug`` value enables (qemu-server parse_hotplug_features): absent or ``1`` is PVE's default."""
    text = str(value if value is not None else '1').strip()
    if text == '0':
        return frozenset()
    return frozenset(DEFAULT_HOTPLUG if text == '1' else _LIST_SEPARATORS.split(text)) - {''}


def is_cloudinit_key(key: str) -> bool:
    """Whether ``key`` is read by cloud-init from PVE's generated drive."""
    return key in CLOUDINIT_KEYS or bool(_IPCONFIG_KEY.match(key))


# Validation of the declared options.


def _choice(*allowed: str) -> Callable[[str, Any], str]:
    def parse(option: str, value: Any) -> str:
        if value not in allowed:
            raise SpecError(option, f"must be one of {', '.join(allowed)} (got {value!r})")
        return value

    return parse


def _integer(minimum: int, maximum: int | None = None, meaning: str = '') -> Callable[[str, Any], int]:
    bounds = f'from {minimum} to {maximum}' if maximum is not None else f'of at least {minimum}'

    def parse(option: str, value: Any) -> int:
        text = str(value).strip()
        number = int(text) if not isinstance(value, bool) and (isinstance(value, int) or text.isdigit()) else None
        if number is None or number < minimum or (maximum is not None and number > maximum):
            raise SpecError(option, f'must be an integer {bounds}{meaning} (got {value!r})')
        return number

    return parse


def _flag(option: str, value: Any) -> bool:
    try:
        return as_bool(value)
    except ValueError:
        raise SpecError(option, f'must be true or false (got {value!r})') from None


def _text(option: str, value: Any) -> str:
    return str(value).strip()


def _name(option: str, value: Any) -> str:
    text = str(value).strip()
    if not _DNS_NAME.match(text):
        raise SpecError(option, f'must be a DNS name (letters, digits, "-" and "."), as PVE requires for a VM name (got {value!r})')
    return text


def _words(option: str, value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else list(value)
    return tuple(word for item in items for word in _LIST_SEPARATORS.split(str(item)) if word)


def _bridge(option: str, value: Any) -> str:
    text = str(value).strip()
    if not _BRIDGE.match(text):
        raise SpecError(option, f'must be a bridge name such as vmbr0 (letters, digits, "_", "-", "."), got {value!r}')
    return text


def _storage(option: str, value: Any) -> str:
    text = str(value).strip()
    if not _STORAGE_ID.match(text):
        raise SpecError(option, f'must be a PVE storage ID such as local-lvm (got {value!r})')
    return text


def _cpu(option: str, value: Any) -> str:
    text = str(value).strip()
    try:
        parse_property_string(text, 'cputype')
    except ValueError:
        text = ''
    if not text or any(char.isspace() for char in text):
        raise SpecError(option, f'must be a PVE CPU type such as host or x86-64-v2-AES, optionally with ",flags=..." (got {value!r})')
    return text


def _ip(option: str, value: Any) -> ipaddress.IPv4Interface | str:
    text = str(value).strip()
    if text.lower() == 'dhcp':
        return 'dhcp'
    try:
        # The /24 default prefix of the issue: a bare address means ADDRESS/24.
        return ipaddress.IPv4Interface(text if '/' in text else f'{text}/24')
    except ValueError:
        raise SpecError(option, f'must be an IPv4 address, an IPv4 CIDR such as 127.0.0.5/24, or dhcp (got {value!r})') from None


def _gateway(option: str, value: Any) -> ipaddress.IPv4Address:
    try:
        return ipaddress.IPv4Address(str(value).strip())
    except ValueError:
        raise SpecError(option, f'must be an IPv4 address such as 127.0.0.1 (got {value!r})') from None


def _nameservers(option: str, value: Any) -> tuple[str, ...]:
    servers = _words(option, value)
    for server in servers:
        try:
            ipaddress.ip_address(server)
        except ValueError:
            raise SpecError(option, f'must list IP addresses, PVE takes no host names here (got {server!r})') from None
    return servers


def _ssh_key_problem(line: str) -> str | None:
    parts = line.split()
    if len(parts) < 2 or parts[0] not in SSH_KEY_TYPES:
        return f"does not start with a known key type ({', '.join(sorted(SSH_KEY_TYPES))})"
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        return 'has a key body that is not base64'
    # An OpenSSH key blob starts with its own type as a length-prefixed string (RFC 4253 6.6).
    length = int.from_bytes(blob[:4], 'big')
    if len(blob) < 4 + length or blob[4 : 4 + length] != parts[0].encode():
        return f'has a key body that is not a {parts[0]} key'
    return None


def _ssh_keys(option: str, value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else list(value)
    keys = tuple(line.strip() for item in items for line in str(item).splitlines() if line.strip())
    for number, key in enumerate(keys, 1):
        problem = _ssh_key_problem(key)
        if problem:
            raise SpecError(option, f'entry {number} ({key[:40]!r}) is not an OpenSSH public key: it {problem}; give the content of a .pub file')
    return keys


def _tags(option: str, value: Any) -> frozenset[str]:
    tags = tag_set(value)
    for tag in sorted(tags):
        if not _TAG.match(tag):
            raise SpecError(
                option, f'{tag!r} has characters PVE refuses in a tag: use letters, digits, "_", "+", "-", "." (not ":"), starting with a letter, digit or "_"'
            )
    return tags


def _owner_tag(option: str, value: Any) -> str:
    tags = _tags(option, value)
    if len(tags) != 1:
        raise SpecError(option, f'must be a single tag (got {value!r})')
    # Ownership is told by the tag in lower case (normalize_tags), whatever the tag-style.
    return next(iter(tags)).lower()


def _entries(option: str, value: Any, known: tuple[str, ...]) -> list[tuple[str, Mapping[str, Any]]]:
    """Each entry of a list option with the name errors give it (``disks[0]``), its keys checked."""
    if not isinstance(value, (list, tuple)):
        raise SpecError(option, f'must be a list of dicts, each with a slot (got {value!r})')
    entries = []
    for index, item in enumerate(value):
        name = f'{option}[{index}]'
        if not isinstance(item, Mapping):
            raise SpecError(name, f'must be a dict with a slot and its settings (got {item!r})')
        unknown = sorted(set(item) - set(known))
        if unknown:
            raise SpecError(name, f"has unknown key(s) {', '.join(unknown)}; the keys are {', '.join(known)}")
        if item.get('slot') is None:
            raise SpecError(f'{name}.slot', 'is required: name the device, e.g. scsi1 or net1')
        entries.append((name, item))
    return entries


def _unique(option: str, slots: list[str]) -> None:
    twice = sorted({slot for slot in slots if slots.count(slot) > 1})
    if twice:
        raise SpecError(option, f"declares {', '.join(twice)} more than once; declare each slot once")


def parse_disks(option: str, value: Any) -> tuple[DiskSpec, ...]:
    """The checked ``disks`` option."""
    disks: list[DiskSpec] = []
    for name, item in _entries(option, value, DISK_KEYS):
        slot = str(item['slot']).strip().lower()
        found = SLOT.match(slot)
        bus = found.group(1) if found else ''
        if not found or bus not in DISK_SLOTS or int(found.group(2)) >= DISK_SLOTS[bus]:
            buses = ', '.join(f'{bus}0-{bus}{count - 1}' for bus, count in DISK_SLOTS.items())
            raise SpecError(f'{name}.slot', f'is {item["slot"]!r}, which is not a disk slot PVE has; use one of {buses}')
        if item.get('size') is None:
            raise SpecError(f'{name}.size', 'is required: the size the disk has, e.g. 32G (a bare number is GiB)')
        properties: dict[str, str] = {}
        if item.get('cache') is not None:
            if item['cache'] not in CACHE_MODES:
                raise SpecError(f'{name}.cache', f"must be one of {', '.join(CACHE_MODES)} (got {item['cache']!r})")
            properties['cache'] = item['cache']
        for flag in DISK_FLAGS:
            if item.get(flag) is None:
                continue
            on = _flag(f'{name}.{flag}', item[flag])
            if on and bus not in BUSES_OF.get(flag, (bus,)):
                raise SpecError(f'{name}.{flag}', f"is not a property of a {bus} disk in PVE (only of {', '.join(BUSES_OF[flag])}); drop it or change the slot")
            properties[flag] = ('on' if on else 'ignore') if flag == 'discard' else str(int(on))
        storage = None if item.get('storage') is None else _storage(f'{name}.storage', item['storage'])
        disks.append(DiskSpec(slot, parse_disk_size(f'{name}.size', item['size']), storage, tuple(properties.items()), len(disks)))
    _unique(option, [disk.slot for disk in disks])
    return tuple(disks)


def parse_nets(option: str, value: Any) -> tuple[NicSpec, ...]:
    """The checked ``nets`` option."""
    nics: list[NicSpec] = []
    for name, item in _entries(option, value, NET_KEYS):
        slot = str(item['slot']).strip().lower()
        found = SLOT.match(slot)
        if not found or found.group(1) != 'net' or int(found.group(2)) >= MAX_NETS:
            raise SpecError(f'{name}.slot', f'is {item["slot"]!r}, which is not a network device PVE has; use net0 to net{MAX_NETS - 1}')
        properties: dict[str, str] = {}
        if item.get('bridge') is not None:
            properties['bridge'] = _bridge(f'{name}.bridge', item['bridge'])
        if item.get('vlan') is not None:
            properties['tag'] = str(_integer(1, 4094, ' (an 802.1Q VLAN id)')(f'{name}.vlan', item['vlan']))
        if item.get('model') is not None:
            if item['model'] not in NIC_MODELS:
                raise SpecError(f'{name}.model', f"must be one of {', '.join(sorted(NIC_MODELS))} (got {item['model']!r})")
            properties['model'] = item['model']
        if item.get('firewall') is not None:
            properties['firewall'] = str(int(_flag(f'{name}.firewall', item['firewall'])))
        if item.get('mtu') is not None:
            # qemu-server PVE/QemuServer/Network.pm $net_fmt: mtu 1-65520, VirtIO only; 1 means the bridge's MTU.
            properties['mtu'] = str(_integer(1, 65520, ' (1 is the bridge MTU)')(f'{name}.mtu', item['mtu']))
            if properties.get('model', 'virtio') != 'virtio':
                raise SpecError(f'{name}.mtu', f"is supported by PVE for VirtIO devices only, and model is {properties['model']}; drop mtu or use model virtio")
        nics.append(NicSpec(slot, tuple(properties.items())))
    _unique(option, [nic.slot for nic in nics])
    return tuple(nics)


def _settings(option: str, value: Any, known: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(option, f"must be a dict with {' and/or '.join(known)} (got {value!r})")
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise SpecError(option, f"has unknown key(s) {', '.join(unknown)}; the keys are {', '.join(known)}")
    return value


def _firmware_storage(option: str, settings: Mapping[str, Any]) -> str | None:
    return None if settings.get('storage') is None else _storage(f'{option}.storage', settings['storage'])


def parse_efidisk(option: str, value: Any) -> FirmwareDrive:
    """The checked ``efidisk`` option: a 4 MiB EFI vars disk (efitype 4m, which Secure Boot needs: Drive.pm)."""
    settings = _settings(option, value, EFIDISK_KEYS)
    properties = {'efitype': '4m'}
    if settings.get('pre_enrolled_keys') is not None:
        properties['pre-enrolled-keys'] = str(int(_flag(f'{option}.pre_enrolled_keys', settings['pre_enrolled_keys'])))
    return FirmwareDrive('efidisk0', option, _firmware_storage(option, settings), tuple(properties.items()))


def parse_tpm(option: str, value: Any) -> FirmwareDrive:
    """The checked ``tpm`` option: a TPM state volume of ``version`` (v2.0 unless declared)."""
    settings = _settings(option, value, TPM_KEYS)
    version = settings.get('version') or 'v2.0'
    if version not in TPM_VERSIONS:
        raise SpecError(f'{option}.version', f"must be one of {', '.join(TPM_VERSIONS)} (got {version!r})")
    return FirmwareDrive('tpmstate0', option, _firmware_storage(option, settings), (('version', version),))


def _serial(option: str, value: Any) -> str:
    # qemu-server PVE/QemuServer.pm $serialdesc: "(/dev/.+|socket)".
    text = str(value).strip()
    if text and not re.fullmatch(r'/dev/[^,]+|socket', text):
        raise SpecError(option, f"must be socket (a console on PVE's terminal) or a host device such as /dev/ttyS0, or empty to remove it (got {value!r})")
    return text


def _cdrom(option: str, value: Any) -> str:
    text = str(value).strip()
    if text and not _ISO_VOLUME.match(text):
        raise SpecError(option, f'must be an ISO volume such as local:iso/debian-12.iso (content iso), or empty to eject it (got {value!r})')
    return text


def _boot(option: str, value: Any) -> tuple[str, ...]:
    devices = _words(option, value)
    if not devices:
        raise SpecError(option, 'must list the devices to boot from, in order, e.g. [ide2, scsi0, net0]')
    for device in devices:
        if not (_DRIVE_KEY.match(device) or _NET_KEY.match(device)):
            raise SpecError(option, f'lists {device!r}, which is not a disk, CD-ROM or network device key (scsi0, ide2, net0, ...)')
    return devices


def _vga(option: str, value: Any) -> str:
    text = str(value).strip()
    try:
        kind = parse_property_string(text, 'type').get('type') if text else ''
    except ValueError:
        kind = None
    if kind is not None and (kind in VGA_TYPES or not text):
        return text
    raise SpecError(option, f"must be a display type ({', '.join(VGA_TYPES)}), optionally with ',memory=MiB', or empty to remove it (got {value!r})")


@dataclass(frozen=True)
class VmSpec:
    """The validated pve_vm options; None = not managed. ``ip`` is an IPv4Interface or ``'dhcp'``, ``disk_size`` bytes."""

    name: str
    state: str = 'present'
    image: str | None = None
    linked_clone: bool = False
    node: str | None = None
    nodes: tuple[str, ...] = ()
    vmid: int | None = None
    pool: str | None = None
    storage: str | None = None
    cores: int | None = None
    sockets: int | None = None
    memory: int | None = None
    balloon: int | None = None
    cpu: str | None = None
    machine: str | None = None
    disk_size: int | None = None
    disks: tuple[DiskSpec, ...] | None = None
    remove_undeclared_disks: bool = False
    bridge: str | None = None
    vlan: int | None = None
    nets: tuple[NicSpec, ...] | None = None
    bios: str | None = None
    efidisk: FirmwareDrive | None = None
    tpm: FirmwareDrive | None = None
    serial: str | None = None
    vga: str | None = None
    cdrom: str | None = None
    boot: tuple[str, ...] | None = None
    ip: ipaddress.IPv4Interface | str | None = None
    gateway: ipaddress.IPv4Address | None = None
    nameservers: tuple[str, ...] | None = None
    searchdomain: str | None = None
    ci_user: str | None = None
    ci_password: str | None = None
    ssh_keys: tuple[str, ...] | None = None
    user_data: str | None = None
    user_data_storage: str | None = None  # None: chosen by _vm_io.seed_volume_for
    tags: frozenset[str] | None = None
    protection: bool | None = None
    onboot: bool | None = None
    apply_mode: str = 'report'
    owner_tag: str = DEFAULT_OWNER_TAG
    adopt: bool = False
    dns_domain: str | None = None
    shutdown_timeout: int | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> VmSpec:
        """Validate module params (other keys, such as the connection options, are ignored); raise SpecError on the first problem."""
        if not params.get('name'):
            raise SpecError('name', 'is required: the VM name identifies the VM')
        values = {}
        for spec_field in fields(cls):
            raw = params.get(spec_field.name)
            if raw is not None:
                values[spec_field.name] = _PARSERS[spec_field.name](spec_field.name, raw)
        spec = cls(**values)
        spec._check_combinations()
        return spec

    def declares(self, option: str) -> bool:
        """Whether ``option`` is managed (was given)."""
        return getattr(self, option) is not None

    def declares_cloudinit(self) -> bool:
        """Whether any option carried by PVE's cloud-init drive is declared."""
        return any(self.declares(option) for option in CLOUDINIT_OPTIONS)

    def with_resolved_ip(self, address: str | None) -> VmSpec:
        """The spec with ``ip`` from a DNS answer for an undeclared ip: the address found, or DHCP (and no gateway) when none.

        A user_data VM keeps its spec: its network is the user-data's business, not PVE's cloud-init drive's.
        """
        if self.user_data is not None:
            return self
        if address is None:
            return replace(self, ip='dhcp', gateway=None)
        return replace(self, ip=_ip('ip', address))

    def _check_combinations(self) -> None:
        if self.user_data is not None and self.declares_cloudinit():
            given = ', '.join(option for option in CLOUDINIT_OPTIONS if self.declares(option))
            raise SpecError(
                'user_data',
                f'replaces the cloud-init drive PVE generates, so it cannot be combined with {given}; put those settings into the user-data instead',
            )
        if self.linked_clone and self.storage is not None:
            raise SpecError(
                'linked_clone',
                "keeps the clone's disks on the template's storage (PVE refuses storage for a linked clone); drop storage or set linked_clone: false",
            )
        # qemu-server PVE/API2/Qemu.pm, $update_vm_api: "balloon value too large (must be smaller than assigned memory)".
        if self.balloon is not None and self.memory is not None and self.balloon > self.memory:
            raise SpecError(
                'balloon',
                f'({self.balloon} MiB) is more than memory ({self.memory} MiB), which PVE refuses; declare at most memory, or 0 to turn ballooning off',
            )
        if any(nic.slot == 'net0' for nic in self.nets or ()) and (self.bridge is not None or self.vlan is not None):
            raise SpecError('nets', 'declares net0, which bridge and vlan declare too; declare net0 in one place: drop bridge and vlan, or net0 from nets')
        if self.efidisk is not None and self.bios == 'seabios':
            raise SpecError('efidisk', 'holds the EFI variables of OVMF, and bios is seabios; declare bios: ovmf, or drop efidisk')
        if self.gateway is not None and self.ip == 'dhcp':
            raise SpecError('gateway', 'is set but ip is dhcp, which takes its gateway from the DHCP server; drop gateway or declare a static ip')
        if self.gateway is not None and self.ip is None and self.dns_domain is None:
            raise SpecError('gateway', 'needs a static ip (declared, or resolved through dns_domain); declare ip or drop gateway')


# The checks of the options that need more than their declaration says (an integer's bounds, a choice, a flag, text).
_OWN_PARSERS: dict[str, Callable[[str, Any], Any]] = {
    'name': _name,
    'nodes': _words,
    'storage': _storage,
    'cpu': _cpu,
    'disk_size': parse_disk_size,
    'disks': parse_disks,
    'nets': parse_nets,
    'efidisk': parse_efidisk,
    'tpm': parse_tpm,
    'serial': _serial,
    'vga': _vga,
    'cdrom': _cdrom,
    'boot': _boot,
    'bridge': _bridge,
    'ip': _ip,
    'gateway': _gateway,
    'nameservers': _nameservers,
    'ci_password': lambda option, value: str(value),
    'ssh_keys': _ssh_keys,
    'user_data': lambda option, value: str(value),
    'user_data_storage': _storage,
    'tags': _tags,
    'owner_tag': _owner_tag,
}


def _qemu(option: Option) -> Qemu:
    """The option's pve_vm mapping (every option VmSpec holds has one)."""
    if option.qemu is None:
        raise ValueError(f'{option.name} is not a pve_vm option')
    return option.qemu


def _declared_parser(option: Option) -> Callable[[str, Any], Any]:
    if option.name in _OWN_PARSERS:
        return _OWN_PARSERS[option.name]
    if option.type == 'int':
        # VmSpec's integer options each declare their minimum (test_guest_options checks the parsers).
        qemu = _qemu(option)
        return _integer(qemu.minimum or 0, qemu.maximum, qemu.meaning)
    if option.type == 'bool':
        return _flag
    return _choice(*option.choices) if option.choices else _text


_PARSERS: dict[str, Callable[[str, Any], Any]] = {spec_field.name: _declared_parser(OPTIONS_BY_NAME[spec_field.name]) for spec_field in fields(VmSpec)}


# The PVE config keys the options manage: how each is rendered, compared and shown.


@dataclass(frozen=True)
class _ConfigKey:
    options: tuple[str, ...]
    render: Callable[[VmSpec, Any], Any]  # (spec, the key's current value) -> value to write; None removes the key
    canonical: Callable[[Any], Any]  # PVE's or our value -> the form two values are compared in
    display: Callable[[Any], Any]  # value -> what the diff shows; a secret shows as MASK


def _as_text(value: Any) -> str | None:
    return None if value is None else str(value)


def _integer_value(default: int, default_key: str | None = None) -> Callable[[Any], int]:
    def canonical(value: Any) -> int:
        if value is None or value == '':
            return default
        if default_key is not None:  # memory is "[current=]N" since PVE 8
            value = parse_property_string(value, default_key).get(default_key, default)
        return int(value)

    return canonical


def _word_tuple(value: Any) -> tuple[str, ...]:
    return tuple(word for word in _LIST_SEPARATORS.split(str(value or '')) if word)


def _net_value(value: Any) -> dict[str, str]:
    props = parse_net(value) if value else {}
    if 'macaddr' in props:
        props['macaddr'] = props['macaddr'].upper()
    return props


def _render_net0(spec: VmSpec, current: Any) -> str:
    props = parse_net(current) if current else {'model': DEFAULT_NIC_MODEL, 'bridge': DEFAULT_BRIDGE}
    if spec.bridge is not None:
        props['bridge'] = spec.bridge
    if spec.vlan is not None:
        props['tag'] = str(spec.vlan)
    return format_net(props)


def default_gateway(address: ipaddress.IPv4Interface) -> str:
    """The gateway assumed when none is declared: the address's first three octets and ``.1``."""
    return '.'.join(str(address.ip).split('.')[:3] + ['1'])


def _declared(value: _Value | None) -> _Value:
    """A declared option's value: a key's rule renders only the keys of declared options (desired_config)."""
    if value is None:
        raise ValueError('a config key is rendered only for a declared option')
    return value


def _render_ipconfig0(spec: VmSpec, current: Any) -> str:
    if spec.ip == 'dhcp':
        wanted = {'ip': 'dhcp'}
    elif not isinstance(spec.ip, ipaddress.IPv4Interface):
        raise ValueError('ipconfig0 is rendered only for a declared ip')
    else:
        wanted = {'ip': spec.ip.with_prefixlen, 'gw': str(spec.gateway) if spec.gateway else default_gateway(spec.ip)}
    kept = {key: value for key, value in parse_property_string(current).items() if key not in ('ip', 'gw')}
    return format_property_string({**wanted, **kept})


def _render_cpu(spec: VmSpec, current: Any) -> str:
    # Declared properties over the current ones: "host" keeps existing flags.
    props = {**parse_property_string(current, 'cputype'), **parse_property_string(spec.cpu, 'cputype')}
    return format_property_string(props, 'cputype')


def _render_vga(spec: VmSpec, current: Any) -> str | None:
    # Declared properties over the current ones ("std" keeps a memory= set by hand); empty removes the key.
    if not spec.vga:
        return None
    return format_property_string({**parse_property_string(current, 'type'), **parse_property_string(spec.vga, 'type')}, 'type')


def _boot_order(value: Any) -> tuple[str, ...]:
    # qemu-server PVE/QemuServer.pm $boot_fmt: "order=dev1;dev2"; a legacy "cdn" value orders no device by name.
    return tuple(device for device in parse_property_string(value, 'legacy').get('order', '').split(';') if device)


def _render_tags(spec: VmSpec, current: Any) -> str:
    # Undeclared tags are left as they are; the owner tag is on every VM pve_vm manages.
    return render_tags(spec.tags, current, spec.owner_tag)


def _declared_key(option: Option) -> _ConfigKey:
    """The rule of a key written as its option's value: an integer, or a flag (PVE writes 0 or 1)."""
    if option.type == 'bool':
        return _ConfigKey((option.name,), lambda spec, current: int(getattr(spec, option.name)), as_bool, as_bool)
    qemu = _qemu(option)
    value = _integer_value(qemu.pve_default, qemu.pve_default_property)
    return _ConfigKey((option.name,), lambda spec, current: getattr(spec, option.name), value, value)


# The keys of several options, or rendered over the current value, or compared in a form of their own.
_OWN_KEYS: dict[str, _ConfigKey] = {
    'cpu': _ConfigKey(('cpu',), _render_cpu, lambda value: parse_property_string(value, 'cputype'), _as_text),
    'machine': _ConfigKey(('machine',), lambda spec, current: MACHINE_TYPES[_declared(spec.machine)], machine_family, _as_text),
    'net0': _ConfigKey(('bridge', 'vlan'), _render_net0, _net_value, _as_text),
    'ipconfig0': _ConfigKey(('ip',), _render_ipconfig0, parse_property_string, _as_text),
    'nameserver': _ConfigKey(('nameservers',), lambda spec, current: ' '.join(_declared(spec.nameservers)) or None, _word_tuple, _as_text),
    'searchdomain': _ConfigKey(('searchdomain',), lambda spec, current: spec.searchdomain or None, _word_tuple, _as_text),
    'ciuser': _ConfigKey(('ci_user',), lambda spec, current: spec.ci_user or None, lambda value: str(value or ''), _as_text),
    # Write-only: PVE answers "**********", so only "set or not" is comparable (see the module's decisions).
    'cipassword': _ConfigKey(('ci_password',), lambda spec, current: spec.ci_password or None, bool, lambda value: MASK if value else None),
    'sshkeys': _ConfigKey(
        ('ssh_keys',),
        lambda spec, current: encode_sshkeys(_declared(spec.ssh_keys)) or None,
        lambda value: frozenset(' '.join(key.split()) for key in decode_sshkeys(value)),
        lambda value: list(decode_sshkeys(value)) if value else None,
    ),
    'tags': _ConfigKey(('tags', 'owner_tag'), _render_tags, tag_set, lambda value: sorted(tag_set(value))),
    # qemu-server PVE/QemuServer.pm $confdesc: no bios key is SeaBIOS.
    'bios': _ConfigKey(('bios',), lambda spec, current: spec.bios, lambda value: value or 'seabios', _as_text),
    'serial0': _ConfigKey(('serial',), lambda spec, current: spec.serial or None, lambda value: str(value or ''), _as_text),
    'vga': _ConfigKey(('vga',), _render_vga, lambda value: parse_property_string(value, 'type'), _as_text),
    'boot': _ConfigKey(('boot',), lambda spec, current: 'order=' + ';'.join(_declared(spec.boot)), _boot_order, _as_text),
}
# In the options' order, so that a diff lists the keys as pve_vm's documentation lists the options.
_KEYS: dict[str, _ConfigKey] = dict(
    sorted(
        {**{pve_key: _declared_key(option) for option in VM_OPTIONS if (pve_key := _qemu(option).pve_key)}, **_OWN_KEYS}.items(),
        key=lambda item: list(OPTIONS_BY_NAME).index(item[1].options[0]),
    )
)


def desired_config(spec: VmSpec, config: Mapping[str, Any]) -> dict[str, Any]:
    """The value of every PVE config key the declared options manage, rendered over ``config`` (the VM's config
    now, or the one it will start from); None means "remove the key". The owner tag makes ``tags`` always managed."""
    return {key: rule.render(spec, config.get(key)) for key, rule in _KEYS.items() if any(spec.declares(option) for option in rule.options)}


def same_value(key: str, observed: Any, desired: Any) -> bool:
    """Whether PVE's ``observed`` value of a managed key already is ``desired``, in the key's normalized form."""
    rule = _KEYS[key]
    return rule.canonical(observed) == rule.canonical(desired)


def display_value(key: str, value: Any) -> Any:
    """``value`` of a managed key as the diff shows it: decoded, normalized, and secrets masked."""
    return _KEYS[key].display(value)
