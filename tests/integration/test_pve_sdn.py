# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_sdn through real ansible-playbook runs against the lab: the four-run pattern with one apply, prune of only what
it made, refusals that change nothing (bad input, a VNet a guest uses, an unowned VNet, changes someone else left
unapplied), and the module's EXAMPLES.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pve_sdn.py -p no:xdist
"""

from __future__ import annotations

import pytest
import yaml
from integration import lab_vms
from integration.playbooks import four_runs, run_playbook

from ansible_collections.puls.proxmox.plugins.module_utils._api import PveClient
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._sdn_io import reconcile
from ansible_collections.puls.proxmox.plugins.module_utils._sdn_plan import SdnOptionError, SdnRefused
from ansible_collections.puls.proxmox.plugins.modules import pve_sdn


def play(*tasks):
    return [{'name': 'SDN', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': list(tasks)}]


def sdn_task(name, **options):
    return {'name': name, 'puls.proxmox.pve_sdn': options}


def applies(lab):
    """How many times the SDN config was applied (reloadnetworkall tasks)."""
    return lab.call(lambda: sum(1 for task in lab.pve.tasks.values() if task['type'] == 'reloadnetworkall'))


def config(lab, kind):
    """The lab's SDN config of kind (zones, vnets, subnets), read from the lab itself, not through the module."""
    return lab.call(lambda: {key: dict(value) for key, value in lab.pve.sdn_config[kind].items()})


def running(lab, kind):
    return lab.call(lambda: {key: dict(value) for key, value in lab.pve.sdn_running[kind].items()})


def test_four_runs_apply_once_and_prune_deletes_only_what_it_made(lab, tmp_path):
    declared = {
        'zones': [{'name': 'lan', 'type': 'vlan', 'bridge': 'vmbr0', 'mtu': 1450}, {'name': 'flat', 'type': 'simple', 'dhcp': 'dnsmasq'}],
        'vnets': [
            {'name': 'web', 'zone': 'lan', 'tag': 20, 'alias': 'Web tier'},
            {'name': 'db', 'zone': 'lan', 'tag': 30},
            {'name': 'lab', 'zone': 'flat'},
        ],
        'subnets': [
            {'vnet': 'web', 'cidr': '127.20.0.0/24', 'gateway': '127.20.0.1', 'snat': True},
            {'vnet': 'lab', 'cidr': '127.30.0.0/24', 'gateway': '127.30.0.1', 'dhcp_ranges': [{'start': '127.30.0.100', 'end': '127.30.0.199'}]},
        ],
    }
    runs = four_runs(tmp_path, play(sdn_task('Declare', **declared)), lab.env)
    check, real = runs.check.one('Declare'), runs.real.one('Declare')
    assert (
        check['actions']
        == real['actions']
        == [
            'create zone lan',
            'create zone flat',
            'create vnet web',
            'create vnet db',
            'create vnet lab',
            'create subnet lan-127.20.0.0-24',
            'create subnet flat-127.30.0.0-24',
            'apply',
        ]
    )
    assert (check['applied'], real['applied']) == (False, True)
    assert check['diff'] == real['diff'] and real['diff']['before']['vnet web'] is None
    assert real['diff']['after']['vnet web'] == {'zone': 'lan', 'tag': 20, 'alias': 'Web tier', 'managed': True}
    # One apply for the whole run, none in check mode or when nothing changed; all of it running.
    assert applies(lab) == 1
    assert running(lab, 'zones')['lan'] == {'type': 'vlan', 'bridge': 'vmbr0', 'mtu': 1450}
    vnets = running(lab, 'vnets')
    assert (vnets['web']['alias'], vnets['web']['tag'], vnets['db']['alias']) == ('Web tier (puls-managed)', 20, 'puls-managed')
    subnets = running(lab, 'subnets')
    assert subnets['lan-127.20.0.0-24']['gateway'] == '127.20.0.1' and subnets['lan-127.20.0.0-24']['snat'] == 1
    assert subnets['flat-127.30.0.0-24']['dhcp-range'] == ['start-address=127.30.0.100,end-address=127.30.0.199']

    # A VNet made by hand is never pruned; db and lab (with its subnet) are; web keeps its subnet, now without SNAT.
    api = lab_vms.client(lab)
    api.post('/cluster/sdn/vnets', vnet='hand', zone='lan', tag=40)
    api.run_task('PUT', '/cluster/sdn')
    kept = {'zones': declared['zones'], 'vnets': [declared['vnets'][0]], 'subnets': [dict(declared['subnets'][0], snat=False)]}
    pruned = reconcile(api, dict(kept, prune=True))
    assert pruned['actions'] == ['update subnet lan-127.20.0.0-24', 'delete subnet flat-127.30.0.0-24', 'delete vnet db', 'delete vnet lab', 'apply']
    assert set(running(lab, 'vnets')) == {'web', 'hand'} and set(running(lab, 'zones')) == {'lan', 'flat'}
    assert running(lab, 'subnets')['lan-127.20.0.0-24']['snat'] == 0 and applies(lab) == 3


def test_refusals_change_nothing(lab, tmp_path):
    api = lab_vms.client(lab)
    api.post('/cluster/sdn/zones', zone='lan', type='vlan', bridge='vmbr0')
    api.post('/cluster/sdn/vnets', vnet='hand', zone='lan', tag=40)
    api.run_task('PUT', '/cluster/sdn')
    # A VNet this module made, on which a guest has a NIC.
    reconcile(api, {'vnets': [{'name': 'used', 'zone': 'lan', 'tag': 50}]})
    api.put('/nodes/pve1/qemu/9017/config', net1='virtio,bridge=used')
    # Someone leaves a change unapplied.
    api.post('/cluster/sdn/vnets', vnet='later', zone='lan', tag=60)
    # Bad input and PVE's rules, straight through the module's reconcile (no playbook): each names the option at fault.
    bad = [
        ({'subnets': [{'vnet': 'hand', 'cidr': '127.20.0.1/24'}]}, "subnets[0].cidr: '127.20.0.1/24' is not a network in CIDR notation"),
        (
            {'zones': [{'name': 'flat', 'type': 'simple'}], 'vnets': [{'name': 'x1', 'zone': 'flat', 'tag': 5}]},
            'vnets[0].tag: VNet x1 is in the simple zone flat, which takes no tag',
        ),
        (
            {'pending_changes': 'apply', 'subnets': [{'vnet': 'used', 'cidr': '127.20.0.0/24', 'dhcp_ranges': [{'start': '127.20.0.5', 'end': '127.20.0.9'}]}]},
            'subnets[0].dhcp_ranges: VNet used is in the vlan zone lan',
        ),
        ({'pending_changes': 'apply', 'vnets': [{'name': 'hand', 'zone': 'lan', 'tag': 41}]}, 'vnets[0]: VNet hand exists but was not made by this collection'),
    ]
    for params, message in bad:
        with pytest.raises((SdnOptionError, SdnRefused)) as refusal:
            reconcile(api, params)
        assert str(refusal.value).startswith(message)
    # A credential that may only audit the zones is refused before the first write, naming what it lacks.
    lab.call(lambda: lab.pve.add_api_token('carol@pve', 'sdnaudit', 'sdnaudit-secret', {'/sdn/zones': ['SDN.Audit']}))
    auditor = PveClient(lab.url, 'carol@pve', 'sdnaudit', 'sdnaudit-secret', ca_path=str(lab.cafile))
    with pytest.raises(PveApiError) as refusal:
        reconcile(auditor, {'pending_changes': 'apply', 'zones': [{'name': 'flat', 'type': 'simple'}]})
    assert 'Permission check failed (/sdn/zones, SDN.Allocate) to create zone flat' in str(refusal.value)
    assert 'Permission check failed (/sdn, SDN.Allocate) to apply the SDN config' in str(refusal.value)
    # Through playbooks: a field error as the module reports it, the used VNet, the unapplied changes.
    refused = [
        sdn_task('Bad gateway', subnets=[{'vnet': 'hand', 'cidr': '127.20.0.0/24', 'gateway': '127.21.0.1'}]),
        sdn_task('Used', pending_changes='apply', vnets=[{'name': 'used', 'state': 'absent'}]),
        sdn_task('Unapplied', vnets=[{'name': 'new', 'zone': 'lan', 'tag': 70}]),
    ]
    run = run_playbook(tmp_path, play(*[dict(task, ignore_errors=True) for task in refused]), lab.env, name='refused')
    assert run.rc == 0, run.stdout
    assert [record['status'] for record in run.results] == ['failed'] * len(refused)
    messages = {task['name']: run.one(task['name']).get('msg', '') for task in refused}
    assert messages['Bad gateway'] == 'subnets[0].gateway: 127.21.0.1 is not in 127.20.0.0/24'
    assert run.one('Bad gateway')['option'] == 'subnets[0].gateway'
    assert 'VNet used is used by qemu 9017 on pve1 (net1)' in messages['Used']
    assert 'changes not applied yet, made by someone else: vnet later (new)' in messages['Unapplied'] and 'pending_changes: apply' in messages['Unapplied']
    # Nothing refused was written or applied: the two applies by hand and the one of the reconcile.
    assert applies(lab) == 2 and 'flat' not in config(lab, 'zones') and set(config(lab, 'vnets')) == {'hand', 'used', 'later'}
    assert config(lab, 'vnets')['hand'] == {'type': 'vnet', 'zone': 'lan', 'tag': 40} and not config(lab, 'subnets')


def test_the_examples_run_as_documented(lab, tmp_path):
    """The EXAMPLES as written."""
    text = pve_sdn.EXAMPLES
    run = run_playbook(tmp_path, play(*yaml.safe_load(text)), lab.env, name='examples')
    assert run.rc == 0, run.stdout
    assert run.one('Show what was done')['msg'] == ['create zone lan', 'create vnet web', 'create vnet db', 'create subnet lan-127.51.100.0-24', 'apply']
    assert set(running(lab, 'vnets')) == {'web', 'labnet'} and set(running(lab, 'zones')) == {'lan', 'lab'}
    assert running(lab, 'subnets')['lab-127.0.113.0-24']['dhcp-range'] == ['start-address=127.0.113.100,end-address=127.0.113.199']
    assert applies(lab) == 2


# Real PVE, round 2 (issue 33): what an apply takes along, the lock, the nodes' reloads, PVE's ID and vxlan rules.


def refused_run(tmp_path, lab, name, *tasks, check=False):
    """A playbook of tasks that may fail (ignore_errors): the run."""
    run = run_playbook(tmp_path, play(*[dict(task, ignore_errors=True) for task in tasks]), lab.env, check=check, name=name)
    assert run.rc == 0, run.stdout
    return run


def test_an_apply_does_not_apply_network_changes_staged_on_a_node_unless_told(lab, tmp_path):
    """Finding 5: the apply reloads every node's network, which applies what someone staged there."""
    api = lab_vms.client(lab)
    api.post('/nodes/pve2/network', iface='vmbr7', type='bridge', autostart=1, comments='staged by hand')
    declare = {'zones': [{'name': 'flat', 'type': 'simple'}], 'vnets': [{'name': 'app', 'zone': 'flat'}]}
    for check in (True, False):
        run = refused_run(tmp_path, lab, f'staged-{check}', sdn_task('Declare', **declare), check=check)
        message = run.one('Declare')['msg']
        assert 'changes not applied yet, made by someone else: node pve2 network (staged)' in message, message
        assert "Network panel, Apply Configuration or Revert" in message and 'pending_changes: apply' in message
    assert applies(lab) == 0 and not config(lab, 'zones') and lab.call(lambda: lab.pve.network_files('pve2')[1]) is not None
    # Told to, the run applies them with its own, and says so in check mode as in the real run.
    told = play(sdn_task('Declare', pending_changes='apply', **declare))
    runs = [run_playbook(tmp_path, told, lab.env, check=check, name=f'apply-{check}') for check in (True, False)]
    check, real = (run.one('Declare') for run in runs)
    assert check['diff'] == real['diff'] and real['diff']['before']['(pending)'] == ['node pve2 network (staged)']
    assert check['actions'] == real['actions'] == ['create zone flat', 'create vnet app', 'apply (with the changes made before)']
    current, staged = lab.call(lambda: lab.pve.network_files('pve2'))
    assert staged is None and 'iface vmbr7 inet manual\n' in current and applies(lab) == 1


def test_a_write_pve_refuses_midway_is_rolled_back_under_the_lock(lab, tmp_path):
    """Finding 8: PVE refuses the second VNet (its tag is another VNet's in the zone); the first, written before, is
    rolled back, so the next run is not blocked by this run's own leftovers; a lock another client holds refuses."""
    api = lab_vms.client(lab)
    api.post('/cluster/sdn/zones', zone='lan', type='vlan', bridge='vmbr0')
    api.post('/cluster/sdn/vnets', vnet='hand', zone='lan', tag=40)
    api.run_task('PUT', '/cluster/sdn')
    clash = sdn_task('Clash', vnets=[{'name': 'web', 'zone': 'lan', 'tag': 20}, {'name': 'db', 'zone': 'lan', 'tag': 40}])
    message = refused_run(tmp_path, lab, 'clash', clash).one('Clash')['msg']
    assert 'tag 40 already exist in vnet hand' in message, message
    assert 'its earlier writes (create vnet web) were rolled back (POST /cluster/sdn/rollback). Nothing was changed.' in message
    assert set(config(lab, 'vnets')) == {'hand'} and lab.call(lambda: lab.pve.sdn_lock) is None and applies(lab) == 1
    fixed = sdn_task('Fixed', vnets=[{'name': 'web', 'zone': 'lan', 'tag': 20}, {'name': 'db', 'zone': 'lan', 'tag': 30}])
    run = run_playbook(tmp_path, play(fixed), lab.env, name='fixed')
    assert run.rc == 0, run.stdout
    assert run.one('Fixed')['actions'] == ['create vnet web', 'create vnet db', 'apply'] and set(running(lab, 'vnets')) == {'hand', 'web', 'db'}
    # Every write and the apply carried the lock's token, and the apply released it.
    writes = [r for r in lab.writes() if r.path.endswith(('/cluster/sdn/vnets', '/cluster/sdn'))]
    assert len(writes) >= 3 and all('lock-token=' in r.body for r in writes[-3:]) and lab.call(lambda: lab.pve.sdn_lock) is None
    held = api.post('/cluster/sdn/lock')
    message = refused_run(tmp_path, lab, 'held', sdn_task('Held', vnets=[{'name': 'app', 'zone': 'lan', 'tag': 50}])).one('Held')['msg']
    assert message.startswith('another client holds the lock of the SDN config') and 'Nothing was changed' in message, message
    assert lab.call(lambda: lab.pve.sdn_lock) == held and 'app' not in config(lab, 'vnets')


def test_an_apply_fails_when_a_node_did_not_reload_its_network(lab, tmp_path):
    """Finding 9: the apply's task ends OK whatever the nodes did; the module reads their reloads."""
    lab.call(lambda: lab.pve.network_reload_failures.update(pve2="command 'ifreload -a' failed: exit code 1"))
    run = refused_run(tmp_path, lab, 'reload', sdn_task('Declare', zones=[{'name': 'flat', 'type': 'simple'}], vnets=[{'name': 'app', 'zone': 'flat'}]))
    result = run.one('Declare')
    assert [record['status'] for record in run.results] == ['failed'] and result['changed'] and result['applied']
    assert result['msg'].startswith('the SDN config was applied (PUT /cluster/sdn), but the network of node pve2 was not reloaded')
    assert "ended with: command 'ifreload -a' failed: exit code 1" in result['msg'] and 'pve1' not in result['msg'].split('Its VNets')[0]
    assert applies(lab) == 1 and set(running(lab, 'vnets')) == {'app'}


def test_changes_of_controllers_and_fabrics_not_applied_are_named(lab, tmp_path):
    """Finding 12: the apply commits controllers and fabrics too."""
    api = lab_vms.client(lab)
    api.post('/cluster/sdn/controllers', controller='evpn1', type='evpn', asn=65000, peers='127.0.0.1,127.0.0.2')
    lab.call(lambda: lab.pve.add_fabric('under', 'openfabric', ip_prefix='127.40.0.0/24'))
    message = refused_run(tmp_path, lab, 'others', sdn_task('Declare', zones=[{'name': 'flat', 'type': 'simple'}])).one('Declare')['msg']
    assert 'changes not applied yet, made by someone else: controller evpn1 (new), fabric under (new)' in message, message
    assert applies(lab) == 0 and not config(lab, 'zones')


def test_a_vxlan_zone_without_peers_is_refused_before_any_write(lab, tmp_path):
    """Finding 15: PVE 8 requires peers, PVE 9 exactly one of peers and fabric."""
    run = refused_run(tmp_path, lab, 'vxlan', sdn_task('Overlay', zones=[{'name': 'ovl', 'type': 'vxlan'}], vnets=[{'name': 'ov1', 'zone': 'ovl', 'tag': 100}]))
    message = run.one('Overlay')['msg']
    assert message.startswith('zones[0].peers: the vxlan zone ovl needs its peers'), message
    assert not config(lab, 'zones') and not config(lab, 'vnets')


def test_zone_and_vnet_ids_with_capitals_are_managed(lab, tmp_path):
    """Finding 16: PVE's ID pattern takes either case; an existing VNet1 is adopted."""
    api = lab_vms.client(lab)
    api.post('/cluster/sdn/zones', zone='Lan', type='vlan', bridge='vmbr0')
    api.post('/cluster/sdn/vnets', vnet='VNet1', zone='Lan', tag=10)
    api.run_task('PUT', '/cluster/sdn')
    declared = {
        'adopt': True,
        'zones': [{'name': 'Lan', 'type': 'vlan', 'bridge': 'vmbr0'}],
        'vnets': [{'name': 'VNet1', 'zone': 'Lan', 'tag': 10}, {'name': 'Web2', 'zone': 'Lan', 'tag': 20}],
    }
    runs = four_runs(tmp_path, play(sdn_task('Declare', **declared)), lab.env)
    assert runs.real.one('Declare')['actions'] == ['create vnet Web2', 'update vnet VNet1', 'apply']
    assert running(lab, 'vnets')['VNet1']['alias'] == 'puls-managed' and running(lab, 'vnets')['Web2']['tag'] == 20


def test_an_alias_of_more_than_one_line_or_too_long_for_linux_is_refused_naming_it(lab, tmp_path):
    """Finding 19: PVE refuses a line feed (SectionConfig.pm check_value); the alias goes to the bridge's ifalias,
    which the kernel keeps under 256 bytes (ifupdown2 sysfs.py link_set_alias)."""
    api = lab_vms.client(lab)
    api.post('/cluster/sdn/zones', zone='lan', type='vlan', bridge='vmbr0')
    api.run_task('PUT', '/cluster/sdn')
    tasks = [
        sdn_task('Two lines', vnets=[{'name': 'web', 'zone': 'lan', 'tag': 20, 'alias': 'Web\ntier'}]),
        sdn_task('Too long', vnets=[{'name': 'web', 'zone': 'lan', 'tag': 20, 'alias': 'w' * 241}]),
    ]
    run = refused_run(tmp_path, lab, 'alias', *tasks)
    assert run.one('Two lines')['option'] == run.one('Too long')['option'] == 'vnets[0].alias'
    assert 'an alias is one line' in run.one('Two lines')['msg'] and 'the 255 bytes of a Linux interface alias' in run.one('Too long')['msg']
    assert not config(lab, 'vnets') and applies(lab) == 1
