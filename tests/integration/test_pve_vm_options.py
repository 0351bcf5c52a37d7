# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_vm's option groups through real ansible-playbook runs against the lab: clones and imports, hardware, network
and cloud-init, addresses (static, DNS, DHCP + guest agent), tags, protection, disk growth, adopt; drift; bad input.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pve_vm_options.py -n 2
"""

from __future__ import annotations

import re

import asyncssh
import pytest
from lab.images import qcow2
from pve_vm_plays import TASK, cluster_vms, inventory, sent, ssh_public_key, vm_env, vm_named, vm_play

from playbooks import four_runs, run_playbook

TEMPLATE = 9017
PASSWORD = 'Ci-Secret-Pass-42'


def key_blob(public_key):
    return asyncssh.import_public_key(public_key).public_data


def config_of(lab, name):
    return dict(vm_named(lab, name).config)


def test_under_a_case_sensitive_tag_style_declared_tags_and_a_vms_own_keep_their_spelling_in_four_runs(lab, tmp_path):
    # pve-guest-common GuestHelpers.pm get_unique_tags keeps a tag's case when the datacenter's tag-style says so.
    def prepare():
        lab.pve.datacenter['tag-style'] = {'case-sensitive': 1}
        lab.pve.add_vm(301, 'cs-legacy', node='pve1', config={'name': 'cs-legacy', 'tags': 'Team-A', 'cores': 1, 'scsi0': 'local-lvm:vm-301-disk-0,size=4G'})

    lab.call(prepare)
    vms = {'cs-tags': {'image': TEMPLATE, 'tags': ['Web', 'DB']}, 'cs-legacy': {'adopt': True}}
    runs = four_runs(tmp_path, vm_play(), vm_env(lab, tmp_path), inventory(vms))
    assert config_of(lab, 'cs-tags')['tags'] == 'DB;Web;puls-managed'
    # Adding the owner tag keeps the VM's own tag as it is spelled.
    assert config_of(lab, 'cs-legacy')['tags'] == 'Team-A;puls-managed'
    assert runs.real.one(TASK, 'cs-legacy')['diff']['after']['tags'] == ['Team-A', 'puls-managed']


def test_each_option_group_converges_in_four_runs(lab, tmp_path):
    key = ssh_public_key(tmp_path)

    def prepare():
        # pve2 has the most free memory; the template's disks are on local storage of pve1.
        lab.pve.node_memory.update(pve1=(64 << 30, 60 << 30), pve2=(64 << 30, 1 << 30))
        lab.pve.store_file('local', 'noble.qcow2', 4 << 20, content='import')
        lab.pve.volume_data['local:import/noble.qcow2'] = qcow2(3584 << 20)
        # A VM pve_vm did not create (refused without adopt: test_bad_input_fails_naming_the_option_before_any_write).
        lab.pve.add_vm(300, 'legacy', node='pve1', config={'name': 'legacy', 'tags': 'team-a', 'cores': 1, 'scsi0': 'local-lvm:vm-300-disk-0,size=4G'})

    lab.call(prepare)
    lab.dns.set('dns1', lab.address(2))
    vms = {
        'cl-full': {'image': str(TEMPLATE), 'storage': 'local-lvm'},
        'cl-linked': {'image': 'ubuntu-24.04', 'linked_clone': True},
        'imp1': {'image': 'local:import/noble.qcow2', 'storage': 'local-lvm', 'disk_size': '8G', 'memory': 1024},
        'hw1': {'image': TEMPLATE, 'cores': 4, 'sockets': 2, 'memory': 3072, 'balloon': 1024, 'cpu': 'host', 'machine': 'q35', 'onboot': True},
        'net1': {
            'image': TEMPLATE,
            'state': 'started',
            'bridge': 'vmbr1',
            'vlan': 42,
            'ip': lab.address(1),
            'nameservers': ['127.0.0.53'],
            'searchdomain': 'lab.test',
            'ci_user': 'ops',
            'ci_password': PASSWORD,
            'ssh_keys': [key],
        },
        'dns1': {'image': TEMPLATE, 'state': 'started'},
        'dhcp1': {'image': TEMPLATE, 'state': 'started'},
        'tags1': {'image': TEMPLATE, 'tags': ['Web', 'DB']},
        'prot1': {'image': TEMPLATE, 'protection': True},
        'disk1': {'image': TEMPLATE, 'disk_size': '10G'},
        'legacy': {'adopt': True, 'cores': 2},
    }
    runs = four_runs(tmp_path, vm_play(), vm_env(lab, tmp_path, ANSIBLE_FORKS='10'), inventory(vms))
    real = {host: runs.real.one(TASK, host) for host in vms}
    again = {host: runs.real_again.one(TASK, host) for host in vms}

    # Clones: full with storage; linked on the template's node, with neither storage, format nor target.
    clones = sent(lab, 'POST', '/nodes/pve1/qemu/%d/clone' % TEMPLATE)
    by_name = {form['name']: form for form in clones}
    template_notes = lab.call(lambda: lab.pve.vm(TEMPLATE).config.get('description'))
    # The clone is made with the template's Notes and the owner record of its own VMID (a clone copies the Notes).
    for name in ('cl-full', 'cl-linked'):
        assert by_name[name].pop('description') == '%s\n\n[puls-owner: puls-managed=%d]' % (template_notes, real[name]['vmid'])
    assert by_name['cl-full'] == {'full': '1', 'storage': 'local-lvm', 'newid': str(real['cl-full']['vmid']), 'name': 'cl-full'}
    assert by_name['cl-linked'] == {'full': '0', 'newid': str(real['cl-linked']['vmid']), 'name': 'cl-linked'}
    assert real['cl-linked']['node'] == real['cl-full']['node'] == 'pve1'
    # On LVM-thin the clone's volume name does not say it, only the lab knows the thin snapshot's origin.
    linked_volume = 'local-lvm:vm-%d-disk-0' % real['cl-linked']['vmid']
    assert lab.call(lambda: lab.pve.linked_base(linked_volume)) == '%d/base-%d-disk-0' % (TEMPLATE, TEMPLATE), 'a linked clone'
    assert len(clones) == len(vms) - 2, 'every VM was created once'

    # Import: a bootable cloud-image VM on the freest node, grown to disk_size.
    assert real['imp1']['node'] == 'pve2'
    [create] = sent(lab, 'POST', '/nodes/pve2/qemu')
    assert create['scsi0'] == 'local-lvm:0,import-from=local:import/noble.qcow2'
    assert (create['serial0'], create['vga'], create['boot'], create['ide2']) == ('socket', 'serial0', 'order=scsi0', 'local-lvm:cloudinit')
    assert sent(lab, 'PUT', '/qemu/%d/resize' % real['imp1']['vmid']) == [{'disk': 'scsi0', 'size': '8G'}]
    assert config_of(lab, 'imp1')['scsi0'].endswith('size=8G')

    # Hardware.
    hw1 = config_of(lab, 'hw1')
    assert [str(hw1[key]) for key in ('cores', 'sockets', 'memory', 'cpu', 'machine', 'onboot')] == ['4', '2', '3072', 'host', 'q35', '1']
    assert real['hw1']['diff']['after']['machine'] == 'q35' and real['hw1']['status'] == 'stopped'
    # balloon, declared once (module_utils/_guest_options.py): written, then as declared (four_runs: the second run changes nothing).
    assert str(hw1['balloon']) == '1024' and 'balloon' in real['hw1']['changes'] and not again['hw1']['changed']

    # Network and cloud-init: the guest booted with the address, user and key; the password never shows.
    net1 = config_of(lab, 'net1')
    assert net1['net0'].endswith(',bridge=vmbr1,tag=42') and net1['ipconfig0'] == 'ip=%s/24,gw=%s.1' % (lab.address(1), lab.address(1).rsplit('.', 1)[0])
    guest = lab.guest(real['net1']['vmid'])
    assert (guest.address, guest.user) == (lab.address(1), 'ops') and key_blob(key) in guest.boot.keys
    assert real['net1']['address'] == again['net1']['address'] == lab.address(1)
    assert real['net1']['diff']['after']['cipassword'] == '********'
    assert real['net1']['diff']['after']['sshkeys'] == [key]
    for run in runs.__dict__.values():
        assert PASSWORD not in run.stdout + run.stderr and PASSWORD not in repr(run.results)

    # Addresses: found in DNS means static; not found means DHCP, reported by the guest agent.
    assert config_of(lab, 'dns1')['ipconfig0'].startswith('ip=%s/24,' % lab.address(2))
    assert real['dns1']['address'] == lab.guest(real['dns1']['vmid']).address == lab.address(2)
    assert config_of(lab, 'dhcp1')['ipconfig0'] == 'ip=dhcp'
    assert real['dhcp1']['address'] == again['dhcp1']['address'] == lab.guest(real['dhcp1']['vmid']).address
    assert real['dhcp1']['address'] in lab.dhcp_pool and not real['dhcp1'].get('warnings')
    assert runs.check.one(TASK, 'dhcp1')['address'] is None  # not running yet in check mode

    # Tags as a normalized set with the owner tag; protection; disk growth.
    assert config_of(lab, 'tags1')['tags'] == 'db;puls-managed;web'
    assert str(config_of(lab, 'prot1')['protection']) == '1' and real['prot1']['diff']['after']['protection'] is True
    assert config_of(lab, 'disk1')['scsi0'].endswith('size=10G')
    assert (real['disk1']['diff']['before'].get('disk_size'), real['disk1']['diff']['after']['disk_size']) == (None, '10G')

    # Adopting a VM pve_vm did not create adds the owner tag and keeps the VM's own tags.
    assert real['legacy']['vmid'] == 300
    assert (real['legacy']['diff']['before']['tags'], real['legacy']['diff']['after']['tags']) == (['team-a'], ['puls-managed', 'team-a'])
    legacy = config_of(lab, 'legacy')
    assert legacy['tags'] == 'puls-managed;team-a' and str(legacy['cores']) == '2'
    # Not in DNS (dns_domain comes from the environment), so DHCP, on a cloud-init drive added beside its disk.
    assert legacy['ipconfig0'] == 'ip=dhcp' and legacy['ide2'] == 'local-lvm:vm-300-cloudinit,media=cdrom'


@pytest.mark.lab(time_scale=0.01)
def test_drift_in_declared_settings_is_corrected_and_the_rest_left_alone(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    declared = {'image': TEMPLATE, 'cores': 2, 'memory': 2048, 'vlan': 10, 'tags': ['web', 'db'], 'state': 'started'}
    assert run_playbook(tmp_path, vm_play(), env, inventory({'drift1': declared}), name='create').rc == 0
    vm = vm_named(lab, 'drift1')
    mac = vm.config['net0'].split(',')[0]

    notes = 'set by hand\n\n' + vm.config['description']  # the owner record stays

    def by_hand():
        vm.config.update(cores=1, memory='4096', description=notes, tags='db;puls-managed;web;extra')

    lab.call(by_hand)
    # The tags differ from the declared ones in order and case only: no change there.
    again = dict(declared, tags=['DB', 'Web', 'extra'], vlan=11)
    check = run_playbook(tmp_path, vm_play(), env, inventory({'drift1': again}), check=True, name='check')
    real = run_playbook(tmp_path, vm_play(), env, inventory({'drift1': again}), name='real')
    predicted, done = check.one(TASK, 'drift1'), real.one(TASK, 'drift1')
    assert predicted['changed'] and predicted['diff'] == done['diff']
    assert done['changes'] == ['cores', 'memory', 'net0']
    assert (done['diff']['before']['cores'], done['diff']['after']['cores']) == (1, 2)
    assert done['diff']['before']['tags'] == done['diff']['after']['tags']
    # A running VM takes cores and memory at its next boot (report mode): reboot_required says so; a NIC is hot-plugged.
    assert done['reboot_required'] == ['cores', 'memory'] and done['status'] == 'running'
    config = vm_named(lab, 'drift1').config
    assert config['description'] == notes, 'an undeclared setting is left alone'
    assert str(config['net0']).startswith(mac + ','), 'the MAC is kept'

    # apply_mode: reboot restarts it (graceful shutdown, then start), and nothing waits any more.
    reboot = run_playbook(tmp_path, vm_play(), env, inventory({'drift1': dict(again, apply_mode='reboot')}), name='reboot')
    result = reboot.one(TASK, 'drift1')
    assert result['changed'] and result['reboot_required'] == [] and result['changes'] == []
    assert sent(lab, 'POST', '/qemu/%d/status/shutdown' % vm.vmid) and vm_named(lab, 'drift1').pending == {}
    settled = run_playbook(tmp_path, vm_play(), env, inventory({'drift1': dict(again, apply_mode='reboot')}), name='settled')
    assert not settled.one(TASK, 'drift1')['changed']


def test_bad_input_fails_naming_the_option_before_any_write(lab, tmp_path):
    def prepare():
        lab.pve.add_vm(9018, 'ubuntu-22.04-cloud', node='pve1', template=True, config={'name': 'ubuntu-22.04-cloud', 'template': 1})
        owned = {'tags': 'puls-managed', 'scsi0': 'local-lvm:vm-{0}-disk-0,size=10G', 'ipconfig0': 'ip=dhcp', 'ide2': 'local-lvm:vm-{0}-cloudinit,media=cdrom'}
        for vmid, name, extra in ((310, 'big-disk', {}), (311, 'guarded', {'protection': 1})):
            lab.pve.add_vm(vmid, name, node='pve1', config=dict({key: value.format(vmid) for key, value in owned.items()}, name=name, **extra))
        lab.pve.add_vm(300, 'legacy', node='pve1', config={'name': 'legacy', 'tags': 'team-a'})
        lab.pve.add_vm(301, 'twin', node='pve1', config={'name': 'twin'})
        lab.pve.add_vm(302, 'twin', node='pve2', config={'name': 'twin'})

    lab.call(prepare)
    bad = {  # host: (options, the option the error must name, words the message must hold)
        'b-cores': ({'cores': 0}, 'cores', 'integer of at least 1'),
        'b-cores-text': ({'cores': 'four'}, 'cores', 'int'),
        'b-memory': ({'memory': -512}, 'memory', 'MiB'),
        'b-memory-fraction': ({'memory': 1.5}, 'memory', 'int'),
        'b-vlan': ({'vlan': 4095}, 'vlan', 'from 1 to 4094'),
        'b-ip': ({'ip': '127.0.0.256'}, 'ip', 'IPv4 address'),
        'b-cidr': ({'ip': '127.0.0.5/33'}, 'ip', 'CIDR'),
        'b-gateway': ({'ip': '127.0.0.5', 'gateway': '127.0.0'}, 'gateway', 'IPv4 address'),
        'b-machine': ({'machine': 'pc'}, 'machine', 'q35, i440fx'),
        'b-sshkey': ({'ssh_keys': ['ssh-ed25519 not-base64!']}, 'ssh_keys', 'not an OpenSSH public key'),
        'b-disk': ({'disk_size': '10 gigs'}, 'disk_size', '32G'),
        'b-image-none': ({'image': 'centos'}, 'image', "'centos' matches no template"),
        'b-image-ambiguous': ({'image': 'ubuntu'}, 'image', 'ubuntu-24.04-cloud (9017 on pve1), template ubuntu-22.04-cloud (9018'),
        'b-user-data': ({'user_data': '#cloud-config\n', 'ci_user': 'ops'}, 'user_data', 'ci_user'),
        'b-user-data-yaml': ({'user_data': '#cloud-config\npackages: [nginx\n'}, 'user_data', 'YAML'),
        'b-linked': ({'linked_clone': True, 'storage': 'local-lvm'}, 'linked_clone', 'storage'),
        'b-tags': ({'tags': ['env:prod']}, 'tags', "'env:prod'"),
        'b-node': ({'node': 'pve2'}, 'node', 'local storage of pve1'),
        'b-dns': ({'dns_servers': ['dns.lab.test']}, 'dns_servers', 'IP addresses'),
        'big-disk': ({'disk_size': '4G'}, 'disk_size', 'current size 10G'),
        'guarded': ({'state': 'absent'}, 'state', 'protection: false'),
        'legacy': ({}, 'name', 'adopt: true'),
        'twin': ({}, 'name', 'VMIDs 301 on pve1, 302 on pve2'),
    }
    vms = {host: dict({'image': TEMPLATE}, **options) for host, (options, _option, _words) in bad.items()}
    run = run_playbook(tmp_path, vm_play(), vm_env(lab, tmp_path, ANSIBLE_FORKS='10'), inventory(vms))
    assert run.rc != 0 and not run.changed
    for host, (_options, option, words) in bad.items():
        [record] = run.for_task(TASK, host)
        failure = record['result']
        assert record['status'] == 'failed', host
        assert re.search(r'\b%s\b' % option, failure['msg']), '%s: %s' % (host, failure['msg'])
        assert words in failure['msg'], '%s: %s' % (host, failure['msg'])
    assert lab.writes() == []
    assert sorted(config['name'] for config in cluster_vms(lab).values()) == [
        'big-disk',
        'guarded',
        'legacy',
        'twin',
        'twin',
        'ubuntu-22.04-cloud',
        'ubuntu-24.04-cloud',
    ]


@pytest.mark.lab(time_scale=0.01)
def test_unknown_address_of_a_running_dhcp_vm_is_a_warning_saying_why(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    vms = {'no-agent': {'image': TEMPLATE, 'state': 'started'}, 'silent-agent': {'image': TEMPLATE, 'state': 'started'}}
    assert run_playbook(tmp_path, vm_play(), env, inventory(vms), name='create').rc == 0

    no_agent, silent = vm_named(lab, 'no-agent'), vm_named(lab, 'silent-agent')

    def break_agents():
        no_agent.config['agent'] = '0'
        silent.agent = None  # enabled in the config, but not running in the guest

    lab.call(break_agents)
    run = run_playbook(tmp_path, vm_play(), env, inventory({host: dict(options, agent_timeout=1) for host, options in vms.items()}))
    no_agent, silent = run.one(TASK, 'no-agent'), run.one(TASK, 'silent-agent')
    assert no_agent['address'] is None and silent['address'] is None and not run.changed
    [warning] = no_agent['warnings']
    assert 'does not enable the QEMU guest agent' in warning and 'agent: 1' in warning
    [warning] = silent['warnings']
    assert 'guest agent reported none' in warning and 'QEMU guest agent is not running' in warning
    assert 'qemu-guest-agent is installed' in warning
