# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A container's declared options <-> Proxmox VE container config strings: validation, rendering, comparison.

Pure: values in, values out. ``CtSpec.from_params`` validates the pve_container options (``SpecError`` names the
option, with the checks pve_vm uses for the options both have); ``desired_config`` renders the config keys the
declared options manage; ``same_value`` compares what PVE returns with what would be written, per key;
``display_value`` gives the diff's form. An option left unset (None) is not managed.

Decisions:
- ``net0`` is written over the existing one: its MAC (``hwaddr``), interface name and every undeclared property are
  kept. A new ``net0`` is ``name=eth0,bridge=vmbr0``. ``ip`` is IPv4, a bare address is ``/24``, and a static address
  gets ``gateway`` or the ``.1`` of its network, as in pve_vm.
- ``nets`` declares further devices (or net0, when the flat net0 options are not declared) by their key, as pve_vm's
  ``nets`` does: only the declared properties are written over the current value (its MAC kept), a new one is
  ``name=ethN,bridge=vmbr0`` and gets a gateway only when one is declared (a second default route is rarely meant).
  Undeclared devices are left alone, as pve_vm leaves them.
- ``features`` lists the flags among nesting, keyctl and fuse that are on; the others are turned off, and flags pve_container
  does not manage (``mount=``, ``mknod``) are kept.
- ``disk_size`` and a mount point's ``size`` are absolute, grow only (PVE cannot shrink a container volume:
  pve-container src/PVE/API2/LXC.pm, resize_vm, "unable to shrink disk size"), and whole MiB: PVE allocates a new
  volume ``STORAGE:GiB`` at ``int(GiB * 1024)`` MiB (src/PVE/LXC.pm, create_disks), so a size is sent as its exact
  GiB (a whole MiB count / 1024 is a decimal of at most 10 places, which ``$NEW_DISK_RE`` of src/PVE/LXC.pm accepts).
- ``unprivileged`` is read-only once the container exists (src/PVE/LXC/Config.pm, update_pct_config: "unable to modify
  read-only option"): a container whose value differs is an error, never rewritten.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._guest_options import FEATURES
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import (
    DEFAULT_BRIDGE,
    DEFAULT_OWNER_TAG,
    SpecError,
    _bridge,
    _entries,
    _flag,
    _gateway,
    _integer,
    _ip,
    _name,
    _nameservers,
    _owner_tag,
    _ssh_keys,
    _storage,
    _tags,
    _unique,
    as_bool,
    default_gateway,
    format_property_string,
    format_size,
    parse_disk_size,
    parse_property_string,
    parse_size,
    render_tags,
    tag_set,
)
from ansible_collections.puls.proxmox.plugins.module_utils._vm_devices import NicSpec

GIB = 1024**3
MIB = 1024**2
DEFAULT_INTERFACE = 'eth0'
MAX_MOUNT_POINTS = 256  # mp0 .. mp255 (src/PVE/LXC/Config.pm, $MAX_MOUNT_POINTS)
# What a running container takes at once (src/PVE/LXC/Config.pm, $LXC_FASTPLUG_OPTIONS and vmconfig_hotplug_pending:
# cpulimit, cpuunits, memory, swap and netN are hot-plugged, a new mpN mounted); everything else waits for a restart.
APPLIED_LIVE = frozenset(
    ('description', 'onboot', 'startup', 'protection', 'hostname', 'hookscript', 'cores', 'tags', 'lock', 'cpulimit', 'cpuunits', 'memory', 'swap')
)
_NET_KEY = re.compile(r'^net\d+$')
# src/PVE/LXC/Config.pm: $MAX_LXC_NETWORKS (net0 .. net31) and $netconf_desc (name's pattern, mtu 64-65535).
MAX_NETS = 32
NET_KEYS = ('slot', 'name', 'bridge', 'vlan', 'ip', 'gateway', 'firewall', 'mtu', 'rate')
_INTERFACE_NAME = re.compile(r'^[-_.\w]+$')
# The option of the flat net0 settings, which ``nets`` may not declare net0 beside.
NET0_OPTIONS = ('bridge', 'vlan', 'ip', 'gateway', 'firewall')
_MOUNT_KEY = re.compile(r'^mp\d+$')
_VOLUME = re.compile(r'^[A-Za-z][A-Za-z0-9_.-]*:')
_TEMPLATE_VOLUME = re.compile(r'^[A-Za-z][A-Za-z0-9_.-]*:vztmpl/[^/\s]+$')


def is_template_volume(image: str) -> bool:
    """Whether ``image`` is an OS template volume, STORAGE:vztmpl/FILE (else it names a container template)."""
    return _TEMPLATE_VOLUME.match(image) is not None


@dataclass(frozen=True)
class MountPoint:
    """A declared mount point: ``mp<slot>``, mounted at ``path``, ``size`` bytes on ``storage`` (None: the container's ``storage``)."""

    slot: int
    path: str
    size: int
    storage: str | None = None

    @property
    def key(self) -> str:
        return f'mp{self.slot}'


def _mount_points(option: str, value: Any) -> tuple[MountPoint, ...]:
    points = []
    for number, item in enumerate(value or (), 1):
        try:
            slot = _integer(0, MAX_MOUNT_POINTS - 1)('slot', item.get('slot'))
            path = str(item.get('path') or '').strip()
            if not path.startswith('/') or path == '/':
                raise SpecError('path', f'must be an absolute path other than / (got {item.get("path")!r})')
            storage = _storage('storage', item['storage']) if item.get('storage') is not None else None
            points.append(MountPoint(slot, path, _volume_size('size', item.get('size')), storage))
        except SpecError as exc:
            raise SpecError(option, f'entry {number}: {exc}') from None
    slots = [point.slot for point in points]
    duplicate = next((slot for slot in slots if slots.count(slot) > 1), None)
    if duplicate is not None:
        raise SpecError(option, f'declares slot {duplicate} twice; give each mount point its own slot (mp0 .. mp{MAX_MOUNT_POINTS - 1})')
    return tuple(points)


def _volume_size(option: str, value: Any) -> int:
    """A declared container volume size in bytes: whole MiB, the unit PVE allocates a container volume in."""
    size = parse_disk_size(option, value)
    if size % MIB:
        raise SpecError(
            option,
            f'is {value!r}, which is not a whole number of MiB; PVE allocates a container volume in whole MiB (it would round this down): '
            f'declare {-(-size // MIB)}M or another size in M or G',
        )
    return size


def _nets(option: str, value: Any) -> tuple[NicSpec, ...]:
    """The checked ``nets`` option: each device's declared properties in PVE's names (``name``, ``bridge``, ``tag``,
    ``ip``, ``gw``, ``firewall``, ``mtu``, ``rate``)."""
    nics: list[NicSpec] = []
    for entry, item in _entries(option, value, NET_KEYS):
        text = str(item['slot']).strip().lower()
        slot = text if text.startswith('net') else f'net{text}'
        if not _NET_KEY.match(slot) or int(slot[3:]) >= MAX_NETS:
            raise SpecError(
                f'{entry}.slot', f'is {item["slot"]!r}, which is not a container network device; use net0 to net{MAX_NETS - 1} (or 0 to {MAX_NETS - 1})'
            )
        props: dict[str, str] = {}
        if item.get('name') is not None:
            props['name'] = str(item['name']).strip()
            if not _INTERFACE_NAME.match(props['name']):
                raise SpecError(f'{entry}.name', f'must be an interface name such as eth1 (letters, digits, "_", "-", "."), got {item["name"]!r}')
        if item.get('bridge') is not None:
            props['bridge'] = _bridge(f'{entry}.bridge', item['bridge'])
        if item.get('vlan') is not None:
            props['tag'] = str(_integer(1, 4094, ' (an 802.1Q VLAN id)')(f'{entry}.vlan', item['vlan']))
        if item.get('ip') is not None:
            ip = 'manual' if str(item['ip']).strip().lower() == 'manual' else _ip(f'{entry}.ip', item['ip'])
            props['ip'] = ip.with_prefixlen if isinstance(ip, ipaddress.IPv4Interface) else ip
        if item.get('gateway') is not None:
            if props.get('ip') in (None, 'dhcp', 'manual'):
                raise SpecError(f'{entry}.gateway', 'needs a static ip in the same entry; declare ip as ADDRESS/PREFIX or drop gateway')
            props['gw'] = str(_gateway(f'{entry}.gateway', item['gateway']))
        if item.get('firewall') is not None:
            props['firewall'] = str(int(_flag(f'{entry}.firewall', item['firewall'])))
        if item.get('mtu') is not None:
            props['mtu'] = str(_integer(64, 65535)(f'{entry}.mtu', item['mtu']))
        if item.get('rate') is not None:
            props['rate'] = _rate(f'{entry}.rate', item['rate'])
        nics.append(NicSpec(slot, tuple(props.items())))
    _unique(option, [nic.slot for nic in nics])
    return tuple(nics)


def _rate(option: str, value: Any) -> str:
    try:
        rate = float(value)
    except (TypeError, ValueError):
        rate = 0.0
    if isinstance(value, bool) or not rate > 0:
        raise SpecError(option, f'must be a positive number of MB/s (got {value!r})')
    return f'{rate:g}'


def _image(option: str, value: Any) -> str:
    text = str(value).strip()
    if _VOLUME.match(text) and not _TEMPLATE_VOLUME.match(text):
        raise SpecError(option, f'{text!r} is not a container template volume; give STORAGE:vztmpl/FILE (download it with pve_iso, content vztmpl)')
    if not text:
        raise SpecError(option, 'is empty; give STORAGE:vztmpl/FILE, or the VMID or name of a container template to clone')
    return text


def _features(option: str, value: Any) -> frozenset[str]:
    items = [value] if isinstance(value, str) else list(value)
    unknown = sorted(str(item) for item in items if item not in FEATURES)
    if unknown:
        raise SpecError(option, f'lists {", ".join(unknown)}; pve_container manages {", ".join(FEATURES)}')
    return frozenset(items)


def _password(option: str, value: Any) -> str:
    text = str(value)
    # src/PVE/API2/LXC.pm, create_vm: password is a 'string' of minLength 5.
    if len(text) < 5:
        raise SpecError(option, 'must be at least 5 characters long, as PVE requires')
    return text


_PARSERS: dict[str, Callable[[str, Any], Any]] = {
    'name': _name,
    'image': _image,
    'linked_clone': _flag,
    'node': lambda option, value: str(value).strip(),
    'vmid': _integer(100, 999999999),
    'pool': lambda option, value: str(value).strip(),
    'storage': _storage,
    'disk_size': _volume_size,
    'cores': _integer(1, 8192),
    'memory': _integer(16, meaning=' MiB'),
    'swap': _integer(0, meaning=' MiB'),
    'mount_points': _mount_points,
    'bridge': _bridge,
    'vlan': _integer(1, 4094),
    'ip': _ip,
    'gateway': _gateway,
    'firewall': _flag,
    'nets': _nets,
    'nameservers': _nameservers,
    'searchdomain': lambda option, value: str(value).strip(),
    'unprivileged': _flag,
    'features': _features,
    'ssh_keys': _ssh_keys,
    'password': _password,
    'onboot': _flag,
    'protection': _flag,
    'tags': _tags,
    'owner_tag': _owner_tag,
    'adopt': _flag,
    'apply_mode': lambda option, value: str(value),
    'state': lambda option, value: str(value),
    'shutdown_timeout': _integer(0),
}


@dataclass(frozen=True)
class CtSpec:
    """The validated pve_container options; None = not managed. ``ip`` is an IPv4Interface or ``'dhcp'``, sizes are bytes."""

    name: str
    state: str = 'present'
    image: str | None = None
    linked_clone: bool = False
    node: str | None = None
    vmid: int | None = None
    pool: str | None = None
    storage: str | None = None
    disk_size: int | None = None
    cores: int | None = None
    memory: int | None = None
    swap: int | None = None
    mount_points: tuple[MountPoint, ...] | None = None
    bridge: str | None = None
    vlan: int | None = None
    ip: ipaddress.IPv4Interface | str | None = None
    gateway: ipaddress.IPv4Address | None = None
    firewall: bool | None = None
    nets: tuple[NicSpec, ...] | None = None
    nameservers: tuple[str, ...] | None = None
    searchdomain: str | None = None
    unprivileged: bool | None = None
    features: frozenset[str] | None = None
    ssh_keys: tuple[str, ...] | None = None
    password: str | None = None
    onboot: bool | None = None
    protection: bool | None = None
    tags: frozenset[str] | None = None
    owner_tag: str = DEFAULT_OWNER_TAG
    adopt: bool = False
    apply_mode: str = 'report'
    shutdown_timeout: int | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> CtSpec:
        """Validate module params (other keys are ignored); raise SpecError on the first problem."""
        if not params.get('name'):
            raise SpecError('name', 'is required: the host name identifies the container')
        values: dict[str, Any] = {}
        for spec_field in fields(cls):
            raw = params.get(spec_field.name)
            if raw is not None:
                values[spec_field.name] = _PARSERS[spec_field.name](spec_field.name, raw)
        spec = cls(**values)
        spec._check_combinations()
        return spec

    def declares(self, option: str) -> bool:
        return getattr(self, option) is not None

    @property
    def from_template_volume(self) -> bool:
        """Whether a new container is created from an OS template volume (else cloned from a container template)."""
        return self.image is not None and is_template_volume(self.image)

    def _check_combinations(self) -> None:
        if self.gateway is not None and self.ip == 'dhcp':
            raise SpecError('gateway', 'is set but ip is dhcp, which takes its gateway from the DHCP server; drop gateway or declare a static ip')
        if self.gateway is not None and self.ip is None:
            raise SpecError('gateway', 'needs a static ip; declare ip or drop gateway')
        if any(nic.slot == 'net0' for nic in self.nets or ()):
            flat = [option for option in NET0_OPTIONS if self.declares(option)]
            if flat:
                raise SpecError(
                    'nets', f"declares net0, which {', '.join(flat)} declare(s) too; declare net0 in one place: drop {', '.join(flat)}, or net0 from nets"
                )
        if self.linked_clone and self.storage is not None:
            raise SpecError('linked_clone', "keeps the clone's volumes on the template's storage (PVE refuses storage for a linked clone); drop storage")
        if self.image is not None and not self.from_template_volume:
            for option in ('ssh_keys', 'password'):
                if self.declares(option):
                    raise SpecError(
                        option,
                        f'is written into the root file system when a container is created from an OS template; a clone of {self.image!r} keeps '
                        "its template's: drop it, or create from STORAGE:vztmpl/FILE",
                    )
        elif self.linked_clone:
            raise SpecError('linked_clone', f'needs a container template to clone, but image {self.image!r} is an OS template volume; set linked_clone: false')


# ---------------------------------------------------------------------------------------------- config keys


def mount_size(value: Any) -> int | None:
    """Bytes of the ``size=`` of a rootfs or mpN value, or None when PVE gave none."""
    size = parse_property_string(value, 'volume').get('size')
    return parse_size(size) if size else None


def new_volume(storage: str, size: int) -> str:
    """A volume for PVE to allocate: STORAGE:SIZE in GiB, exact for whole MiB (src/PVE/LXC.pm, $NEW_DISK_RE allows
    decimals; create_disks takes int(GiB * 1024) MiB, so a rounded GiB would lose a MiB)."""
    return f'{storage}:{Decimal(size // MIB) / 1024:f}'


def _render_net0(spec: CtSpec, current: Any) -> str:
    props = parse_property_string(current) if current else {'name': DEFAULT_INTERFACE, 'bridge': DEFAULT_BRIDGE}
    if spec.bridge is not None:
        props['bridge'] = spec.bridge
    if spec.vlan is not None:
        props['tag'] = str(spec.vlan)
    if spec.firewall is not None:
        props['firewall'] = str(int(spec.firewall))
    if spec.ip == 'dhcp':
        props['ip'] = 'dhcp'
        props.pop('gw', None)
    elif isinstance(spec.ip, ipaddress.IPv4Interface):
        props['ip'] = spec.ip.with_prefixlen
        props['gw'] = str(spec.gateway) if spec.gateway else default_gateway(spec.ip)
    return format_property_string(props)


def _net_value(value: Any) -> dict[str, str]:
    """A netN value in comparable form: without PVE's own ``type=veth``, the MAC upper-cased, flags as 0/1."""
    props = {key: item for key, item in parse_property_string(value).items() if key != 'type'}
    if 'hwaddr' in props:
        props['hwaddr'] = props['hwaddr'].upper()
    for flag in ('firewall', 'link_down'):
        if flag in props:
            props[flag] = str(int(as_bool(props[flag])))
    return props


def _render_features(spec: CtSpec, current: Any) -> str | None:
    kept = {key: value for key, value in parse_property_string(current).items() if key not in FEATURES}
    wanted = dict.fromkeys(sorted(spec.features or ()), '1')
    return format_property_string({**kept, **wanted}) or None


def _features_value(value: Any) -> dict[str, Any]:
    props = parse_property_string(value)
    return {key: (as_bool(item) if key in FEATURES else item) for key, item in props.items() if not (key in FEATURES and not as_bool(item))}


def _integer_or_none(value: Any) -> int | None:
    return None if value is None or value == '' else int(value)


def _words(value: Any) -> tuple[str, ...]:
    return tuple(str(value or '').split())


def _render_tags(spec: CtSpec, current: Any) -> str:
    # Undeclared tags are left as they are; the owner tag is on every container pve_container manages.
    return render_tags(spec.tags, current, spec.owner_tag)


@dataclass(frozen=True)
class _ConfigKey:
    options: tuple[str, ...]
    render: Any  # (spec, current value) -> value to write; None removes the key
    canonical: Any  # value -> comparable form
    display: Any  # value -> the diff's form


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


# PVE's value of an absent memory and swap key is 512 (src/PVE/LXC/Config.pm, $confdesc); cores absent means all host cores.
_KEYS: dict[str, _ConfigKey] = {
    'hostname': _ConfigKey(('name',), lambda spec, current: spec.name, _text, _text),
    'cores': _ConfigKey(('cores',), lambda spec, current: spec.cores, _integer_or_none, _integer_or_none),
    'memory': _ConfigKey(('memory',), lambda spec, current: spec.memory, lambda value: int(value if value not in (None, '') else 512), _integer_or_none),
    'swap': _ConfigKey(('swap',), lambda spec, current: spec.swap, lambda value: int(value if value not in (None, '') else 512), _integer_or_none),
    'net0': _ConfigKey(('bridge', 'vlan', 'ip', 'firewall'), _render_net0, _net_value, _text),
    'nameserver': _ConfigKey(('nameservers',), lambda spec, current: ' '.join(spec.nameservers or ()) or None, _words, _text),
    'searchdomain': _ConfigKey(('searchdomain',), lambda spec, current: spec.searchdomain or None, _words, _text),
    'features': _ConfigKey(('features',), _render_features, _features_value, _text),
    'onboot': _ConfigKey(('onboot',), lambda spec, current: int(bool(spec.onboot)), as_bool, as_bool),
    'protection': _ConfigKey(('protection',), lambda spec, current: int(bool(spec.protection)), as_bool, as_bool),
    'tags': _ConfigKey(('tags', 'owner_tag'), _render_tags, tag_set, lambda value: sorted(tag_set(value))),
}
# Options handled apart from _KEYS: sizes are grown by resize, mount points are keys of their own, unprivileged is
# read-only, gateway is a property of net0, and each device of nets is a key of its own.
SEPARATE_OPTIONS = ('disk_size', 'mount_points', 'unprivileged', 'gateway', 'nets')


def managed_options() -> frozenset[str]:
    """Every option a config key rule reads (tests/unit/test_guest_options.py)."""
    return frozenset(option for rule in _KEYS.values() for option in rule.options) | frozenset(SEPARATE_OPTIONS)


def desired_config(spec: CtSpec, config: Mapping[str, Any]) -> dict[str, Any]:
    """The value of every config key the declared options manage, rendered over ``config``; None removes the key. The
    owner tag makes ``tags`` always managed, the name ``hostname``."""
    return {key: rule.render(spec, config.get(key)) for key, rule in _KEYS.items() if any(spec.declares(option) for option in rule.options)}


def same_value(key: str, observed: Any, desired: Any) -> bool:
    rule = _KEYS[key]
    return rule.canonical(observed) == rule.canonical(desired)


def display_value(key: str, value: Any) -> Any:
    return _KEYS[key].display(value)


def render_mount_point(point: MountPoint, current: Any, default_storage: str | None) -> str:
    """The mpN value: the existing volume with the declared path (its other options kept), or a new volume of the
    declared size on its storage (SpecError naming mount_points when there is none to put it on)."""
    if current:
        props = parse_property_string(current, 'volume')
        props['mp'] = point.path
        return format_property_string(props, 'volume')
    storage = point.storage or default_storage
    if storage is None:
        raise SpecError('mount_points', f'{point.key} is new and names no storage; give its storage, or declare storage')
    return format_property_string({'volume': new_volume(storage, point.size), 'mp': point.path}, 'volume')


def render_nic(nic: NicSpec, current: Any) -> str:
    """The netN value: the current one with the declared properties written over it (its MAC, ``hwaddr``, and every
    undeclared property kept), or a new device ``name=ethN,bridge=vmbr0`` with them (PVE draws its MAC:
    src/PVE/LXC/Config.pm, parse_lxc_network)."""
    props = parse_property_string(current) if current else {'name': f'eth{nic.slot[3:]}', 'bridge': DEFAULT_BRIDGE}
    return format_property_string({**props, **dict(nic.properties)})


def nic_properties(value: Any) -> dict[str, str] | None:
    """A netN value's properties in comparable form (see ``_net_value``); None when there is no such device."""
    return _net_value(value) if value else None


def mount_path(value: Any) -> str | None:
    return parse_property_string(value, 'volume').get('mp')


def grow_needed(declared: int, current: int | None, where: str, option: str) -> bool:
    """Whether volume ``where`` must grow to ``declared`` bytes; SpecError naming ``option`` for a smaller size."""
    if current is None or declared > current:
        return True
    if declared < current:
        raise SpecError(
            option,
            f'{format_size(declared)} is below the current size {format_size(current)} of {where}; PVE cannot shrink a container volume: '
            f'declare at least {format_size(current)}',
        )
    return False


def held_until_restart(key: str, config: Mapping[str, Any]) -> bool:
    """Whether a running container takes a write of ``key`` only at its next start (see APPLIED_LIVE)."""
    if key in APPLIED_LIVE or _NET_KEY.match(key):
        return False
    return not (_MOUNT_KEY.match(key) and key not in config)
