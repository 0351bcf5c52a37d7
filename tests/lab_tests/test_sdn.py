"""SDN VNets and the bridge check of a VM's NICs (lab/pve/sdn.py): SDN.Use in the VNet's own zone, localnetwork for a
plain bridge, per VLAN tag; the VNet list shows what the user may audit."""

import requests
from test_privileges import as_token

CONFIG = '/nodes/pve1/qemu/9017/config'
VM_PRIVS = ['VM.Audit', 'VM.Config.Network', 'VM.Allocate', 'VM.Clone', 'VM.Config.Options']


def token(lab, name, grants):
    tokenid = lab.call(lambda: lab.pve.add_api_token('carol@pve', name, name + '-secret', grants))
    return as_token(lab, tokenid, name + '-secret')


def test_a_nic_on_a_plain_bridge_needs_sdn_use_in_localnetwork(lab):
    bare = token(lab, 'bare', {'/vms': VM_PRIVS})
    assert bare('PUT', CONFIG, net1='virtio,bridge=vmbr1') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr1, SDN.Use)')
    local = token(lab, 'local', {'/vms': VM_PRIVS, '/sdn/zones/localnetwork': ['SDN.Use']})
    assert local('PUT', CONFIG, net1='virtio,bridge=vmbr1')[0] == 200


def test_a_nic_on_a_vnet_needs_sdn_use_in_the_vnets_own_zone(lab):
    lab.call(lambda: lab.pve.add_vnet('web', 'dmz'))
    local = token(lab, 'local', {'/vms': VM_PRIVS, '/sdn/zones/localnetwork': ['SDN.Use']})
    assert local('PUT', CONFIG, net1='virtio,bridge=web') == (403, 'Permission check failed (/sdn/zones/dmz/web, SDN.Use)')
    zone = token(lab, 'zone', {'/vms': VM_PRIVS, '/sdn/zones/dmz': ['SDN.Use']})
    assert zone('PUT', CONFIG, net1='virtio,bridge=web')[0] == 200


def test_a_vlan_tag_and_each_trunk_tag_are_checked_on_their_own_path(lab):
    vlan = token(lab, 'vlan', {'/vms': VM_PRIVS, '/sdn/zones/localnetwork/vmbr1/30': ['SDN.Use']})
    assert vlan('PUT', CONFIG, net1='virtio,bridge=vmbr1,tag=20') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr1/20, SDN.Use)')
    assert vlan('PUT', CONFIG, net1='virtio,bridge=vmbr1,tag=30')[0] == 200
    assert vlan('PUT', CONFIG, net2='virtio,bridge=vmbr1,trunks=29-31') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr1/29, SDN.Use)')


def test_replacing_or_deleting_a_nic_checks_the_bridge_it_leaves(lab):
    lab.call(lambda: lab.pve.add_vnet('web', 'dmz'))
    zone = token(lab, 'zone', {'/vms': VM_PRIVS, '/sdn/zones/dmz': ['SDN.Use']})
    # The template's net0 is on vmbr0, a plain bridge the token may not use.
    assert zone('PUT', CONFIG, net0='virtio,bridge=web') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)')
    assert zone('PUT', CONFIG, delete='net0') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)')


def test_a_clone_and_a_create_check_the_bridges_of_their_config(lab):
    grants = {'/vms': VM_PRIVS, '/storage': ['Datastore.AllocateSpace', 'Datastore.Audit']}
    bare = token(lab, 'bare', grants)
    assert bare('POST', '/nodes/pve1/qemu/9017/clone', newid=140, name='c1') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)')
    assert bare('POST', '/nodes/pve1/qemu', vmid=141, name='n1', net0='virtio,bridge=vmbr2') == (
        403,
        'Permission check failed (/sdn/zones/localnetwork/vmbr2, SDN.Use)',
    )
    assert lab.pve.vm(140) is None and lab.pve.vm(141) is None


def test_the_vnet_list_shows_only_the_vnets_the_user_may_audit(lab, api):
    lab.call(lambda: (lab.pve.add_vnet('web', 'dmz'), lab.pve.add_vnet('db', 'back')))
    assert [(item['vnet'], item['zone']) for item in api.data('GET', '/cluster/sdn/vnets')] == [('db', 'back'), ('web', 'dmz')]
    lab.call(lambda: lab.pve.add_api_token('carol@pve', 'audit', 'audit-secret', {'/sdn/zones/dmz': ['SDN.Audit'], '/sdn/zones/back': ['SDN.Use']}))
    response = requests.get(
        lab.url + '/api2/json/cluster/sdn/vnets', verify=lab.cafile, timeout=30, headers={'Authorization': 'PVEAPIToken=carol@pve!audit=audit-secret'}
    )
    assert response.status_code == 200
    assert [(item['vnet'], item['zone']) for item in response.json()['data']] == [('web', 'dmz')]


def test_the_asynchronous_config_update_refuses_a_bridge_before_its_task(lab):
    bare = token(lab, 'bare', {'/vms': VM_PRIVS})
    assert bare('POST', CONFIG, net1='virtio,bridge=vmbr1') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr1, SDN.Use)')


# The SDN objects, their pending state and the apply (lab/pve/sdn.py, pve-network's SDN.pm pending_config and reload).


def by_id(items, key):
    return {item[key]: item for item in items}


def test_a_new_zone_vnet_and_subnet_are_pending_until_the_apply_commits_them(lab, api):
    api.data('POST', '/cluster/sdn/zones', zone='lan', type='vlan', bridge='vmbr0', mtu=1450)
    api.data('POST', '/cluster/sdn/vnets', vnet='web', zone='lan', tag=20, alias='web tier')
    api.data('POST', '/cluster/sdn/vnets/web/subnets', subnet='127.20.0.0/24', type='subnet', gateway='127.20.0.1', snat=1)
    zone = by_id(api.data('GET', '/cluster/sdn/zones', pending=1), 'zone')['lan']
    assert (zone['state'], zone['type'], zone['pending']) == ('new', 'vlan', {'bridge': 'vmbr0', 'mtu': 1450})
    vnet = by_id(api.data('GET', '/cluster/sdn/vnets', pending=1), 'vnet')['web']
    assert (vnet['state'], vnet['pending']) == ('new', {'alias': 'web tier', 'tag': 20, 'zone': 'lan'})
    subnet = api.data('GET', '/cluster/sdn/vnets/web/subnets', pending=1)[0]
    assert (subnet['subnet'], subnet['cidr'], subnet['vnet'], subnet['state']) == ('lan-127.20.0.0-24', '127.20.0.0/24', 'web', 'new')
    assert subnet['pending'] == {'gateway': '127.20.0.1', 'snat': 1}
    # The config itself lists them plainly; the running config has none of them yet.
    assert by_id(api.data('GET', '/cluster/sdn/zones'), 'zone')['lan']['bridge'] == 'vmbr0'
    assert 'lan' not in by_id(api.data('GET', '/cluster/sdn/zones', running=1), 'zone')
    status = api.run('PUT', '/cluster/sdn')
    assert (status['exitstatus'], status['type']) == ('OK', 'reloadnetworkall')
    zone = by_id(api.data('GET', '/cluster/sdn/zones', pending=1), 'zone')['lan']
    assert 'state' not in zone and 'pending' not in zone and zone['mtu'] == 1450
    assert 'state' not in api.data('GET', '/cluster/sdn/vnets/web/subnets', pending=1)[0]


def test_a_change_and_a_delete_are_pending_until_applied(lab, api):
    api.data('POST', '/cluster/sdn/zones', zone='lan', type='vlan', bridge='vmbr0', mtu=1450)
    api.data('POST', '/cluster/sdn/zones', zone='old', type='simple')
    api.run('PUT', '/cluster/sdn')
    api.data('PUT', '/cluster/sdn/zones/lan', mtu=1400)
    api.data('PUT', '/cluster/sdn/zones/lan', delete='mtu', bridge='vmbr1')
    api.data('DELETE', '/cluster/sdn/zones/old')
    zones = by_id(api.data('GET', '/cluster/sdn/zones', pending=1), 'zone')
    assert (zones['lan']['state'], zones['lan']['pending'], zones['lan']['mtu']) == ('changed', {'mtu': 'deleted', 'bridge': 'vmbr1'}, 1450)
    assert (zones['old']['state'], zones['old']['type']) == ('deleted', 'simple')
    api.run('PUT', '/cluster/sdn')
    zones = by_id(api.data('GET', '/cluster/sdn/zones', pending=1), 'zone')
    assert set(zones) == {'lan'} and 'mtu' not in zones['lan'] and 'state' not in zones['lan']


def test_the_zone_plugins_check_keys_and_tags(lab, api):
    assert api.error('POST', '/cluster/sdn/zones', zone='lan', type='vlan')[:2] == (500, "missing value for required option 'bridge'")
    assert api.error('POST', '/cluster/sdn/zones', zone='lan', type='simple', bridge='vmbr0')[:2] == (500, "unexpected property 'bridge'")
    api.data('POST', '/cluster/sdn/zones', zone='lan', type='vlan', bridge='vmbr0')
    api.data('POST', '/cluster/sdn/zones', zone='flat', type='simple')
    api.data('POST', '/cluster/sdn/zones', zone='ovl', type='vxlan', peers='127.0.0.1,127.0.0.2')
    assert api.error('POST', '/cluster/sdn/vnets', vnet='va', zone='lan')[::2] == (400, {'tag': 'missing vlan tag'})
    assert api.error('POST', '/cluster/sdn/vnets', vnet='va', zone='flat', tag=5)[::2] == (400, {'tag': 'vlan tag is not allowed on simple zone'})
    assert api.error('POST', '/cluster/sdn/vnets', vnet='va', zone='ovl')[::2] == (400, {'tag': 'missing vxlan tag'})
    api.data('POST', '/cluster/sdn/vnets', vnet='va', zone='lan', tag=20)
    assert api.error('POST', '/cluster/sdn/vnets', vnet='vb', zone='lan', tag=20)[::2] == (400, {'tag': 'tag 20 already exist in vnet va'})
    # A VNet of a simple zone gets a MAC address of its own (SimplePlugin.pm vnet_update_hook).
    api.data('POST', '/cluster/sdn/vnets', vnet='vc', zone='flat')
    assert api.data('GET', '/cluster/sdn/vnets/vc')['mac']
    assert set(by_id(api.data('GET', '/cluster/sdn/vnets'), 'vnet')) >= {'va', 'vc'}
    assert api.error('DELETE', '/cluster/sdn/zones/lan')[:2] == (500, 'delete sdn zone object failed: zone lan is used by vnet va')


def test_a_vnet_with_subnets_is_not_deleted_and_a_subnet_checks_its_gateway_and_dhcp_ranges(lab, api):
    api.data('POST', '/cluster/sdn/zones', zone='flat', type='simple', dhcp='dnsmasq')
    api.data('POST', '/cluster/sdn/vnets', vnet='app', zone='flat')
    sub = '/cluster/sdn/vnets/app/subnets'
    assert api.error('POST', sub, subnet='127.30.0.0/24', type='subnet', gateway='127.31.0.1')[::2] == (
        400,
        {'gateway': '127.31.0.1 is not in subnet 127.30.0.0/24'},
    )
    assert api.error('POST', sub, subnet='127.30.0.0/24', type='subnet', **{'dhcp-range': 'start-address=127.30.0.90,end-address=127.30.0.80'})[::2] == (
        400,
        {'dhcp-range': 'start-address 127.30.0.90 must be smaller than end-address 127.30.0.80'},
    )
    api.data('POST', sub, subnet='127.30.0.0/24', type='subnet', gateway='127.30.0.1', **{'dhcp-range': 'start-address=127.30.0.50,end-address=127.30.0.99'})
    listed = api.data('GET', sub)[0]
    assert listed['dhcp-range'] == [{'start-address': '127.30.0.50', 'end-address': '127.30.0.99'}] and listed['zone'] == 'flat'
    api.data('PUT', sub + '/flat-127.30.0.0-24', delete='gateway', snat=1)
    listed = api.data('GET', sub)[0]
    assert 'gateway' not in listed and listed['snat'] == 1
    assert api.error('DELETE', '/cluster/sdn/vnets/app')[::2] == (400, {'vnet': "Can't delete vnet if subnets exists"})
    api.data('DELETE', sub + '/flat-127.30.0.0-24')
    api.data('DELETE', '/cluster/sdn/vnets/app')
    assert 'app' not in by_id(api.data('GET', '/cluster/sdn/vnets'), 'vnet')


def test_sdn_objects_need_sdn_allocate_on_their_zone_and_vnet(lab, api):
    api.data('POST', '/cluster/sdn/zones', zone='lan', type='vlan', bridge='vmbr0')
    api.data('POST', '/cluster/sdn/vnets', vnet='web', zone='lan', tag=20)
    audit = token(lab, 'sdnaudit', {'/sdn/zones/lan': ['SDN.Audit']})
    assert audit('POST', '/cluster/sdn/zones', zone='z2', type='simple') == (403, 'Permission check failed (/sdn/zones, SDN.Allocate)')
    assert audit('PUT', '/cluster/sdn/zones/lan', mtu=1400) == (403, 'Permission check failed (/sdn/zones/lan, SDN.Allocate)')
    assert audit('PUT', '/cluster/sdn/vnets/web', alias='x') == (403, 'Permission check failed (/sdn/zones/lan/web, SDN.Allocate)')
    assert audit('PUT', '/cluster/sdn') == (403, 'Permission check failed (/sdn, SDN.Allocate)')
    vnet = token(lab, 'sdnvnet', {'/sdn/zones/lan/web': ['SDN.Allocate']})
    assert vnet('PUT', '/cluster/sdn/vnets/web', alias='x')[0] == 200


# PVE 9's global lock, the apply on every node, controllers, fabrics, the vxlan rule and the ID format
# (lab/pve/sdn.py; pve-network SDN.pm lock_sdn_config, API2/Network/SDN.pm lock, rollback, reload).

BAD_TOKEN = 'invalid lock token provided! at /usr/share/perl5/PVE/Network/SDN.pm line 291.'


def test_an_apply_reloads_every_node_which_applies_the_network_changes_staged_there(lab, api):
    api.data('POST', '/nodes/pve2/network', iface='vmbr7', type='bridge', autostart=1, comments='staged by hand')
    assert lab.call(lambda: lab.pve.network_files('pve2')[1]) is not None
    status = api.run('PUT', '/cluster/sdn')
    assert status['exitstatus'] == 'OK' and status['log'][:2] == ['pve1: reloading network config', 'pve2: reloading network config']
    current, staged = lab.call(lambda: lab.pve.network_files('pve2'))
    assert staged is None and 'iface vmbr7 inet manual\n' in current
    reload = api.data('GET', '/nodes/pve2/tasks', typefilter='srvreload', source='all')[0]
    assert (reload['node'], reload['user']) == ('pve2', 'root@pam')
    assert api.data('GET', f'/nodes/pve2/tasks/{reload["upid"]}/status')['exitstatus'] == 'OK'
    assert [task['type'] for task in api.data('GET', '/nodes/pve1/tasks', typefilter='srvreload', source='all')] == ['srvreload']


def test_an_apply_ends_ok_when_a_node_is_unreachable_or_its_reload_fails(lab, api):
    lab.call(lambda: lab.pve.network_reload_failures.update(pve1="command 'ifreload -a' failed: exit code 1"))
    lab.call(lambda: lab.pve.set_node_offline('pve2'))
    status = api.run('PUT', '/cluster/sdn')
    assert status['exitstatus'] == 'OK'
    assert status['log'][:3] == [
        'pve1: reloading network config',
        'pve2: reloading network config',
        "command 'pvesh set /nodes/pve2/network --regenerate-frr 0' failed: exit code 255",
    ]
    failed = api.data('GET', '/nodes/pve1/tasks', typefilter='srvreload', source='all')[0]
    assert api.data('GET', f'/nodes/pve1/tasks/{failed["upid"]}/status')['exitstatus'] == "command 'ifreload -a' failed: exit code 1"


def test_the_global_lock_refuses_writes_without_its_token_and_rollback_restores_the_running_config(lab, api):
    api.data('POST', '/cluster/sdn/zones', zone='lan', type='vlan', bridge='vmbr0')
    api.run('PUT', '/cluster/sdn')
    api.data('POST', '/cluster/sdn/vnets', vnet='web', zone='lan', tag=20)
    assert api.error('POST', '/cluster/sdn/lock')[:2] == (
        500,
        'could not acquire lock for SDN config: configuration has pending changes at /usr/share/perl5/PVE/API2/Network/SDN.pm line 149.',
    )
    token = api.data('POST', '/cluster/sdn/lock', **{'allow-pending': 1})
    assert api.error('POST', '/cluster/sdn/lock', **{'allow-pending': 1})[:2] == (500, 'could not acquire lock for SDN config: ' + BAD_TOKEN)
    assert api.error('POST', '/cluster/sdn/vnets', vnet='db', zone='lan', tag=30)[:2] == (500, 'create sdn vnet object failed: ' + BAD_TOKEN)
    assert api.error('PUT', '/cluster/sdn')[:2] == (500, 'could not commit SDN config: ' + BAD_TOKEN)
    api.data('POST', '/cluster/sdn/vnets', vnet='db', zone='lan', tag=30, **{'lock-token': token})
    # The rollback drops every change not applied, made with the token or before it, and releases the lock.
    api.data('POST', '/cluster/sdn/rollback', **{'lock-token': token})
    assert set(by_id(api.data('GET', '/cluster/sdn/vnets'), 'vnet')) == set()
    assert lab.call(lambda: lab.pve.sdn_lock) is None
    # An apply with the token releases it too; release-lock=0 keeps it, and a forced release needs no token.
    token = api.data('POST', '/cluster/sdn/lock')
    api.data('POST', '/cluster/sdn/vnets', vnet='web', zone='lan', tag=20, **{'lock-token': token})
    api.run('PUT', '/cluster/sdn', **{'lock-token': token, 'release-lock': 0})
    assert lab.call(lambda: lab.pve.sdn_lock) == token and 'web' in lab.call(lambda: lab.pve.sdn_running['vnets'])
    assert api.error('DELETE', '/cluster/sdn/lock')[:2] == (500, 'could not release lock: ' + BAD_TOKEN)
    api.data('DELETE', '/cluster/sdn/lock', force=1)
    assert lab.call(lambda: lab.pve.sdn_lock) is None


def test_controllers_and_fabrics_are_pending_until_the_apply_commits_them(lab, api):
    evpn = '/usr/share/perl5/PVE/Network/SDN/Controllers/EvpnPlugin.pm'
    assert api.error('POST', '/cluster/sdn/controllers', controller='evpn1', type='evpn', peers='127.0.0.1')[:2] == (
        500,
        "missing value for required option 'asn'",
    )
    assert api.error('POST', '/cluster/sdn/controllers', controller='evpn1', type='evpn', asn=65000)[:2] == (
        500,
        f'create sdn controller object failed: must have exactly one of peers / fabric defined at {evpn} line 496.',
    )
    api.data('POST', '/cluster/sdn/controllers', controller='evpn1', type='evpn', asn=65000, peers='127.0.0.1,127.0.0.2')
    assert api.error('POST', '/cluster/sdn/controllers', controller='evpn2', type='evpn', asn=65001, peers='127.0.0.1')[:2] == (
        500,
        f'create sdn controller object failed: only 1 global evpn controller can be defined at {evpn} line 491.',
    )
    controller = api.data('GET', '/cluster/sdn/controllers', pending=1)[0]
    assert (controller['controller'], controller['state'], controller['pending']) == ('evpn1', 'new', {'asn': 65000, 'peers': '127.0.0.1,127.0.0.2'})
    # A pending controller refuses the lock; a pending fabric does not (has_pending_changes does not read fabrics).
    assert 'configuration has pending changes' in api.error('POST', '/cluster/sdn/lock')[1]
    api.run('PUT', '/cluster/sdn')
    lab.call(lambda: lab.pve.add_fabric('under', 'openfabric', ip_prefix='127.40.0.0/24'))
    fabric = api.data('GET', '/cluster/sdn/fabrics/all', pending=1)['fabrics'][0]
    # A new object's keys but type and vnet are all pending (SDN.pm pending_config), the fabric's id too.
    assert (fabric['state'], fabric['pending']['id'], 'id' in fabric) == ('new', 'under', False)
    token = api.data('POST', '/cluster/sdn/lock')
    status = api.run('PUT', '/cluster/sdn', **{'lock-token': token})
    applied = api.data('GET', '/cluster/sdn/fabrics/all', pending=1)['fabrics'][0]
    assert status['exitstatus'] == 'OK' and 'state' not in applied and applied['id'] == 'under'
    assert 'state' not in api.data('GET', '/cluster/sdn/controllers', pending=1)[0]


def test_a_vxlan_zone_has_exactly_one_of_peers_and_fabric(lab, api):
    both = 'must have exactly one of peers / fabric defined'
    assert api.error('POST', '/cluster/sdn/zones', zone='ovl', type='vxlan')[::2] == (400, {'peers': both, 'fabric': both})
    assert api.error('POST', '/cluster/sdn/zones', zone='ovl', type='vxlan', peers='127.0.0.1', fabric='under')[::2] == (400, {'peers': both, 'fabric': both})
    api.data('POST', '/cluster/sdn/zones', zone='ovl', type='vxlan', peers='127.0.0.1,127.0.0.2')
    assert api.error('PUT', '/cluster/sdn/zones/ovl', delete='peers')[::2] == (400, {'peers': both, 'fabric': both})
    assert by_id(api.data('GET', '/cluster/sdn/zones'), 'zone')['ovl']['peers'] == '127.0.0.1,127.0.0.2'


def test_zone_and_vnet_ids_are_a_letter_then_letters_or_digits_of_either_case(lab, api):
    api.data('POST', '/cluster/sdn/zones', zone='Lan2', type='vlan', bridge='vmbr0')
    api.data('POST', '/cluster/sdn/vnets', vnet='WebNet', zone='Lan2', tag=20)
    assert set(by_id(api.data('GET', '/cluster/sdn/vnets'), 'vnet')) == {'WebNet'}
    for bad in ('x', '2lan', 'lan_2', 'toolongid'):
        assert api.error('POST', '/cluster/sdn/zones', zone=bad, type='simple')[0] == 400


def test_a_value_with_a_line_feed_is_refused(lab, api):
    api.data('POST', '/cluster/sdn/zones', zone='lan', type='vlan', bridge='vmbr0')
    assert api.error('POST', '/cluster/sdn/vnets', vnet='web', zone='lan', tag=20, alias='Web\ntier')[:2] == (
        500,
        'create sdn vnet object failed: property contains a line feed',
    )
