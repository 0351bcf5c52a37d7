"""VM config reads and writes behave as on PVE (qemu-server Qemu.pm update_vm and vm_config)."""

import re

CONFIG = '/nodes/pve1/qemu/{0}/config'
PENDING = '/nodes/pve1/qemu/{0}/pending'


def create(api, vmid=130, **config):
    status = api.run('POST', '/nodes/pve1/qemu', vmid=vmid, name=f'vm{vmid}', **config)
    assert status['exitstatus'] == 'OK', status


def start(api, vmid=130):
    assert api.run('POST', f'/nodes/pve1/qemu/{vmid}/status/start')['exitstatus'] == 'OK'


def pending_keys(api, vmid=130):
    return {item['key'] for item in api.data('GET', PENDING.format(vmid)) if 'pending' in item or 'delete' in item}


def test_config_values_are_typed_by_the_schema(api):
    create(api)
    api.data('PUT', CONFIG.format(130), cores='4', onboot='yes', numa='true', cpulimit='1.5', memory='1024')
    config = api.config(130)
    assert (config['cores'], config['onboot'], config['numa'], config['cpulimit']) == (4, 1, 1, 1.5)
    assert config['memory'] == '1024'  # a property string in PVE 9: sent as a string


def test_cipassword_is_masked(api):
    create(api, cipassword='hunter2')
    assert api.config(130)['cipassword'] == '**********'


def test_config_shows_pending_values_unless_current_is_asked(api):
    create(api, cores=1)
    start(api)
    api.data('PUT', CONFIG.format(130), cores='4')
    assert api.config(130)['cores'] == 4
    assert api.config(130, current=1)['cores'] == 1
    assert pending_keys(api) == {'cores'}


def test_a_pending_delete_hides_the_key_unless_current_is_asked(api):
    create(api, cores=1, numa=1)
    start(api)
    api.data('PUT', CONFIG.format(130), delete='numa')
    assert 'numa' not in api.config(130)
    assert api.config(130, current=1)['numa'] == 1


def test_cloud_init_options_apply_at_once_on_a_running_vm(api):
    create(api, ciuser='old', searchdomain='old.test')
    start(api)
    api.data('PUT', CONFIG.format(130), ciuser='alice', ipconfig0='ip=dhcp', nameserver='127.0.0.53', delete='searchdomain')
    current = api.config(130, current=1)
    assert (current['ciuser'], current['ipconfig0'], current['nameserver']) == ('alice', 'ip=dhcp', '127.0.0.53')
    assert 'searchdomain' not in current
    assert pending_keys(api) == set()


def test_agent_waits_for_a_restart_on_a_running_vm(api):
    create(api)
    start(api)
    api.data('PUT', CONFIG.format(130), agent='1')
    assert 'agent' not in api.config(130, current=1)
    assert api.config(130)['agent'] == '1'
    assert pending_keys(api) == {'agent'}


def test_resending_the_current_value_leaves_nothing_pending(api):
    create(api, cores=2)
    start(api)
    api.data('PUT', CONFIG.format(130), cores='2')
    assert pending_keys(api) == set()


def test_description_loses_trailing_whitespace(api):
    create(api, description='made\n')
    assert api.config(130)['description'] == 'made'
    api.clone(120, description='cloned \n')
    assert api.config(120)['description'] == 'cloned'
    api.data('PUT', CONFIG.format(130), description='line one\n\n  line two\n\n \t')
    assert api.config(130)['description'] == 'line one\n\n  line two'


def test_delete_is_split_on_commas_semicolons_and_spaces(api):
    create(api, numa=1, cpulimit=2, onboot=1, tablet=0)
    api.data('PUT', CONFIG.format(130), delete='numa;cpulimit onboot,tablet')
    assert not {'numa', 'cpulimit', 'onboot', 'tablet'} & set(api.config(130))


def test_setting_and_deleting_one_key_is_refused(api):
    create(api, cores=1)
    status, message, errors = api.error('PUT', CONFIG.format(130), cores='3', delete='cores')
    assert (status, message) == (400, 'Parameter verification failed.')
    assert errors == {'delete': "you can't use '-cores' and -delete cores' at the same time"}


def test_deleting_an_unknown_option_is_refused(api):
    create(api)
    assert api.error('PUT', CONFIG.format(130), delete='bogus')[2] == {'delete': "unknown option 'bogus'"}


def test_deleting_a_disk_of_a_stopped_vm_keeps_it_as_unused(api):
    api.clone(120)
    api.data('PUT', CONFIG.format(120), scsi1='local-lvm:2')
    volume = api.config(120)['scsi1'].split(',')[0]
    api.data('PUT', CONFIG.format(120), delete='scsi1')
    config = api.config(120)
    assert 'scsi1' not in config and config['unused0'] == volume
    content = [item['volid'] for item in api.data('GET', '/nodes/pve1/storage/local-lvm/content')]
    assert volume in content
    api.data('PUT', CONFIG.format(120), delete='unused0')
    assert volume not in [item['volid'] for item in api.data('GET', '/nodes/pve1/storage/local-lvm/content')]


def test_protection_blocks_removing_a_drive(api):
    api.clone(120)
    api.data('PUT', CONFIG.format(120), protection='1')
    assert api.error('PUT', CONFIG.format(120), delete='scsi0')[:2] == (500, "can't remove drive 'scsi0' - protection mode enabled")
    assert 'scsi0' in api.config(120)


def test_tags_are_normalized_on_update(api):
    create(api)
    api.data('PUT', CONFIG.format(130), tags='Web,db; web  Prod')
    assert api.config(130)['tags'] == 'db;prod;web'


def test_a_net_device_without_a_mac_gets_a_new_random_one(api):
    api.clone(120)
    mac = re.match(r'virtio=([0-9A-F:]+)', api.config(120)['net0']).group(1)
    api.data('PUT', CONFIG.format(120), net0='virtio,bridge=vmbr1')
    changed = api.config(120)['net0']
    assert re.fullmatch(r'virtio=[0-9A-F:]{17},bridge=vmbr1', changed) and mac not in changed
    api.data('PUT', CONFIG.format(120), net0=f'virtio={mac},bridge=vmbr0')
    assert api.config(120)['net0'] == f'virtio={mac},bridge=vmbr0'


CLOUDINIT = '/nodes/pve1/qemu/{0}/cloudinit'
STATIC_IP = 'ip=127.0.0.11/24,gw=127.0.0.1'


def cloudinit_listing(api, vmid=130):
    return {item['key']: item for item in api.data('GET', CLOUDINIT.format(vmid))}


def test_cloudinit_lists_a_changed_ipconfig_name_or_net_of_a_running_vm_nowhere(api):
    # qemu-server Qemu.pm cloudinit_pending lists old and new values only for $cloudinitoptions.
    create(api, ide2='local-lvm:cloudinit', ciuser='old', ipconfig0='ip=dhcp', net0='virtio,bridge=vmbr0')
    start(api)
    api.data('PUT', CONFIG.format(130), ipconfig0=STATIC_IP, name='renamed', net0=api.config(130)['net0'] + ',tag=5', ciuser='alice')
    listing = cloudinit_listing(api)
    assert listing['ciuser'] == {'key': 'ciuser', 'value': 'old', 'pending': 'alice'}
    assert not {'ipconfig0', 'name', 'net0'} & set(listing)
    assert api.config(130, current=1)['ipconfig0'] == STATIC_IP


def test_cloudinit_lists_an_added_ipconfig_as_pending_and_a_removed_one_as_deleted(api):
    create(api, vmid=130, ide2='local-lvm:cloudinit')
    create(api, vmid=131, ide2='local-lvm:cloudinit', ipconfig0='ip=dhcp')
    start(api, 130)
    start(api, 131)
    api.data('PUT', CONFIG.format(130), ipconfig0=STATIC_IP)
    api.data('PUT', CONFIG.format(131), delete='ipconfig0')
    assert cloudinit_listing(api, 130)['ipconfig0'] == {'key': 'ipconfig0', 'pending': STATIC_IP}
    assert cloudinit_listing(api, 131)['ipconfig0'] == {'key': 'ipconfig0', 'delete': 1}


def test_cloudinit_lists_nothing_pending_after_a_restart_or_for_a_stopped_vm(api):
    # vmconfig_apply_pending (a stopped VM) records nothing; a start regenerates the drive and drops the record.
    create(api, ide2='local-lvm:cloudinit', ciuser='old')
    api.data('PUT', CONFIG.format(130), ciuser='alice')
    assert cloudinit_listing(api)['ciuser'] == {'key': 'ciuser', 'value': 'alice'}
    start(api)
    api.data('PUT', CONFIG.format(130), ciuser='bob')
    assert cloudinit_listing(api)['ciuser'] == {'key': 'ciuser', 'value': 'alice', 'pending': 'bob'}
    api.data('PUT', CONFIG.format(130), ciuser='alice')  # back to what the drive holds
    assert cloudinit_listing(api)['ciuser'] == {'key': 'ciuser', 'value': 'alice'}


def test_a_bridge_or_vlan_change_applies_at_once_on_a_running_vm_even_without_network_hotplug(api):
    # qemu-server QemuServer.pm vmconfig_update_net re-plugs the tap device for bridge, tag and firewall.
    create(api, hotplug='0', net0='virtio,bridge=vmbr0')
    start(api)
    changed = api.config(130)['net0'].replace('bridge=vmbr0', 'bridge=vmbr1') + ',firewall=1,tag=42'
    api.data('PUT', CONFIG.format(130), net0=changed)
    assert api.config(130, current=1)['net0'] == changed
    assert pending_keys(api) == set()


def test_a_nic_model_change_waits_for_a_restart_without_network_hotplug(api):
    create(api, vmid=130, hotplug='disk', net0='virtio,bridge=vmbr0')
    create(api, vmid=131, net0='virtio,bridge=vmbr0')
    start(api, 130)
    start(api, 131)
    for vmid in (130, 131):
        api.data('PUT', CONFIG.format(vmid), net0=api.config(vmid)['net0'].replace('virtio=', 'e1000='))
    assert pending_keys(api, 130) == {'net0'}
    assert pending_keys(api, 131) == set()


def test_memory_changes_at_once_only_with_memory_hotplug(api):
    # qemu-server QemuServer.pm vmconfig_hotplug_pending: memory "skip"s unless hotplug has memory.
    create(api, vmid=130, memory='2048', numa=1, hotplug='network,disk,memory')
    create(api, vmid=131, memory='2048')
    start(api, 130)
    start(api, 131)
    for vmid in (130, 131):
        api.data('PUT', CONFIG.format(vmid), memory='4096')
    assert str(api.config(130, current=1)['memory']) == '4096'
    assert pending_keys(api, 130) == set()
    assert pending_keys(api, 131) == {'memory'}


def test_a_new_scsi_disk_is_hot_plugged_and_a_sata_disk_waits_for_a_restart(api):
    # qemu-server QemuServer.pm vmconfig_update_disk: new disks are plugged with hotplug disk, never on IDE or SATA.
    create(api, vmid=130, scsi0='local-lvm:1')
    create(api, vmid=131, scsi0='local-lvm:1', hotplug='network')
    start(api, 130)
    start(api, 131)
    for vmid in (130, 131):
        api.data('PUT', CONFIG.format(vmid), scsi1='local-lvm:2', sata1='local-lvm:2')
    assert re.fullmatch(r'local-lvm:vm-130-disk-\d,size=2G', api.config(130, current=1)['scsi1'])
    assert pending_keys(api, 130) == {'sata1'}
    assert pending_keys(api, 131) == {'scsi1', 'sata1'}


def test_a_running_disk_takes_a_backup_change_at_once_and_a_cache_change_at_the_next_boot(api):
    # qemu-server QemuServer.pm vmconfig_update_disk: cache, discard, iothread, ssd ... "skip" (stay pending).
    create(api, scsi0='local-lvm:1', scsi1='local-lvm:2')
    start(api)
    volume = api.config(130)['scsi1'].split(',')[0]
    api.data('PUT', CONFIG.format(130), scsi1=f'{volume},backup=0,size=2G')
    assert api.config(130, current=1)['scsi1'] == f'{volume},backup=0,size=2G'
    api.data('PUT', CONFIG.format(130), scsi1=f'{volume},backup=0,cache=writeback,size=2G')
    assert pending_keys(api) == {'scsi1'}
    assert api.config(130, current=1)['scsi1'] == f'{volume},backup=0,size=2G'


def test_a_running_vm_lets_go_of_a_scsi_disk_at_once_and_keeps_it_as_unused(api):
    # qemu-server QemuServer.pm vmconfig_hotplug_pending (delete) and vmconfig_delete_or_detach_drive.
    create(api, scsi0='local-lvm:1', scsi1='local-lvm:2', sata1='local-lvm:2')
    start(api)
    scsi1 = api.config(130)['scsi1'].split(',')[0]
    api.data('PUT', CONFIG.format(130), delete='scsi1,sata1')
    config = api.config(130, current=1)
    assert 'scsi1' not in config and config['unused0'] == scsi1
    assert pending_keys(api) == {'sata1'}
