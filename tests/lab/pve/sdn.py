"""SDN VNets and the bridge access check of a VM's NICs, as PVE does them.

- pve-guest-common PVE/GuestHelpers.pm, check_vnet_access: a NIC on bridge B needs SDN.Use on /sdn/zones/ZONE/B (with
  a VLAN `tag`, on /sdn/zones/ZONE/B/TAG; with `trunks`, on each of their tags), ZONE being the zone of the SDN VNet
  named B, or `localnetwork` for a plain Linux bridge. root@pam is not checked (qemu-server PVE/QemuServer.pm,
  check_bridge_access).
- qemu-server PVE/API2/Qemu.pm: create_vm checks every NIC of the new config, clone_vm every NIC of the source
  config, update_vm every NIC it sets and, for a NIC it replaces or deletes, the bridge of the value it had.
- pve-network PVE/API2/Network/SDN/Vnets.pm, index: `GET /cluster/sdn/vnets` lists only the VNets on which the user
  holds SDN.Audit or SDN.Allocate (on /sdn/zones/ZONE/VNET).

fakepve checks no bridge of a VM and keeps no VNets. `lab.pve.add_vnet(vnet, zone)` declares one (as
`pvesh create /cluster/sdn/vnets` and an applied SDN config would).

The SDN objects themselves (zones, VNets, subnets), their pending state and the apply, as pve-network does them:

- PVE/Network/SDN.pm: the objects are written to /etc/pve/sdn/{zones,vnets,subnets}.cfg; `commit_config` (called by
  `PUT /cluster/sdn`) copies them into the running config (.running-config); `pending_config` compares the two and
  gives each object that differs a `state` (new, changed, deleted) and `pending` (the config's values that differ
  from the running ones, 'deleted' for a key the config lost; a new object's `type` and `vnet` stay top-level).
- PVE/API2/Network/SDN.pm, reload (`PUT /cluster/sdn`): commit_config (zones, VNets, subnets, controllers, fabrics:
  compile_running_cfg), then the task `reloadnetworkall` runs pve-manager's reload_network_config on every node (a
  `srvreload` task as root@pam that renames the node's staged /etc/network/interfaces.new over its file first); a
  node pvesh cannot reach is only printed in the task's log, a failing node reload not even that: the task ends OK.
  `lab.pve.network_reload_failures[node] = reason` makes that node's `ifreload -a` fail.
- PVE 9's global lock (SDN.pm lock_sdn_config, create_global_lock; API2/Network/SDN.pm lock, release_lock,
  rollback): `POST /cluster/sdn/lock` (refused while changes are pending, unless `allow-pending`) returns a token;
  while it is held every write, the apply, the rollback and a second lock die `invalid lock token provided!` without
  it; `POST /cluster/sdn/rollback` writes the running config back over the config files; the apply and the rollback
  release the lock unless `release-lock=0`.
- Controllers (PVE/API2/Network/SDN/Controllers.pm index, create, delete; only the evpn type, Controllers/
  EvpnPlugin.pm options) and fabrics (`lab.pve.add_fabric(fabric, protocol)`; Fabrics.pm list_all `GET
  /cluster/sdn/fabrics/all`, without fabric nodes) with the same pending view.
- A vxlan zone has exactly one of `peers` and `fabric` (Zones/VxlanPlugin.pm on_update_hook).
- PVE/API2/Network/SDN/Zones.pm (index, read, create, update, delete), the zone plugins' `options` (Zones/
  SimplePlugin.pm, VlanPlugin.pm, VxlanPlugin.pm: which keys a zone of the type takes, `bridge` required for vlan),
  Zones/Plugin.pm on_delete_hook (a zone a VNet uses is not deleted).
- PVE/API2/Network/SDN/Vnets.pm (index, read, create, update, delete with $check_vnet_access: SDN.Allocate on
  /sdn/zones/ZONE/VNET), VnetPlugin.pm (options; on_delete_hook: a VNet with subnets is not deleted), the zone
  plugins' vnet_update_hook (simple: no tag and a random `mac`; vlan: a tag up to 4096, unique in the zone; vxlan: a
  tag unique among the VXLAN and EVPN zones).
- PVE/API2/Network/SDN/Subnets.pm (the id ZONE-NETWORK-MASK, `cidr`, `network`, `mask`, `zone` derived from it in
  Subnets.pm sdn_subnets_config, `dhcp-range` listed parsed), SubnetPlugin.pm on_update_hook (the VNet exists and is
  not VLAN-aware, the gateway inside the subnet, validate_dhcp_ranges).
- pve-common src/PVE/SectionConfig.pm check_config / check_value: "unexpected property", "missing value for required
  option"; delete_from_config.
- VNets deleted by the API are not checked against the guests using them (Vnets.pm delete: only the subnets).

Zone types other than simple, vlan and vxlan are not modelled. IPAM, DNS, the DHCP servers and the generated
/etc/network/interfaces.d/sdn are not modelled.
"""

import asyncio
import copy
import ipaddress
import random
import re
import uuid

from fakepve.model import PveError, TaskError
from fakepve.routing import die, param_error, split_list
from fakepve.server import USER, params

NET_KEY = re.compile(r'net\d+$')
VNETS = '/cluster/sdn/vnets'
VNET = '/cluster/sdn/vnets/{vnet}'
ZONES = '/cluster/sdn/zones'
ZONE = '/cluster/sdn/zones/{zone}'
SUBNETS = '/cluster/sdn/vnets/{vnet}/subnets'
SUBNET = '/cluster/sdn/vnets/{vnet}/subnets/{subnet}'
# What commit_config copies into the running config (SDN.pm compile_running_cfg), and what has_pending_changes reads
# (not the fabrics).
KINDS = ('zones', 'vnets', 'subnets', 'controllers', 'fabrics')
PENDING_KINDS = ('zones', 'vnets', 'subnets', 'controllers')
CONTROLLERS = '/cluster/sdn/controllers'
CONTROLLER = '/cluster/sdn/controllers/{controller}'
# The options of the controller types the lab models (Controllers/EvpnPlugin.pm options).
CONTROLLER_OPTIONS = {'evpn': {'asn': True, 'peers': False, 'fabric': False}}
# Where PVE's dies without a newline are raised (Perl appends ` at FILE line N.`): SDN.pm lock_sdn_config, and
# API2/Network/SDN.pm lock.
BAD_TOKEN = 'invalid lock token provided! at /usr/share/perl5/PVE/Network/SDN.pm line 291.\n'
PENDING_AT_LOCK = 'configuration has pending changes at /usr/share/perl5/PVE/API2/Network/SDN.pm line 149.\n'
# The zone plugins' `options`: the keys a zone of each type takes (True: required).
ZONE_OPTIONS = {
    'simple': {'nodes': False, 'mtu': False, 'dns': False, 'reversedns': False, 'dnszone': False, 'ipam': False, 'dhcp': False},
    'vlan': {
        'nodes': False, 'bridge': True, 'bridge-disable-mac-learning': False, 'mtu': False, 'dns': False, 'reversedns': False,
        'dnszone': False, 'ipam': False,
    },
    'vxlan': {
        'nodes': False, 'peers': False, 'vxlan-port': False, 'mtu': False, 'dns': False, 'reversedns': False, 'dnszone': False,
        'ipam': False, 'fabric': False,
    },
}  # fmt: skip
# VnetPlugin.pm and SubnetPlugin.pm options.
VNET_OPTIONS = {'zone': True, 'tag': False, 'alias': False, 'vlanaware': False, 'isolate-ports': False}
SUBNET_OPTIONS = {'vnet': True, 'gateway': False, 'snat': False, 'dnszoneprefix': False, 'dhcp-range': False, 'dhcp-dns-server': False}
# The keys of a request that are not object settings.
NOT_SETTINGS = {'zone', 'vnet', 'subnet', 'controller', 'type', 'delete', 'digest', 'lock-token', 'pending', 'running'}


def _encode(key, value):
    """SDN.pm encode_value: lists compared as their sorted items."""
    if key in ('nodes', 'exitnodes', 'dhcp-range') and isinstance(value, (list, tuple)):
        return ','.join(sorted(str(item) for item in value))
    return None if value is None else str(value)


def pending_config(running, config):
    """SDN.pm pending_config: every object of config or running, with `state` and `pending` where they differ."""
    pending = {}
    for oid in sorted(running):
        robj, cobj = running[oid], config.get(oid) or {}
        entry = pending.setdefault(oid, {})
        for key in sorted(robj):
            entry[key] = robj[key]
            if not cobj:
                entry['state'] = 'deleted'
            elif key not in cobj:
                entry.setdefault('pending', {})[key] = 'deleted'
                entry['state'] = 'changed'
            elif _encode(key, robj[key]) != _encode(key, cobj[key]):
                entry['state'] = 'changed'
        if entry.get('state'):
            entry.setdefault('pending', {})
    for oid in sorted(config):
        robj, cobj = running.get(oid) or {}, config[oid]
        entry = pending.setdefault(oid, {})
        for key in sorted(cobj):
            cval, rval = _encode(key, cobj[key]), _encode(key, robj.get(key))
            if key in ('type', 'vnet'):
                entry[key] = cobj[key]
            elif rval is None or cval != rval:
                entry.setdefault('pending', {})[key] = cobj[key]
            if not robj:
                entry['state'] = 'new'
            elif rval is None:
                entry['state'] = 'changed'
        if entry.get('state'):
            entry.setdefault('pending', {})
    return pending


def _controller_update_hook(cid, obj, controllers):
    """Controllers/EvpnPlugin.pm on_update_hook: one evpn controller in all, with exactly one of peers and fabric."""
    if any(other != cid and oobj.get('type') == 'evpn' for other, oobj in controllers.items()):
        raise die('only 1 global evpn controller can be defined at /usr/share/perl5/PVE/Network/SDN/Controllers/EvpnPlugin.pm line 491.\n')
    if bool(obj.get('peers')) == bool(obj.get('fabric')):
        raise die('must have exactly one of peers / fabric defined at /usr/share/perl5/PVE/Network/SDN/Controllers/EvpnPlugin.pm line 496.\n')


def _zone_update_hook(_zid, obj, _zones):
    """The zone plugin's on_update_hook, run before write_config: a vxlan zone has exactly one of peers and fabric
    (Zones/VxlanPlugin.pm on_update_hook; before pve-network commit 472f28f, PVE 8, peers was simply required)."""
    if obj.get('type') == 'vxlan' and bool(obj.get('peers')) == bool(obj.get('fabric')):
        message = 'must have exactly one of peers / fabric defined'
        raise param_error(peers=message, fabric=message)


def _parse_range(item):
    """`start-address=A,end-address=B` (SubnetPlugin.pm $dhcp_range_fmt) as a dict; a dict stays one."""
    if isinstance(item, dict):
        return dict(item)
    parsed = {}
    for part in str(item).split(','):
        key, _eq, value = part.partition('=')
        parsed[key.strip()] = value.strip()
    return parsed


def _check_config(options, p, create):
    """SectionConfig.pm check_config / check_value: known keys only, no line feed in a value, the required ones on
    create."""
    for key in sorted(p):
        if key not in options:
            raise die(f"unexpected property '{key}'\n")
        if re.search(r'[\n\r]', str(p[key])):
            raise die('property contains a line feed\n')
    if create:
        for key in sorted(options):
            if options[key] and p.get(key) is None:
                raise die(f"missing value for required option '{key}'\n")


def _delete_keys(obj, options, p, delete):
    """SectionConfig.pm delete_from_config."""
    for key in delete:
        if key not in options:
            raise die(f"no such option '{key}'\n")
        if options[key]:
            raise die(f"unable to delete required option '{key}'\n")
        if key in p:
            raise die(f"cannot set and delete property '{key}' at the same time!\n")
        obj.pop(key, None)


def _net_props(value):
    """The properties of a netN value (`virtio=MAC,bridge=vmbr0,tag=20`)."""
    props = {}
    for item in str(value).split(','):
        key, _eq, val = item.partition('=')
        props[key.strip()] = val
    return props


def _trunk_tags(trunks):
    """GuestHelpers.pm get_tags_from_trunk: `10;20-22` is 10, 20, 21, 22."""
    tags = set()
    for trunk in trunks.split(';'):
        first, _dash, last = trunk.partition('-')
        tags.update(range(int(first), int(last) + 1) if last and int(last) > int(first) else [int(first)])
    return sorted(tags)


class SdnMixin:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # /etc/pve/sdn/{zones,vnets,subnets}.cfg: kind -> id -> settings (with `type`).
        self.sdn_config = {kind: {} for kind in KINDS}
        # .running-config: what the last PUT /cluster/sdn committed.
        self.sdn_running = {kind: {} for kind in KINDS}
        self.sdn_version = 0
        # /etc/pve/sdn/.lock: the token of the global SDN lock (SDN.pm create_global_lock), None when not held.
        self.sdn_lock = None
        # node -> why its `ifreload -a` fails (the lab's way to make a node's network reload fail).
        self.network_reload_failures = {}

    @property
    def sdn_vnets(self):
        """VNet -> its zone."""
        return {vnet: obj['zone'] for vnet, obj in self.sdn_config['vnets'].items()}

    def add_vnet(self, vnet, zone):
        """An SDN VNet `vnet` in zone `zone`, applied."""
        obj = {'type': 'vnet', 'zone': zone}
        self.sdn_config['vnets'][vnet] = obj
        self.sdn_running['vnets'][vnet] = dict(obj)

    def _routes_lab_sdn(self):
        return [
            ('GET', VNETS, self._lab_vnets_index),
            ('POST', VNETS, self._lab_vnet_create),
            ('GET', VNET, self._lab_vnet_read),
            ('PUT', VNET, self._lab_vnet_update),
            ('DELETE', VNET, self._lab_vnet_delete),
            ('GET', ZONES, self._lab_zones_index),
            ('POST', ZONES, self._lab_zone_create),
            ('GET', ZONE, self._lab_zone_read),
            ('PUT', ZONE, self._lab_zone_update),
            ('DELETE', ZONE, self._lab_zone_delete),
            ('GET', SUBNETS, self._lab_subnets_index),
            ('POST', SUBNETS, self._lab_subnet_create),
            ('GET', SUBNET, self._lab_subnet_read),
            ('PUT', SUBNET, self._lab_subnet_update),
            ('DELETE', SUBNET, self._lab_subnet_delete),
            ('PUT', '/cluster/sdn', self._lab_sdn_apply),
            ('POST', '/cluster/sdn/lock', self._lab_sdn_lock),
            ('DELETE', '/cluster/sdn/lock', self._lab_sdn_release_lock),
            ('POST', '/cluster/sdn/rollback', self._lab_sdn_rollback),
            ('GET', CONTROLLERS, self._lab_controllers_index),
            ('POST', CONTROLLERS, self._lab_controller_create),
            ('DELETE', CONTROLLER, self._lab_controller_delete),
            ('GET', '/cluster/sdn/fabrics/all', self._lab_fabrics_all),
        ]

    def _locked(self, errmsg, code, v):
        """SDN.pm lock_sdn_config and lock_sdn_domain: while the global lock is held, only a request with its token
        runs code; a plain die gets errmsg in front, a parameter exception passes as it is."""
        try:
            if self.sdn_lock is not None and v.get('lock-token') != self.sdn_lock:
                raise die(BAD_TOKEN)
            return code()
        except PveError as exc:
            if exc.status == 500:
                raise die(f'{errmsg}: {exc.message}') from None
            raise

    def _sdn_view(self, kind, v):
        """The objects of kind as an index or read shows them: config, running (`running`) or pending (`pending`)."""
        if v.get('pending'):
            return pending_config(self.sdn_running[kind], self.sdn_config[kind])
        if v.get('running'):
            return copy.deepcopy(self.sdn_running[kind])
        return copy.deepcopy(self.sdn_config[kind])

    # --------------------------------------------------------------------------------------------------- zones

    async def _lab_zones_index(self, v, user):
        """Zones.pm index: the zones on which the user holds SDN.Audit or SDN.Allocate, of `type` if given."""
        listed = []
        for zone, obj in sorted(self._sdn_view('zones', v).items()):
            if not any(self.allowed(user, f'/sdn/zones/{zone}', priv) for priv in ('SDN.Audit', 'SDN.Allocate')):
                continue
            if v.get('type') and v['type'] != obj.get('type'):
                continue
            listed.append(dict(obj, zone=zone))
        return listed

    async def _lab_zone_read(self, v, user):
        objs = self._sdn_view('zones', v)
        if v['zone'] not in objs:
            raise die(f"sdn zone '{v['zone']}' does not exist\n")
        return dict(objs[v['zone']], zone=v['zone'])

    @staticmethod
    def _settings(v):
        return {key: value for key, value in v.items() if key not in NOT_SETTINGS}

    def _typed_create(self, what, options, v, hook):
        """Zones.pm and Controllers.pm create: the type plugin's check_config (before the lock), then, under it, a new
        ID whose object passes the plugin's on_update_hook before it is written."""
        kind, oid, p = v['type'], v[what], self._settings(v)
        if kind not in options:
            raise die(f'the lab models no {kind} {what}\n')
        _check_config(options[kind], p, create=True)

        def code():
            if oid in self.sdn_config[what + 's']:
                raise die(f"sdn {what} object ID '{oid}' already defined\n")
            obj = dict(p, type=kind)
            hook(oid, obj, self.sdn_config[what + 's'])
            self.sdn_config[what + 's'][oid] = obj

        self._locked(f'create sdn {what} object failed', code, v)

    async def _lab_zone_create(self, v, user):
        """Zones.pm create (the vxlan plugin's on_update_hook)."""
        self._typed_create('zone', ZONE_OPTIONS, v, _zone_update_hook)

    async def _lab_zone_update(self, v, user):
        """Zones.pm update: the settings sent replace those of the zone, `delete` removes keys."""
        zone, p = v['zone'], self._settings(v)

        def code():
            obj = self.sdn_config['zones'].get(zone)
            if obj is None:
                raise die(f"sdn zone '{zone}' does not exist\n")
            options = ZONE_OPTIONS[obj['type']]
            _check_config(options, p, create=False)
            new = copy.deepcopy(obj)
            _delete_keys(new, options, p, split_list(v.get('delete')))
            new.update(p)
            _zone_update_hook(zone, new, self.sdn_config['zones'])
            self.sdn_config['zones'][zone] = new

        self._locked('update sdn zone object failed', code, v)

    async def _lab_zone_delete(self, v, user):
        """Zones.pm delete with Zones/Plugin.pm on_delete_hook: not while a VNet of the config is in the zone."""
        zone = v['zone']

        def code():
            if zone not in self.sdn_config['zones']:
                raise die(f"sdn zone '{zone}' does not exist\n")
            for vnet, obj in self.sdn_config['vnets'].items():
                if obj.get('zone') == zone:
                    raise die(f'zone {zone} is used by vnet {vnet}')
            del self.sdn_config['zones'][zone]

        self._locked('delete sdn zone object failed', code, v)

    # --------------------------------------------------------------------------------------------------- VNets

    async def _lab_vnets_index(self, v, user):
        """Vnets.pm index: the VNets on which the user holds SDN.Audit or SDN.Allocate (zone from config or pending)."""
        listed = []
        for vnet, obj in sorted(self._sdn_view('vnets', v).items()):
            zone = obj.get('zone') or (obj.get('pending') or {}).get('zone')
            path = f'/sdn/zones/{zone}/{vnet}'
            if any(self.allowed(user, path, priv) for priv in ('SDN.Audit', 'SDN.Allocate')):
                listed.append(dict(obj, vnet=vnet))
        return listed

    async def _lab_vnet_read(self, v, user):
        objs = self._sdn_view('vnets', v)
        if v['vnet'] not in objs:
            raise die(f"sdn vnet '{v['vnet']}' does not exist\n")
        return dict(objs[v['vnet']], vnet=v['vnet'])

    def _vnet_access(self, user, vnet):
        """Vnets.pm $check_vnet_access: SDN.Allocate on /sdn/zones/ZONE/VNET (ZONE from the config)."""
        obj = self.sdn_config['vnets'].get(vnet)
        if obj is None:
            raise die(f"sdn vnet '{vnet}' does not exist\n")
        self.require(user, f"/sdn/zones/{obj['zone']}/{vnet}", 'SDN.Allocate')

    def _vnet_update_hook(self, vnet):
        """The zone plugin's vnet_update_hook (Simple/Vlan/VxlanPlugin.pm)."""
        vnets, zones = self.sdn_config['vnets'], self.sdn_config['zones']
        obj = vnets[vnet]
        kind = (zones.get(obj['zone']) or {}).get('type')
        tag = obj.get('tag')
        if kind == 'simple':
            if tag is not None:
                raise param_error(tag='vlan tag is not allowed on simple zone')
            obj.setdefault('mac', 'BC:24:11:%02X:%02X:%02X' % tuple(random.randrange(256) for _octet in range(3)))
        elif kind == 'vlan':
            if tag is None:
                raise param_error(tag='missing vlan tag')
            if int(tag) > 4096:
                raise param_error(tag='vlan tag max value is 4096')
            for other, oobj in vnets.items():
                if other != vnet and oobj.get('zone') == obj['zone'] and oobj.get('tag') and str(oobj['tag']) == str(tag):
                    raise param_error(tag=f'tag {tag} already exist in vnet {other}')
        elif kind == 'vxlan':
            if tag is None:
                raise param_error(tag='missing vxlan tag')
            for other in sorted(vnets):
                oobj = vnets[other]
                okind = (zones.get(oobj.get('zone')) or {}).get('type')
                if other != vnet and okind in ('vxlan', 'evpn') and oobj.get('tag') and str(oobj['tag']) == str(tag):
                    raise param_error(tag=f"vxlan tag {tag} already exist in vnet {other} in zone {oobj['zone']} ")

    def _vnet_on_update_hook(self, vnet):
        """VnetPlugin.pm on_update_hook: a VLAN-aware VNet has no subnets."""
        if self.sdn_config['vnets'][vnet].get('vlanaware') and self._vnet_subnets(vnet):
            raise param_error(vlanaware='vlanaware vnet is not compatible with subnets')

    def _vnet_subnets(self, vnet):
        """Vnets.pm get_subnets (of the config)."""
        return sorted(sid for sid, obj in self.sdn_config['subnets'].items() if obj.get('vnet') == vnet)

    async def _lab_vnet_create(self, v, user):
        """Vnets.pm create (SDN.Allocate on /sdn/zones/{zone}, checked by the schema's rule)."""
        vnet, p = v['vnet'], self._settings(v)
        p['zone'] = v['zone']

        def code():
            _check_config(VNET_OPTIONS, p, create=True)
            if vnet in self.sdn_config['vnets']:
                raise die(f"sdn vnet object ID '{vnet}' already defined\n")
            self.sdn_config['vnets'][vnet] = dict(p, type='vnet')
            try:
                self._vnet_update_hook(vnet)
                self._vnet_on_update_hook(vnet)
            except PveError:
                del self.sdn_config['vnets'][vnet]  # write_config is never reached
                raise

        self._locked('create sdn vnet object failed', code, v)

    async def _lab_vnet_update(self, v, user):
        """Vnets.pm update: the zone may change only while the VNet has no subnets."""
        vnet, p = v['vnet'], self._settings(v)
        if v.get('zone') is not None:
            p['zone'] = v['zone']
        self._vnet_access(user, vnet)

        def code():
            obj = self.sdn_config['vnets'][vnet]
            before = copy.deepcopy(obj)
            _check_config(VNET_OPTIONS, p, create=False)
            _delete_keys(obj, VNET_OPTIONS, p, split_list(v.get('delete')))
            obj.update(p)
            try:
                if not obj.get('zone'):
                    raise param_error(zone='cannot delete zone')
                if self._vnet_subnets(vnet) and before['zone'] != obj['zone']:
                    raise param_error(zone="can't change zone if subnets exist")
                self._vnet_update_hook(vnet)
                self._vnet_on_update_hook(vnet)
            except PveError:
                self.sdn_config['vnets'][vnet] = before
                raise

        self._locked('update sdn vnet object failed', code, v)

    async def _lab_vnet_delete(self, v, user):
        """Vnets.pm delete with VnetPlugin.pm on_delete_hook: not while the VNet has subnets. No guest is checked."""
        vnet = v['vnet']
        self._vnet_access(user, vnet)

        def code():
            if self._vnet_subnets(vnet):
                raise param_error(vnet="Can't delete vnet if subnets exists")
            del self.sdn_config['vnets'][vnet]

        self._locked('delete sdn vnet object failed', code, v)

    # ------------------------------------------------------------------------------------------------- subnets

    @staticmethod
    def _subnet_out(sid, obj):
        """Subnets.pm sdn_subnets_config and $api_sdn_subnets_config: the fields derived from the ID, dhcp-range parsed."""
        zone, network, mask = sid.split('-')
        out = dict(obj, id=sid, subnet=sid, cidr=f'{network}/{mask}', zone=zone, network=network, mask=mask)
        out['dhcp-range'] = [_parse_range(item) for item in obj.get('dhcp-range') or ()]
        return out

    async def _lab_subnets_index(self, v, user):
        """Subnets.pm index: SDN.Audit or SDN.Allocate on the VNet, then the subnets whose `vnet` is it."""
        vnet = v['vnet']
        obj = self.sdn_config['vnets'].get(vnet)
        if obj is None:
            raise die(f"sdn vnet '{vnet}' does not exist\n")
        path = f"/sdn/zones/{obj['zone']}/{vnet}"
        if not any(self.allowed(user, path, priv) for priv in ('SDN.Audit', 'SDN.Allocate')):
            raise PveError(403, f'Permission check failed ({path}, SDN.Audit|SDN.Allocate)')
        return [self._subnet_out(sid, sobj) for sid, sobj in sorted(self._sdn_view('subnets', v).items()) if sobj.get('vnet') == vnet]

    async def _lab_subnet_read(self, v, user):
        objs = self._sdn_view('subnets', v)
        sid = v['subnet']
        if sid not in objs:
            raise die(f"sdn subnet '{sid}' does not exist\n")
        if objs[sid].get('vnet') != v['vnet']:
            raise param_error(vnet='wrong vnet')
        return self._subnet_out(sid, objs[sid])

    def _subnet_hook(self, sid, obj):
        """SubnetPlugin.pm on_update_hook: the VNet exists and is not VLAN-aware, the gateway inside, the DHCP ranges."""
        _zone, network, mask = sid.split('-')
        net = ipaddress.ip_network(f'{network}/{mask}', strict=False)
        vnet = self.sdn_config['vnets'].get(obj['vnet'])
        if vnet is None:
            raise param_error(vnet=f"{obj['vnet']} don't exist")
        if vnet.get('vlanaware'):
            raise param_error(vnet="you can't add a subnet on a vlanaware vnet")
        gateway = obj.get('gateway')
        pointopoint = net.version == 4 and net.prefixlen == 32
        if gateway and ipaddress.ip_address(gateway) not in net and not pointopoint:
            raise param_error(gateway=f'{gateway} is not in subnet {net.with_prefixlen}')
        ranges = []
        for item in obj.get('dhcp-range') or ():
            parsed = _parse_range(item)
            start, end = parsed.get('start-address'), parsed.get('end-address')
            try:
                first, last = ipaddress.ip_address(start), ipaddress.ip_address(end)
            except ValueError:
                raise param_error(**{'dhcp-range': f'start-address is not a valid IP {start}'}) from None
            if first > last:
                raise param_error(**{'dhcp-range': f'start-address {start} must be smaller than end-address {end}'})
            if first not in net:
                raise param_error(**{'dhcp-range': f'start-address {start} is not in subnet {net.with_prefixlen}'})
            if last not in net:
                raise param_error(**{'dhcp-range': f'end-address {end} is not in subnet {net.with_prefixlen}'})
            if any(first <= other_last and other_first <= last for other_first, other_last in ranges):
                raise param_error(**{'dhcp-range': 'dhcp ranges must not overlap'})
            ranges.append((first, last))

    async def _lab_subnet_create(self, v, user):
        """Subnets.pm create: the ID is ZONE-NETWORK-MASK of the VNet's zone and the CIDR given as `subnet`."""
        vnet, cidr, p = v['vnet'], v['subnet'], self._settings(v)
        p['vnet'] = vnet
        self._vnet_access(user, vnet)

        def code():
            zone = self.sdn_config['vnets'][vnet]['zone']
            sid = f"{zone}-{cidr.replace('/', '-')}"
            _check_config(SUBNET_OPTIONS, p, create=True)
            if sid in self.sdn_config['subnets']:
                raise die(f"sdn subnet object ID '{sid}' already defined\n")
            obj = dict(p, type='subnet')
            self._subnet_hook(sid, obj)
            self.sdn_config['subnets'][sid] = obj

        self._locked('create sdn subnet object failed', code, v)

    async def _lab_subnet_update(self, v, user):
        """Subnets.pm update: the settings sent replace those of the subnet, `delete` removes keys."""
        vnet, sid, p = v['vnet'], v['subnet'], self._settings(v)
        self._vnet_access(user, vnet)

        def code():
            obj = self.sdn_config['subnets'].get(sid)
            if obj is None:
                raise die(f"sdn subnet '{sid}' does not exist\n")
            new = copy.deepcopy(obj)
            _check_config(SUBNET_OPTIONS, p, create=False)
            _delete_keys(new, SUBNET_OPTIONS, p, split_list(v.get('delete')))
            new.update(p)
            new['vnet'] = obj['vnet']
            self._subnet_hook(sid, new)
            self.sdn_config['subnets'][sid] = new

        self._locked('update sdn subnet object failed', code, v)

    async def _lab_subnet_delete(self, v, user):
        """Subnets.pm delete."""
        vnet, sid = v['vnet'], v['subnet']
        self._vnet_access(user, vnet)

        def code():
            self.sdn_config['subnets'].pop(sid, None)

        self._locked('delete sdn subnet object failed', code, v)

    # ---------------------------------------------------------------------------------------------------- apply

    def has_pending_changes(self):
        """SDN.pm has_pending_changes: an object of zones, VNets, subnets or controllers differs from the running config
        (fabrics are not read)."""
        return any(
            entry.get('pending') is not None for kind in PENDING_KINDS for entry in pending_config(self.sdn_running[kind], self.sdn_config[kind]).values()
        )

    def _running_has_frr(self):
        """SDN.pm running_config_has_frr: the running config has a controller or a fabric."""
        return bool(self.sdn_running['controllers'] or self.sdn_running['fabrics'])

    async def _lab_sdn_apply(self, v, user):
        """SDN.pm reload (`PUT /cluster/sdn`): under the lock (with its token, released after unless release-lock=0),
        commit_config makes the running config the config's copy; then the task reloadnetworkall runs, for every node
        of the cluster (get_nodelist, offline ones too), `pvesh set /nodes/NODE/network --regenerate-frr N`:
        pve-manager PVE/API2/Network.pm reload_network_config, a srvreload task on that node as root@pam which renames
        /etc/network/interfaces.new over /etc/network/interfaces (staged node changes are applied) and runs
        `ifreload -a`. A node pvesh cannot reach fails the command, which the task only prints (`warn $@`); a
        failing srvreload does not fail pvesh (a CLI worker's result is not its exit code, pve-common
        RESTEnvironment.pm fork_worker), so the task ends OK either way."""
        frr_before = self._running_has_frr()

        def commit():
            self.sdn_running = copy.deepcopy(self.sdn_config)
            self.sdn_version += 1
            if v.get('lock-token') and v.get('release-lock', 1) not in (0, '0'):
                self.sdn_lock = None

        self._locked('could not commit SDN config', commit, v)
        regenerate = 1 if frr_before or self._running_has_frr() else 0
        log = []

        async def body():
            for node in sorted(self.nodes):
                log.append(f'{node}: reloading network config')
                if not self.nodes[node].get('online', True):
                    log.append(f"command 'pvesh set /nodes/{node}/network --regenerate-frr {regenerate}' failed: exit code 255")
                    continue
                upid = await self._lab_network_reload({'node': node}, 'root@pam')
                while self.tasks[upid]['status'] != 'stopped':
                    await asyncio.sleep(0.01)
            return None

        upid = await self.task(sorted(self.nodes)[0], 'reloadnetworkall', '', user, body)
        record = self.tasks[upid]
        # The task's log is these lines as printed: a task of a scaled lab has not begun yet (its lines go on after
        # them), one of an unscaled lab has ended (its TASK OK after them).
        record['log'] = log if record['status'] == 'running' else log + record['log']
        return upid

    async def task(self, node, ttype, tid, user, body, vm=None, lock=True, log=()):
        failure = self.network_reload_failures.get(node) if ttype == 'srvreload' else None
        if failure:

            async def failing():
                files = self.node_networks[node]
                if files['new'] is not None:
                    files['current'], files['new'] = files['new'], None
                raise TaskError(failure)

            body = failing
        return await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)

    async def _lab_sdn_lock(self, v, user):
        """API2/Network/SDN.pm lock: under lock_sdn_config (a held lock refuses), `configuration has pending changes`
        unless allow-pending; else create_global_lock writes a new token (a UUID v7) and returns it."""

        def code():
            if v.get('allow-pending') in (None, 0, '0') and self.has_pending_changes():
                raise die(PENDING_AT_LOCK)
            self.sdn_lock = str(uuid.uuid4())  # PVE's is a UUID v7, which Python 3.11 cannot make
            return self.sdn_lock

        return self._locked('could not acquire lock for SDN config', code, {})

    async def _lab_sdn_release_lock(self, v, user):
        """API2/Network/SDN.pm release_lock: with force, without the token; else under lock_sdn_config with it."""

        def code():
            self.sdn_lock = None

        if v.get('force') not in (None, 0, '0'):
            return code()
        return self._locked('could not release lock', code, v)

    async def _lab_sdn_rollback(self, v, user):
        """API2/Network/SDN.pm rollback: under lock_sdn_config, the running config is written over the config files
        (zones, VNets, subnets, controllers, fabrics); with a token, the lock is released unless release-lock=0."""

        def code():
            self.sdn_config = copy.deepcopy(self.sdn_running)
            if v.get('lock-token') and v.get('release-lock', 1) not in (0, '0'):
                self.sdn_lock = None

        return self._locked('could not rollback SDN configuration', code, v)

    # ------------------------------------------------------------------------------------ controllers, fabrics

    async def _lab_controllers_index(self, v, user):
        """Controllers.pm index: the controllers on which the user holds SDN.Audit or SDN.Allocate."""
        return [
            dict(obj, controller=cid)
            for cid, obj in sorted(self._sdn_view('controllers', v).items())
            if any(self.allowed(user, f'/sdn/controllers/{cid}', priv) for priv in ('SDN.Audit', 'SDN.Allocate'))
        ]

    async def _lab_controller_create(self, v, user):
        """Controllers.pm create (the evpn plugin's on_update_hook)."""
        self._typed_create('controller', CONTROLLER_OPTIONS, v, _controller_update_hook)

    async def _lab_controller_delete(self, v, user):
        """Controllers.pm delete."""

        def code():
            if v['controller'] not in self.sdn_config['controllers']:
                raise die(f"sdn controller object ID '{v['controller']}' does not exist\n")
            del self.sdn_config['controllers'][v['controller']]

        self._locked('delete sdn controller object failed', code, v)

    def add_fabric(self, fabric, protocol, **settings):
        """A fabric in fabrics.cfg, not applied, as `POST /cluster/sdn/fabrics/fabric` (Fabrics/Fabric.pm add_fabric)
        writes it; that route is not served, as fakepve's schema check cannot tell the protocol's properties apart (its
        `oneOf` by `type-property`)."""
        self.sdn_config['fabrics'][fabric] = dict(settings, id=fabric, protocol=protocol)

    async def _lab_fabrics_all(self, v, user):
        """Fabrics.pm list_all: {fabrics, nodes}, with pending=1 pending_config of each, the fabrics on which the user
        holds SDN.Audit or SDN.Allocate. The entries are the objects as they are: pending_config keeps only `type` and
        `vnet` top-level for an object the running config lacks, so a new fabric's `id` is in its `pending` (as a new
        fabric node's `fabric_id`, which list_all itself reads as `$node->{fabric_id} // $node->{pending}->{fabric_id}`)."""
        fabrics = self._sdn_view('fabrics', v)
        listed = [obj for fid, obj in sorted(fabrics.items()) if any(self.allowed(user, f'/sdn/fabrics/{fid}', priv) for priv in ('SDN.Audit', 'SDN.Allocate'))]
        return {'fabrics': listed, 'nodes': []}

    def check_vnet_access(self, user, value):
        """GuestHelpers.pm check_vnet_access for one NIC value."""
        if user == 'root@pam':
            return
        props = _net_props(value)
        bridge = props.get('bridge')
        if not bridge:
            return
        path = '/sdn/zones/{0}/{1}'.format(self.sdn_vnets.get(bridge, 'localnetwork'), bridge)
        tags = ([props['tag']] if props.get('tag') else []) + (_trunk_tags(props['trunks']) if props.get('trunks') else [])
        for tag in tags:
            self.require(user, f'{path}/{tag}', 'SDN.Use')
        if not tags:
            self.require(user, path, 'SDN.Use')

    def _check_bridges(self, user, config):
        for key in sorted(config):
            if NET_KEY.match(key):
                self.check_vnet_access(user, config[key])

    async def _qm_create(self, v, user):
        self._check_bridges(user, v)
        return await super()._qm_create(v, user)

    async def _qm_clone(self, v, user):
        try:
            source = self.find(v['node'], v['vmid'])
        except PveError:
            source = None  # fakepve's own clone answers for a missing source
        if source is not None:
            snapname = v.get('snapname')
            self._check_bridges(user, source.snapshots.get(snapname, {}) if snapname else source.config)
        return await super()._qm_clone(v, user)

    async def _config_post(self, request):
        # update_vm_api checks the bridges of the values it sets before it forks the task of the asynchronous form.
        self._check_bridges(request[USER], await params(request))
        return await super()._config_post(request)

    async def _apply_config(self, vm, user, p):
        self._check_bridges(user, p)
        current = vm.config  # the value in effect, not a pending one (update_vm: $conf->{$opt})
        replaced = [key for key in p if NET_KEY.match(key)] + [key for key in split_list(p.get('delete')) if NET_KEY.match(key)]
        for key in sorted(set(replaced)):
            if current.get(key):
                self.check_vnet_access(user, current[key])
        return await super()._apply_config(vm, user, p)
