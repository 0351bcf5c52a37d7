"""A node's network devices (lab/pve/network.py): changes staged in interfaces.new and listed as `changes`, applied by
PUT /nodes/{node}/network, reverted by DELETE; the parse, write and checks of pve-common's Interfaces.pm."""

import requests
from test_privileges import as_token

NET = '/nodes/pve1/network'


def listing(api, **params):
    """({iface: settings}, changes) of GET /nodes/pve1/network."""
    response = api.call('GET', NET, **params)
    assert response.status_code == 200, response.text
    body = response.json()
    return {item['iface']: item for item in body['data']}, body.get('changes')


def test_every_node_has_vmbr0_on_eno1_carrying_its_address(lab, api):
    ips = {item['name']: item['ip'] for item in api.data('GET', '/cluster/status') if item['type'] == 'node'}
    for index, node in enumerate(('pve1', 'pve2'), 1):
        assert ips[node] == lab.block.node(index)
        ifaces = {item['iface']: item for item in api.data('GET', f'/nodes/{node}/network')}
        vmbr0 = ifaces['vmbr0']
        assert (vmbr0['type'], vmbr0['bridge_ports'], vmbr0['cidr'], vmbr0['gateway'], vmbr0['method']) == (
            'bridge',
            'eno1',
            lab.block.node(index) + '/24',
            lab.block.gateway,
            'static',
        )
        assert vmbr0['active'] == 1 and vmbr0['autostart'] == 1
        # The loopback is never listed; the physical NICs exist.
        assert 'lo' not in ifaces and ifaces['eno2']['type'] == 'eth' and ifaces['eno2']['exists'] == 1
    assert set(listing(api, type='any_bridge')[0]) == {'vmbr0', 'vmbr10'}


def test_vmbr0_has_an_ipv6_address_and_vmbr10_takes_its_addresses_by_dhcp_and_slaac(lab, api):
    for index, node in enumerate(('pve1', 'pve2'), 1):
        ifaces = {item['iface']: item for item in api.data('GET', f'/nodes/{node}/network')}
        vmbr0, vmbr10 = ifaces['vmbr0'], ifaces['vmbr10']
        assert (vmbr0['families'], vmbr0['method6'], vmbr0['cidr6'], vmbr0['address6'], vmbr0['netmask6'], vmbr0['gateway6']) == (
            ['inet', 'inet6'],
            'static',
            f'fe80::20{index}/64',
            f'fe80::20{index}',
            '64',
            'fe80::1',
        )
        assert (vmbr10['families'], vmbr10['method'], vmbr10['method6'], vmbr10['bridge_ports']) == (['inet', 'inet6'], 'dhcp', 'auto', 'eno4')
        assert 'cidr' not in vmbr10 and 'cidr6' not in vmbr10 and vmbr10['active'] == 1
    current = lab.pve.network_files('pve1')[0]
    assert 'iface vmbr0 inet6 static\n\taddress fe80::201/64\n\tgateway fe80::1\n' in current
    assert 'iface vmbr10 inet dhcp\n' in current and 'iface vmbr10 inet6 auto\n' in current


def test_an_update_keeps_a_family_only_when_sent_its_address(lab, api):
    # update_network: families, method and method6 are rebuilt from the addresses sent, whatever the interface had.
    api.data('PUT', NET + '/vmbr10', type='bridge', comments='uplink')
    vmbr10 = listing(api)[0]['vmbr10']
    assert (vmbr10['families'], vmbr10['method'], vmbr10['method6'], vmbr10['comments']) == (['inet'], 'manual', 'manual', 'uplink\n')
    staged = lab.pve.network_files('pve1')[1]
    assert 'iface vmbr10 inet manual\n' in staged and 'vmbr10 inet6' not in staged
    api.data('PUT', NET + '/vmbr0', type='bridge', cidr=lab.block.node(1) + '/24', mtu=1500)
    vmbr0 = listing(api)[0]['vmbr0']
    assert vmbr0['families'] == ['inet'] and vmbr0['method6'] == 'manual' and 'cidr6' not in vmbr0 and 'vmbr0 inet6' not in lab.pve.network_files('pve1')[1]
    # Sent again, the IPv6 address comes back with its stanza; the gateway6 it had stays, as only sent keys are replaced.
    api.data('DELETE', NET)
    api.data('PUT', NET + '/vmbr0', type='bridge', cidr=lab.block.node(1) + '/24', cidr6='fe80::201/64', mtu=1500)
    vmbr0 = listing(api)[0]['vmbr0']
    assert (vmbr0['families'], vmbr0['method'], vmbr0['method6'], vmbr0['cidr6'], vmbr0['gateway6'], vmbr0['mtu']) == (
        ['inet', 'inet6'],
        'static',
        'static',
        'fe80::201/64',
        'fe80::1',
        '1500',
    )
    # An IPv6 address alone makes the interface IPv6-only: its inet stanza goes, its comments move to the inet6 one.
    api.data('PUT', NET + '/vmbr10', type='bridge', cidr6='fe80::10/64', comments='uplink')
    vmbr10 = listing(api)[0]['vmbr10']
    assert (vmbr10['families'], vmbr10['method'], vmbr10['method6'], vmbr10['comments']) == (['inet6'], 'manual', 'static', 'uplink\n')
    assert 'iface vmbr10 inet6 static\n\taddress fe80::10/64\n\tbridge-ports eno4\n' in lab.pve.network_files('pve1')[1]
    assert '#uplink\n' in lab.pve.network_files('pve1')[1]
    # The options of the inet stanza (an IPv4 one without an address) go with it.
    api.data('DELETE', NET)
    files = lab.pve.node_networks['pve1']
    files['current'] = files['current'].replace('iface vmbr10 inet dhcp\n', 'iface vmbr10 inet manual\n\tpost-up ip link set eno4 up\n')
    files['current'] = files['current'].replace('iface vmbr10 inet6 auto\n', 'iface vmbr10 inet6 static\n\taddress fe80::10/64\n')
    assert listing(api)[0]['vmbr10']['options'] == ['post-up ip link set eno4 up']
    api.data('PUT', NET + '/vmbr10', type='bridge', cidr6='fe80::10/64', mtu=1500)
    assert listing(api)[0]['vmbr10']['families'] == ['inet6'] and 'post-up' not in lab.pve.network_files('pve1')[1]


def test_a_stanza_without_a_family_is_read_with_its_options_as_the_inet_ones(lab, api):
    # __read_etc_network_interfaces: `iface NAME` (ifupdown2) has the family undef, an address with a colon is address6,
    # other options go to `options`; __interface_to_string writes those only in an inet stanza (or a typeless one).
    files = lab.pve.node_networks['pve1']
    bridge = '\tbridge-ports eno2\n\tbridge-stp off\n\tbridge-fd 0\n'
    stanza = f'auto vmbr1\niface vmbr1\n\taddress fe80::11/64\n{bridge}\tpost-up ip link set eno2 up\n#typeless\n\n'
    files['current'] += stanza
    vmbr1 = listing(api)[0]['vmbr1']
    assert (vmbr1['families'], vmbr1['method'], vmbr1['method6'], vmbr1['cidr6'], vmbr1['options'], vmbr1['comments']) == (
        [None],
        'manual',
        'manual',
        'fe80::11/64',
        ['post-up ip link set eno2 up'],
        'typeless\n',
    )
    # Written again (another interface's change), it stays as it was.
    api.data('POST', NET, iface='vmbr2', type='bridge')
    assert stanza in lab.pve.network_files('pve1')[1]
    # Updated with its IPv6 address, it becomes an inet6 stanza without the options.
    api.data('PUT', NET + '/vmbr1', type='bridge', cidr6='fe80::11/64')
    vmbr1 = listing(api)[0]['vmbr1']
    assert vmbr1['families'] == ['inet6'] and 'options' not in vmbr1 and 'post-up' not in lab.pve.network_files('pve1')[1]
    assert 'iface vmbr1 inet6 static\n\taddress fe80::11/64\n\tbridge-ports eno2\n' in lab.pve.network_files('pve1')[1]


def test_an_ipv6_address_must_be_a_unicast_host_address(lab, api):
    # check_ipv6_settings, on create and update: Net::IP's type of the address, the subnet-router anycast refused too.
    refused = {
        '2001:db8::5/64': 'DOCUMENTATION',
        'ff02::5/64': 'MULTICAST',
        '::1/128': 'LOOPBACK',
        'fec0::5/64': 'RESERVED',
        'ffff:ffff:ffff:ffff::/64': 'ANYCAST',
    }
    for cidr6, kind in refused.items():
        address = cidr6.split('/', maxsplit=1)[0]
        message = {'address': f"{address} with type '{kind}', cannot be used as host IPv6 address."}
        assert api.error('POST', NET, iface='vmbr1', type='bridge', cidr6=cidr6)[::2] == (400, message)
        assert api.error('PUT', NET + '/vmbr0', type='bridge', cidr6=cidr6)[::2] == (400, message)
    assert api.error('POST', NET, iface='vmbr1', type='bridge', gateway6='fe80::2')[::2] == (
        400,
        {'gateway6': "Default ipv6 gateway already exists on interface 'vmbr0'."},
    )
    assert listing(api)[1] is None
    # A link-local one is a host address (the lab's addresses stay link-local).
    api.data('POST', NET, iface='vmbr1', type='bridge', cidr6='fe80::9/64')
    assert listing(api)[0]['vmbr1']['cidr6'] == 'fe80::9/64'


def test_a_node_without_ifupdown2_refuses_the_reload_and_keeps_the_staged_changes(lab, api):
    lab.call(lambda: lab.pve.nodes_without_ifupdown2.add('pve1'))
    api.data('POST', NET, iface='vmbr1', type='bridge')
    assert api.error('PUT', NET)[:2] == (500, 'you need ifupdown2 to reload network configuration')
    assert '+iface vmbr1 inet manual' in listing(api)[1]
    # The writer too: a VLAN neither DEVICE.ID nor vlanN needs ifupdown2.
    assert api.error('POST', NET, iface='storage', type='vlan', **{'vlan-raw-device': 'eno2', 'vlan-id': 30})[:2] == (
        500,
        'custom vlan interface name need ifupdown2',
    )


def test_a_change_is_staged_listed_as_changes_and_applied_by_a_reload(lab, api):
    current = lab.pve.network_files('pve1')[0]
    api.data('POST', NET, iface='vmbr1', type='bridge', bridge_ports='eno2', cidr='127.0.0.1/8', autostart=1, comments='lab bridge')
    ifaces, changes = listing(api)
    assert ifaces['vmbr1']['cidr'] == '127.0.0.1/8' and 'active' not in ifaces['vmbr1']
    # Comment lines read back each ending in a newline.
    assert api.data('GET', NET + '/vmbr1')['comments'] == 'lab bridge\n'
    assert '+auto vmbr1\n' in changes and '+\tbridge-ports eno2\n' in changes and '+#lab bridge\n' in changes
    assert lab.pve.network_files('pve1')[0] == current
    status = api.run('PUT', NET)
    assert status['exitstatus'] == 'OK' and status['type'] == 'srvreload' and status['id'] == 'networking'
    ifaces, changes = listing(api)
    assert changes is None and ifaces['vmbr1']['active'] == 1
    assert lab.pve.network_files('pve1')[1] is None and 'iface vmbr1 inet static\n' in lab.pve.network_files('pve1')[0]


def test_a_revert_drops_the_staged_changes(lab, api):
    api.data('POST', NET, iface='bond0', type='bond', slaves='eno2 eno3', bond_mode='active-backup')
    bond0 = listing(api)[0]['bond0']
    assert (bond0['type'], bond0['slaves'], bond0['bond_mode'], bond0['bond_miimon']) == ('bond', 'eno2 eno3', 'active-backup', '100')
    api.data('DELETE', NET)
    ifaces, changes = listing(api)
    assert 'bond0' not in ifaces and changes is None


def test_an_update_replaces_what_it_is_sent_only(lab, api):
    api.data('POST', NET, iface='vmbr1', type='bridge', cidr='127.0.0.2/8', bridge_vlan_aware=1)
    assert listing(api)[0]['vmbr1']['bridge_vids'] == '2-4094'  # the writer's default for a VLAN-aware bridge
    # update_network: `method` follows the address sent, so an update without it leaves the address as manual.
    api.data('PUT', NET + '/vmbr1', type='bridge', mtu=1400)
    vmbr1 = listing(api)[0]['vmbr1']
    assert (vmbr1['method'], vmbr1['cidr'], vmbr1['mtu']) == ('manual', '127.0.0.2/8', '1400')
    # bridge_vlan_aware=0 is still defined, so the writer keeps the bridge VLAN-aware; only a delete clears it.
    api.data('PUT', NET + '/vmbr1', type='bridge', bridge_vlan_aware=0, cidr='127.0.0.2/8')
    assert listing(api)[0]['vmbr1']['bridge_vlan_aware'] == 1
    api.data('PUT', NET + '/vmbr1', type='bridge', delete='bridge_vlan_aware,mtu', cidr='127.0.0.2/8')
    vmbr1 = listing(api)[0]['vmbr1']
    assert 'bridge_vlan_aware' not in vmbr1 and 'mtu' not in vmbr1 and vmbr1['method'] == 'static'


def test_bad_changes_are_refused_and_nothing_is_staged(lab, api):
    assert api.error('POST', NET, iface='vmbr0', type='bridge')[::2] == (400, {'iface': 'interface already exists'})
    assert api.error('POST', NET, iface='vmbr1', type='bridge', bridge_ports='eno1')[::2] == (
        400,
        {'bridge_ports': "eno1 is already used on interface 'vmbr0'."},
    )
    assert api.error('POST', NET, iface='vmbr1', type='bridge', gateway='127.0.0.9')[::2] == (
        400,
        {'gateway': "Default gateway already exists on interface 'vmbr0'."},
    )
    assert api.error('PUT', NET + '/vmbr9', type='bridge')[::2] == (400, {'iface': 'interface does not exist'})
    assert api.error('POST', NET, iface='bond0', type='bond', slaves='eno9')[:2] == (500, "bond 'bond0' - unable to find slave 'eno9'")
    # The bond-primary is one of the slaves, in any mode (Interfaces.pm "check bond").
    primary = {'slaves': 'eno2 eno3', 'bond-primary': 'eno4'}
    not_a_slave = (500, "bond 'bond0' - bond-primary interface is not a slave")
    for mode in ('active-backup', 'balance-rr'):
        assert api.error('POST', NET, iface='bond0', type='bond', bond_mode=mode, **primary)[:2] == not_a_slave
    assert api.error('POST', NET, iface='vmbr1', type='bridge', bridge_ports='eno2', mtu=9000)[:2] == (
        500,
        "interface 'eno2' - mtu 1500 is lower than 'vmbr1' - mtu 9000",
    )
    assert api.error('POST', NET, iface='eno7.20', type='vlan')[:2] == (500, "vlan 'eno7.20' - unable to find parent 'eno7'")
    # None of them staged anything.
    assert listing(api)[1] is None
    # Taking its bond-primary away from a bond's slaves is refused too; with no slaves left the bond is not checked.
    api.data('POST', NET, iface='bond0', type='bond', slaves='eno2 eno3', bond_mode='active-backup', **{'bond-primary': 'eno2'})
    assert api.error('PUT', NET + '/bond0', type='bond', slaves='eno3')[:2] == not_a_slave
    api.data('PUT', NET + '/bond0', type='bond', delete='slaves')
    assert listing(api)[0]['bond0']['bond-primary'] == 'eno2'
    api.data('DELETE', NET + '/bond0')
    api.data('POST', NET, iface='vmbr1', type='bridge', bridge_ports='eno2', cidr='127.0.0.3/8')
    assert api.error('POST', NET, iface='vmbr2', type='bridge', bridge_ports='vmbr1')[:2] == (
        500,
        "iface vmbr1 - ip address can't be set on interface if bridged in vmbr2",
    )
    # A VLAN of another interface as a port needs no stanza of its own.
    api.data('POST', NET, iface='vmbr3', type='bridge', bridge_ports='eno3.7')
    assert set(listing(api)[0]) == {'eno1', 'eno2', 'eno3', 'eno4', 'vmbr0', 'vmbr10', 'vmbr1', 'vmbr3'}


def test_a_vlan_interface_takes_its_parent_and_id_from_its_name(lab, api):
    api.data('POST', NET, iface='vmbr0.30', type='vlan', cidr='127.0.0.4/8')
    vlan = listing(api)[0]['vmbr0.30']
    assert (vlan['type'], vlan['vlan-raw-device'], vlan['vlan-id']) == ('vlan', 'vmbr0', '30')
    api.data('POST', NET, iface='vlan40', type='vlan', **{'vlan-raw-device': 'eno2'})
    assert listing(api)[0]['vlan40']['vlan-id'] == '40'
    api.data('DELETE', NET + '/vlan40')
    assert 'vlan40' not in listing(api)[0]


def test_writes_need_sys_modify_and_bridges_are_listed_to_who_may_see_them(lab):
    audit = as_token(lab, lab.call(lambda: lab.pve.add_api_token('carol@pve', 'net', 'net-secret', {'/nodes/pve1': ['Sys.Audit']})), 'net-secret')
    assert audit('POST', NET, iface='vmbr1', type='bridge') == (403, 'Permission check failed (/nodes/pve1, Sys.Modify)')
    assert audit('PUT', NET) == (403, 'Permission check failed (/nodes/pve1, Sys.Modify)')
    grants = {'/nodes/pve1': ['Sys.Modify'], '/sdn/zones/localnetwork/vmbr0/10': ['SDN.Audit']}
    modify = as_token(lab, lab.call(lambda: lab.pve.add_api_token('dave@pve', 'mod', 'mod-secret', grants)), 'mod-secret')
    assert modify('POST', NET, iface='vmbr1', type='bridge')[0] == 200
    assert sorted(item['iface'] for item in _listed(lab, 'carol@pve!net', 'net-secret') if item['type'] == 'bridge') == []
    # A grant on one of its VLANs lists vmbr0 (check_sdn_bridge), none lists vmbr1.
    assert sorted(item['iface'] for item in _listed(lab, 'dave@pve!mod', 'mod-secret') if item['type'] == 'bridge') == ['vmbr0']


def _listed(lab, tokenid, secret):
    response = requests.get(lab.url + '/api2/json' + NET, verify=lab.cafile, timeout=30, headers={'Authorization': f'PVEAPIToken={tokenid}={secret}'})
    assert response.status_code == 200, response.text
    return response.json()['data']
