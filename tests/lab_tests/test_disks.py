"""Disks are allocated, imported and resized as PVE does it (Qemu.pm create_disks and resize_vm)."""

CONFIG = '/nodes/pve1/qemu/{0}/config'
RESIZE = '/nodes/pve1/qemu/{0}/resize'
GIB = 1024**3


def volumes(api, storage='local-lvm'):
    return {item['volid']: item for item in api.data('GET', f'/nodes/pve1/storage/{storage}/content')}


def create(api, vmid=130, **config):
    return api.run('POST', '/nodes/pve1/qemu', vmid=vmid, **config)


def download_debian(api, lab):
    url = lab.served.url('debian-12-genericcloud-amd64.qcow2')
    assert api.download(url, 'import', 'debian-12.qcow2')['exitstatus'] == 'OK'
    return 'local:import/debian-12.qcow2'


def test_a_config_update_allocates_a_new_disk(api):
    api.clone(120)
    api.data('PUT', CONFIG.format(120), scsi1='local-lvm:2')
    assert api.config(120)['scsi1'] == 'local-lvm:vm-120-disk-1,size=2G'
    assert volumes(api)['local-lvm:vm-120-disk-1']['size'] == 2 * GIB


def test_a_cloud_init_drive_is_named_after_its_vm(api):
    assert create(api, ide2='local-lvm:cloudinit')['exitstatus'] == 'OK'
    assert api.config(130)['ide2'] == 'local-lvm:vm-130-cloudinit,media=cdrom'
    create(api, vmid=131)
    api.data('PUT', CONFIG.format(131), ide2='local-lvm:cloudinit')
    assert api.config(131)['ide2'] == 'local-lvm:vm-131-cloudinit,media=cdrom'
    assert 'local-lvm:vm-131-cloudinit' in volumes(api)


def test_a_cloud_init_drive_needs_a_storage_for_images(api):
    create(api)
    status, _message, errors = api.error('PUT', CONFIG.format(130), ide2='local:cloudinit')
    assert (status, errors) == (400, {'storage': "storage 'local' does not support vm images"})


def test_a_second_cloud_init_drive_is_refused(api):
    api.clone(120)
    assert api.error('PUT', CONFIG.format(120), ide0='local-lvm:cloudinit')[:2] == (500, "ide0 - cloud-init drive is already attached at 'ide2'")
    status = create(api, ide0='local-lvm:cloudinit', ide2='local-lvm:cloudinit')
    assert status['exitstatus'] == "unable to create VM 130 - ide2 - cloud-init drive is already attached at 'ide0'"


def test_import_from_needs_a_zero_size(api, lab):
    source = download_debian(api, lab)
    status, _message, errors = api.error('POST', '/nodes/pve1/qemu', vmid=130, scsi0='local-lvm:10,import-from=' + source)
    assert (status, errors) == (400, {'scsi0': "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>"})


def test_import_from_an_iso_volume_is_refused(api, lab):
    url = lab.served.url('noble-server-cloudimg-amd64.img')
    assert api.download(url, 'iso', 'noble.img')['exitstatus'] == 'OK'
    errors = api.error('POST', '/nodes/pve1/qemu', vmid=130, scsi0='local-lvm:0,import-from=local:iso/noble.img')[2]
    assert errors == {'scsi0': "local:iso/noble.img has wrong type 'iso' - needs to be 'images' or 'import'"}


def test_import_from_a_missing_volume_fails_in_the_task(api):
    status = create(api, scsi0='local-lvm:0,import-from=local:import/missing.qcow2')
    assert status['exitstatus'].startswith("unable to create VM 130 - cannot import from 'local:import/missing.qcow2' - ")
    assert api.call('GET', CONFIG.format(130)).status_code == 500


def test_an_imported_disk_takes_the_image_size(api, lab):
    source = download_debian(api, lab)
    assert create(api, scsi0='local-lvm:0,import-from=' + source)['exitstatus'] == 'OK'
    assert api.config(130)['scsi0'] == 'local-lvm:vm-130-disk-0,size=3G'
    api.data('PUT', CONFIG.format(130), scsi1='local-lvm:0,import-from=' + source + ',discard=on')
    assert api.config(130)['scsi1'] == 'local-lvm:vm-130-disk-1,discard=on,size=3G'


def test_resize_grows_a_disk(api):
    api.clone(120, full=1)
    assert api.run('PUT', RESIZE.format(120), disk='scsi0', size='+2G')['exitstatus'] == 'OK'
    assert api.config(120)['scsi0'] == 'local-lvm:vm-120-disk-0,size=5632M'
    assert volumes(api)['local-lvm:vm-120-disk-0']['size'] == 5632 * 1024**2
    assert api.run('PUT', RESIZE.format(120), disk='scsi0', size='10G')['exitstatus'] == 'OK'
    assert api.config(120)['scsi0'] == 'local-lvm:vm-120-disk-0,size=10G'


def test_resize_to_the_same_size_changes_nothing(api):
    api.clone(120)
    digest = api.config(120)['digest']
    assert api.run('PUT', RESIZE.format(120), disk='scsi0', size='3584M')['exitstatus'] == 'OK'
    assert api.config(120)['digest'] == digest


def test_resize_refuses_to_shrink_and_unknown_disks(api):
    api.clone(120, full=1)
    assert api.run('PUT', RESIZE.format(120), disk='scsi0', size='1G')['exitstatus'] == 'shrinking disks is not supported'
    assert api.run('PUT', RESIZE.format(120), disk='scsi5', size='+1G')['exitstatus'] == "disk 'scsi5' does not exist"
    assert api.run('PUT', RESIZE.format(120), disk='ide2', size='+1G')['exitstatus'] == "you can't resize a cdrom"
    assert api.config(120)['scsi0'] == 'local-lvm:vm-120-disk-0,size=3584M'


# ------------------------------------------------------------------ linked clones: names and in-use refusal


def test_a_linked_clone_on_lvm_thin_gets_a_plain_volume_name(lab, api):
    # LvmThinPlugin clone_image returns the thin snapshot's own name: nothing in it names the base.
    api.clone(120)
    api.clone(121, full=1)
    assert api.config(120)['scsi0'].startswith('local-lvm:vm-120-disk-0,')
    assert api.config(121)['scsi0'].startswith('local-lvm:vm-121-disk-0,')
    assert 'local-lvm:vm-120-disk-0' in volumes(api)
    # Only the lab knows what the thin snapshot was taken of.
    assert lab.call(lambda: lab.pve.linked_base('local-lvm:vm-120-disk-0')) == '9017/base-9017-disk-0'
    assert lab.call(lambda: lab.pve.linked_base('local-lvm:vm-121-disk-0')) is None


def test_a_template_with_a_linked_clone_on_lvm_thin_is_destroyed_without_complaint(api):
    # Storage.pm: volume_is_base_and_used "does not work for LVM-thin", and LVM-thin lets the base go.
    api.clone(120)
    assert api.run('DELETE', '/nodes/pve1/qemu/9017', purge=1)['exitstatus'] == 'OK'
    assert 'local-lvm:base-9017-disk-0' not in volumes(api)
    # The clone keeps its own thin volume and still starts.
    assert 'local-lvm:vm-120-disk-0' in volumes(api)
    assert api.run('POST', '/nodes/pve1/qemu/120/status/start')['exitstatus'] == 'OK'


def test_a_template_whose_qcow2_base_a_linked_clone_uses_cannot_be_destroyed_on_a_directory_storage(lab, api):
    # Plugin.pm clone_image names the clone after its base ("$basevmid/$basename/$vmid/$name"), so
    # volume_is_base_and_used finds it and vdisk_free (QemuServer.pm destroy_vm) refuses.
    lab.call(lambda: lab.pve.storages['local'].update(content='images,iso,vztmpl,import,snippets'))
    assert create(api, vmid=130, scsi0='local:1,format=qcow2')['exitstatus'] == 'OK'
    assert api.run('POST', '/nodes/pve1/qemu/130/template')['exitstatus'] == 'OK'
    api.clone(131, source=130)
    assert api.config(131)['scsi0'].startswith('local:130/base-130-disk-0.qcow2/131/vm-131-disk-0.qcow2,')
    status = api.run('DELETE', '/nodes/pve1/qemu/130', purge=1)
    assert status['exitstatus'] == "base volume 'local:130/base-130-disk-0.qcow2' is still in use by linked cloned"
    assert api.config(130)['template'] == 1
    assert api.run('DELETE', '/nodes/pve1/qemu/131', purge=1)['exitstatus'] == 'OK'
    assert api.run('DELETE', '/nodes/pve1/qemu/130', purge=1)['exitstatus'] == 'OK'


def test_an_efi_disk_is_the_vars_template_of_its_efitype(api):
    # qemu-server OVMF.pm create_efidisk: the size asked for does not matter.
    create(api, efidisk0='local-lvm:1,efitype=4m,pre-enrolled-keys=1', bios='ovmf')
    assert api.config(130)['efidisk0'] == 'local-lvm:vm-130-disk-0,efitype=4m,ms-cert=2023k,pre-enrolled-keys=1,size=528K'
    create(api, vmid=131)
    api.data('PUT', CONFIG.format(131), efidisk0='local-lvm:4')
    assert api.config(131)['efidisk0'] == 'local-lvm:vm-131-disk-0,size=128K'
    assert volumes(api)['local-lvm:vm-131-disk-0']['size'] == 128 * 1024


def test_a_tpm_state_keeps_its_version(api):
    # qemu-server Qemu.pm prohibit_tpm_version_change.
    create(api, tpmstate0='local-lvm:1,version=v2.0')
    tpm = api.config(130)['tpmstate0']
    assert tpm == 'local-lvm:vm-130-disk-0,size=4M,version=v2.0'
    assert api.error('PUT', CONFIG.format(130), tpmstate0=tpm.replace('v2.0', 'v1.2'))[:2] == (500, 'cannot change TPM state version after creation')
    assert api.config(130)['tpmstate0'] == tpm
