# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Privileges on a pool and on SDN VNets, through pve_vm against the lab: a token granted on /pool/P (not /vms) creates
a VM in pool P, and is refused up front without the pool; a NIC on a VNet needs SDN.Use in the VNet's own zone.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pool_and_vnet_privileges.py
"""

from __future__ import annotations

import requests
from test_least_privilege import SECRET, TOKEN, USER, play, token_env

from playbooks import run_playbook

PULS_VM = [
    'VM.Allocate',
    'VM.Audit',
    'VM.Clone',
    'VM.Config.CDROM',
    'VM.Config.CPU',
    'VM.Config.Cloudinit',
    'VM.Config.Disk',
    'VM.Config.HWType',
    'VM.Config.Memory',
    'VM.Config.Network',
    'VM.Config.Options',
    'VM.PowerMgmt',
]
DISKS = ['Datastore.AllocateSpace', 'Datastore.Audit']


def as_root(lab, method, path, **params):
    response = requests.request(
        method,
        f'{lab.url}/api2/json{path}',
        data=params,
        verify=lab.cafile,
        timeout=30,
        headers={'Authorization': f'PVEAPIToken={lab.token_id}={lab.token_secret}'},
    )
    assert response.status_code == 200, response.text


def pool_with_the_template(lab, pool='web'):
    as_root(lab, 'POST', '/pools', poolid=pool)
    as_root(lab, 'PUT', f'/pools/{pool}', vms='9017')


def vm_task(name, lab, **options):
    declared = {'name': 'pool-web1', 'image': '9017', 'node': 'pve1', 'state': 'started', 'ip': lab.address(1) + '/24', 'gateway': lab.gateway}
    return {'name': name, 'puls.proxmox.pve_vm': dict(declared, **options)}


def test_a_token_granted_only_on_a_pool_creates_a_vm_in_that_pool(lab, tmp_path):
    pool_with_the_template(lab)
    env = token_env(lab, tmp_path, {'/pool/web': PULS_VM, '/storage/local-lvm': DISKS, '/sdn/zones/localnetwork': ['SDN.Use']})
    run = run_playbook(tmp_path, play(vm_task('plan', lab, pool='web') | {'check_mode': True}, vm_task('pooled', lab, pool='web')), env)
    assert run.rc == 0, run.stdout + run.stderr
    vmid = run.one('pooled')['vmid']
    assert run.one('pooled')['status'] == 'running'
    assert lab.call(lambda: vmid in lab.pve.pools['web'] and lab.pve.vm(vmid).status == 'running')
    assert SECRET not in run.stdout + run.stderr


def test_without_the_pool_a_token_granted_only_on_a_pool_is_refused_up_front_naming_the_privilege(lab, tmp_path):
    pool_with_the_template(lab)
    env = token_env(lab, tmp_path, {'/pool/web': PULS_VM, '/storage/local-lvm': DISKS, '/sdn/zones/localnetwork': ['SDN.Use']})
    writes = len(lab.writes())
    run = run_playbook(tmp_path, play(vm_task('alone', lab)), env)
    assert run.rc != 0
    message = run.one('alone')['msg']
    assert 'refused before any change' in message, message
    assert 'Permission check failed (/vms/<new VMID>, VM.Allocate)' in message
    assert 'VM.Allocate on /pool/NAME would do as well, with pool: NAME declared' in message
    assert f"pveum acl modify /vms --tokens '{USER}!{TOKEN}'" in message
    assert lab.writes()[writes:] == []
    assert lab.call(lambda: [vm.vmid for vm in lab.pve.vms]) == [9017]


def test_a_nic_on_a_vnet_is_checked_in_the_vnets_zone_up_front(lab, tmp_path):
    lab.call(lambda: lab.pve.add_vnet('webnet', 'dmz'))
    grants = {'/vms': PULS_VM, '/storage/local-lvm': DISKS, '/sdn/zones/localnetwork': ['SDN.Use'], '/sdn/zones/dmz': ['SDN.Audit']}
    env = token_env(lab, tmp_path, grants)
    writes = len(lab.writes())
    run = run_playbook(tmp_path, play(vm_task('vnet', lab, vmid=120, bridge='webnet')), env)
    assert run.rc != 0
    message = run.one('vnet')['msg']
    assert 'refused before any change' in message, message
    assert 'Permission check failed (/sdn/zones/dmz/webnet, SDN.Use)' in message
    assert f"grant SDN.Use on /sdn/zones/dmz/webnet to API token {USER}!{TOKEN}" in message
    assert lab.writes()[writes:] == []
    # SDN.Use in the VNet's zone is enough; SDN.Audit there only let the collection see the VNet's zone.
    granted = dict(grants, **{'/sdn/zones/dmz': ['SDN.Audit', 'SDN.Use']})
    lab.call(lambda: lab.pve.add_api_token(USER, 'zoned', 'zoned-secret', granted))
    run = run_playbook(
        tmp_path,
        play(vm_task('vnet', lab, vmid=120, bridge='webnet')),
        dict(env, PROXMOX_TOKEN_NAME='zoned', PROXMOX_TOKEN_SECRET='zoned-secret'),
        name='zoned',
    )
    assert run.rc == 0, run.stdout + run.stderr
    assert 'bridge=webnet' in lab.call(lambda: lab.pve.vm(120).config['net0'])
