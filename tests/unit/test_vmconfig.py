# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declared pve_vm options: refused with a message naming the option, rendered as PVE writes them, compared normalized."""

from __future__ import annotations

import base64
import ipaddress
from urllib.parse import quote

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import (
    MASK,
    SSH_KEY_TYPES,
    SpecError,
    VmSpec,
    boot_disk_key,
    cloudinit_drive_key,
    decode_sshkeys,
    desired_config,
    disk_size,
    display_value,
    drive_volumes,
    format_size,
    grow_needed,
    held_until_restart,
    machine_family,
    parse_drive,
    parse_size,
    same_value,
)


def openssh_key(key_type: str, embedded: str | None = None, comment: str = 'ops@example') -> str:
    """A structurally valid OpenSSH public key line: base64 of a blob that starts with its own type string."""
    name = (embedded or key_type).encode()
    blob = len(name).to_bytes(4, 'big') + name + (32).to_bytes(4, 'big') + bytes(range(32))
    return f'{key_type} {base64.b64encode(blob).decode()} {comment}'


ED25519 = openssh_key('ssh-ed25519')
RSA = openssh_key('ssh-rsa', comment='backup@example')


def spec(**params) -> VmSpec:
    return VmSpec.from_params({'name': 'web', **params})


# Validation: each refusal names the option first and says what to do.


@pytest.mark.parametrize(
    'params, option, hint',
    [
        ({'cores': 0}, 'cores', 'at least 1'),
        ({'cores': -2}, 'cores', 'at least 1'),
        ({'cores': 2.5}, 'cores', 'integer'),
        ({'cores': 'four'}, 'cores', 'integer'),
        ({'cores': True}, 'cores', 'integer'),
        ({'sockets': 0}, 'sockets', 'at least 1'),
        ({'memory': 0}, 'memory', 'at least 16 MiB'),
        ({'memory': 'lots'}, 'memory', 'MiB'),
        ({'memory': 8}, 'memory', 'at least 16'),
        ({'vlan': 0}, 'vlan', 'from 1 to 4094'),
        ({'vlan': 4095}, 'vlan', 'from 1 to 4094'),
        ({'ip': '127.0.0.300'}, 'ip', 'IPv4'),
        ({'ip': '127.0.0.5/33'}, 'ip', 'CIDR'),
        ({'ip': 'fe80::1'}, 'ip', 'IPv4'),
        ({'ip': '127.0.0.5', 'gateway': '127.0.0'}, 'gateway', 'IPv4 address'),
        ({'machine': 'virt'}, 'machine', 'q35, i440fx'),
        ({'ssh_keys': ['not a key']}, 'ssh_keys', 'known key type'),
        ({'ssh_keys': ['ssh-dss AAAAB3NzaC1kc3M= old']}, 'ssh_keys', 'known key type'),
        ({'ssh_keys': ['ssh-ed25519 !!notbase64!! x']}, 'ssh_keys', 'not base64'),
        ({'ssh_keys': [openssh_key('ssh-ed25519', embedded='ssh-rsa')]}, 'ssh_keys', 'not a ssh-ed25519 key'),
        ({'ssh_keys': [ED25519, 'ssh-ed25519']}, 'ssh_keys', 'entry 2'),
        ({'disk_size': '+8G'}, 'disk_size', 'total size'),
        ({'disk_size': '1.5T'}, 'disk_size', 'whole size'),
        ({'disk_size': '32X'}, 'disk_size', 'whole size'),
        ({'disk_size': 0}, 'disk_size', 'positive'),
        ({'tags': ['env:prod']}, 'tags', 'not ":"'),
        ({'tags': 'bad!tag'}, 'tags', 'characters PVE refuses'),
        ({'tags': ['-lead']}, 'tags', 'starting with'),
        ({'owner_tag': 'a b'}, 'owner_tag', 'single tag'),
        ({'user_data': '#cloud-config\n', 'ci_user': 'ops'}, 'user_data', 'ci_user'),
        ({'user_data': '#cloud-config\n', 'ip': '127.0.0.5'}, 'user_data', 'ip'),
        ({'user_data': '#cloud-config\n', 'ssh_keys': [ED25519], 'ci_password': 'x'}, 'user_data', 'ci_password, ssh_keys'),
        ({'linked_clone': True, 'storage': 'local-lvm'}, 'linked_clone', 'drop storage'),
        ({'ip': 'dhcp', 'gateway': '127.0.0.1'}, 'gateway', 'dhcp'),
        ({'gateway': '127.0.0.1'}, 'gateway', 'declare ip'),
        ({'nameservers': ['dns.example.com']}, 'nameservers', 'IP addresses'),
        ({'bridge': 'vmbr0,firewall=1'}, 'bridge', 'bridge name'),
        ({'cpu': 'host flags'}, 'cpu', 'CPU type'),
        ({'name': 'web_01'}, 'name', 'DNS name'),
        ({'name': ''}, 'name', 'required'),
        ({'state': 'running'}, 'state', 'present, started'),
        ({'apply_mode': 'now'}, 'apply_mode', 'report, reboot'),
        ({'storage': 'local lvm'}, 'storage', 'storage ID'),
        ({'vmid': 99}, 'vmid', 'from 100'),
        ({'protection': 'maybe'}, 'protection', 'true or false'),
    ],
)
def test_bad_option_is_refused_with_a_message_naming_it(params, option, hint):
    with pytest.raises(SpecError) as raised:
        spec(**params)
    assert raised.value.option == option
    assert str(raised.value).startswith(f'{option} ')
    assert hint in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_integer_options_accept_what_ansible_passes_as_strings():
    assert (spec(cores='4').cores, spec(memory='2048').memory, spec(vlan='10').vlan) == (4, 2048, 10)


@pytest.mark.parametrize(
    'declared, size',
    [
        ('32G', 32 << 30),
        ('32g', 32 << 30),
        ('512M', 512 << 20),
        ('1T', 1 << 40),
        (32, 32 << 30),
        ('32', 32 << 30),
    ],
)
def test_declared_disk_size_is_bytes_and_a_bare_number_is_gib(declared, size):
    assert spec(disk_size=declared).disk_size == size


@pytest.mark.parametrize('key_type', sorted(SSH_KEY_TYPES))
def test_every_openssh_key_type_is_accepted(key_type):
    assert spec(ssh_keys=[openssh_key(key_type)]).ssh_keys == (openssh_key(key_type),)


def test_ssh_keys_given_as_one_text_are_split_into_keys():
    assert spec(ssh_keys=f'{ED25519}\n\n  {RSA}  \n').ssh_keys == (ED25519, RSA)


def test_tags_are_split_and_deduplicated_keeping_their_spelling_and_the_owner_tag_is_lower_case():
    # PVE lower-cases them only under the default tag-style (_tag_style.as_stored spells them for the cluster).
    assert spec(tags=['Web', 'db;web', 'x,y z']).tags == {'Web', 'web', 'db', 'x', 'y', 'z'}
    assert spec(owner_tag='Puls-Managed').owner_tag == 'puls-managed'


def test_ip_without_prefix_gets_slash_24():
    assert spec(ip='127.0.0.5').ip == ipaddress.IPv4Interface('127.0.0.5/24')


def test_placement_candidates_may_come_as_the_environment_string():
    assert spec(nodes='pve1, pve2').nodes == ('pve1', 'pve2')


def test_unmanaged_options_stay_none_and_connection_options_are_ignored():
    declared = VmSpec.from_params({'name': 'web', 'api_url': 'https://pve:8006', 'cores': None})
    assert declared.cores is None and declared.owner_tag == 'puls-managed'
    assert desired_config(declared, {}) == {'tags': 'puls-managed'}


def test_dns_answer_becomes_the_static_ip_and_no_answer_means_dhcp_without_gateway():
    declared = spec(dns_domain='example.com', gateway='127.0.0.254')
    assert declared.with_resolved_ip('127.0.0.7').ip == ipaddress.IPv4Interface('127.0.0.7/24')
    assert (declared.with_resolved_ip(None).ip, declared.with_resolved_ip(None).gateway) == ('dhcp', None)


def test_user_data_vm_ignores_the_dns_answer_for_its_cloud_init():
    declared = spec(dns_domain='example.com', user_data='#cloud-config\n')
    assert declared.with_resolved_ip('127.0.0.7') is declared


# Rendering the declared options as PVE config values.


def test_net0_update_keeps_existing_mac_model_and_other_properties():
    current = 'e1000=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=1,rate=50'
    assert desired_config(spec(bridge='vmbr1', vlan=2010), {'net0': current})['net0'] == 'e1000=BC:24:11:AA:BB:CC,bridge=vmbr1,firewall=1,rate=50,tag=2010'


def test_net0_update_accepts_the_explicit_model_and_macaddr_form():
    current = 'model=virtio,macaddr=BC:24:11:AA:BB:CC,bridge=vmbr0'
    assert desired_config(spec(vlan=7), {'net0': current})['net0'] == 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,tag=7'


def test_new_net0_is_virtio_on_vmbr0_and_leaves_the_mac_to_pve():
    assert desired_config(spec(vlan=10), {})['net0'] == 'virtio,bridge=vmbr0,tag=10'


def test_ipconfig0_gets_slash_24_and_gateway_dot_1_by_default():
    assert desired_config(spec(ip='127.8.10.83'), {})['ipconfig0'] == 'ip=127.8.10.83/24,gw=127.8.10.1'


def test_ipconfig0_uses_declared_prefix_and_gateway_and_keeps_ip6():
    current = 'ip=dhcp,ip6=auto'
    assert desired_config(spec(ip='127.8.0.9/16', gateway='127.8.0.254'), {'ipconfig0': current})['ipconfig0'] == 'ip=127.8.0.9/16,gw=127.8.0.254,ip6=auto'


def test_ipconfig0_dhcp_drops_the_old_gateway():
    assert desired_config(spec(ip='DHCP'), {'ipconfig0': 'ip=127.0.0.5/24,gw=127.0.0.1'})['ipconfig0'] == 'ip=dhcp'


def test_machine_i440fx_is_written_pc_and_q35_as_q35():
    assert desired_config(spec(machine='i440fx'), {})['machine'] == 'pc'
    assert desired_config(spec(machine='q35'), {})['machine'] == 'q35'


def test_sshkeys_are_percent_encoded_with_newlines_between_keys():
    value = desired_config(spec(ssh_keys=[ED25519, RSA]), {})['sshkeys']
    assert value == quote(f'{ED25519}\n{RSA}', safe='')
    assert '%20' in value and '%0A' in value and '+' not in value and ' ' not in value


def test_declared_tags_are_sorted_semicolon_joined_with_the_owner_tag():
    assert desired_config(spec(tags=['web', 'Prod']), {'tags': 'old'})['tags'] == 'Prod;puls-managed;web'


def test_undeclared_tags_are_kept_as_pve_spells_them_and_the_owner_tag_added():
    assert desired_config(spec(), {'tags': 'team-a;Legacy'})['tags'] == 'Legacy;puls-managed;team-a'


def test_custom_owner_tag_replaces_the_default():
    assert desired_config(spec(owner_tag='ops-owned'), {})['tags'] == 'ops-owned'


def test_cpu_keeps_undeclared_properties_such_as_flags():
    assert desired_config(spec(cpu='host'), {'cpu': 'cputype=kvm64,flags=+aes'})['cpu'] == 'host,flags=+aes'


@pytest.mark.parametrize(
    'option, key',
    [('nameservers', 'nameserver'), ('searchdomain', 'searchdomain'), ('ci_user', 'ciuser'), ('ci_password', 'cipassword'), ('ssh_keys', 'sshkeys')],
)
def test_empty_cloud_init_option_removes_its_key(option, key):
    assert desired_config(spec(**{option: [] if option in ('nameservers', 'ssh_keys') else ''}), {})[key] is None


def test_booleans_and_integers_are_written_as_pve_stores_them():
    assert desired_config(spec(protection=True, onboot='no', cores='2', memory=2048), {}) == {
        'protection': 1,
        'onboot': 0,
        'cores': 2,
        'memory': 2048,
        'tags': 'puls-managed',
    }


# Comparing what PVE returns with what would be written.


@pytest.mark.parametrize(
    'key, observed, desired',
    [
        ('cores', '4', 4),
        ('cores', None, 1),
        ('memory', 'current=2048', 2048),
        ('memory', '2048', 2048),
        ('memory', None, 512),
        ('onboot', '1', 1),
        ('onboot', True, 1),
        ('onboot', 'yes', 1),
        ('protection', None, 0),
        ('tags', 'web;puls-managed', 'puls-managed;web'),
        ('tags', 'web,puls-managed web', 'puls-managed;web'),
        ('sshkeys', quote(f'{ED25519}\n{RSA}\n', safe=''), quote(f'{RSA}\n{ED25519}', safe='')),
        ('sshkeys', quote(f'  {ED25519}\n\n', safe=''), quote(ED25519, safe='')),
        ('ipconfig0', 'gw=127.0.0.1,ip=127.0.0.5/24', 'ip=127.0.0.5/24,gw=127.0.0.1'),
        ('net0', 'virtio=bc:24:11:aa:bb:cc,bridge=vmbr0', 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr0'),
        ('net0', 'bridge=vmbr0,virtio=BC:24:11:AA:BB:CC', 'model=virtio,macaddr=BC:24:11:AA:BB:CC,bridge=vmbr0'),
        ('machine', 'pc-q35-9.0', 'q35'),
        ('machine', 'q35,viommu=intel', 'q35'),
        ('machine', 'pc-i440fx-8.1+pve0', 'pc'),
        ('machine', None, 'pc'),
        ('cpu', 'cputype=host', 'host'),
        ('nameserver', '127.1.1.1,127.9.9.9', '127.1.1.1 127.9.9.9'),
        ('cipassword', '**********', 'new secret'),
    ],
)
def test_equal_values_in_different_forms_compare_equal(key, observed, desired):
    assert same_value(key, observed, desired)


@pytest.mark.parametrize(
    'key, observed, desired',
    [
        ('cores', 2, 4),
        ('tags', 'web', 'puls-managed;web'),
        ('sshkeys', quote(ED25519, safe=''), quote(f'{ED25519}\n{RSA}', safe='')),
        ('net0', 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr0', 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,tag=10'),
        ('machine', 'pc-i440fx-9.0', 'q35'),
        ('machine', None, 'q35'),
        ('nameserver', '127.9.9.9 127.1.1.1', '127.1.1.1 127.9.9.9'),
        ('cipassword', None, 'secret'),
        ('ipconfig0', 'ip=dhcp', 'ip=127.0.0.5/24,gw=127.0.0.1'),
    ],
)
def test_different_values_compare_different(key, observed, desired):
    assert not same_value(key, observed, desired)


def test_cipassword_is_shown_masked_and_sshkeys_decoded():
    assert display_value('cipassword', 'hunter2') == MASK
    assert display_value('cipassword', None) is None
    assert display_value('sshkeys', quote(f'{ED25519}\n', safe='')) == [ED25519]
    assert display_value('tags', 'web;Prod') == ['Prod', 'web']


def test_sizes_in_any_pve_unit_compare_in_bytes():
    assert parse_size('32G') == parse_size('32768M') == parse_size(str(32 << 30)) == 32 << 30
    assert parse_size('1.5G') == 1536 << 20
    assert [format_size(size) for size in (32 << 30, 1536 << 20, 4 << 10, 1000)] == ['32G', '1536M', '4K', '1000']


def test_disk_may_grow_or_stay_but_never_shrink():
    assert grow_needed(40 << 30, 32 << 30, 'scsi0')
    assert not grow_needed(32 << 30, 32 << 30, 'scsi0')
    with pytest.raises(SpecError, match=r'^disk_size 30G is below the current size 32G of scsi0.*at least 32G'):
        grow_needed(30 << 30, 32 << 30, 'scsi0')


# Drives.

CONFIG = {
    'boot': 'order=virtio1;ide2;net0',
    'scsi0': 'local-lvm:vm-100-disk-0,iothread=1,size=32G',
    'virtio1': 'ceph:vm-100-disk-1,size=8G',
    'ide0': 'none,media=cdrom',
    'ide2': 'local-lvm:vm-100-cloudinit,media=cdrom',
    'efidisk0': 'local-lvm:vm-100-disk-2,efitype=4m,size=4M',
    'net0': 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr0',
}


def test_drive_string_splits_into_volume_and_properties():
    assert parse_drive('local-lvm:vm-100-disk-0,size=32G,iothread=1') == ('local-lvm:vm-100-disk-0', {'size': '32G', 'iothread': '1'})
    assert parse_drive('file=local:100/vm-100-disk-0.qcow2,size=4G') == ('local:100/vm-100-disk-0.qcow2', {'size': '4G'})


def test_drive_volumes_skip_empty_cdroms_and_include_efi_disks():
    assert drive_volumes(CONFIG) == {
        'scsi0': 'local-lvm:vm-100-disk-0',
        'virtio1': 'ceph:vm-100-disk-1',
        'ide2': 'local-lvm:vm-100-cloudinit',
        'efidisk0': 'local-lvm:vm-100-disk-2',
    }


@pytest.mark.parametrize('volume', ['local-lvm:vm-100-cloudinit', 'local:100/vm-100-cloudinit.qcow2', 'rbd:cloudinit'])
def test_cloudinit_drive_is_found_by_volume_name_as_pve_does(volume):
    assert cloudinit_drive_key({'scsi0': 'local-lvm:vm-100-disk-0', 'sata1': f'{volume},media=cdrom'}) == 'sata1'


def test_a_cdrom_not_named_cloudinit_is_not_the_cloudinit_drive():
    assert cloudinit_drive_key({'ide2': 'local-lvm:vm-100-disk-1,media=cdrom'}) is None


def test_boot_disk_is_the_first_disk_in_the_boot_order():
    assert boot_disk_key(CONFIG) == 'virtio1'


def test_boot_disk_follows_legacy_bootdisk():
    assert boot_disk_key({**CONFIG, 'boot': 'cdn', 'bootdisk': 'scsi0'}) == 'scsi0'


def test_boot_disk_falls_back_to_first_scsi_virtio_sata_ide_disk_skipping_cdroms():
    config = {
        'ide0': 'local:iso/x.iso,media=cdrom',
        'sata0': 'local-lvm:vm-1-disk-1,size=1G',
        'virtio3': 'local-lvm:vm-1-disk-0,size=2G',
        'ide2': 'local-lvm:vm-1-cloudinit,media=cdrom',
    }
    assert boot_disk_key(config) == 'virtio3'
    assert boot_disk_key({'ide2': 'none,media=cdrom'}) is None


def test_disk_size_reads_the_size_property():
    assert disk_size(CONFIG, 'scsi0') == 32 << 30
    assert disk_size({'scsi0': 'local-lvm:vm-100-disk-0'}, 'scsi0') is None


# What a running VM takes only at the next boot.


@pytest.mark.parametrize(
    'key, config, held',
    [
        ('cores', {}, True),
        ('memory', {}, True),
        ('machine', {}, True),
        ('tags', {}, False),
        ('onboot', {}, False),
        ('protection', {}, False),
        ('ciuser', {}, True),
        ('sshkeys', {}, True),
        ('ipconfig0', {}, True),
        ('net0', {}, False),
        ('net0', {'hotplug': 'disk,usb'}, True),
        ('net0', {'hotplug': '0'}, True),
        ('net0', {'hotplug': 'network,disk'}, False),
        ('ide2', {}, True),
    ],
)
def test_changes_held_until_restart(key, config, held):
    assert held_until_restart(key, config) is held


def test_machine_family_of_unknown_types_is_the_type_itself():
    assert machine_family('virt') == 'virt'


def test_sshkeys_decode_drops_blank_lines():
    assert decode_sshkeys(quote(f'\n{ED25519}\n\n{RSA}\n', safe='')) == (ED25519, RSA)
