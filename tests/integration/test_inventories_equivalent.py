# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The example fleet declared twice - examples/manifests (the inventory plugin puls.proxmox.manifests) and
examples/inventory (a plain inventory) - reconciled by `puls.proxmox.site` on two labs, gives the same cluster.

Each lab gets a copy of examples/ whose make-lab addresses (127.77.0.x) are moved to the lab's own block; the
clusters are compared with each lab's block, VMIDs and MAC addresses written as placeholders.
"""

from __future__ import annotations

import concurrent.futures
import re
import shutil

import lab_vms
import pytest
from lab.seed import SHARED_STORAGE
from lab.serving import Lab

from playbooks import REPO, run_playbook

MAKE_LAB_BLOCK = '127.77.0.'
SEED_TEMPLATE = 9017
# Keys PVE derives per VM (identifiers, digests) rather than from what the inventory declares.
GENERATED_KEYS = {'digest', 'vmgenid', 'smbios1', 'meta'}
# A MAC address, which PVE picks at random for a NIC or a VNet.
MAC = re.compile(r'(?i)\b([0-9a-f]{2}:){5}[0-9a-f]{2}\b')


def lab_copy_of_examples(lab, directory):
    """examples/ copied to directory with the make-lab block replaced by this lab's (symbolic links kept)."""
    copy = directory / 'examples'
    shutil.copytree(REPO / 'examples', copy, symlinks=True)
    block = lab.address(1).rsplit('.', 1)[0] + '.'
    for path in copy.rglob('*.y*ml'):
        if not path.is_symlink():
            path.write_text(path.read_text().replace(MAKE_LAB_BLOCK, block))
    return copy


def reconcile(lab, directory, source, key):
    """make demo's setup on this lab (web2's DNS record, web-old to replace), then puls.proxmox.site on source."""
    directory.mkdir()
    examples = lab_copy_of_examples(lab, directory)
    lab.dns.set('web2', lab.address(12))
    lab_vms.clone(lab_vms.client(lab), 150, 'web-old', tags='demo;web;puls-managed')
    env = dict(lab.env, PULS_DEMO_SSH_KEY=str(key))
    # run_playbook's own inventory.yml, empty: the example is the only source, and localhost stays implicit.
    (directory / 'inventory.yml').write_text('all: {}\n')
    run = run_playbook(directory, '- import_playbook: puls.proxmox.site\n', env, name='site', extra_args=('-i', str(examples / source)))
    assert run.rc == 0, run.stdout + run.stderr
    return run


def cluster(lab):
    """What the lab holds after the run: name -> normalized config of every guest but the seed template, the
    files of every storage, the text of each node's /etc/network/interfaces (with nothing left staged), and the SDN
    config."""
    api = lab_vms.client(lab)
    block = lab.address(1).rsplit('.', 1)[0] + '.'
    guests = {}
    for entry in api.cluster_vms():
        if int(entry['vmid']) == SEED_TEMPLATE:
            continue
        config = api.vm_config(entry['node'], entry['vmid'], guest_type=entry.get('type', 'qemu'))
        config = {key: value for key, value in config.items() if key not in GENERATED_KEYS}
        text = repr(sorted(config.items())).replace(block, '<block>.')
        text = re.sub(r'\b(vm|base)-{0}-'.format(entry['vmid']), r'\1-<vmid>-', text)
        # The owner record names the guest's own VMID.
        text = re.sub(r'(\[puls-owner: [^\]]*?=){0}\b'.format(entry['vmid']), r'\1<vmid>', text)
        text = MAC.sub('<mac>', text)
        guests[entry['name']] = (entry['node'], text)
    files = sorted(
        {
            (item['volid'], item['content'])
            for node in lab.nodes
            for storage in ('local', 'local-lvm', SHARED_STORAGE)
            for item in api.get(f'/nodes/{node}/storage/{storage}/content')
            if not re.search(r'\b(vm|base)-\d+-', item['volid'])
        }
    )
    # A node's own address is in the lab's block.
    networks = {node: tuple(text and text.replace(block, '<block>.') for text in lab.call(lambda node=node: lab.pve.network_files(node))) for node in lab.nodes}
    # The SDN config as applied, and as written (nothing may be left unapplied); a VNet's MAC address is PVE's pick.
    sdn = tuple(MAC.sub('<mac>', text) for text in lab.call(lambda: (repr(lab.pve.sdn_running), repr(lab.pve.sdn_config))))
    return guests, files, networks, sdn


@pytest.mark.lab(time_scale=0.01)
def test_example_manifests_and_example_inventory_reconcile_to_the_same_cluster(lab, lab_ca, tmp_path):
    key, _public = lab_vms.ssh_key(tmp_path)
    with Lab(tmp_path / 'lab2', ca=lab_ca, time_scale=0.01) as other, concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = [
            pool.submit(reconcile, lab, tmp_path / 'manifests', 'manifests/fleet.proxmops.yml', key),
            pool.submit(reconcile, other, tmp_path / 'inventory', 'inventory', key),
        ]
        from_manifests, from_inventory = [run.result() for run in runs]
        manifests_cluster, inventory_cluster = cluster(lab), cluster(other)

    guests, files, networks, sdn = manifests_cluster
    assert set(guests) == {'golden-web', 'web1', 'web2', 'web3', 'web4', 'dns1'}
    assert ('local:iso/lab-tools.iso', 'iso') in files and ('local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst', 'vztmpl') in files
    assert '[puls-provision: base.yml=' in guests['dns1'][1]
    assert '[puls-provision:' in guests['golden-web'][1]
    assert guests == inventory_cluster[0]
    assert files == inventory_cluster[1]
    # The example bridge, applied on pve1 alike by both.
    assert 'iface vmbr1 inet static' in networks['pve1'][0] and networks['pve1'][1] is None
    assert networks == inventory_cluster[2]
    # The example VNet, applied alike by both.
    assert "'labnet'" in sdn[0] and sdn[0] == sdn[1]
    assert sdn == inventory_cluster[3]
    # Both runs did the same, step by step, as their plans say.
    assert from_manifests.plans['web4'] == ['create', 'replace web-old']
    assert from_manifests.plans == from_inventory.plans
