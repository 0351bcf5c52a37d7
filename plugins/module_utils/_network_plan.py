# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_node_network's pure core: the declared interfaces of one node checked, then compared with what the node has.

``check_options`` turns the module's params into a ``NetworkSpec`` or raises ``NetworkOptionError`` naming the option
at fault (``interfaces[1].cidr``). ``plan`` compares the spec with the node's interfaces as ``GET /nodes/{node}/network``
lists them (the staged config when changes are pending) and returns a ``_actions.Plan``; the module reports ``changed``
and the diff from it and, in a real run, executes its actions in order, so check mode and the real run agree.

Actions (kind, params):
- ``create``: iface, params (the POST's: ``type`` and the declared settings, ``comments`` with the mark line);
- ``update``: iface, params (the PUT's: ``type``, what changed, and ``cidr`` and ``cidr6`` again when the interface has
  them, since update_network writes a stanza only for an address it is sent), delete (keys); ``release``: true for the
  first of two updates of an interface whose ports change, which keeps only the ports it keeps (so they are free for
  others);
- ``delete``: iface;
- ``apply``: the one reload of the node's network (``PUT /nodes/{node}/network``), last.

Facts of PVE this relies on (pve-manager ``PVE/API2/Network.pm``, pve-common ``src/PVE/Network/Interfaces.pm``):
- Every change is written to ``/etc/network/interfaces.new`` and takes effect only with the reload; the index reads
  that staged file when it exists and lists the difference as ``changes``.
- The type is told by the file, not kept: a bond is a ``bondN``, a VLAN is ``DEVICE.ID`` or has a ``vlan-raw-device``,
  a bridge has ``bridge-ports``. Comment lines of a stanza read back as ``comments``, each line ending in a newline.
- ``update_network`` needs ``type``, replaces only what it is sent, and keeps a bridge VLAN-aware for any defined
  ``bridge_vlan_aware``: only ``delete`` clears it. It rebuilds ``families`` (one stanza each) from the addresses it is
  sent, ``inet`` for ``cidr`` and ``inet6`` for ``cidr6`` (``inet`` alone when sent neither), and sets ``method`` and
  ``method6`` to static with an address and manual without; none of the three is a parameter. So an update keeps an
  interface's addresses only when sent them again, and never keeps DHCP or SLAAC, nor the options of a stanza it drops:
  such an update is refused (``_unkept``) rather than sent, and so is one that must send again an address PVE refuses
  to be sent (``_refused_address``: check_ipv6_settings, the CIDR formats).
- Each create and update is checked against the staged config: a port on one interface only, one default gateway
  (``_taken``); and every write against the whole file: a bond's bond-primary among its slaves (``_bond_primary``).
  The plan refuses those up front; other checks of the file (MTUs, slaves and parents that exist) are left to PVE,
  whose refusal midway the module answers by reverting what it staged.

Ownership: an interface this collection made has the line ``puls-managed`` in its comments (``MARK``). Undeclared,
only a marked interface is pruned. Declared, an unmarked existing interface is refused unless ``adopt`` (it then gets
the mark). Management: the interface carrying the node's address (``/cluster/status``, IPv4 or IPv6) and the ports
beneath it (bridge ports, bond slaves, a VLAN's device) are never changed or deleted without
``allow_management_change``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._actions import Action, Plan

MARK = 'puls-managed'
TYPES = ('bridge', 'bond', 'vlan')
BOND_MODES = ('balance-rr', 'active-backup', 'balance-xor', 'broadcast', '802.3ad', 'balance-tlb', 'balance-alb')
HASH_POLICIES = ('layer2', 'layer2+3', 'layer3+4')
PENDING_CHOICES = ('refuse', 'apply')
CREATE, UPDATE, DELETE, APPLY = 'create', 'update', 'delete', 'apply'
# Network.pm: the pve-iface format; the MTU range of $confdesc.
_IFACE = re.compile(r'[A-Za-z][A-Za-z0-9_]{1,20}(?:[:.][0-9]+)?$')
MTU_RANGE = (1280, 65520)
# pve-manager PVE/API2/Network.pm check_ipv6_settings takes an IPv6 address whose Net::IP type (ip_iptypev6, by the
# longest prefix of its table) is GLOBAL-UNICAST (2000::/3, but for the special ranges within it), UNIQUE-LOCAL-UNICAST
# or LINK-LOCAL-UNICAST; an address equal to its netmask it calls ANYCAST and refuses too.
_IPV6_HOST = tuple(ipaddress.IPv6Network(network) for network in ('2000::/3', 'fc00::/7', 'fe80::/10'))
_IPV6_SPECIAL = {ipaddress.IPv6Network(network): kind for network, kind in (
    ('2001::/32', 'TEREDO'), ('2001:db8::/32', 'DOCUMENTATION'), ('2001:10::/28', 'ORCHID'), ('2002::/16', '6TO4'),
)}  # fmt: skip
# pve-common src/PVE/JSONSchema.pm pve_verify_cidrv4 / pve_verify_cidrv6: the prefix lengths of the CIDRv4 and CIDRv6
# formats of cidr and cidr6.
PREFIX_RANGE = {4: (8, 32), 6: (8, 128)}
# The declared option of each setting, and its PVE key.
KEYS = {
    'ports': None,  # bridge_ports of a bridge, slaves of a bond
    'vlan_aware': 'bridge_vlan_aware',
    'vlan_ids': 'bridge_vids',
    'cidr': 'cidr',
    'gateway': 'gateway',
    'mtu': 'mtu',
    'autostart': 'autostart',
    'bond_mode': 'bond_mode',
    'bond_xmit_hash_policy': 'bond_xmit_hash_policy',
    'bond_primary': 'bond-primary',
    'vlan_raw_device': 'vlan-raw-device',
    'vlan_id': 'vlan-id',
}
ONLY_FOR = {
    'vlan_aware': 'bridge',
    'vlan_ids': 'bridge',
    'bond_mode': 'bond',
    'bond_xmit_hash_policy': 'bond',
    'bond_primary': 'bond',
    'vlan_raw_device': 'vlan',
    'vlan_id': 'vlan',
}
# pve-common src/PVE/Network/Interfaces.pm __write_etc_network_interfaces ("check bond"), at every write.
PRIMARY_RULE = 'PVE refuses a bond with slaves whose bond-primary is not one of them, in any mode'
# Creation order by type (the ports first), deletion in reverse: a bridge's bond exists before it, a VLAN's bridge too.
_ORDER = {'bond': 0, 'bridge': 1, 'vlan': 2}


class NetworkOptionError(ValueError):
    """A declared option pve_node_network refuses. ``option`` names it, and the message starts with it."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f'{option}: {problem}')
        self.option = option


class NetworkRefused(ValueError):
    """A plan the module will not carry out (an unowned or management interface, a type clash); nothing was changed."""


@dataclass(frozen=True)
class Iface:
    """One declared interface: ``settings`` maps option names to PVE-normalized values, the declared ones only."""

    name: str
    state: str
    type: str | None
    settings: Mapping[str, Any]
    comments: tuple[str, ...] | None
    option: str  # interfaces[N], for messages


@dataclass(frozen=True)
class NetworkSpec:
    node: str
    interfaces: tuple[Iface, ...]
    prune: bool = False
    adopt: bool = False
    allow_management_change: bool = False
    pending_changes: str = 'refuse'
    apply: bool = True


@dataclass(frozen=True)
class Observed:
    """The node's interfaces ({name: settings of the index}), the staged ``changes`` (or None), its management address."""

    interfaces: Mapping[str, Mapping[str, Any]]
    changes: str | None = None
    address: str | None = None


# ---------------------------------------------------------------------------------------------- the declaration


def check_options(params: Mapping[str, Any]) -> NetworkSpec:
    """The NetworkSpec of the module's params; NetworkOptionError for the first option at fault."""
    declared = []
    seen: dict[str, str] = {}
    for index, item in enumerate(params.get('interfaces') or ()):
        iface = _check_iface(f'interfaces[{index}]', item)
        if iface.name in seen:
            raise NetworkOptionError(f'{iface.option}.name', f'{iface.name} is declared twice (also {seen[iface.name]})')
        seen[iface.name] = iface.option
        declared.append(iface)
    pending = params.get('pending_changes') or 'refuse'
    if pending not in PENDING_CHOICES:
        raise NetworkOptionError('pending_changes', f'{pending!r} is none of {", ".join(PENDING_CHOICES)}')
    return NetworkSpec(
        node=params['node'],
        interfaces=tuple(declared),
        prune=bool(params.get('prune')),
        adopt=bool(params.get('adopt')),
        allow_management_change=bool(params.get('allow_management_change')),
        pending_changes=pending,
        apply=params.get('apply', True) is not False,
    )


def _check_iface(option: str, item: Mapping[str, Any]) -> Iface:
    name = item.get('name')
    if not name or not _IFACE.match(str(name)):
        raise NetworkOptionError(
            f'{option}.name', f'{name!r} is not an interface name PVE takes (a letter, then 1 to 20 letters, digits or _, and an optional .N or :N)'
        )
    name = str(name)
    state = item.get('state') or 'present'
    kind = item.get('type')
    if state == 'absent':
        return Iface(name, state, kind, {}, None, option)
    if kind not in TYPES:
        raise NetworkOptionError(
            f'{option}.type', f'{name}: {kind!r} is not a type this module manages ({", ".join(TYPES)}); type is required for state present'
        )
    for key, wanted in ONLY_FOR.items():
        if item.get(key) is not None and kind != wanted:
            raise NetworkOptionError(f'{option}.{key}', f'{name}: {key} is for a {wanted}, not a {kind}')
    if item.get('ports') is not None and kind == 'vlan':
        raise NetworkOptionError(f'{option}.ports', f'{name}: a VLAN has no ports; its device is vlan_raw_device or the part of its name before the dot')
    _check_name_for_type(option, name, kind, item)
    settings: dict[str, Any] = {}
    for key in KEYS:
        value = item.get(key)
        if value is not None:
            settings[key] = _normalized(f'{option}.{key}', name, key, value)
    if 'bond_primary' in settings and settings.get('bond_mode') != 'active-backup':
        raise NetworkOptionError(f'{option}.bond_primary', f'{name}: bond_primary needs bond_mode active-backup (PVE writes it for that mode only)')
    primary, ports = settings.get('bond_primary'), str(settings.get('ports') or '').split()
    if primary and ports and primary not in ports:
        raise NetworkOptionError(f'{option}.bond_primary', f'{name}: {primary} is not one of its ports ({" ".join(ports)}); {PRIMARY_RULE}')
    if 'vlan_ids' in settings and not settings.get('vlan_aware'):
        raise NetworkOptionError(f'{option}.vlan_ids', f'{name}: vlan_ids need vlan_aware: true')
    comments = item.get('comments')
    lines = None
    if comments is not None:
        lines = tuple(line.rstrip() for line in str(comments).split('\n') if line.strip() and line.strip() != MARK)
    return Iface(name, state, kind, settings, lines, option)


def _check_name_for_type(option: str, name: str, kind: str, item: Mapping[str, Any]) -> None:
    """PVE tells the type by the name (Interfaces.pm __read_etc_network_interfaces): declare what it will read back."""
    if kind == 'bond' and not re.match(r'bond\d+$', name):
        raise NetworkOptionError(f'{option}.name', f'{name}: a Linux bond must be named bondN (bond0, bond1, ...), as PVE tells a bond by its name')
    if kind == 'vlan':
        dotted = re.match(r'(\S+)\.(\d+)$', name)
        if dotted:
            if item.get('vlan_raw_device') is not None or item.get('vlan_id') is not None:
                raise NetworkOptionError(
                    f'{option}.vlan_raw_device', f'{name}: the device and VLAN ID come from the name DEVICE.ID; leave vlan_raw_device and vlan_id out'
                )
            if not 1 <= int(dotted.group(2)) <= 4094:
                raise NetworkOptionError(f'{option}.name', f'{name}: the VLAN ID after the dot must be 1 to 4094')
        elif not item.get('vlan_raw_device'):
            raise NetworkOptionError(f'{option}.vlan_raw_device', f'{name}: a VLAN not named DEVICE.ID needs vlan_raw_device')
        elif not re.match(r'vlan\d+$', name) and item.get('vlan_id') is None:
            raise NetworkOptionError(f'{option}.vlan_id', f'{name}: a VLAN named neither DEVICE.ID nor vlanN needs vlan_id')
    if kind == 'bridge' and re.match(r'bond\d+$|\S+\.\d+$', name):
        raise NetworkOptionError(f'{option}.name', f'{name}: PVE reads a bondN or DEVICE.ID name as a bond or VLAN; name the bridge otherwise (vmbr1)')


def _normalized(option: str, name: str, key: str, value: Any) -> Any:
    """A declared value in the form PVE reads back."""
    if key == 'ports':
        ports = value if isinstance(value, (list, tuple)) else str(value).replace(',', ' ').split()
        for port in ports:
            if not _IFACE.match(str(port)):
                raise NetworkOptionError(option, f'{name}: {port!r} is not an interface name')
        return ' '.join(sorted({str(port) for port in ports}))
    if key in ('vlan_aware', 'autostart'):
        return bool(value)
    if key == 'vlan_ids':
        items = str(value).replace(',', ' ').replace(';', ' ').split()
        for entry in items:
            _check_vlan_range(option, name, entry)
        if not items:
            raise NetworkOptionError(option, f'{name}: the VLAN list is empty')
        return ' '.join(items)
    if key == 'cidr':
        try:
            address = ipaddress.IPv4Interface(str(value))
        except ValueError:
            raise NetworkOptionError(option, f'{name}: {value!r} is not an IPv4 address with its prefix length (127.0.2.10/24)') from None
        if '/' not in str(value):
            raise NetworkOptionError(option, f'{name}: {value!r} lacks the prefix length (127.0.2.10/24)')
        problem = address_problem(str(address), 4)
        if problem:
            raise NetworkOptionError(option, f'{name}: {problem}')
        return str(address)
    if key == 'gateway':
        try:
            return str(ipaddress.IPv4Address(str(value)))
        except ValueError:
            raise NetworkOptionError(option, f'{name}: {value!r} is not an IPv4 address') from None
    if key == 'mtu':
        if not str(value).isdigit() or not MTU_RANGE[0] <= int(value) <= MTU_RANGE[1]:
            raise NetworkOptionError(option, f'{name}: {value!r} is not an MTU PVE takes ({MTU_RANGE[0]} to {MTU_RANGE[1]})')
        return int(value)
    if key == 'vlan_id':
        if not str(value).isdigit() or not 1 <= int(value) <= 4094:
            raise NetworkOptionError(option, f'{name}: {value!r} is not a VLAN ID (1 to 4094)')
        return int(value)
    if key == 'bond_mode' and value not in BOND_MODES:
        raise NetworkOptionError(option, f'{name}: {value!r} is none of {", ".join(BOND_MODES)}')
    if key == 'bond_xmit_hash_policy' and value not in HASH_POLICIES:
        raise NetworkOptionError(option, f'{name}: {value!r} is none of {", ".join(HASH_POLICIES)}')
    if key in ('bond_primary', 'vlan_raw_device') and not _IFACE.match(str(value)):
        raise NetworkOptionError(option, f'{name}: {value!r} is not an interface name')
    return str(value)


def _check_vlan_range(option: str, name: str, entry: str) -> None:
    """pve-common src/PVE/JSONSchema.pm pve_verify_vlan_id_or_range: a tag of 2 to 4094 (1 is the bridge's untagged
    default VLAN), or a range of them from the lower to the higher."""
    bounds = entry.split('-')
    if len(bounds) > 2 or not all(bound.isdigit() for bound in bounds):
        raise NetworkOptionError(option, f'{name}: {entry!r} is not a VLAN ID (2 to 4094) or a range of them (100-200)')
    for bound in bounds:
        if not 2 <= int(bound) <= 4094:
            raise NetworkOptionError(option, f'{name}: VLAN {int(bound)} in {entry!r} is not one PVE takes on a bridge: a VLAN ID is 2 to 4094')
    if len(bounds) == 2 and int(bounds[0]) >= int(bounds[1]):
        raise NetworkOptionError(option, f'{name}: the range {entry!r} must go from the lower to the higher VLAN ID (100-200); write a single VLAN as 100')


def address_problem(cidr: str, version: int) -> str | None:
    """Why PVE refuses ``cidr`` as the cidr (``version`` 4) or cidr6 (6) of a create or update, or None: its format
    (CIDRv4, CIDRv6) with its prefix length (PREFIX_RANGE), and for IPv6 check_ipv6_settings (_IPV6_HOST)."""
    try:
        address = ipaddress.ip_interface(cidr)
    except ValueError:
        address = None
    if address is None or address.version != version or '/' not in cidr:
        return f'{cidr} is not an IPv{version} address with its prefix length'
    low, high = PREFIX_RANGE[address.version]
    if not low <= address.network.prefixlen <= high:
        return f'the prefix length of {cidr} is not {low} to {high}, which PVE takes for a CIDRv{address.version} address'
    if address.version == 4:
        return None
    ip = address.ip
    special = next((kind for network, kind in _IPV6_SPECIAL.items() if ip in network), None)
    if int(ip) == int(address.netmask):
        special = 'ANYCAST'
    if special or not any(ip in network for network in _IPV6_HOST):
        kind = f"of the type '{special}'" if special else 'outside the global (2000::/3), unique-local (fc00::/7) and link-local (fe80::/10) unicast ranges'
        return f'{ip} is {kind}, which PVE refuses as a host IPv6 address'
    return None


# ---------------------------------------------------------------------------------------------- what the node has


def comment_lines(settings: Mapping[str, Any]) -> list[str]:
    """The comment lines of an interface as listed (each line of ``comments`` ends in a newline)."""
    return [line.rstrip() for line in str(settings.get('comments') or '').split('\n') if line.strip()]


def is_marked(settings: Mapping[str, Any]) -> bool:
    return any(line.strip() == MARK for line in comment_lines(settings))


def observed_value(settings: Mapping[str, Any], key: str) -> Any:
    """The value of declared option ``key`` of a listed interface, normalized as ``_normalized`` does."""
    if key == 'ports':
        ports = settings.get('bridge_ports') if settings.get('type') == 'bridge' else settings.get('slaves')
        return ' '.join(sorted(set(str(ports or '').split())))
    if key in ('vlan_aware', 'autostart'):
        return bool(settings.get(str(KEYS[key])))
    if key == 'vlan_ids':
        return ' '.join(str(settings.get('bridge_vids') or '').split()) or None
    value = settings.get(str(KEYS[key]))
    if value is None or value == '':
        return None
    if key in ('mtu', 'vlan_id'):
        return int(value)
    return str(value)


def _ip(text: Any) -> Any:
    """An address in one form (IPv6 is written in many), or the text when it is none."""
    try:
        return ipaddress.ip_address(str(text).split('/', maxsplit=1)[0])
    except ValueError:
        return text


def _carries(settings: Mapping[str, Any], address: str) -> bool:
    """Whether a listed interface has ``address``, as its IPv4 or its IPv6 address."""
    wanted = _ip(address)
    return any(settings.get(key) and _ip(settings[key]) == wanted for key in ('address', 'cidr', 'address6', 'cidr6'))


def management_chain(interfaces: Mapping[str, Mapping[str, Any]], address: str | None) -> dict[str, str]:
    """{interface: why it is protected} for the interface carrying ``address`` and the ports beneath it."""
    if not address:
        return {}
    chain: dict[str, str] = {}
    queue = []
    carrier: dict[str, str] = {}  # the interface carrying the address that each one of the chain is beneath
    for name, settings in sorted(interfaces.items()):
        if _carries(settings, address):
            chain[name] = f"{name} carries the node's management address {address}"
            queue.append(name)
            carrier[name] = name
    while queue:
        upper = queue.pop(0)
        settings = interfaces.get(upper) or {}
        below = str(settings.get('bridge_ports') or '').split() + str(settings.get('slaves') or '').split()
        if settings.get('vlan-raw-device'):
            below.append(str(settings['vlan-raw-device']))
        dotted = re.match(r'(\S+)\.\d+$', upper)
        if upper not in interfaces and dotted:
            # A bridge port DEVICE.ID with no stanza of its own is not listed; it is a VLAN of DEVICE (pve-common
            # src/PVE/Network/Interfaces.pm __write_etc_network_interfaces, the bridge port check).
            below.append(dotted.group(1))
        for port in below:
            if port not in chain:
                root = carrier[port] = carrier[upper]
                via = f'{upper}, which is beneath {root}' if upper != root else root
                chain[port] = f"{port} is beneath {via}, which carries the node's management address {address}"
                queue.append(port)
    return chain


# ---------------------------------------------------------------------------------------------- the plan


def view(settings: Mapping[str, Any] | None, keys: Sequence[str], managed: bool) -> dict[str, Any] | None:
    """How the diff shows an interface: its type, the declared options, its comments and whether it is marked."""
    if settings is None:
        return None
    shown: dict[str, Any] = {'type': settings.get('type')}
    for key in keys:
        shown[key] = observed_value(settings, key)
    shown['comments'] = '\n'.join(line for line in comment_lines(settings) if line.strip() != MARK) or None
    shown['managed'] = managed
    return shown


def plan(spec: NetworkSpec, observed: Observed) -> Plan:
    """The actions converging the node's interfaces to spec; NetworkRefused for what the module will not do."""
    have = observed.interfaces
    protected = management_chain(have, observed.address)
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    creates: list[Action] = []
    updates: list[Action] = []
    deletes: list[tuple[str, str]] = []
    refusals = []
    for iface in spec.interfaces:
        current = have.get(iface.name)
        keys = list(iface.settings)
        marked = current is not None and is_marked(current)
        if current is not None and not marked and not spec.adopt:
            refusals.append(
                f"{iface.option}: {iface.name} exists on {spec.node} but was not made by this collection (no '{MARK}' line in its comments); "
                'set adopt: true to manage it'
            )
            continue
        if iface.state == 'absent':
            if current is None:
                continue
            before[iface.name] = view(current, (), marked)
            after[iface.name] = None
            deletes.append((str(current.get('type')), iface.name))
            continue
        if current is not None and current.get('type') != iface.type:
            refusals.append(
                f'{iface.option}.type: {iface.name} is a {current.get("type")} on {spec.node}, not a {iface.type}; '
                'PVE cannot change the type of an interface: delete it first (state: absent) or choose another name'
            )
            continue
        if current is None:
            before[iface.name] = None
            after[iface.name] = _declared_view(iface, keys)
            creates.append(Action(CREATE, {'iface': iface.name, 'params': _create_params(iface)}))
            continue
        params, delete = _update_params(iface, current)
        stale, drop = _bond_primary(iface, current, spec.node)
        if stale:
            refusals.append(stale)
            continue
        if drop:
            delete.append('bond-primary')
        before[iface.name] = view(current, keys, marked)
        after[iface.name] = _declared_view(iface, keys, current)
        if params or delete:
            params['type'] = iface.type
            params.update(_resent(current, params))
            problem = _unkept(current, params)
            if problem:
                refusals.append(_unkept_refusal(iface, spec.node, problem))
                continue
            refused = _refused_address(iface, spec.node, params)
            if refused:
                refusals.append(refused)
                continue
            updates.append(Action(UPDATE, {'iface': iface.name, 'params': params, 'delete': delete}))
    if spec.prune:
        declared = {iface.name for iface in spec.interfaces}
        for name, settings in sorted(have.items()):
            if name not in declared and is_marked(settings):
                before[name] = view(settings, (), True)
                after[name] = None
                deletes.append((str(settings.get('type')), name))
    refusals += _taken(spec, have, creates + updates, {name for _kind, name in deletes})
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name) and name in protected and not spec.allow_management_change:
            refusals.append(
                f'{name} on {spec.node}: {protected[name]} (GET /cluster/status); a change to it can cut the node off the network, '
                'so it is refused: set allow_management_change: true to make it'
            )
    if refusals:
        raise NetworkRefused('; '.join(refusals) + '. Nothing was changed.')
    # PVE checks the whole staged file at every write, so each step must leave a valid one: ports an update takes
    # away are released first (another interface may be deleted or take them), then the deletes (VLANs first), the
    # creates (bonds first, as bridges use them) and the updates.
    actions = [release for release in (_release(action, have[action.params['iface']]) for action in updates) if release]
    actions += [Action(DELETE, {'iface': name}) for _kind, name in sorted(deletes, key=lambda item: (-_ORDER.get(item[0], 1), item[1]))]
    actions += sorted(creates, key=lambda action: (_ORDER[action.params['params']['type']], action.params['iface']))
    actions += updates
    applying = spec.apply and (actions or (observed.changes and spec.pending_changes == 'apply'))
    if observed.changes and applying and spec.pending_changes == 'refuse':
        raise NetworkRefused(
            f'{spec.node} has network changes staged by someone else and not applied (/etc/network/interfaces.new); '
            f'applying this run would apply them too:\n{observed.changes}\n'
            'Apply or revert them first (the node > System > Network: Apply or Revert Configuration), '
            'or set pending_changes: apply to apply them with this run. Nothing was changed.'
        )
    if applying:
        actions.append(Action(APPLY, {'pending': bool(observed.changes)}))
        if observed.changes:
            before['(pending)'] = observed.changes
            after['(pending)'] = None
    return Plan(tuple(actions), before, after)


def _taken(spec: NetworkSpec, have: Mapping[str, Mapping[str, Any]], writes: Sequence[Action], deleted: set[str]) -> list[str]:
    """The refusals of creates and updates that send a port or the default gateway another interface keeps after the
    plan: pve-manager PVE/API2/Network.pm $check_duplicate_ports (bridge_ports, ovs_ports, slaves, ovs_bonds) and
    $check_duplicate_gateway refuse them against the staged config. Releases and deletes come first, so the
    interfaces as the plan leaves them are what each write meets."""
    declared = {iface.name: iface for iface in spec.interfaces}
    sent = {action.params['iface']: action.params['params'] for action in writes}
    holders: dict[str, list[str]] = {}
    gateways = []
    for name in sorted(set(have) - deleted | set(sent)):
        settings = have.get(name) or {}
        iface = declared.get(name)
        if iface is not None and 'ports' in iface.settings:
            ports = str(iface.settings['ports']).split()
        else:
            ports = ' '.join(str(settings.get(key) or '') for key in ('bridge_ports', 'ovs_ports', 'slaves', 'ovs_bonds')).split()
        for port in ports:
            holders.setdefault(port, []).append(name)
        if settings.get('gateway') or sent.get(name, {}).get('gateway'):
            gateways.append(name)
    refusals = []
    for name, params in sent.items():
        option = declared[name].option
        for port in str(params.get('bridge_ports') or params.get('slaves') or '').split():
            others = [other for other in holders.get(port, ()) if other != name]
            if others:
                refusals.append(
                    f'{option}.ports: {name} on {spec.node}: {port} is a port of {others[0]} too; a port is on one interface only '
                    f'(pve-manager PVE/API2/Network.pm check_duplicate_ports): take it off {others[0]} or choose another'
                )
        others = [other for other in gateways if other != name]
        if params.get('gateway') and others:
            refusals.append(
                f'{option}.gateway: {name} on {spec.node}: {others[0]} has the default gateway; a node has one only '
                f'(pve-manager PVE/API2/Network.pm check_duplicate_gateway): remove it from {others[0]} first, or leave gateway undeclared'
            )
    return refusals


def _release(update: Action, current: Mapping[str, Any]) -> Action | None:
    """An update of only the ports that ``update`` keeps, when it takes some away; None when it takes none away."""
    kind = current.get('type')
    key = 'bridge_ports' if kind == 'bridge' else 'slaves'
    if key not in update.params['params']:
        return None
    old = set(str(current.get(key) or '').split())
    kept = old & set(str(update.params['params'][key]).split())
    if kept == old:
        return None
    params: dict[str, Any] = {'type': kind}
    params.update(_resent(current, params))
    delete = [] if kept else [key]
    if kept:
        params[key] = ' '.join(sorted(kept))
        if current.get('bond-primary') and current['bond-primary'] not in kept:
            delete.append('bond-primary')  # PRIMARY_RULE; the update after it sets the declared one
    return Action(UPDATE, {'iface': update.params['iface'], 'params': params, 'delete': delete, 'release': True})


def _bond_primary(iface: Iface, current: Mapping[str, Any], node: str) -> tuple[str | None, bool]:
    """(the refusal, whether the update deletes bond-primary) for a bond whose bond-primary, declared or its own, the
    update would leave outside its slaves (PRIMARY_RULE). Unless declared, it is deleted when the bond will not be in
    mode active-backup, the only one PVE writes it for (__interface_to_string), so the node loses nothing it uses."""
    if iface.type != 'bond':
        return None, False
    slaves = str(iface.settings['ports'] if 'ports' in iface.settings else current.get('slaves') or '').split()
    primary = iface.settings.get('bond_primary') or current.get('bond-primary')
    if not primary or not slaves or primary in slaves:
        return None, False
    if 'bond_primary' in iface.settings:
        return f'{iface.option}.bond_primary: {iface.name} on {node}: {primary} is not one of its slaves ({" ".join(slaves)}); {PRIMARY_RULE}', False
    if (iface.settings.get('bond_mode') or current.get('bond_mode') or 'balance-rr') != 'active-backup':
        return None, True
    return (
        f'{iface.option}.ports: {iface.name} on {node} has the bond-primary {primary}, which these ports leave out; {PRIMARY_RULE}: '
        'declare its bond_primary, one of the ports',
        False,
    )


def _resent(current: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """The addresses of the interface an update must send again to keep them (update_network writes a family's stanza
    only for an address it is sent); the declared ``cidr`` when there is one."""
    return {key: current[key] for key in ('cidr', 'cidr6') if key not in params and current.get(key)}


def _unkept(current: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    """What of the listed interface an update sending ``params`` would lose, or None.

    pve-manager PVE/API2/Network.pm update_network: ``families`` becomes inet for a sent ``cidr`` and inet6 for a sent
    ``cidr6`` (inet alone for neither), ``method``/``method6`` static with the address and manual without; pve-common
    src/PVE/Network/Interfaces.pm __write_etc_network_interfaces prints one stanza per family, a stanza's ``options``
    (``options6`` for inet6) and its gateway (``gateway6``) inside it.
    """
    families = set(current.get('families') or ('inet',))
    method, method6 = current.get('method') or 'manual', current.get('method6') or 'manual'
    written = {family for family, key in (('inet', 'cidr'), ('inet6', 'cidr6')) if params.get(key)} or {'inet'}
    if method not in ('static', 'manual') and 'cidr' not in params:
        return f'takes its IPv4 address by {method.upper()} (inet {method}); PVE would make it manual'
    if method6 not in ('static', 'manual'):
        how = 'SLAAC' if method6 == 'auto' else method6.upper()
        return f'takes its IPv6 address by {how} (inet6 {method6}); PVE would drop that stanza'
    for family, suffix, label in (('inet', '', 'IPv4'), ('inet6', '6', 'IPv6')):
        kept = [str(line) for line in current.get('options' + suffix) or ()]
        kept += [f'gateway {current["gateway" + suffix]}'] if current.get('gateway' + suffix) else []
        if family in written or not kept:
            continue
        lines = '; '.join(kept)
        if family not in families:
            # A stanza without a family (`iface NAME`, ifupdown2's): __read_etc_network_interfaces keeps its options as
            # the inet ones, which __interface_to_string writes only in an inet stanza.
            return f'has a stanza without a family, with an IPv6 address only and the options {lines!r}; PVE would write it as an inet6 stanza without them'
        stanza = f'{family} {method if family == "inet" else method6}'
        return f'has an {label} stanza ({stanza}) with no address but the options {lines!r}; PVE would drop that stanza with them'
    return None


def _refused_address(iface: Iface, node: str, params: Mapping[str, Any]) -> str | None:
    """The refusal of an update that must send an address of the interface again (``_resent``) which PVE refuses to be
    sent, as written by hand on the node; None when there is none (a declared cidr is checked as declared)."""
    for key, version in (('cidr', 4), ('cidr6', 6)):
        if not params.get(key) or key in iface.settings:
            continue
        problem = address_problem(str(params[key]), version)
        if problem:
            return (
                f'{iface.option}: {iface.name} on {node} has the IPv{version} address {params[key]}, written on the node, which an update '
                f'must send again to keep it, and PVE refuses it: {problem} (pve-manager PVE/API2/Network.pm update_network). '
                f'Correct it on the node itself (/etc/network/interfaces), or leave {iface.name} undeclared'
            )
    return None


def _unkept_refusal(iface: Iface, node: str, problem: str) -> str:
    fix = ', declare its cidr to give it a static address instead,' if problem.startswith('takes its IPv4') else ''
    return (
        f'{iface.option}: {iface.name} on {node} {problem}. PVE cannot keep it through its API: an update (adopting it too) '
        'writes a stanza only for the addresses it is sent and sets the methods to static or manual (pve-manager '
        f'PVE/API2/Network.pm update_network). Change {iface.name} on the node itself (/etc/network/interfaces){fix} '
        f"or leave it undeclared; to adopt it as it is, add the comment line '{MARK}' to its stanza there"
    )


def _declared_view(iface: Iface, keys: Sequence[str], current: Mapping[str, Any] | None = None) -> dict[str, Any]:
    shown: dict[str, Any] = {'type': iface.type}
    for key in keys:
        shown[key] = iface.settings[key]
    if iface.comments is not None:
        shown['comments'] = '\n'.join(iface.comments) or None
    else:
        shown['comments'] = '\n'.join(line for line in comment_lines(current or {}) if line.strip() != MARK) or None
    shown['managed'] = True
    return shown


def _pve_key(iface: Iface, key: str) -> str:
    if key == 'ports':
        return 'bridge_ports' if iface.type == 'bridge' else 'slaves'
    return str(KEYS[key])


def _create_params(iface: Iface) -> dict[str, Any]:
    params: dict[str, Any] = {'type': iface.type}
    for key, value in iface.settings.items():
        if value is False or value == '':
            continue  # declared false or empty is not set at all (bridge_vlan_aware 0 would still make it VLAN-aware)
        params[_pve_key(iface, key)] = 1 if value is True else value
    params['comments'] = '\n'.join([*(iface.comments or ()), MARK])
    return params


def _update_params(iface: Iface, current: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    params: dict[str, Any] = {}
    delete: list[str] = []
    for key, value in iface.settings.items():
        if observed_value(current, key) == value:
            continue
        if value is False or value == '':
            delete.append(_pve_key(iface, key))
            if key == 'vlan_aware' and current.get('bridge_vids'):
                delete.append('bridge_vids')
        else:
            params[_pve_key(iface, key)] = 1 if value is True else value
    human = [line for line in comment_lines(current) if line.strip() != MARK]
    wanted = list(iface.comments) if iface.comments is not None else human
    if wanted != human or not is_marked(current):
        params['comments'] = '\n'.join([*wanted, MARK])
    return params, delete
