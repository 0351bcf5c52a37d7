# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hardware real VMs have, through real ansible-playbook runs of pve_vm against the lab: further disks, further
network devices, UEFI with an EFI disk and a TPM state, a serial console; drift on a second disk or NIC corrected and
nothing else touched; bad input refused naming the field, before any write.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pve_vm_hardware.py -p no:xdist
"""

from __future__ import annotations

import re

from pve_vm_plays import TASK, cluster_vms, inventory, sent, vm_env, vm_named, vm_play
from test_plan_equals_run import fleet, site, why

from playbooks import four_runs, run_playbook

TEMPLATE = 9017
HARDWARE = {
    'image': TEMPLATE,
    'storage': 'local-lvm',
    'bios': 'ovmf',
    'machine': 'q35',
    'efidisk': {'pre_enrolled_keys': True},
    'tpm': {'version': 'v2.0'},
    'serial': 'socket',
    'vga': 'serial0',
    'disks': [{'slot': 'scsi1', 'size': '2G', 'cache': 'writeback', 'discard': True, 'iothread': True}],
    'nets': [{'slot': 'net1', 'bridge': 'vmbr1', 'vlan': 20, 'firewall': True, 'mtu': 1}],
}


def config_of(lab, name):
    return dict(vm_named(lab, name).config)


def first_part(value):
    """A drive's volume, a NIC's MODEL=MAC: what comes before the first comma."""
    return str(value).split(',', maxsplit=1)[0]


def test_a_vm_with_two_disks_two_nics_and_uefi_converges_in_four_runs(lab, tmp_path):
    runs = four_runs(tmp_path, vm_play(), vm_env(lab, tmp_path), inventory({'hw-uefi': HARDWARE}))
    real, check = runs.real.one(TASK, 'hw-uefi'), runs.check.one(TASK, 'hw-uefi')
    assert check['diff'] == real['diff'], 'the check run shows what the real run does'

    config = config_of(lab, 'hw-uefi')
    vmid = real['vmid']
    # The template's boot disk and net0 are kept; the declared disk and NIC are new, with their properties only.
    assert config['scsi0'].startswith(f'local-lvm:vm-{vmid}-disk-0,')
    assert re.fullmatch(rf'local-lvm:vm-{vmid}-disk-\d,cache=writeback,discard=on,iothread=1,size=2G', config['scsi1'])
    assert config['net0'].startswith('virtio=BC:24:11:') and config['net0'].endswith(',bridge=vmbr0')
    assert re.fullmatch(r'virtio=[0-9A-F:]{17},bridge=vmbr1,firewall=1,mtu=1,tag=20', config['net1']), config['net1']
    # UEFI: OVMF with a 4m EFI vars disk, pre-enrolled keys, and a TPM 2.0 state; a serial console as display.
    assert (config['bios'], config['machine'], config['serial0'], config['vga']) == ('ovmf', 'q35', 'socket', 'serial0')
    assert re.fullmatch(rf'local-lvm:vm-{vmid}-disk-\d,efitype=4m,ms-cert=2023k,pre-enrolled-keys=1,size=528K', config['efidisk0'])
    assert re.fullmatch(rf'local-lvm:vm-{vmid}-disk-\d,size=4M,version=v2.0', config['tpmstate0'])
    volumes = {first_part(config[key]) for key in ('scsi1', 'efidisk0', 'tpmstate0')}
    stored = lab.call(lambda: {f'local-lvm:{name}' for name in lab.pve.storages['local-lvm']['volumes']})
    assert volumes <= stored, 'each new volume was allocated'

    # The diff lists the declared properties only, in PVE's terms.
    after = real['diff']['after']
    assert after['scsi1'] == {'storage': 'local-lvm', 'size': '2G', 'cache': 'writeback', 'discard': 'on', 'iothread': '1'}
    assert after['net1'] == {'bridge': 'vmbr1', 'tag': '20', 'firewall': '1', 'mtu': '1'}
    assert after['efidisk0'] == {'storage': 'local-lvm', 'efitype': '4m', 'pre-enrolled-keys': '1'}
    assert after['tpmstate0'] == {'storage': 'local-lvm', 'version': 'v2.0'}
    again = runs.real_again.one(TASK, 'hw-uefi')
    assert again['diff']['before']['scsi1'] == after['scsi1'] and again['diff']['before']['net1'] == after['net1']


def test_drift_on_the_second_disk_and_nic_is_corrected_and_nothing_else_touched(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    declared = dict(HARDWARE, disks=[*HARDWARE['disks'], {'slot': 'virtio1', 'size': 1}])
    assert run_playbook(tmp_path, vm_play(), env, inventory({'hw-drift': declared}), name='create').rc == 0
    vm = vm_named(lab, 'hw-drift')
    made = dict(vm.config)
    mac = first_part(made['net1'])

    def by_hand():
        # Behind the module's back: the second disk's cache and discard, the second NIC's bridge and tag, and a disk
        # nobody declared.
        vm.config['scsi1'] = made['scsi1'].replace('cache=writeback', 'cache=none').replace('discard=on', 'discard=ignore')
        vm.config['net1'] = made['net1'].replace('bridge=vmbr1', 'bridge=vmbr0').replace('tag=20', 'tag=99')
        vm.config['sata2'] = 'local-lvm:vm-%d-disk-9,size=1G' % vm.vmid
        vm.config['cores'] = 3

    lab.call(by_hand)
    drifted = dict(vm.config)
    check = run_playbook(tmp_path, vm_play(), env, inventory({'hw-drift': declared}), check=True, name='check')
    real = run_playbook(tmp_path, vm_play(), env, inventory({'hw-drift': declared}), name='real')
    predicted, done = check.one(TASK, 'hw-drift'), real.one(TASK, 'hw-drift')
    assert predicted['changed'] and predicted['diff'] == done['diff']
    assert done['changes'] == ['net1', 'scsi1']
    assert done['diff']['before']['scsi1'] == {'storage': 'local-lvm', 'size': '2G', 'cache': 'none', 'discard': 'ignore', 'iothread': '1'}
    assert done['diff']['before']['net1'] == {'bridge': 'vmbr0', 'tag': '99', 'firewall': '1', 'mtu': '1'}
    [write] = sent(lab, 'POST', '/qemu/%d/config' % vm.vmid)[-1:]
    assert sorted(write) == ['net1', 'scsi1'], 'one config write of the drifted devices only'

    config = dict(vm_named(lab, 'hw-drift').config)
    assert config['scsi1'] == made['scsi1'] and config['net1'] == made['net1'], 'back as declared, the volume and the MAC kept'
    assert config['net1'].startswith(mac + ',')
    unchanged = {key: value for key, value in drifted.items() if key not in ('scsi1', 'net1', 'digest')}
    assert {key: config.get(key) for key in unchanged} == unchanged, 'nothing else of the VM touched (cores 3 and sata2 stay)'
    assert not run_playbook(tmp_path, vm_play(), env, inventory({'hw-drift': declared}), name='settled').changed

    # Asked to, the undeclared disk goes: PVE keeps its volume as an unused disk.
    removing = dict(declared, remove_undeclared_disks=True)
    detach = run_playbook(tmp_path, vm_play(), env, inventory({'hw-drift': removing}), name='detach').one(TASK, 'hw-drift')
    assert detach['changes'] == ['sata2'] and detach['diff']['after']['sata2'] is None
    config = dict(vm_named(lab, 'hw-drift').config)
    assert 'sata2' not in config and first_part(drifted['sata2']) in config.values()
    assert first_part(config['virtio1']) == first_part(made['virtio1']) and config['scsi0'] == made['scsi0']
    assert not run_playbook(tmp_path, vm_play(), env, inventory({'hw-drift': removing}), name='detached').changed


def test_bad_hardware_fails_naming_the_field_before_any_write(lab, tmp_path):
    def prepare():
        lab.pve.add_vm(
            310,
            'hw-big',
            node='pve1',
            config={
                'name': 'hw-big',
                'tags': 'puls-managed',
                'scsi0': 'local-lvm:vm-310-disk-0,size=10G',
                'scsi1': 'local-lvm:vm-310-disk-1,size=8G',
                'tpmstate0': 'local-lvm:vm-310-disk-2,size=4M,version=v2.0',
            },
        )

    lab.call(prepare)
    bad = {  # host: (options, the field the error must name, words the message must hold)
        'hw-big': ({'disks': [{'slot': 'scsi1', 'size': '4G'}]}, 'disks[0].size', 'below the current size 8G of scsi1'),
        'hw-tpm': ({'image': TEMPLATE, 'tpm': {'version': 'v3'}}, 'tpm.version', 'v2.0, v1.2'),
        'hw-slot': ({'image': TEMPLATE, 'disks': [{'slot': 'scsi40', 'size': 1}]}, 'disks[0].slot', 'not a disk slot PVE has'),
        'hw-bus': ({'image': TEMPLATE, 'disks': [{'slot': 'nvme0', 'size': 1}]}, 'disks[0].slot', 'scsi0-scsi30, virtio0-virtio15'),
        'hw-ssd': ({'image': TEMPLATE, 'disks': [{'slot': 'virtio1', 'size': 1, 'ssd': True}]}, 'disks[0].ssd', 'not a property of a virtio disk'),
        'hw-nic': ({'image': TEMPLATE, 'nets': [{'slot': 'eth1'}]}, 'nets[0].slot', 'net0 to net31'),
        'hw-net0': ({'image': TEMPLATE, 'bridge': 'vmbr1', 'nets': [{'slot': 'net0'}]}, 'nets', 'declare net0 in one place'),
        'hw-efi': ({'image': TEMPLATE, 'bios': 'seabios', 'efidisk': {}}, 'efidisk', 'bios: ovmf'),
    }
    vms = {host: options for host, (options, _field, _words) in bad.items()}
    run = run_playbook(tmp_path, vm_play(), vm_env(lab, tmp_path, ANSIBLE_FORKS='8'), inventory(vms))
    assert run.rc != 0 and not run.changed
    for host, (_options, field, words) in bad.items():
        [record] = run.for_task(TASK, host)
        message = record['result']['msg']
        assert record['status'] == 'failed', host
        assert message.startswith(field + ' ') and words in message, f'{host}: {message}'
    assert lab.writes() == []
    assert sorted(config['name'] for config in cluster_vms(lab).values()) == ['hw-big', 'ubuntu-24.04-cloud']


def test_an_installer_iso_and_the_boot_order_converge_in_four_runs_and_a_new_medium_needs_no_restart(lab, tmp_path):
    def prepare():
        lab.pve.store_file('local', 'debian-12.iso', 4 << 20, content='iso')
        lab.pve.store_file('local', 'debian-13.iso', 4 << 20, content='iso')

    lab.call(prepare)
    env = vm_env(lab, tmp_path)
    installer = {
        'image': TEMPLATE,
        'disks': [{'slot': 'scsi1', 'size': 1}],
        'cdrom': 'local:iso/debian-12.iso',
        'boot': ['ide0', 'scsi0'],
    }
    runs = four_runs(tmp_path, vm_play(), env, inventory({'hw-installer': installer}))
    real = runs.real.one(TASK, 'hw-installer')
    config = config_of(lab, 'hw-installer')
    # The template's ide2 holds its cloud-init drive: the ISO gets the next free slot, and boots first.
    assert config['ide2'].startswith(f'local-lvm:vm-{real["vmid"]}-cloudinit')
    assert config['ide0'].startswith('local:iso/debian-12.iso,media=cdrom') and config['boot'] == 'order=ide0;scsi0'
    assert (real['diff']['after']['cdrom'], real['diff']['after']['boot']) == ('local:iso/debian-12.iso', 'order=ide0;scsi0')

    started = run_playbook(tmp_path, vm_play(), env, inventory({'hw-installer': dict(installer, state='started')}), name='start')
    assert started.one(TASK, 'hw-installer')['status'] == 'running'
    swapped = run_playbook(tmp_path, vm_play(), env, inventory({'hw-installer': dict(installer, state='started', cdrom='local:iso/debian-13.iso')}))
    result = swapped.one(TASK, 'hw-installer')
    assert result['changes'] == ['cdrom'] and result['reboot_required'] == []
    vm = vm_named(lab, 'hw-installer')
    assert vm.config['ide0'].startswith('local:iso/debian-13.iso,media=cdrom') and 'ide0' not in vm.pending


def test_a_vm_from_scratch_as_proxmops_web_01_declares_it_converges_in_four_runs(lab, tmp_path):
    # proxmops' examples/proxmox/vms/web-01.yaml: no image, blank disks, an installer ISO, no cloud-init.
    lab.call(lambda: lab.pve.store_file('local', 'debian-12.iso', 4 << 20, content='iso'))
    web = {
        'vmid': 101,
        'cores': 4,
        'memory': 8192,
        'storage': 'local-lvm',
        'disk_size': '40G',
        'disks': [{'slot': 'scsi1', 'size': '10G'}],
        'nets': [{'slot': 'net0', 'bridge': 'vmbr0', 'model': 'virtio'}],
        'cdrom': 'local:iso/debian-12.iso',
    }
    # A cluster without a DNS domain: no address to look up, so nothing for cloud-init.
    runs = four_runs(tmp_path, vm_play(), vm_env(lab, tmp_path, PROXMOX_DNS_DOMAIN=''), inventory({'web-01': web}))
    real = runs.real.one(TASK, 'web-01')
    assert real['vmid'] == 101 and real['diff']['after']['image'] is None
    [create] = sent(lab, 'POST', '/nodes/%s/qemu' % real['node'])
    assert (create['scsi0'], create['scsi1'], create['ide2']) == ('local-lvm:40', 'local-lvm:10', 'local:iso/debian-12.iso,media=cdrom')
    assert 'import-from' not in create['scsi0'] and 'boot' not in create, "PVE's default order: the disks, then the CD-ROM"
    config = config_of(lab, 'web-01')
    assert config['scsi0'] == 'local-lvm:vm-101-disk-0,size=40G' and re.fullmatch(r'local-lvm:vm-101-disk-\d,size=10G', config['scsi1'])
    assert config['ide2'].startswith('local:iso/debian-12.iso,media=cdrom') and re.fullmatch(r'virtio=[0-9A-F:]{17},bridge=vmbr0', config['net0'])
    assert not any(key.startswith(('ipconfig', 'ci')) or 'cloudinit' in str(value) for key, value in config.items()), 'no cloud-init'

    # With a cloud-init setting, an empty VM gets a cloud-init drive at creation, beside the ISO.
    with_ci = dict(web, vmid=102, ci_user='ops', ip='dhcp')
    created = run_playbook(tmp_path, vm_play(), vm_env(lab, tmp_path, PROXMOX_DNS_DOMAIN=''), inventory({'web-02': with_ci}), name='ci')
    assert created.one(TASK, 'web-02')['diff']['after']['cloudinit_drive'] == 'ide0: local-lvm:cloudinit'
    assert config_of(lab, 'web-02')['ide0'] == 'local-lvm:vm-102-cloudinit,media=cdrom'
    settled = run_playbook(tmp_path, vm_play(), vm_env(lab, tmp_path, PROXMOX_DNS_DOMAIN=''), inventory({'web-02': with_ci}), name='ci-again')
    assert not settled.changed


def test_a_vm_from_scratch_converges_through_the_site_playbook_and_the_second_run_changes_nothing(lab, tmp_path):
    # The same VM as an inventory declares it (pve_* variables), through puls.proxmox.site: no pve_image is needed.
    lab.call(lambda: lab.pve.store_file('local', 'debian-12.iso', 4 << 20, content='iso'))
    web = {
        'pve_vmid': 101,
        'pve_storage': 'local-lvm',
        'pve_disk_size': '40G',
        'pve_disks': [{'slot': 'scsi1', 'size': '10G'}],
        'pve_cdrom': 'local:iso/debian-12.iso',
        'pve_power': 'stopped',
    }
    inventory = fleet(lab, tmp_path, {}, {'web-01': web})
    writes = len(lab.writes())
    planned = site(lab, tmp_path, inventory, 'plan', check=True, PROXMOX_DNS_DOMAIN='')
    assert planned.rc == 0 and lab.writes()[writes:] == [], why(planned)
    assert [(m['name'], m['actions']) for m in planned.plan['machines']] == [('web-01', ['create'])], why(planned)
    applied = site(lab, tmp_path, inventory, 'apply', PROXMOX_DNS_DOMAIN='')
    assert applied.rc == 0 and applied.plan['machines'] == planned.plan['machines'], why(applied)
    config = config_of(lab, 'web-01')
    assert config['scsi0'] == 'local-lvm:vm-101-disk-0,size=40G' and config['ide2'].startswith('local:iso/debian-12.iso,media=cdrom')
    again = site(lab, tmp_path, inventory, 'again', PROXMOX_DNS_DOMAIN='')
    assert again.rc == 0 and again.plan['nothing_to_do'] and not again.changed, why(again)
