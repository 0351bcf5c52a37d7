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
"""

import re

from fakepve.model import PveError
from fakepve.routing import split_list
from fakepve.server import USER, params

NET_KEY = re.compile(r'net\d+$')
VNETS = '/cluster/sdn/vnets'


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
        # VNet -> its zone.
        self.sdn_vnets = {}

    def add_vnet(self, vnet, zone):
        """An SDN VNet `vnet` in zone `zone`, applied."""
        self.sdn_vnets[vnet] = zone

    def _routes_lab_sdn(self):
        return [('GET', VNETS, self._lab_vnets_index)]

    async def _lab_vnets_index(self, v, user):
        listed = []
        for vnet, zone in sorted(self.sdn_vnets.items()):
            path = f'/sdn/zones/{zone}/{vnet}'
            if any(self.allowed(user, path, priv) for priv in ('SDN.Audit', 'SDN.Allocate')):
                listed.append({'vnet': vnet, 'zone': zone, 'type': 'vnet'})
        return listed

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
