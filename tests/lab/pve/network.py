"""A node's network devices (/nodes/{node}/network) as pve-manager and pve-common keep them: the text of
/etc/network/interfaces, changes staged in /etc/network/interfaces.new, and a reload that applies them.

- pve-common src/PVE/INotify.pm: `/etc/network/interfaces` has the shadow file `/etc/network/interfaces.new`
  ($shadowfiles). write_file writes the shadow; read_file reads the shadow when it exists, else the file, and
  computes `changes` (ccache_compute_diff: `diff -b -N -u interfaces interfaces.new`, undef when empty).
- pve-common src/PVE/Network/Interfaces.pm: __read_etc_network_interfaces (the parse: `auto` lines, stanzas, comment
  lines into `comments`, each ending in a newline, the type told by the name and options, `cidr` from address and
  netmask, `exists` for a physical NIC, `active` for a running one) and __write_etc_network_interfaces /
  __interface_to_string (the checks: a port on one interface only, bond slaves and VLAN parents that exist, a bond's
  bond-primary among its slaves, no address on a bridge port, an MTU no larger than the parent's; then each stanza in
  type order).
- pve-manager PVE/API2/Network.pm: index (lo left out, the `type` filter, a bridge listed only to who holds SDN.Audit
  or SDN.Use on it through check_sdn_bridge, the `changes` result attribute), create_network, update_network,
  network_config, delete_network (each reads, changes and writes the staged config), reload_network_config (`PUT`:
  the task srvreload of `networking`, renaming interfaces.new over interfaces and running `ifreload -a`) and
  revert_network_changes (`DELETE`: unlink interfaces.new).
- pve-http-server src/PVE/APIServer/Formatter/Standard.pm, prepare_response_data: `changes` is sent beside `data`.

The lab's ifreload brings up the `auto` interfaces and their ports (`active`); the physical NICs are eno1 to eno4.
Each node is seeded as an installed node with what an admin often adds: vmbr0 on eno1 with the node's IPv4 address and a
link-local IPv6 address (inet6 static), and vmbr10 on eno4 taking its addresses by DHCP and SLAAC (inet dhcp, inet6
auto). `lab.pve.network_files(node)` gives (interfaces, interfaces.new or None) as text; a node in
`lab.pve.nodes_without_ifupdown2` refuses the reload as a node still on ifupdown does.
"""

import difflib
import ipaddress
import json
import re

from aiohttp import web
from fakepve import schema as pve_schema
from fakepve.routing import die, param_error, split_list
from fakepve.server import USER, params

INDEX = '/nodes/{node}/network'
IFACE = '/nodes/{node}/network/{iface}'
PHYSICAL_NICS = ('eno1', 'eno2', 'eno3', 'eno4')
# Interfaces.pm $PHYSICAL_NIC_RE.
PHYSICAL_NIC = re.compile(r'(?:eth\d+|en[^:.]+|ib[^:.]+|(?:nic|if)\d+)$')
# __read_etc_network_interfaces: $options_alternatives and $simple_options.
ALTERNATIVES = {
    'ovs_mtu': 'mtu',
    'bond-slaves': 'slaves',
    'bond_slaves': 'slaves',
    'bond-xmit-hash-policy': 'bond_xmit_hash_policy',
    'bond-mode': 'bond_mode',
    'bond-miimon': 'bond_miimon',
    'bridge-vlan-aware': 'bridge_vlan_aware',
    'bridge-fd': 'bridge_fd',
    'bridge-stp': 'bridge_stp',
    'bridge-ports': 'bridge_ports',
    'bridge-vids': 'bridge_vids',
}
SIMPLE = {
    'mtu', 'ovs_type', 'ovs_options', 'ovs_bridge', 'ovs_bonds', 'ovs_ports', 'bridge_fd', 'bridge_vids', 'bridge-access',
    'bridge-learning', 'bridge-arp-nd-suppress', 'bridge-unicast-flood', 'bridge-multicast-flood',
    'bridge-disable-mac-learning', 'bond_miimon', 'bond_xmit_hash_policy', 'bond-primary', 'link-type', 'uplink-id',
    'vlan-protocol', 'vlan-raw-device', 'vlan-id', 'vxlan-id', 'vxlan-svcnodeip', 'vxlan-physdev', 'vxlan-local-tunnelip',
}  # fmt: skip
# Interfaces.pm $bond_modes: the numbers a bond-mode line may have instead of the name.
BOND_MODE_NAMES = {'0': 'balance-rr', '1': 'active-backup', '2': 'balance-xor', '3': 'broadcast', '4': '802.3ad', '5': 'balance-tlb', '6': 'balance-alb'}
# __interface_to_string's $done: keys never printed as `key value` lines.
DONE = {
    'type', 'priority', 'method', 'active', 'exists', 'comments', 'autostart', 'options', 'address', 'netmask', 'gateway',
    'broadcast', 'method6', 'families', 'options6', 'comments6', 'address6', 'netmask6', 'gateway6', 'broadcast6', 'uplink-id',
}  # fmt: skip
# __write_etc_network_interfaces: $if_type_hash, the order of the stanzas.
TYPE_ORDER = {'loopback': 100000, 'dummy': 100000, 'eth': 200000, 'bond': 400000, 'bridge': 500000, 'vlan': 600000, 'vxlan': 600000}
# Net::IP 1.26 (libnet-ip-perl, which pve-manager's check_ipv6_settings uses) %IPv6ranges, matched longest prefix
# first by ip_iptypev6.
IPV6_TYPES = sorted(
    (
        (ipaddress.IPv6Network(network), kind)
        for network, kind in (
            ('::/8', 'RESERVED'), ('::/128', 'UNSPECIFIED'), ('::1/128', 'LOOPBACK'), ('::ffff:0:0/96', 'IPV4MAP'),
            ('100::/8', 'RESERVED'), ('100::/64', 'DISCARD'), ('200::/7', 'RESERVED'), ('400::/6', 'RESERVED'),
            ('800::/5', 'RESERVED'), ('1000::/4', 'RESERVED'), ('2000::/3', 'GLOBAL-UNICAST'), ('2001::/32', 'TEREDO'),
            ('2001:2::/48', 'BMWG'), ('2001:db8::/32', 'DOCUMENTATION'), ('2001:10::/28', 'ORCHID'), ('2002::/16', '6TO4'),
            ('4000::/3', 'RESERVED'), ('6000::/3', 'RESERVED'), ('8000::/3', 'RESERVED'), ('a000::/3', 'RESERVED'),
            ('c000::/3', 'RESERVED'), ('e000::/4', 'RESERVED'), ('f000::/5', 'RESERVED'), ('f800::/6', 'RESERVED'),
            ('fc00::/7', 'UNIQUE-LOCAL-UNICAST'), ('fe00::/9', 'RESERVED'), ('fe80::/10', 'LINK-LOCAL-UNICAST'),
            ('fec0::/10', 'RESERVED'), ('ff00::/8', 'MULTICAST'),
        )
    ),
    key=lambda item: -item[0].prefixlen,
)  # fmt: skip
HOST_IPV6_TYPES = ('GLOBAL-UNICAST', 'UNIQUE-LOCAL-UNICAST', 'LINK-LOCAL-UNICAST')
HEADER = """# network interface settings; autogenerated
# Please do NOT modify this file directly, unless you know what
# you're doing.
#
# If you want to manage parts of the network configuration manually,
# please utilize the 'source' or 'source-directory' directives to do
# so.
# PVE will preserve these directives, but will NOT read its network
# configuration from sourced files, so do not attempt to move any of
# the PVE managed interfaces into external files!

"""


def _netmask_bits(mask):
    try:
        return ipaddress.ip_network(f'0.0.0.0/{mask}').prefixlen
    except ValueError:
        return None


def parse(text, physical=(), active=()):
    """__read_etc_network_interfaces: {'ifaces': {name: settings}, 'options': [(priority, line)]}."""
    ifaces, options, priority = {}, [], 2
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if re.match(r'\s*#', line):
            continue
        auto = re.match(r'\s*(allow-auto|auto|allow-ovs|allow-hotplug)\s+(.*)$', line)
        stanza = re.match(r'\s*iface\s+(\S+)(?:\s+(inet6?)\s+(\S+))?\s*$', line)
        if auto:
            for name in auto.group(2).split():
                ifaces.setdefault(name, {})['autostart'] = 1
        elif stanza:
            name, family, method = stanza.groups()
            suffix = None if family is None else family[4:]
            d = ifaces.setdefault(name, {})
            if not d.get('priority'):
                d['priority'] = priority
                priority += 1
            d.setdefault('families', []).append(family)
            f = {'method': method}
            while i < len(lines):
                raw = lines[i].rstrip()
                comment = re.match(r'\s*#(.*?)\s*$', raw)
                option = re.match(r'\s*((\S+)\s+(.+))$', raw)
                if comment:
                    target = d if suffix is None else f
                    target['comments'] = target.get('comments', '') + comment.group(1) + '\n'
                elif re.match(r'\s*(?:(?:iface|mapping|auto|source|source-directory)\s|allow-)', raw) or not option:
                    break
                else:
                    _parse_option(d, f, suffix, option.group(1), ALTERNATIVES.get(option.group(2), option.group(2)), option.group(3))
                i += 1
            if suffix is not None:
                d.update({key + suffix: value for key, value in f.items()})
        elif re.search(r'\w', line):
            options.append((priority, line))
            priority += 1
    for name in physical:
        ifaces.setdefault(name, {})['exists'] = 1
    for name in active:
        if name in ifaces:
            ifaces[name]['active'] = 1
    ifaces.setdefault('lo', {'priority': 1, 'method': 'loopback', 'type': 'loopback', 'autostart': 1})
    for name in sorted(ifaces):
        _settle(ifaces, name)
    return {'ifaces': ifaces, 'options': options}


def _parse_option(d, f, suffix, option, key, value):
    if key in ('address', 'netmask', 'broadcast', 'gateway'):
        if suffix is not None:
            d[key + suffix] = value
        elif key != 'netmask' and ':' in value:
            d[key + '6'] = value
        else:
            d[key] = value
    elif key in SIMPLE:
        d[key] = value
    elif key in ('slaves', 'bridge_ports'):
        ports = set()
        for port in value.split():
            if port == 'none':
                d['is_empty_bridge'] = key == 'bridge_ports' or d.get('is_empty_bridge')
                continue
            ports.add(port)
        joined = ' '.join(sorted(ports))
        d[key] = f'{d[key]} {joined}' if d.get(key) and joined else (d.get(key) or joined)
    elif key == 'bridge_stp':
        d[key] = 'on' if re.match(r'\s*(on|yes)\s*$', value, re.IGNORECASE) else 'off'
    elif key == 'bridge_vlan_aware':
        d[key] = 1
    elif key == 'bond_mode':
        d[key] = BOND_MODE_NAMES.get(value, value)  # always use names
    else:
        (d if suffix is None else f).setdefault('options', []).append(option)


def _settle(ifaces, name):
    """The type of interface name, its cidr and defaults, as the second half of __read_etc_network_interfaces."""
    d = ifaces[name]
    d['type'] = 'unknown'
    vlan = re.match(r'(\S+)\.(\d+)$', name)
    if 'bridge_ports' in d or d.get('is_empty_bridge'):
        d.pop('is_empty_bridge', None)
        d['type'] = 'bridge'
        d.setdefault('bridge_stp', 'off')
        if 'bridge_fd' not in d and d['bridge_stp'] == 'off':
            d['bridge_fd'] = 0
    elif re.match(r'bond\d+$', name):
        d['type'] = 'bond'
    elif vlan or d.get('vlan-raw-device'):
        d['type'] = 'vlan'
        if vlan:
            d.setdefault('vlan-raw-device', vlan.group(1))
            if int(vlan.group(2)):
                d['vlan-id'] = vlan.group(2)
        elif re.match(r'vlan(\d+)$', name) and int(name[4:]):
            d['vlan-id'] = name[4:]
        raw = d['vlan-raw-device']
        if raw in ifaces:
            d['exists'] = ifaces[raw].get('exists')
        else:
            ifaces[raw] = {'exists': 0}
            d['exists'] = 0
    elif PHYSICAL_NIC.match(name):
        d['type'] = 'eth'
    elif name == 'lo':
        d['type'] = 'loopback'
    address = d.get('address')
    if address:
        if '/' in address:
            d['cidr'] = address
            d['address'], d['netmask'] = address.split('/')
        elif d.get('netmask') and (d['netmask'].isdigit() or _netmask_bits(d['netmask']) is not None):
            bits = d['netmask'] if d['netmask'].isdigit() else str(_netmask_bits(d['netmask']))
            d['cidr'], d['netmask'] = f'{address}/{bits}', bits
        else:
            d['cidr'] = address + '/32'
    address6 = d.get('address6')
    if address6:
        if re.search(r'/\d+$', address6):
            d['cidr6'] = address6
            d['address6'], d['netmask6'] = address6.rsplit('/', 1)
        elif d.get('netmask6') and (d['netmask6'].isdigit() or _netmask_bits(d['netmask6']) is not None):
            bits = d['netmask6'] if d['netmask6'].isdigit() else str(_netmask_bits(d['netmask6']))
            d['cidr6'] = f'{address6}/{bits}'
        else:
            d['cidr6'] = address6 + '/128'
    d.setdefault('method', 'manual')
    d.setdefault('method6', 'manual')
    if d.get('comments6'):
        d['comments'] = d.get('comments', '') + d.pop('comments6')
    if not d.get('families'):
        d['families'] = ['inet']


def _check_mtu(ifaces, parent, child):
    """Interfaces.pm $check_mtu."""
    cmtu = ifaces[child].get('mtu')
    if not cmtu:
        return
    p = ifaces[parent]
    pmtu = p.get('mtu') or (cmtu if p.get('type') == 'bond' else None) or 1500
    if int(pmtu) < int(cmtu):
        raise die(f"interface '{parent}' - mtu {pmtu} is lower than '{child}' - mtu {cmtu}")


def write(config, ifupdown2=True):
    """__write_etc_network_interfaces for Linux interfaces: the checks, then the text (PveError 500 on a check)."""
    ifaces = config['ifaces']
    used = {}
    for name, d in ifaces.items():
        cidr, cidr6 = d.pop('cidr', None), d.pop('cidr6', None)
        if d.get('address') is None and cidr:
            d['address'] = cidr
        if d.get('address6') is None and cidr6:
            d['address6'] = cidr6
        for port in split_list(' '.join(str(d.get(key) or '') for key in ('bridge_ports', 'ovs_ports', 'slaves', 'ovs_bonds'))):
            if used.get(port, name) != name:
                raise die(f"port '{port}' is already used on interface '{used[port]}'")
            used[port] = name
    for name, d in ifaces.items():
        if d.get('type') != 'bond' or not d.get('slaves'):
            continue
        for port in d['slaves'].split():
            if port not in ifaces:
                raise die(f"bond '{name}' - unable to find slave '{port}'")
            ifaces[port]['autostart'] = 1
            if ifaces[port].get('type') not in ('eth', 'bond'):
                raise die(f"bond '{name}' - wrong interface type on slave '{port}' ('{ifaces[port].get('type')}' != 'eth or bond')")
            _check_mtu(ifaces, name, port)
        # "check bond": the bond-primary, whatever the mode (it is written for active-backup only), is one of the slaves.
        if d.get('bond-primary') and d['bond-primary'] not in d['slaves'].split():
            raise die(f"bond '{name}' - bond-primary interface is not a slave")
    for name, d in ifaces.items():
        if d.get('type') != 'vlan':
            continue
        vlan = re.match(r'(\S+)\.(\d+)$', name)
        if vlan:
            parent, vid = vlan.groups()
            d.pop('vlan-raw-device', None)
            d.pop('vlan-id', None)
        else:
            if not d.get('vlan-raw-device'):
                raise die('missing vlan-raw-device option')
            parent = d['vlan-raw-device']
            if re.match(r'vlan(\d+)$', name):
                vid = name[4:]
                d.pop('vlan-id', None)
            elif not ifupdown2:
                raise die('custom vlan interface name need ifupdown2')
            elif not d.get('vlan-id'):
                raise die('missing vlan-id option')
            else:
                vid = d['vlan-id']
        if int(vid) > 4094:
            raise die(f"vlan '{name}' - vlan-id {vid} should be <= 4094")
        if parent not in ifaces:
            raise die(f"vlan '{name}' - unable to find parent '{parent}'")
        if ifaces[parent].get('type') not in ('eth', 'bridge', 'bond', 'vlan'):
            raise die(f"vlan '{name}' - wrong interface type on parent '{parent}' ('{ifaces[parent].get('type')}' != 'eth|bond|bridge|vlan' )")
        _check_mtu(ifaces, parent, name)
    copy = dict(ifaces)
    for name, d in ifaces.items():
        if d.get('type') != 'bridge':
            continue
        for port in str(d.get('bridge_ports') or '').split():
            vlan = re.match(r'(\S+)\.(\d+)$', port)
            if vlan and port not in copy:
                # A VLAN of another interface as a port: checked as a manual VLAN with its parent's MTU.
                copy[port] = {'type': 'vlan', 'method': 'manual', 'method6': 'manual'}
                if copy.get(vlan.group(1), {}).get('mtu') is not None:
                    copy[port]['mtu'] = copy[vlan.group(1)]['mtu']
            if port not in copy:
                raise die(f"bridge '{name}' - unable to find bridge port '{port}'")
            n = copy[port]
            if (n.get('method') == 'static' and n.get('address') != '0.0.0.0') or (n.get('method6') == 'static' and n.get('address6') != '::'):
                raise die(f"iface {port} - ip address can't be set on interface if bridged in {name}")
            _check_mtu(copy, port, name)
    text = HEADER
    options = list(config['options'])

    def order(name):
        root = re.split(r'[.:]', name)
        kind = ifaces.get(root[0], {}).get('type')
        return TYPE_ORDER.get(kind), len(root) - 1

    def key(name):
        kind, level = order(name)
        return (kind + level if kind is not None else None), ifaces[name].get('priority', 50000), name

    keys = {name: key(name) for name in ifaces}
    typed = all(k[0] is not None for k in keys.values())
    for name in sorted(ifaces, key=lambda n: ((keys[n][0] if typed else 0) + keys[n][1], n)):
        d = ifaces[name]
        if options and options[0][0] < d.get('priority', 0):
            while options and options[0][0] < d.get('priority', 0):
                text += options.pop(0)[1] + '\n'
            text += '\n'
        if d.get('autostart'):
            text += f'auto {name}\n'
        families = d.get('families') or ['inet']
        if len(families) == 1 and families[0] == 'inet6':
            d['comments6'] = d.pop('comments', None)
        for index, family in enumerate(families):
            text += _stanza(name, d, family, index == 0)
    return text + ''.join(line + '\n' for _priority, line in options)


def _stanza(name, d, family, first):
    """__interface_to_string for the Linux types."""
    suffix = None if family is None else family[4:]
    if family and not d.get('method' + suffix):
        return ''
    raw = f'iface {name}' + (f' {family} {d["method" + suffix]}' if family else '') + '\n'

    def add_address(sfx):
        address, mask = d.get('address' + sfx), d.get('netmask' + sfx)
        if address:
            if '/' not in str(address) and mask:
                bits = str(mask) if str(mask).isdigit() else _netmask_bits(mask)
                address = f'{address}/{bits}' if bits is not None else address
            raw_lines.append(f'\taddress {address}\n')
        if d.get('gateway' + sfx):
            raw_lines.append(f'\tgateway {d["gateway" + sfx]}\n')

    raw_lines = []
    for sfx in [suffix] if family else ['', '6']:
        add_address(sfx)
    done = set(DONE)
    if first and d.get('type') == 'bridge':
        raw_lines.append('\tbridge-ports {0}\n'.format(re.sub(r'[;,\s]+', ' ', str(d.get('bridge_ports') or '')) or 'none'))
        stp = d.get('bridge_stp') or 'off'
        raw_lines.append(f'\tbridge-stp {stp}\n')
        if d.get('bridge_fd') is not None:
            raw_lines.append(f'\tbridge-fd {d["bridge_fd"]}\n')
        elif stp == 'off':
            raw_lines.append('\tbridge-fd 0\n')
        if 'bridge_vlan_aware' in d:  # defined(), so 0 too (update_network sets what it is sent)
            raw_lines.append('\tbridge-vlan-aware yes\n')
            raw_lines.append('\tbridge-vids {0}\n'.format(d.get('bridge_vids') or '2-4094'))
        if d.get('mtu'):
            raw_lines.append(f'\tmtu {d["mtu"]}\n')
        done |= {'bridge_ports', 'bridge_stp', 'bridge_fd', 'bridge_vlan_aware', 'bridge_vids', 'mtu', 'bridge-disable-mac-learning'}
    elif first and d.get('type') == 'bond':
        raw_lines.append('\tbond-slaves {0}\n'.format(re.sub(r'[;,\s]+', ' ', str(d.get('slaves') or '')) or 'none'))
        raw_lines.append('\tbond-miimon {0}\n'.format(d.get('bond_miimon') if d.get('bond_miimon') is not None else 100))
        mode = d.get('bond_mode') or 'balance-rr'
        raw_lines.append(f'\tbond-mode {mode}\n')
        if d.get('bond_mode') in ('balance-xor', '802.3ad') and d.get('bond_xmit_hash_policy'):
            raw_lines.append(f'\tbond-xmit-hash-policy {d["bond_xmit_hash_policy"]}\n')
        if d.get('bond_mode') == 'active-backup' and d.get('bond-primary'):
            raw_lines.append(f'\tbond-primary {d["bond-primary"]}\n')
        if d.get('mtu'):
            raw_lines.append(f'\tmtu {d["mtu"]}\n')
        done |= {'slaves', 'bond_miimon', 'bond_mode', 'bond_xmit_hash_policy', 'bond-primary', 'mtu'}
    if first:
        raw_lines += [f'\t{key} {d[key]}\n' for key in sorted(d) if key not in done and d[key]]
    for sfx in [suffix] if family else ['', '6']:
        raw_lines += [f'\t{option}\n' for option in d.get('options' + sfx) or ()]
        raw_lines += [f'#{line}\n' for line in str(d.get('comments' + sfx) or '').split('\n') if line]
    return raw + ''.join(raw_lines) + '\n'


def changes(current, staged):
    """INotify.pm ccache_compute_diff: `diff -b -N -u` of the two files, or None when they do not differ."""
    if staged is None or [' '.join(line.split()) for line in current.split('\n')] == [' '.join(line.split()) for line in staged.split('\n')]:
        return None
    lines = difflib.unified_diff(current.split('\n'), staged.split('\n'), '/etc/network/interfaces', '/etc/network/interfaces.new', lineterm='')
    return ''.join(line + '\n' for line in lines)


def seed_text(cidr, gateway, cidr6, gateway6):
    """What the PVE installer writes (lo, the physical NICs, vmbr0 on eno1 with the node's address), with what an admin
    adds often: an IPv6 address on vmbr0, and vmbr10 on eno4 configured by DHCP and SLAAC."""
    config = parse('', physical=PHYSICAL_NICS)
    ifaces = config['ifaces']
    for name in PHYSICAL_NICS:
        ifaces[name].update(method='manual', families=['inet'], priority=ifaces[name].get('priority', 2))

    def bridge(port, priority, method, method6, **addresses):
        return dict(type='bridge', autostart=1, families=['inet', 'inet6'], bridge_ports=port, priority=priority, method=method, method6=method6, **addresses)

    ifaces['vmbr0'] = bridge('eno1', 10, 'static', 'static', address=cidr, gateway=gateway, address6=cidr6, gateway6=gateway6)
    ifaces['vmbr10'] = bridge('eno4', 11, 'dhcp', 'auto')
    return write(config)


class NetworkMixin:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # node -> {'current': text, 'new': text or None, 'active': set of names}
        self.node_networks = {}
        # node -> its address, as /cluster/status reports it (the address its name resolves to).
        self.node_ips = {}
        # The nodes still on ifupdown (upgraded from PVE 6 without installing ifupdown2).
        self.nodes_without_ifupdown2 = set()

    def add_node_network(self, node, cidr, gateway, cidr6, gateway6):
        """The node's network as seeded (seed_text), its IPv4 address on vmbr0 the node's address."""
        self.node_ips[node] = cidr.split('/')[0]
        active = {'lo', 'eno1', 'vmbr0', 'eno4', 'vmbr10'}
        self.node_networks[node] = {'current': seed_text(cidr, gateway, cidr6, gateway6), 'new': None, 'active': active}

    def network_files(self, node):
        """(/etc/network/interfaces, /etc/network/interfaces.new or None) of node."""
        files = self.node_networks[node]
        return files['current'], files['new']

    def _network_read(self, node):
        """INotify.pm read_file('interfaces', 1): the shadow's config when it exists, and the changes."""
        files = self.node_networks[node]
        text = files['new'] if files['new'] is not None else files['current']
        return parse(text, PHYSICAL_NICS, files['active']), changes(files['current'], files['new'])

    def _network_write(self, node, config):
        """INotify.pm write_file: the text goes to the shadow file."""
        self.node_networks[node]['new'] = write(config, ifupdown2=node not in self.nodes_without_ifupdown2)

    async def _cluster_status(self, request):
        # pve-manager PVE/API2/Cluster.pm get_status: a node's `ip` is its cluster member address.
        response = await super()._cluster_status(request)
        if response.status != 200:
            return response
        data = json.loads(response.body)['data']
        for item in data:
            if item.get('type') == 'node' and item.get('name') in self.node_ips:
                item['ip'] = self.node_ips[item['name']]
        return web.json_response({'data': data})

    def _register_stateful(self, router, prefixes):
        # The index answers with the `changes` result attribute beside `data`, so it is served here.
        for prefix in prefixes:
            router.add_route('GET', prefix + INDEX, self._lab_network_index_response)
        super()._register_stateful(router, prefixes)

    def _routes_lab_network(self):
        return [
            ('POST', INDEX, self._lab_network_create),
            ('PUT', INDEX, self._lab_network_reload),
            ('DELETE', INDEX, self._lab_network_revert),
            ('GET', IFACE, self._lab_network_get),
            ('PUT', IFACE, self._lab_network_update),
            ('DELETE', IFACE, self._lab_network_delete),
        ]

    async def _lab_network_index_response(self, request):
        match = pve_schema.Match(INDEX, dict(request.match_info), pve_schema.load().paths[INDEX])
        user = request[USER]

        async def call(_match, values):
            return self._lab_network_index(values, user)

        data, diff = await self.answer(request, match, await params(request), user, call)
        body = {'data': data}
        if diff:
            body['changes'] = diff
        return web.json_response(body)

    def _lab_network_index(self, v, user):
        config, diff = self._network_read(v['node'])
        ifaces = config['ifaces']
        ifaces.pop('lo', None)
        wanted = v.get('type')
        if wanted and wanted != 'include_sdn':
            for name in sorted(ifaces):
                kind = ifaces[name]['type']
                bridge = kind in ('bridge', 'OVSBridge') and wanted in ('any_bridge', 'any_local_bridge')
                if kind != wanted and not bridge:
                    del ifaces[name]
        for name in sorted(ifaces):
            # can_access_vnet: PVE/RPCEnvironment.pm check_sdn_bridge (pve-access-control), root@pam always.
            if ifaces[name]['type'] in ('bridge', 'OVSBridge') and user != 'root@pam' and not self._lab_bridge_access(user, name):
                del ifaces[name]
        return [dict(settings, iface=name) for name, settings in sorted(ifaces.items())], diff

    def _lab_bridge_access(self, user, bridge):
        path = f'/sdn/zones/localnetwork/{bridge}'
        if any(self.allowed(user, path, priv) for priv in ('SDN.Audit', 'SDN.Use')):
            return True
        # find_acl_tree_node: the VLANs with an ACL entry below the bridge, each checked as the bridge was.
        vlans = {granted[len(path) + 1 :].split('/')[0] for grants in (self.acl or {}).values() for granted, _privs in grants if granted.startswith(path + '/')}
        return any(self.allowed(user, f'{path}/{vlan}', priv) for vlan in sorted(vlans) for priv in ('SDN.Audit', 'SDN.Use'))

    async def _lab_network_get(self, v, user):
        ifaces = self._network_read(v['node'])[0]['ifaces']
        if v['iface'] not in ifaces:
            raise param_error(iface='interface does not exist')
        return ifaces[v['iface']]

    @staticmethod
    def _lab_values(v):
        return {key: value for key, value in v.items() if key not in ('node', 'iface', 'delete')}

    @staticmethod
    def _check_duplicate(ifaces, iface, key, label):
        for name in ifaces:
            if name != iface and ifaces[name].get(key):
                raise param_error(**{key: f"{label} already exists on interface '{name}'."})

    @staticmethod
    def _check_duplicate_ports(ifaces, iface, p):
        """Network.pm $check_duplicate_ports."""
        keys = [key for key in ('bridge_ports', 'ovs_ports', 'slaves', 'ovs_bonds') if p.get(key)]
        new = set(split_list(' '.join(str(p[key]) for key in keys)))
        for name, d in ifaces.items():
            if name == iface:
                continue
            for port in split_list(' '.join(str(d.get(key) or '') for key in ('bridge_ports', 'ovs_ports', 'slaves', 'ovs_bonds'))):
                if port in new:
                    raise param_error(**{keys[0]: f"{port} is already used on interface '{name}'."})

    @staticmethod
    def _map_cidr(p):
        """Network.pm $map_cidr_to_address_netmask."""
        for suffix in ('', '6'):
            if p.get('cidr' + suffix):
                if p.get('address' + suffix):
                    raise param_error(**{'address' + suffix: f'address{suffix} conflicts with cidr{suffix}'})
                if p.get('netmask' + suffix):
                    raise param_error(**{'netmask' + suffix: f'netmask{suffix} conflicts with cidr{suffix}'})
                p['address' + suffix], p['netmask' + suffix] = p.pop('cidr' + suffix).rsplit('/', 1)

    @staticmethod
    def _check_ipv6_settings(address, netmask):
        """Network.pm $check_ipv6_settings: a host address of a unicast type (Net::IP ip_iptypev6), the subnet router
        anycast address (the address equal to its mask) refused too."""
        if netmask < 0 or netmask > 128:
            raise param_error(netmask=f'{netmask} is not a valid subnet length for ipv6')
        try:
            value = ipaddress.IPv6Address(address)
        except ValueError:
            raise param_error(address=f'{address} is not a valid host IPv6 address.') from None
        mask = int(ipaddress.IPv6Network(f'::/{netmask}').netmask)
        kind = 'ANYCAST' if int(value) == mask else next(kind for network, kind in IPV6_TYPES if value in network)
        if kind not in HOST_IPV6_TYPES:
            raise param_error(address=f"{address} with type '{kind}', cannot be used as host IPv6 address.")

    @staticmethod
    def _set_families(p):
        """create_network and update_network (`families` is no parameter, so it starts empty): a stanza for each family
        sent an address, `inet` when none is; `method` and `method6` static only with an address sent. So DHCP,
        SLAAC and a stanza without an address are never kept."""
        families = [family for family, key in (('inet', 'address'), ('inet6', 'address6')) if p.get(key)]
        p['families'] = families or ['inet']
        p['method'] = 'static' if p.get('address') else 'manual'
        p['method6'] = 'static' if p.get('address6') else 'manual'

    @staticmethod
    def _vids(p):
        if p.get('bridge_vids'):
            vids = split_list(p['bridge_vids'])
            if not vids:
                raise param_error(bridge_vids='VLAN list items are empty')
            p['bridge_vids'] = ' '.join(vids)

    async def _lab_network_create(self, v, user):
        """Network.pm create_network."""
        config = self._network_read(v['node'])[0]
        ifaces, iface, p = config['ifaces'], v['iface'], self._lab_values(v)
        if iface in ifaces:
            raise param_error(iface='interface already exists')
        if p.get('gateway'):
            self._check_duplicate(ifaces, iface, 'gateway', 'Default gateway')
        if p.get('gateway6'):
            self._check_duplicate(ifaces, iface, 'gateway6', 'Default ipv6 gateway')
        self._check_duplicate_ports(ifaces, iface, p)
        self._map_cidr(p)
        if p.get('address6'):
            self._check_ipv6_settings(p['address6'], int(p.get('netmask6') or 0))
        self._set_families(p)
        self._vids(p)
        ifaces[iface] = p
        self._network_write(v['node'], config)

    async def _lab_network_update(self, v, user):
        """Network.pm update_network: the settings sent replace those of the interface; `families`, `method` and
        `method6` follow the addresses sent (_set_families)."""
        config = self._network_read(v['node'])[0]
        ifaces, iface, p = config['ifaces'], v['iface'], self._lab_values(v)
        if iface not in ifaces:
            raise param_error(iface='interface does not exist')
        d = ifaces[iface]
        for key in split_list(v.get('delete')):
            d.pop(key, None)
            if key in ('cidr', 'cidr6'):
                suffix = key[4:]
                d.pop('netmask' + suffix, None)
                d.pop('address' + suffix, None)
        self._map_cidr(p)
        if p.get('gateway'):
            self._check_duplicate(ifaces, iface, 'gateway', 'Default gateway')
        if p.get('gateway6'):
            self._check_duplicate(ifaces, iface, 'gateway6', 'Default ipv6 gateway')
        self._check_duplicate_ports(ifaces, iface, p)
        if p.get('address6'):
            self._check_ipv6_settings(p['address6'], int(p.get('netmask6') or 0))
        self._set_families(p)
        d.update(p)
        self._vids(p)
        self._network_write(v['node'], config)

    async def _lab_network_delete(self, v, user):
        """Network.pm delete_network."""
        config = self._network_read(v['node'])[0]
        if v['iface'] not in config['ifaces']:
            raise param_error(iface='interface does not exist')
        del config['ifaces'][v['iface']]
        self._network_write(v['node'], config)

    async def _lab_network_revert(self, v, user):
        """Network.pm revert_network_changes: unlink interfaces.new."""
        self.node_networks[v['node']]['new'] = None

    async def _lab_network_reload(self, v, user):
        """Network.pm reload_network_config: a srvreload task renames interfaces.new over interfaces, then ifreload -a;
        refused before the task on a node without ifupdown2 (assert_ifupdown2_installed)."""
        node = v['node']
        if node in self.nodes_without_ifupdown2:
            raise die('you need ifupdown2 to reload network configuration')

        async def body():
            files = self.node_networks[node]
            if files['new'] is not None:
                files['current'], files['new'] = files['new'], None
            ifaces = parse(files['current'], PHYSICAL_NICS)['ifaces']
            up = {name for name, d in ifaces.items() if d.get('autostart')}
            for name in list(up):
                up.update(split_list(' '.join(str(ifaces[name].get(key) or '') for key in ('bridge_ports', 'slaves'))))
            files['active'] = up

        return await self.task(node, 'srvreload', 'networking', user, body)
