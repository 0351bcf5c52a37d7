# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_sdn's planner: declared zones, VNets and subnets against the listings with pending=1 give the creates, updates,
deletes and one apply that converge them; it refuses unowned and used VNets, PVE's rules, and changes left unapplied."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._privileges import sdn_needs
from ansible_collections.puls.proxmox.plugins.module_utils._sdn_plan import (
    APPLY,
    Observed,
    SdnOptionError,
    SdnRefused,
    check_options,
    config_of,
    plan,
    vnets_to_delete,
)

# An applied SDN config as the indexes list it with pending=1: a VLAN zone, a VNet this collection made with a subnet,
# and a VNet made by hand.
ZONES = {'lan': {'zone': 'lan', 'type': 'vlan', 'bridge': 'vmbr0', 'mtu': 1450, 'digest': 'abc'}}
VNETS = {
    'web': {'vnet': 'web', 'type': 'vnet', 'zone': 'lan', 'tag': 20, 'alias': 'Web (puls-managed)'},
    'hand': {'vnet': 'hand', 'type': 'vnet', 'zone': 'lan', 'tag': 40},
}
SUBNETS = {
    ('web', '127.20.0.0/24'): {
        'subnet': 'lan-127.20.0.0-24',
        'cidr': '127.20.0.0/24',
        'vnet': 'web',
        'zone': 'lan',
        'type': 'subnet',
        'gateway': '127.20.0.1',
        'snat': 1,
        'dhcp-range': [],
    }
}
APPLIED = Observed(ZONES, VNETS, SUBNETS)
EMPTY = Observed({}, {}, {})


def kinds(result):
    return [(action.kind, action.params.get('kind'), action.params.get('id')) for action in result.actions]


def test_a_new_declaration_creates_zones_then_vnets_then_subnets_and_applies_once():
    spec = check_options(
        {
            'subnets': [{'vnet': 'web', 'cidr': '127.20.0.0/24', 'gateway': '127.20.0.1', 'snat': True}],
            'vnets': [{'name': 'web', 'zone': 'lan', 'tag': 20, 'alias': 'Web'}],
            'zones': [{'name': 'lan', 'type': 'vlan', 'bridge': 'vmbr0', 'nodes': ['pve2', 'pve1']}],
        }
    )
    result = plan(spec, EMPTY)
    assert kinds(result) == [('create', 'zone', 'lan'), ('create', 'vnet', 'web'), ('create', 'subnet', 'lan-127.20.0.0-24'), (APPLY, None, None)]
    assert result.actions[0].params['params'] == {'bridge': 'vmbr0', 'nodes': 'pve1,pve2', 'zone': 'lan', 'type': 'vlan'}
    assert result.actions[1].params['params'] == {'zone': 'lan', 'tag': 20, 'alias': 'Web (puls-managed)', 'vnet': 'web'}
    assert result.actions[2].params['params'] == {'gateway': '127.20.0.1', 'snat': 1, 'subnet': '127.20.0.0/24', 'type': 'subnet'}
    assert result.diff['before'] == {'zone lan': None, 'vnet web': None, 'subnet web 127.20.0.0/24': None}
    assert result.diff['after']['vnet web'] == {'zone': 'lan', 'tag': 20, 'alias': 'Web', 'managed': True}


def test_what_matches_plans_nothing_and_no_apply():
    # A vlan zone needs its bridge declared (VlanPlugin.pm options: bridge required).
    with pytest.raises(SdnOptionError, match=r'^zones\[0\]\.bridge: a vlan zone needs the bridge'):
        check_options({'zones': [{'name': 'lan', 'type': 'vlan', 'mtu': 1450}]})
    spec = check_options(
        {
            'zones': [{'name': 'lan', 'type': 'vlan', 'bridge': 'vmbr0', 'mtu': 1450}],
            'vnets': [{'name': 'web', 'zone': 'lan', 'tag': 20, 'alias': 'Web'}],
            'subnets': [{'vnet': 'web', 'cidr': '127.20.0.0/24', 'snat': True}],
        }
    )
    result = plan(spec, APPLIED)
    assert result.actions == () and not result.changed and result.changes == ()


def test_a_changed_setting_updates_only_it():
    spec = check_options(
        {'zones': [{'name': 'lan', 'type': 'vlan', 'bridge': 'vmbr0', 'mtu': 1400}], 'subnets': [{'vnet': 'web', 'cidr': '127.20.0.0/24', 'snat': False}]}
    )
    result = plan(spec, APPLIED)
    assert kinds(result) == [('update', 'zone', 'lan'), ('update', 'subnet', 'lan-127.20.0.0-24'), (APPLY, None, None)]
    assert result.actions[0].params['params'] == {'mtu': 1400} and result.actions[1].params['params'] == {'snat': 0}
    assert result.changes == ('subnet web 127.20.0.0/24', 'zone lan')


def test_pending_entries_are_read_as_the_config_they_stand_for():
    # SDN.pm pending_config: running values beside `pending`, 'deleted' for a key the config lost.
    assert config_of({'zone': 'lan', 'type': 'vlan', 'mtu': 1450, 'state': 'changed', 'pending': {'mtu': 'deleted', 'bridge': 'vmbr1'}}) == {
        'zone': 'lan',
        'type': 'vlan',
        'bridge': 'vmbr1',
    }
    assert config_of({'vnet': 'web', 'type': 'vnet', 'state': 'new', 'pending': {'zone': 'lan', 'tag': 20}}) == {
        'vnet': 'web',
        'type': 'vnet',
        'zone': 'lan',
        'tag': 20,
    }
    assert config_of({'vnet': 'web', 'zone': 'lan', 'state': 'deleted'}) is None


def test_changes_left_unapplied_are_refused_or_applied_when_asked():
    observed = Observed(ZONES, dict(VNETS, later={'vnet': 'later', 'type': 'vnet', 'state': 'new', 'pending': {'zone': 'lan', 'tag': 60}}), SUBNETS)
    params = {'vnets': [{'name': 'web', 'zone': 'lan', 'tag': 21, 'alias': 'Web'}]}
    with pytest.raises(SdnRefused, match=r'made by someone else: vnet later \(new\)'):
        plan(check_options(params), observed)
    result = plan(check_options(dict(params, pending_changes='apply')), observed)
    assert kinds(result)[-1] == (APPLY, None, None) and result.diff['before']['(pending)'] == ['vnet later (new)']
    # Nothing to change and nothing asked: no apply, no refusal.
    assert plan(check_options({}), observed).actions == ()


def test_prune_deletes_only_owned_vnets_with_their_subnets_and_refuses_a_used_one():
    spec = check_options({'prune': True})
    assert vnets_to_delete(spec, APPLIED) == ['web']
    result = plan(spec, APPLIED)
    assert kinds(result) == [('delete', 'subnet', 'lan-127.20.0.0-24'), ('delete', 'vnet', 'web'), (APPLY, None, None)]
    used = Observed(ZONES, VNETS, SUBNETS, users={'web': ['qemu 101 on pve1 (net0)']})
    with pytest.raises(SdnRefused, match=r'VNet web is used by qemu 101 on pve1 \(net0\)'):
        plan(spec, used)


def test_unowned_vnets_pve_rules_and_zones_with_vnets_are_refused():
    cases = [
        ({'vnets': [{'name': 'hand', 'zone': 'lan', 'tag': 41}]}, "VNet hand exists but was not made by this collection"),
        ({'vnets': [{'name': 'web', 'zone': 'lan', 'tag': 5000, 'alias': 'Web'}]}, 'vnets[0].tag: 5000 is above 4096'),
        ({'vnets': [{'name': 'nx', 'zone': 'nozone', 'tag': 5}]}, 'vnets[0].zone: zone nozone of VNet nx neither exists nor is declared'),
        ({'vnets': [{'name': 'nt', 'zone': 'lan'}]}, 'vnets[0].tag: VNet nt is in the vlan zone lan, which needs a VLAN tag'),
        ({'zones': [{'name': 'lan', 'type': 'simple'}]}, 'zones[0].type: zone lan is a vlan zone, not a simple one'),
        ({'zones': [{'name': 'lan', 'state': 'absent'}]}, 'zone lan still has the VNets hand, web'),
        (
            {'zones': [{'name': 'z2', 'type': 'vlan', 'bridge': 'vmbr0'}], 'vnets': [{'name': 'web', 'zone': 'z2', 'tag': 20, 'alias': 'Web'}]},
            'VNet web has subnets',
        ),
    ]
    for params, message in cases:
        with pytest.raises(SdnRefused) as refusal:
            plan(check_options(params), APPLIED)
        assert message in str(refusal.value) and str(refusal.value).endswith('Nothing was changed.')
    adopted = plan(check_options({'adopt': True, 'vnets': [{'name': 'hand', 'zone': 'lan', 'tag': 40}]}), APPLIED)
    assert adopted.actions[0].params['params'] == {'alias': 'puls-managed'}
    # An alias someone gave it and the declaration leaves out is kept, only marked.
    named = Observed(ZONES, dict(VNETS, hand=dict(VNETS['hand'], alias='Hand net')), SUBNETS)
    adopted = plan(check_options({'adopt': True, 'vnets': [{'name': 'hand', 'zone': 'lan', 'tag': 40}]}), named)
    assert adopted.actions[0].params['params'] == {'alias': 'Hand net (puls-managed)'}


def test_bad_options_name_the_field():
    cases = [
        ({'zones': [{'name': 'La_n', 'type': 'simple'}]}, 'zones[0].name'),
        ({'vnets': [{'name': '2web', 'zone': 'lan'}]}, 'vnets[0].name'),
        ({'zones': [{'name': 'ovl', 'type': 'vxlan', 'peers': []}]}, 'zones[0].peers'),
        ({'zones': [{'name': 'lan'}]}, 'zones[0].type'),
        ({'zones': [{'name': 'lan', 'type': 'simple', 'bridge': 'vmbr0'}]}, 'zones[0].bridge'),
        ({'zones': [{'name': 'ovl', 'type': 'vxlan', 'peers': ['127.0.0.1', 'nope']}]}, 'zones[0].peers'),
        ({'vnets': [{'name': 'web'}]}, 'vnets[0].zone'),
        ({'vnets': [{'name': 'web', 'zone': 'lan', 'alias': 'x (puls-managed)'}]}, 'vnets[0].alias'),
        ({'vnets': [{'name': 'web', 'zone': 'lan', 'alias': 'Web\ntier'}]}, 'vnets[0].alias'),
        ({'vnets': [{'name': 'web', 'zone': 'lan', 'alias': 'x' * 241}]}, 'vnets[0].alias'),
        ({'vnets': [{'name': 'web', 'zone': 'lan', 'alias': 'é' * 121}]}, 'vnets[0].alias'),
        ({'subnets': [{'vnet': 'web', 'cidr': '127.20.0.1/24'}]}, 'subnets[0].cidr'),
        ({'subnets': [{'vnet': 'web', 'cidr': '127.20.0.0/24', 'gateway': '127.21.0.1'}]}, 'subnets[0].gateway'),
        ({'subnets': [{'vnet': 'web', 'cidr': '127.20.0.0/24', 'dhcp_ranges': [{'start': '127.20.0.9', 'end': '127.20.0.5'}]}]}, 'subnets[0].dhcp_ranges[0]'),
        (
            {
                'subnets': [
                    {
                        'vnet': 'web',
                        'cidr': '127.20.0.0/24',
                        'dhcp_ranges': [{'start': '127.20.0.1', 'end': '127.20.0.9'}, {'start': '127.20.0.5', 'end': '127.20.0.6'}],
                    }
                ]
            },
            'subnets[0].dhcp_ranges[1]',
        ),
        ({'vnets': [{'name': 'web', 'zone': 'lan'}, {'name': 'web', 'zone': 'lan'}]}, 'vnets[1].name'),
    ]
    for params, option in cases:
        with pytest.raises(SdnOptionError) as error:
            check_options(params)
        assert error.value.option == option and str(error.value).startswith(option + ': ')


def test_each_write_needs_sdn_allocate_where_pve_checks_it():
    spec = check_options(
        {
            'prune': True,
            'zones': [{'name': 'z2', 'type': 'simple'}, {'name': 'lan', 'type': 'vlan', 'bridge': 'vmbr0', 'mtu': 1400}],
            'vnets': [{'name': 'app', 'zone': 'z2'}],
            'subnets': [{'vnet': 'app', 'cidr': '127.40.0.0/24'}],
        }
    )
    result = plan(spec, APPLIED)
    zone_of = {'web': 'lan', 'hand': 'lan', 'app': 'z2'}
    needs = {
        (need.grants[0].privilege, need.grants[0].path, need.purpose)
        for need in sdn_needs(result.actions, zone_of, deletes_vnets=True, nodes=['pve1'], fabrics=True)
    }
    assert needs == {
        ('SDN.Audit', '/sdn/zones', 'to see every SDN zone and VNet (PVE lists only those one may audit)'),
        ('SDN.Audit', '/sdn/controllers', 'to see every SDN controller'),
        ('SDN.Audit', '/sdn/fabrics', 'to see every SDN fabric'),
        ('Sys.Audit', '/nodes/pve1', 'to see the network changes staged on pve1, which the SDN apply applies, and the reload of its network'),
        ('SDN.Allocate', '/sdn/zones', 'to create zone z2'),
        ('SDN.Allocate', '/sdn/zones/lan', 'to update zone lan'),
        ('SDN.Allocate', '/sdn/zones/z2', 'to create VNet app'),
        ('SDN.Allocate', '/sdn/zones/z2/app', 'to create subnet z2-127.40.0.0-24'),
        ('SDN.Allocate', '/sdn/zones/lan/web', 'to delete subnet lan-127.20.0.0-24'),
        ('SDN.Allocate', '/sdn/zones/lan/web', 'to delete VNet web'),
        ('SDN.Allocate', '/sdn', 'to apply the SDN config (PUT /cluster/sdn)'),
        ('VM.Audit', '/vms', 'to see which guests use a VNet it deletes'),
    }


def test_ids_of_either_case_and_an_alias_that_fits_a_linux_interface_alias_are_taken():
    spec = check_options({'zones': [{'name': 'Lan2', 'type': 'simple'}], 'vnets': [{'name': 'WebNet', 'zone': 'Lan2', 'alias': 'x' * 240}]})
    assert (spec.zones[0].name, spec.vnets[0].name, len(spec.vnets[0].settings['alias'])) == ('Lan2', 'WebNet', 240)


def test_a_vxlan_zone_needs_its_peers_unless_it_takes_them_from_a_fabric():
    def refusal(zone, current=None):
        observed = Observed({'ovl': current} if current else {}, {}, {})
        with pytest.raises(SdnRefused) as error:
            plan(check_options({'zones': [zone]}), observed)
        return str(error.value)

    assert refusal({'name': 'ovl', 'type': 'vxlan'}).startswith('zones[0].peers: the vxlan zone ovl needs its peers')
    fabric = {'zone': 'ovl', 'type': 'vxlan', 'fabric': 'under'}
    assert 'takes its peers from the fabric under' in refusal({'name': 'ovl', 'type': 'vxlan', 'peers': ['127.0.0.1']}, fabric)
    assert not plan(check_options({'zones': [{'name': 'ovl', 'type': 'vxlan', 'mtu': 1450}]}), Observed({'ovl': dict(fabric, mtu=1450)}, {}, {})).changed
