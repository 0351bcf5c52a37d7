# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_sdn's pure core: the declared SDN zones, VNets and subnets checked, then compared with the cluster's.

``check_options`` turns the module's params into an ``SdnSpec`` or raises ``SdnOptionError`` naming the option at fault
(``vnets[1].tag``). ``plan`` compares the spec with the objects as the SDN listings show them with ``pending=1`` (the
config, which the next apply makes the running one) and returns a ``_actions.Plan``; the module reports ``changed`` and
the diff from it and, in a real run, executes its actions in order, so check mode and the real run agree.

Actions (kind, params), in this order:
- ``create`` / ``update`` of zones, then VNets, then subnets: kind (zone, vnet, subnet), id, path, params (the POST's or
  PUT's), delete (keys, update only);
- ``delete`` of subnets, then VNets, then zones (PVE refuses to delete a VNet with subnets or a zone with VNets);
- ``apply``: the one ``PUT /cluster/sdn``, last, only when something changed (or changes staged by someone else are
  applied on request); ``pending`` names those changes, ``sdn_pending`` tells whether SDN objects are among them
  (PVE's rollback would drop those, not a node's staged network file).

Facts of PVE this relies on (pve-network ``src/PVE/Network/SDN.pm`` and ``src/PVE/API2/Network/SDN/*.pm``):
- Every change is written to ``/etc/pve/sdn/*.cfg`` and takes effect only with ``PUT /cluster/sdn`` (reload), which
  commits the whole config, controllers and fabrics included (commit_config, compile_running_cfg), and reloads every
  node's network in the task ``reloadnetworkall``, which applies what is staged in its /etc/network/interfaces.new
  (pve-manager ``PVE/API2/Network.pm`` reload_network_config). Those are pending changes too (``Observed.elsewhere``,
  ``Observed.staged``).
- With ``pending=1`` the indexes list each object that differs from the running config with ``state`` (new, changed,
  deleted) and ``pending`` (the config's values that differ; ``deleted`` for a key the config lost) beside the running
  values (pending_config). The config is the running values overridden by ``pending``.
- A subnet's ID is ``ZONE-NETWORK-MASK`` (Subnets.pm create), listed per VNet with its ``cidr``.
- The zone plugins (``Zones/SimplePlugin.pm``, ``VlanPlugin.pm``, ``VxlanPlugin.pm`` vnet_update_hook): a simple
  zone's VNets have no tag, a VLAN zone's have a VLAN tag (1-4096), a VXLAN zone's a VNI; only a simple zone takes
  ``dhcp`` (``options``), so DHCP ranges are declared only on subnets of a simple zone. A VXLAN zone has exactly one
  of ``peers`` and ``fabric`` (``VxlanPlugin.pm`` on_update_hook; PVE 8: ``peers`` required).
- Vnets.pm update refuses to change the zone of a VNet with subnets; Vnets.pm delete refuses a VNet with subnets; the
  zone's on_delete_hook refuses a zone with VNets. Nothing in PVE refuses to delete a VNet a guest's NIC uses: the
  module does (``Observed.users``).

Ownership: a VNet this collection made has ``MARK`` in its ``alias`` (free text: ``NAME (puls-managed)``, or the mark
alone). Zones and subnets have no free-text field (the zone and subnet schemas: only typed keys), so a subnet is owned
when its VNet is, and a zone is never pruned: ``prune`` deletes undeclared subnets of owned VNets and undeclared owned
VNets; a zone goes only when declared ``state: absent``. A declared existing VNet without the mark is refused unless
``adopt`` (it then gets the mark).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._actions import Action, Plan

MARK = 'puls-managed'
ZONE_TYPES = ('simple', 'vlan', 'vxlan')
PENDING_CHOICES = ('refuse', 'apply')
CREATE, UPDATE, DELETE, APPLY = 'create', 'update', 'delete', 'apply'
# pve-network Zones/Plugin.pm pve-sdn-zone-id and VnetPlugin.pm pve-sdn-vnet-id: a letter, then letters or digits
# (either case), 2 to 8 characters.
_SDN_ID = re.compile(r'[a-zA-Z][a-zA-Z0-9]*[a-zA-Z0-9]$')
_SDN_ID_RULE = 'PVE takes a letter, then letters or digits (either case), 2 to 8 in all'
# Vnets.pm $VNET_PROPERTIES alias pattern (JSONSchema anchors it).
_ALIAS = re.compile(r'[\(\)-_.\w\d\s]{0,256}$')
# The zone plugins write the alias into the VNet's stanza (`alias ALIAS`), which ifupdown2 writes to the bridge's
# ifalias; the kernel keeps less than IFALIASZ (256) bytes.
_IFALIAS_BYTES = 255
# The declared option of each setting and its PVE key, per kind; the zone types a zone option is for.
ZONE_KEYS = {'bridge': 'bridge', 'peers': 'peers', 'vxlan_port': 'vxlan-port', 'mtu': 'mtu', 'nodes': 'nodes', 'dhcp': 'dhcp', 'ipam': 'ipam'}
ZONE_ONLY_FOR = {'bridge': ('vlan',), 'peers': ('vxlan',), 'vxlan_port': ('vxlan',), 'dhcp': ('simple',)}
VNET_KEYS = {'zone': 'zone', 'tag': 'tag', 'alias': 'alias', 'vlanaware': 'vlanaware', 'isolate_ports': 'isolate-ports'}
SUBNET_KEYS = {'gateway': 'gateway', 'snat': 'snat', 'dhcp_ranges': 'dhcp-range'}
_BOOLS = {'vlanaware', 'isolate-ports', 'snat'}


class SdnOptionError(ValueError):
    """A declared option pve_sdn refuses. ``option`` names it, and the message starts with it."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f'{option}: {problem}')
        self.option = option


class SdnRefused(ValueError):
    """A plan the module will not carry out (an unowned or used VNet, a rule of PVE's); nothing was changed."""


@dataclass(frozen=True)
class Item:
    """One declared object: ``settings`` maps PVE keys to normalized values, the declared ones only."""

    kind: str  # zone, vnet, subnet
    name: str  # the zone or VNet name, or the subnet's CIDR
    state: str
    settings: Mapping[str, Any]
    option: str  # zones[N], for messages
    vnet: str | None = None  # a subnet's VNet
    type: str | None = None  # a zone's type


@dataclass(frozen=True)
class SdnSpec:
    zones: tuple[Item, ...] = ()
    vnets: tuple[Item, ...] = ()
    subnets: tuple[Item, ...] = ()
    prune: bool = False
    adopt: bool = False
    pending_changes: str = 'refuse'


@dataclass(frozen=True)
class Observed:
    """The SDN config as the listings with pending=1 show it: {name: entry} for zones and VNets, {(vnet, cidr): entry}
    for subnets; ``users``: VNet -> the guests whose NICs use it (read only for the VNets a plan would delete).

    What else an apply commits or applies, not managed here: ``elsewhere``, the controllers and fabrics with changes
    not applied (``controller NAME (STATE)``, ``fabric NAME (STATE)``: SDN.pm compile_running_cfg commits them too);
    ``staged``, the nodes with network changes staged in /etc/network/interfaces.new (``node NAME network
    (staged)``: the apply reloads every node's network, pve-manager Network.pm reload_network_config, which renames
    that file first). ``nodes``: the online nodes whose network was read; ``fabrics``: whether PVE has fabrics (9)."""

    zones: Mapping[str, Mapping[str, Any]]
    vnets: Mapping[str, Mapping[str, Any]]
    subnets: Mapping[tuple[str, str], Mapping[str, Any]]
    users: Mapping[str, Sequence[str]] | None = None
    elsewhere: Sequence[str] = ()
    staged: Sequence[str] = ()
    nodes: Sequence[str] = ()
    fabrics: bool = False


# ---------------------------------------------------------------------------------------------- the declaration


def check_options(params: Mapping[str, Any]) -> SdnSpec:
    """The SdnSpec of the module's params; SdnOptionError for the first option at fault."""
    zones = tuple(_check_zone(f'zones[{index}]', item) for index, item in enumerate(params.get('zones') or ()))
    vnets = tuple(_check_vnet(f'vnets[{index}]', item) for index, item in enumerate(params.get('vnets') or ()))
    subnets = tuple(_check_subnet(f'subnets[{index}]', item) for index, item in enumerate(params.get('subnets') or ()))
    for kind, items in (('zones', zones), ('vnets', vnets), ('subnets', subnets)):
        seen: dict[Any, str] = {}
        for item in items:
            key = (item.vnet, item.name)
            if key in seen:
                raise SdnOptionError(f'{item.option}.name', f'{item.name} is declared twice in {kind} ({seen[key]} and {item.option})')
            seen[key] = item.option
    return SdnSpec(zones, vnets, subnets, bool(params.get('prune')), bool(params.get('adopt')), params.get('pending_changes') or 'refuse')


def _declared(option: str, item: Mapping[str, Any], keys: Mapping[str, str]) -> dict[str, Any]:
    return {pve: item[name] for name, pve in keys.items() if item.get(name) is not None}


def _check_zone(option: str, item: Mapping[str, Any]) -> Item:
    name, state, kind = item['name'], item.get('state') or 'present', item.get('type')
    if not _SDN_ID.match(name) or len(name) > 8:
        raise SdnOptionError(f'{option}.name', f'{name!r} is not a zone name: {_SDN_ID_RULE} (Zones/Plugin.pm pve-sdn-zone-id)')
    settings = _declared(option, item, ZONE_KEYS)
    if state == 'absent':
        return Item('zone', name, state, {}, option)
    if kind is None:
        raise SdnOptionError(f'{option}.type', f'the type of zone {name} is required (one of {", ".join(ZONE_TYPES)})')
    for key, types in ZONE_ONLY_FOR.items():
        if item.get(key) is not None and kind not in types:
            raise SdnOptionError(f'{option}.{key}', f'a {kind} zone takes no {key} (only a {" or ".join(types)} zone does)')
    if kind == 'vlan' and not item.get('bridge'):
        raise SdnOptionError(f'{option}.bridge', f'a vlan zone needs the bridge whose VLANs it uses (zone {name})')
    if 'peers' in settings:
        if not settings['peers']:
            raise SdnOptionError(f'{option}.peers', f'the peers of vxlan zone {name} are empty: list the address of each node of the zone')
        settings['peers'] = ','.join(_address(f'{option}.peers', peer) for peer in settings['peers'])
    if 'nodes' in settings:
        settings['nodes'] = ','.join(sorted(settings['nodes']))
    if settings.get('mtu') is not None and not 576 <= int(settings['mtu']) <= 65520:
        raise SdnOptionError(f'{option}.mtu', f'{settings["mtu"]} is outside 576 to 65520')
    return Item('zone', name, state, settings, option, type=kind)


def _check_vnet(option: str, item: Mapping[str, Any]) -> Item:
    name, state = item['name'], item.get('state') or 'present'
    if not _SDN_ID.match(name) or len(name) > 8:
        raise SdnOptionError(f'{option}.name', f'{name!r} is not a VNet name: {_SDN_ID_RULE} (VnetPlugin.pm pve-sdn-vnet-id)')
    if state == 'absent':
        return Item('vnet', name, state, {}, option)
    settings = _declared(option, item, VNET_KEYS)
    if not settings.get('zone'):
        raise SdnOptionError(f'{option}.zone', f'the zone of VNet {name} is required')
    if settings.get('tag') is not None and not 1 <= int(settings['tag']) <= 16777215:
        raise SdnOptionError(f'{option}.tag', f'{settings["tag"]} is outside 1 to 16777215')
    alias = settings.get('alias')
    if alias is not None and re.search(r'[\n\r]', alias):
        raise SdnOptionError(f'{option}.alias', f"{alias!r}: an alias is one line (PVE refuses a line feed, pve-common SectionConfig.pm check_value)")
    if alias is not None and (MARK in alias or not _ALIAS.match(alias)):
        raise SdnOptionError(f'{option}.alias', f'{alias!r}: an alias is letters, digits, spaces and ()-_. and the like, without {MARK!r}')
    if alias is not None and len(marked_alias(alias).encode()) > _IFALIAS_BYTES:
        raise SdnOptionError(
            f'{option}.alias',
            f'the alias is {len(alias.encode())} bytes; with the mark " ({MARK})" it must fit the {_IFALIAS_BYTES} bytes of a Linux interface alias, '
            "which ifupdown2 writes to the VNet's /sys/class/net/VNET/ifalias (the kernel refuses a longer one); shorten it",
        )
    for key in ('vlanaware', 'isolate-ports'):
        if key in settings:
            settings[key] = bool(settings[key])
    return Item('vnet', name, state, settings, option)


def _check_subnet(option: str, item: Mapping[str, Any]) -> Item:
    vnet, cidr, state = item['vnet'], item['cidr'], item.get('state') or 'present'
    try:
        net = ipaddress.ip_network(cidr, strict=True)
    except ValueError as exc:
        raise SdnOptionError(f'{option}.cidr', f'{cidr!r} is not a network in CIDR notation ({exc})') from None
    if state == 'absent':
        return Item('subnet', net.with_prefixlen, state, {}, option, vnet=vnet)
    settings = _declared(option, item, SUBNET_KEYS)
    if settings.get('gateway') is not None:
        gateway = _address(f'{option}.gateway', settings['gateway'])
        if ipaddress.ip_address(gateway) not in net and not (net.version == 4 and net.prefixlen == 32):
            raise SdnOptionError(f'{option}.gateway', f'{gateway} is not in {net.with_prefixlen}')
        settings['gateway'] = gateway
    if 'snat' in settings:
        settings['snat'] = bool(settings['snat'])
    if 'dhcp-range' in settings:
        ranges: list[tuple[int, int]] = []
        texts = []
        for index, entry in enumerate(settings['dhcp-range']):
            where = f'{option}.dhcp_ranges[{index}]'
            start, end = (ipaddress.ip_address(_address(f'{where}.{key}', entry.get(key))) for key in ('start', 'end'))
            if start not in net or end not in net or int(start) > int(end):
                raise SdnOptionError(where, f'{start} to {end} is not a range inside {net.with_prefixlen} (start first)')
            if any(int(start) <= last and first <= int(end) for first, last in ranges):
                raise SdnOptionError(where, 'DHCP ranges must not overlap')
            ranges.append((int(start), int(end)))
            texts.append(f'start-address={start},end-address={end}')
        settings['dhcp-range'] = sorted(texts)
    return Item('subnet', net.with_prefixlen, state, settings, option, vnet=vnet)


def _address(option: str, value: Any) -> str:
    try:
        return str(ipaddress.ip_address(str(value).strip()))
    except ValueError:
        raise SdnOptionError(option, f'{value!r} is not an IP address') from None


# ---------------------------------------------------------------------------------------------- what PVE shows


def config_of(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The config of an entry listed with pending=1 (SDN.pm pending_config): its values overridden by ``pending``,
    None when the config no longer has it."""
    if entry.get('state') == 'deleted':
        return None
    config = {key: value for key, value in entry.items() if key not in ('state', 'pending', 'digest')}
    for key, value in (entry.get('pending') or {}).items():
        if value == 'deleted':
            config.pop(key, None)
        else:
            config[key] = value
    return config


def pending_of(kind: str, name: str, entry: Mapping[str, Any]) -> str | None:
    """``KIND NAME (STATE)`` when the entry has changes not applied yet."""
    return f'{kind} {name} ({entry["state"]})' if entry.get('state') else None


def is_marked(config: Mapping[str, Any] | None) -> bool:
    alias = str((config or {}).get('alias') or '')
    return alias == MARK or alias.endswith(f' ({MARK})')


def marked_alias(alias: str | None) -> str:
    return f'{alias} ({MARK})' if alias else MARK


def declared_alias(config: Mapping[str, Any]) -> str | None:
    """The alias without the mark."""
    alias = config.get('alias')
    if alias is None:
        return None
    alias = str(alias)
    if alias == MARK:
        return None
    return alias[: -len(f' ({MARK})')] if alias.endswith(f' ({MARK})') else alias


def observed_value(config: Mapping[str, Any], key: str) -> Any:
    """A PVE value in the declared form: booleans as bool, numbers as int, lists normalized."""
    value = config.get(key)
    if value is None:
        return None
    if key in _BOOLS:
        return bool(int(value))
    if key in ('mtu', 'tag', 'vxlan-port'):
        return int(value)
    if key == 'alias':
        return declared_alias(config)
    if key == 'nodes':
        return ','.join(sorted(part for part in re.split(r'[,;\s]+', str(value)) if part))
    if key == 'peers':
        return ','.join(part for part in re.split(r'[,;\s]+', str(value)) if part)
    if key == 'dhcp-range':
        return sorted(_range_text(entry) for entry in value or ())
    return str(value)


def _range_text(entry: Any) -> str:
    if isinstance(entry, Mapping):
        return f'start-address={entry.get("start-address")},end-address={entry.get("end-address")}'
    parts = dict(part.split('=', 1) for part in str(entry).split(',') if '=' in part)
    return f'start-address={parts.get("start-address")},end-address={parts.get("end-address")}'


def view(config: Mapping[str, Any] | None, keys: Sequence[str], extra: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    if config is None:
        return None
    shown = {key: observed_value(config, key) for key in keys}
    shown.update(extra or {})
    return shown


def _declared_view(item: Item, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    shown = dict(item.settings)
    shown.update(extra or {})
    return shown


# ---------------------------------------------------------------------------------------------- the plan


def plan(spec: SdnSpec, observed: Observed) -> Plan:
    """The actions converging the SDN objects to spec; SdnRefused for what the module will not do.

    ``observed.users`` must cover every VNet of ``vnets_to_delete(spec, observed)``."""
    zones = {name: config_of(entry) for name, entry in observed.zones.items()}
    vnets = {name: config_of(entry) for name, entry in observed.vnets.items()}
    subnets = {key: config_of(entry) for key, entry in observed.subnets.items()}
    pending = [text for text in (pending_of('zone', name, entry) for name, entry in sorted(observed.zones.items())) if text]
    pending += [text for text in (pending_of('vnet', name, entry) for name, entry in sorted(observed.vnets.items())) if text]
    pending += [text for text in (pending_of('subnet', f'{key[0]} {key[1]}', entry) for key, entry in sorted(observed.subnets.items())) if text]
    pending += list(observed.elsewhere)
    # Only SDN objects are undone by PVE's rollback (API2/Network/SDN.pm rollback); the nodes' staged files are not.
    sdn_pending = bool(pending)
    pending += list(observed.staged)
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    creates: list[Action] = []
    updates: list[Action] = []
    deletes: dict[str, list[Action]] = {'subnet': [], 'vnet': [], 'zone': []}
    refusals: list[str] = []
    declared_zones = {item.name: item for item in spec.zones}
    # The type of each zone after the run (declared, else as PVE has it).
    zone_type = {name: str(config.get('type')) for name, config in zones.items() if config}
    zone_type.update({item.name: str(item.type) for item in spec.zones if item.state == 'present'})

    for item in spec.zones:
        current = zones.get(item.name)
        label = f'zone {item.name}'
        if item.state == 'absent':
            if current is not None:
                before[label], after[label] = view(current, ('type',)), None
                deletes['zone'].append(Action(DELETE, {'kind': 'zone', 'id': item.name, 'path': f'/cluster/sdn/zones/{item.name}'}))
            continue
        if current is not None and current.get('type') != item.type:
            refusals.append(
                f'{item.option}.type: zone {item.name} is a {current.get("type")} zone, not a {item.type} one; PVE cannot change the type of a zone'
            )
            continue
        peers_refusal = _vxlan_peers_refusal(item, current)
        if peers_refusal:
            refusals.append(peers_refusal)
            continue
        keys = list(item.settings)
        after[label] = _declared_view(item, {'type': item.type})
        if current is None:
            before[label] = None
            creates.append(
                Action(
                    CREATE,
                    {'kind': 'zone', 'id': item.name, 'path': '/cluster/sdn/zones', 'params': dict(_send(item.settings), zone=item.name, type=item.type)},
                )
            )
            continue
        before[label] = view(current, keys, {'type': current.get('type')})
        changed = {key: value for key, value in item.settings.items() if observed_value(current, key) != value}
        if changed:
            updates.append(Action(UPDATE, {'kind': 'zone', 'id': item.name, 'path': f'/cluster/sdn/zones/{item.name}', 'params': _send(changed), 'delete': []}))

    declared_vnets = {item.name for item in spec.vnets}
    gone_vnets: set[str] = set()
    for item in spec.vnets:
        current = vnets.get(item.name)
        label = f'vnet {item.name}'
        marked = is_marked(current)
        if current is not None and not marked and not spec.adopt:
            refusals.append(
                f"{item.option}: VNet {item.name} exists but was not made by this collection (no '{MARK}' in its alias); set adopt: true to manage it"
            )
            continue
        if item.state == 'absent':
            if current is not None:
                gone_vnets.add(item.name)
            continue
        zone = str(item.settings['zone'])
        kind = zone_type.get(zone)
        if kind is None or (zone in declared_zones and declared_zones[zone].state == 'absent'):
            refusals.append(f'{item.option}.zone: zone {zone} of VNet {item.name} neither exists nor is declared')
            continue
        tag = item.settings.get('tag')
        if kind == 'simple' and tag is not None:
            refusals.append(f'{item.option}.tag: VNet {item.name} is in the simple zone {zone}, which takes no tag (Zones/SimplePlugin.pm)')
            continue
        if kind in ('vlan', 'vxlan') and tag is None and (current is None or current.get('tag') is None):
            refusals.append(
                f'{item.option}.tag: VNet {item.name} is in the {kind} zone {zone}, which needs a {"VLAN tag" if kind == "vlan" else "VNI"} per VNet'
            )
            continue
        if kind == 'vlan' and tag is not None and int(tag) > 4096:
            refusals.append(f'{item.option}.tag: {tag} is above 4096, the largest VLAN tag of a vlan zone (Zones/VlanPlugin.pm)')
            continue
        if current is not None and current.get('zone') != zone and any(key[0] == item.name for key, config in subnets.items() if config):
            refusals.append(f"{item.option}.zone: VNet {item.name} has subnets, and PVE does not change the zone of a VNet with subnets (Vnets.pm update)")
            continue
        settings = dict(item.settings)
        # An alias not declared is kept as it is (an adopted VNet's), only marked.
        settings['alias'] = marked_alias(item.settings['alias'] if 'alias' in item.settings else declared_alias(current or {}))
        keys = list(item.settings)
        after[label] = dict(_declared_view(item), managed=True)
        if current is None:
            before[label] = None
            creates.append(Action(CREATE, {'kind': 'vnet', 'id': item.name, 'path': '/cluster/sdn/vnets', 'params': dict(_send(settings), vnet=item.name)}))
            continue
        before[label] = view(current, keys, {'managed': marked})
        changed = {key: value for key, value in item.settings.items() if key != 'alias' and observed_value(current, key) != value}
        if current.get('alias') != settings['alias']:
            changed['alias'] = settings['alias']
        if changed:
            updates.append(Action(UPDATE, {'kind': 'vnet', 'id': item.name, 'path': f'/cluster/sdn/vnets/{item.name}', 'params': _send(changed), 'delete': []}))
    if spec.prune:
        gone_vnets.update(name for name, config in vnets.items() if config and name not in declared_vnets and is_marked(config))
    for name in sorted(gone_vnets):
        before[f'vnet {name}'], after[f'vnet {name}'] = view(vnets[name], ('zone',), {'managed': is_marked(vnets[name])}), None
        deletes['vnet'].append(Action(DELETE, {'kind': 'vnet', 'id': name, 'path': f'/cluster/sdn/vnets/{name}'}))
        used = (observed.users or {}).get(name)
        if used:
            refusals.append(f'VNet {name} is used by {", ".join(used)}; move or remove their NICs first, then delete it')

    vnet_zone = {name: str(config.get('zone')) for name, config in vnets.items() if config}
    vnet_zone.update({item.name: str(item.settings['zone']) for item in spec.vnets if item.state == 'present'})
    declared_subnets = {(item.vnet, item.name) for item in spec.subnets}
    gone_subnets = set()
    for item in spec.subnets:
        key = (str(item.vnet), item.name)
        current = subnets.get(key)
        label = f'subnet {item.vnet} {item.name}'
        if item.state == 'absent':
            if current is not None:
                gone_subnets.add(key)
            continue
        if item.vnet in gone_vnets or item.vnet not in vnet_zone:
            refusals.append(f'{item.option}.vnet: VNet {item.vnet} of subnet {item.name} neither exists nor is declared')
            continue
        zone = vnet_zone[str(item.vnet)]
        if 'dhcp-range' in item.settings and zone_type.get(zone) != 'simple':
            refusals.append(
                f'{item.option}.dhcp_ranges: VNet {item.vnet} is in the {zone_type.get(zone)} zone {zone}; PVE serves DHCP only in simple zones '
                '(Zones/SimplePlugin.pm options: dhcp)'
            )
            continue
        after[label] = _declared_view(item)
        subnet_id = f'{zone}-{item.name.replace("/", "-")}'
        if current is None:
            before[label] = None
            creates.append(
                Action(
                    CREATE,
                    {
                        'kind': 'subnet',
                        'id': subnet_id,
                        'path': f'/cluster/sdn/vnets/{item.vnet}/subnets',
                        'params': dict(_send(item.settings), subnet=item.name, type='subnet'),
                    },
                )
            )
            continue
        before[label] = view(current, list(item.settings))
        changed = {name: value for name, value in item.settings.items() if observed_value(current, name) != value}
        if changed:
            updates.append(
                Action(
                    UPDATE,
                    {
                        'kind': 'subnet',
                        'id': subnet_id,
                        'path': f'/cluster/sdn/vnets/{item.vnet}/subnets/{current.get("subnet") or subnet_id}',
                        'params': _send(changed),
                        'delete': [],
                    },
                )
            )
    # A VNet that goes takes its subnets with it; prune takes the undeclared subnets of owned VNets.
    for key, config in subnets.items():
        if config and (key[0] in gone_vnets or (spec.prune and key not in declared_subnets and is_marked(vnets.get(key[0])))):
            gone_subnets.add(key)
    for key in sorted(gone_subnets):
        config = subnets[key] or {}
        before[f'subnet {key[0]} {key[1]}'], after[f'subnet {key[0]} {key[1]}'] = view(config, ()), None
        subnet_id = str(config.get('subnet') or config.get('id'))
        deletes['subnet'].append(Action(DELETE, {'kind': 'subnet', 'id': subnet_id, 'path': f'/cluster/sdn/vnets/{key[0]}/subnets/{subnet_id}'}))
    for action in deletes['zone']:
        left = sorted(name for name, zone in vnet_zone.items() if zone == action.params['id'] and name not in gone_vnets)
        if left:
            refusals.append(
                f'zone {action.params["id"]} still has the VNets {", ".join(left)}; PVE deletes only a zone without VNets (Zones/Plugin.pm on_delete_hook)'
            )
    if refusals:
        raise SdnRefused('; '.join(refusals) + '. Nothing was changed.')
    order = {'zone': 0, 'vnet': 1, 'subnet': 2}
    actions = sorted(creates + updates, key=lambda action: (order[action.params['kind']], action.kind != CREATE))
    actions += deletes['subnet'] + deletes['vnet'] + deletes['zone']
    applying = bool(actions) or (bool(pending) and spec.pending_changes == 'apply')
    if pending and applying and spec.pending_changes == 'refuse':
        raise SdnRefused(
            'the SDN config has changes not applied yet, made by someone else: '
            + ', '.join(pending)
            + '; applying this run would apply them too'
            + (" (the SDN apply reloads every node's network, which applies the changes staged there)" if observed.staged else '')
            + '. Apply or revert them first (Datacenter > SDN: Apply, or PUT /cluster/sdn'
            + ("; a node's staged network changes: its Network panel, Apply Configuration or Revert" if observed.staged else '')
            + '), or set pending_changes: apply to apply them with this run. Nothing was changed.'
        )
    if applying:
        actions.append(Action(APPLY, {'pending': pending, 'sdn_pending': sdn_pending}))
        if pending:
            before['(pending)'] = pending
            after['(pending)'] = None
    return Plan(tuple(actions), before, after)


def _vxlan_peers_refusal(item: Item, current: Mapping[str, Any] | None) -> str | None:
    """A vxlan zone has its peers, or (PVE 9) a fabric, never both (Zones/VxlanPlugin.pm on_update_hook: `must have
    exactly one of peers / fabric defined`; PVE 8's options: peers required). The module manages no fabric."""
    if item.type != 'vxlan':
        return None
    fabric = (current or {}).get('fabric')
    if 'peers' in item.settings and fabric:
        return (
            f'{item.option}.peers: zone {item.name} takes its peers from the fabric {fabric}, and PVE takes only one of peers and fabric '
            '(Zones/VxlanPlugin.pm on_update_hook); leave peers undeclared, or remove the fabric from the zone first'
        )
    if 'peers' not in item.settings and not (current or {}).get('peers') and not fabric:
        return (
            f'{item.option}.peers: the vxlan zone {item.name} needs its peers, the address of each of its nodes '
            '(Zones/VxlanPlugin.pm: peers, or on PVE 9 a fabric, is required)'
        )
    return None


def vnets_to_delete(spec: SdnSpec, observed: Observed) -> list[str]:
    """The VNets a plan of spec would delete (declared absent, or pruned), whose guests must be known first."""
    vnets = {name: config_of(entry) for name, entry in observed.vnets.items()}
    names = {item.name for item in spec.vnets if item.state == 'absent' and vnets.get(item.name) is not None}
    if spec.prune:
        declared = {item.name for item in spec.vnets}
        names.update(name for name, config in vnets.items() if config and name not in declared and is_marked(config))
    return sorted(names)


def _send(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings as the API takes them: booleans as 1 or 0."""
    return {key: (int(value) if isinstance(value, bool) else value) for key, value in settings.items()}
