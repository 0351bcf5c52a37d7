# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory plugin puls.proxmox.manifests: proxmops manifests become the inventory docs/index.md describes.

Whole trees are listed by a real ``ansible-inventory --list`` with the collection on ANSIBLE_COLLECTIONS_PATH, as a
user runs it (group_vars and warnings included). Invalid manifests are parsed in this process through Ansible's
plugin loader, so each error is the plugin's own exception, with its exact message.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlparse

import pytest
from ansible.errors import AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader, inventory_loader
from ansible.utils.collection_loader import AnsibleCollectionConfig

from ansible_collections.puls.proxmox.plugins.inventory.manifests import read_fleet
from ansible_collections.puls.proxmox.plugins.plugin_utils._declarations import merged_declarations

REPO = Path(__file__).resolve().parents[2]
COLLECTIONS = REPO / '.build' / 'collections'
ANSIBLE_INVENTORY = Path(sys.executable).parent / 'ansible-inventory'
FIXTURES = Path(__file__).parent / 'fixtures' / 'manifests'
# Files of several documents are assembled from the one-document files in FIXTURES/documents: the collection's
# sanity test (yamllint) refuses a YAML file of several documents anywhere in the collection.
MULTI_DOCUMENT_FILES = {
    'proxmox/vms/more-apps.yaml': ('app-03', 'app-04'),
    'proxmox/isos/images.yaml': ('debian-12', 'alpine-ct'),
}
EXAMPLES = REPO / 'examples'
PLUGIN = 'puls.proxmox.manifests'
SECRET_PASSWORD = 'fixture-secret-password'
NOBLE_URL = 'https://cloud-images.ubuntu.com/noble/current/noble-server-cloudimg-amd64.img'
DEBIAN_URL = 'https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-amd64.qcow2'
ISO_URL = 'https://cdimage.debian.org/debian-cd/current/amd64/iso-cd/debian-12.7.0-amd64-netinst.iso'
ALPINE_URL = 'http://mirror.example/templates/alpine-3.20-default_20240908_amd64.tar.xz'
DEBIAN_CT_URL = 'http://download.proxmox.com/images/system/debian-12-standard_12.7-1_amd64.tar.zst'


def ansible_inventory_list(source):
    """``ansible-inventory -i SOURCE --list``: (the inventory, stderr). A source that fails to parse fails the run."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR='1', ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED='true')
    listed = subprocess.run([str(ANSIBLE_INVENTORY), '-i', str(source), '--list'], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert listed.returncode == 0, listed.stderr
    return data_values(json.loads(listed.stdout)), listed.stderr


def data_values(value):
    """The listing with the plugin's values unwrapped.

    The plugin hands Ansible manifest values as data that is never templated; ansible-inventory shows such a value as
    {"__ansible_unsafe": value}, where a YAML inventory's trusted value is shown bare. The values are the same.
    """
    if isinstance(value, dict):
        if set(value) == {'__ansible_unsafe'}:
            return value['__ansible_unsafe']
        return {key: data_values(item) for key, item in value.items()}
    if isinstance(value, list):
        return [data_values(item) for item in value]
    return value


def group_members(listing):
    """{group: (sorted hosts, sorted children)}: the order ansible-inventory lists members in carries no meaning."""
    return {name: (sorted(group.get('hosts', [])), sorted(group.get('children', []))) for name, group in listing.items() if name != '_meta'}


@pytest.fixture(scope='module')
def fixture_listing(tmp_path_factory):
    """The fixture tree as ansible-inventory lists it: (the inventory, stderr)."""
    tree = tmp_path_factory.mktemp('manifests') / 'tree'
    shutil.copytree(FIXTURES, tree, ignore=shutil.ignore_patterns('documents'))
    for name, documents in MULTI_DOCUMENT_FILES.items():
        path = tree / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(''.join((FIXTURES / 'documents' / f'{document}.yaml').read_text() for document in documents))
    # A trailing '---' starts an empty document, which is skipped.
    with (tree / 'proxmox/vms/more-apps.yaml').open('a') as more_apps:
        more_apps.write('---\n')
    return ansible_inventory_list(tree / 'cluster.proxmops.yml')


@pytest.fixture(scope='module')
def plugin():
    # pytest-ansible may have installed the collection loader already; it finds this checkout there too.
    if AnsibleCollectionConfig.collection_finder is None:
        init_plugin_loader([str(COLLECTIONS)])
    return inventory_loader.get(PLUGIN)


def write_tree(root, files, config='plugin: puls.proxmox.manifests\npath: proxmox\n'):
    """Write {path under proxmox/: text} and the plugin's config file; returns the config file."""
    for name, text in files.items():
        path = root / 'proxmox' / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    config_file = root / 'cluster.proxmops.yml'
    config_file.write_text(config)
    return config_file


def parse_failure(plugin, config_file):
    """Parse with the plugin, expecting a refusal: (the message, the inventory it left)."""
    inventory = InventoryData()
    with pytest.raises(AnsibleParserError) as raised:
        plugin.parse(inventory, DataLoader(), str(config_file))
    return raised.value.message, inventory


def vm(name, spec='cores: 1', kind='VirtualMachine', metadata=''):
    """One manifest document, ending with a newline: spec and metadata are extra YAML lines."""
    return (
        f'apiVersion: proxmops.dev/v1\nkind: {kind}\nmetadata:\n  name: {name}\n'
        + textwrap.indent(metadata, '  ')
        + 'spec:\n'
        + textwrap.indent(spec.rstrip('\n') + '\n', '  ')
    )


# --- a whole proxmops tree -------------------------------------------------------------------------------------------


def test_every_mapped_field_becomes_its_variable(fixture_listing):
    hostvars = fixture_listing[0]['_meta']['hostvars']
    cluster = {
        'pve_owner_tag': 'managed-by-proxmops',
        'pve_prune': True,
        'pve_manifest_isos': hostvars['app-01']['pve_manifest_isos'],
        'pve_manifest_origins': hostvars['app-01']['pve_manifest_origins'],
        # proxmox/networks/vmbr1.yaml
        'pve_manifest_networks': [{'node': 'pve-node1', 'interfaces': [{'name': 'vmbr1', 'type': 'bridge', 'cidr': '127.1.0.1/24'}]}],
    }
    assert hostvars == {
        'debian-12-tpl': dict(
            cluster,
            pve_node='pve-node1',
            pve_vmid=9000,
            pve_cores=2,
            pve_memory=2048,
            pve_image='images:import/debian-12-genericcloud-amd64.qcow2',
            pve_storage='local-lvm',
            pve_disk_size='10G',
            pve_bridge='vmbr0',
        ),
        'app-01': dict(
            cluster,
            pve_node='pve-node1',
            pve_tags=['prod', 'app'],
            pve_vmid=120,
            pve_cores=2,
            pve_memory=2048,
            pve_cpu='x86-64-v2',
            pve_image='local:import/noble-server-cloudimg-amd64.qcow2',
            pve_storage='local-lvm',
            pve_disk_size='20G',
            pve_bridge='vmbr0',
            pve_vlan=30,
            pve_ssh_user='debian',
            pve_ssh_keys=['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFixtureKeyOfApp01 app@example'],
            pve_ip='127.0.0.5/24',
            pve_gateway='127.0.0.1',
            pve_nameservers=['127.1.1.1', '127.9.9.9'],
            pve_searchdomain='example.com',
            pve_apply_mode='reboot',
            pve_power='running',
        ),
        'app-02': dict(
            cluster,
            pve_node='pve-node1',
            pve_vmid=130,
            pve_image='debian-12-tpl',
            pve_linked_clone=True,
            pve_cores=2,
            pve_memory=2048,
            pve_ssh_user='app',
            pve_ip='dhcp',
            pve_power='stopped',
        ),
        'app-03': dict(
            cluster,
            pve_node='pve-node1',
            pve_image='local:import/noble-server-cloudimg-amd64.qcow2',
            pve_storage='local-lvm',
            pve_disk_size='16',
            # A further disk is created empty beside the boot disk; a device with a model is declared in pve_nets.
            pve_disks=[{'slot': 'scsi1', 'size': '100G', 'storage': 'local-lvm'}],
            pve_nets=[{'slot': 'net0', 'bridge': 'vmbr1', 'model': 'e1000'}],
            pve_cdrom='local:iso/seed.iso',
            pve_ssh_user='ops',
            pve_ci_password=SECRET_PASSWORD,
            pve_ip='127.0.7.20/24',
            pve_gateway='127.0.7.1',
            pve_searchdomain='internal.example',
            pve_provision=['base.yml', 'roles.yml'],
            pve_force_config_check=True,
            pve_replace='app-03-old',
            pve_protected=True,
            pve_onboot=False,
            pve_adopt=True,
            pve_pool='apps',
            pve_sockets=2,
            pve_machine='q35',
        ),
        'app-04': dict(
            cluster,
            pve_image='local:import/debian-12-genericcloud-amd64.qcow2',
            pve_user_data='#cloud-config\nruncmd: [echo fixture-user-data]\n',
            pve_state='absent',
        ),
        'app-05': dict(cluster, pve_image='9017', pve_memory=1024),
        'dns-01': dict(
            cluster,
            pve_container={
                'node': 'pve-node1',
                'tags': ['infra', 'dns'],
                'cores': 1,
                'memory': 512,
                'storage': 'local-lvm',
                'disk_size': '8G',
                'bridge': 'vmbr0',
                'ip': '127.0.0.53/24',
                'gateway': '127.0.0.1',
                'image': 'local:vztmpl/alpine-3.20-default_20240908_amd64.tar.xz',
            },
            pve_vmid=201,
            pve_power='running',
        ),
    }


def test_kinds_become_groups_and_foreign_hidden_or_unrelated_yaml_is_ignored(fixture_listing):
    # The tree also holds a Kubernetes manifest, a vault-tagged vars file and a manifest in a hidden directory.
    assert group_members(fixture_listing[0]) == {
        'all': ([], ['pve_containers', 'pve_templates', 'pve_vms', 'ungrouped']),
        'pve_containers': (['dns-01'], []),
        'pve_templates': (['debian-12-tpl'], []),
        'pve_vms': (['app-01', 'app-02', 'app-03', 'app-04', 'app-05'], []),
    }


def test_isos_and_cloud_image_urls_become_pve_isos_entries_downloaded_once(fixture_listing):
    isos = fixture_listing[0]['_meta']['hostvars']['app-01']['pve_manifest_isos']
    assert isos == [
        {
            'filename': 'debian-12.7.0-amd64-netinst.iso',
            'storage': 'local',
            'node': 'pve-node1',
            'url': ISO_URL,
            'checksum': 'sha256:' + '0123abcd' * 8,
            'content': 'iso',
        },
        {'filename': 'alpine-3.20-default_20240908_amd64.tar.xz', 'storage': 'local', 'url': ALPINE_URL, 'content': 'vztmpl'},
        {'filename': 'debian-12-genericcloud-amd64.qcow2', 'storage': 'images', 'node': 'pve-node1', 'url': DEBIAN_URL, 'content': 'import'},
        # app-01 and app-03 import the same image: one entry. Its .img name is what pve_iso downloads.
        {'filename': 'noble-server-cloudimg-amd64.img', 'storage': 'local', 'node': 'pve-node1', 'url': NOBLE_URL, 'content': 'import'},
    ]


def test_unreconciled_fields_are_warnings_not_errors(fixture_listing):
    # Before 2.19 ansible-core wraps a warning at 80 columns: its lines are joined again here.
    warnings = ['[WARNING]: ' + ' '.join(part.split()) for part in fixture_listing[1].split('[WARNING]: ')[1:]]
    assert warnings == [
        '[WARNING]: proxmox/vms/more-apps.yaml (document 1): spec.net[0].ip is not reconciled by puls.proxmox; ignored',
    ]


def test_a_password_warned_about_in_its_document_stays_out_of_the_output(fixture_listing):
    assert 'more-apps.yaml' in fixture_listing[1]
    assert SECRET_PASSWORD not in fixture_listing[1]


# --- invalid manifests: the file, the document and the field -------------------------------------------------------

INVALID = {
    'wrong type, in the second document': (
        {'vms/app-01.yaml': vm('app-00') + '---\n' + vm('app-01', 'cores: two')},
        "proxmox/vms/app-01.yaml (document 2): spec.cores must be a positive integer, got 'two'",
    ),
    'unknown apiVersion': (
        {'vms/a.yaml': vm('a').replace('proxmops.dev/v1', 'proxmops.dev/v2')},
        "proxmox/vms/a.yaml (document 1): apiVersion must be proxmops.dev/v1, got 'proxmops.dev/v2'",
    ),
    'a document without apiVersion in a manifest file': (
        {'vms/a.yaml': vm('a') + '---\n' + vm('b').replace('apiVersion: proxmops.dev/v1\n', '')},
        'proxmox/vms/a.yaml (document 2): apiVersion is required',
    ),
    'unknown kind': (
        {'vms/a.yaml': vm('a', kind='Pod')},
        "proxmox/vms/a.yaml (document 1): kind must be one of VirtualMachine, Template, Iso, Container, Network, SdnZone, VNet, got 'Pod'",
    ),
    'missing metadata.name': (
        {'vms/a.yaml': 'apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata:\n  node: pve1\nspec:\n  cores: 1\n'},
        'proxmox/vms/a.yaml (document 1): metadata.name is required',
    ),
    'a name that is not a DNS name': (
        {'vms/a.yaml': vm('web_1')},
        'proxmox/vms/a.yaml (document 1): metadata.name must be a DNS name (letters, digits, "-" and "."), got \'web_1\'',
    ),
    'one name in two files, a template and a VM': (
        {'templates/web.yaml': vm('web', 'fromTemplate: base', kind='Template'), 'vms/web.yaml': vm('web')},
        "proxmox/vms/web.yaml (document 1): metadata.name 'web' is already declared by proxmox/templates/web.yaml (document 1)",
    ),
    'image and fromTemplate together': (
        {'vms/a.yaml': vm('a', 'fromTemplate: base\nimage:\n  source: local:import/x.qcow2\n')},
        'proxmox/vms/a.yaml (document 1): spec.fromTemplate and spec.image are mutually exclusive: clone a template or import an image',
    ),
    'userData with cloudInit': (
        {'vms/a.yaml': vm('a', 'userData: "#cloud-config"\ncloudInit:\n  user: ops\n')},
        'proxmox/vms/a.yaml (document 1): spec.userData and spec.cloudInit are mutually exclusive: the user-data '
        'replaces the cloud-init drive, so put the cloud-init settings into it',
    ),
    'a misspelt field': (
        {'vms/a.yaml': vm('a', 'cloudInit:\n  sshkeys: [ssh-ed25519 AAAA]\n')},
        'proxmox/vms/a.yaml (document 1): spec.cloudInit.sshkeys is not a known field; the fields here are user, '
        'password, sshKeys, ip, nameserver, searchDomain, searchdomain',
    ),
    'an ipconfig that is neither dhcp nor ip=A/P,gw=G': (
        {'vms/a.yaml': vm('a', 'cloudInit:\n  ip: 127.0.0.5\n')},
        "proxmox/vms/a.yaml (document 1): spec.cloudInit.ip must be 'dhcp' or 'ip=ADDRESS/PREFIX,gw=GATEWAY' (IPv4), got '127.0.0.5'",
    ),
    'tags that are not a list': (
        {'vms/a.yaml': vm('a', metadata='tags: prod\n')},
        "proxmox/vms/a.yaml (document 1): metadata.tags must be a list of strings, got 'prod'",
    ),
    'a VLAN tag out of range': (
        {'vms/a.yaml': vm('a', 'net:\n  - bridge: vmbr0\n    tag: 5000\n')},
        'proxmox/vms/a.yaml (document 1): spec.net[0].tag must be an integer from 1 to 4094, got 5000',
    ),
    'a further disk without a size': (
        {'vms/a.yaml': vm('a', 'disks:\n  - storage: local-lvm\n    size: 8G\n  - storage: local-lvm\n')},
        'proxmox/vms/a.yaml (document 1): spec.disks[1].size is required for a disk after the first, which is created empty',
    ),
    'an ISO file no Iso manifest declares': (
        {'vms/a.yaml': vm('a', 'iso: debian-12.iso\n')},
        "proxmox/vms/a.yaml (document 1): spec.iso names 'debian-12.iso', which no Iso manifest declares on this VM's node; "
        'declare it, or give its volume, e.g. local:iso/debian-12.iso',
    ),
    'a template that is to run': (
        {'templates/t.yaml': vm('t', 'state: running', kind='Template')},
        "proxmox/templates/t.yaml (document 1): spec.state must be one of absent, got 'running'",
    ),
    'a VM-only field on a template': (
        {'templates/t.yaml': vm('t', 'replace: old-t', kind='Template')},
        'proxmox/templates/t.yaml (document 1): spec.replace is not a known field; the fields here are vmid, cores, '
        'memory, cpu, provision, forceConfigCheck, protected, pool, sockets, machine, image, fromTemplate, disks, '
        'net, cloudInit, state',
    ),
    'fromTemplate as a mapping without a name': (
        {'vms/a.yaml': vm('a', 'fromTemplate: {linked: true}\n')},
        'proxmox/vms/a.yaml (document 1): spec.fromTemplate.name is required',
    ),
    'an image URL that is not a cloud image': (
        {'vms/a.yaml': vm('a', 'image:\n  source: https://example.com/netinst.iso\n')},
        'proxmox/vms/a.yaml (document 1): spec.image.source must name a cloud image (.qcow2, .raw, .vmdk, .img), got \'https://example.com/netinst.iso\'',
    ),
    'one volume downloaded from two URLs': (
        {
            'vms/a.yaml': vm('a', 'image:\n  source: https://one.example/noble.img\n'),
            'vms/b.yaml': vm('b', 'image:\n  source: https://two.example/noble.qcow2\n'),
        },
        "proxmox/vms/b.yaml (document 1): spec.image.source puts local:import/noble.qcow2 on the storage from "
        "'https://two.example/noble.qcow2', but proxmox/vms/a.yaml (document 1) declares it from "
        "'https://one.example/noble.img'",
    ),
    'an Iso without storage': (
        {'isos/i.yaml': vm('i', 'source: https://example.com/x.iso\n', kind='Iso')},
        'proxmox/isos/i.yaml (document 1): spec.storage is required',
    ),
    'an Iso source that is not a URL': (
        {'isos/i.yaml': vm('i', 'source: local:iso/x.iso\nstorage: local\n', kind='Iso')},
        "proxmox/isos/i.yaml (document 1): spec.source must be an http or https URL, got 'local:iso/x.iso'",
    ),
    'a checksum that is not hexadecimal': (
        {'isos/i.yaml': vm('i', 'source: https://e.example/x.iso\nstorage: local\nchecksum: {algo: sha256, value: xyz}\n', kind='Iso')},
        "proxmox/isos/i.yaml (document 1): spec.checksum.value must be a hexadecimal digest, got 'xyz'",
    ),
    'a document that is not a mapping': (
        {'vms/a.yaml': vm('a') + '---\n- apiVersion: proxmops.dev/v1\n'},
        'proxmox/vms/a.yaml (document 2): a manifest must be a mapping, got a list',
    ),
    'an OS template name that is none': (
        {'lxc/ct.yaml': vm('ct', 'template: debian 12', kind='Container')},
        "proxmox/lxc/ct.yaml (document 1): spec.template must be a volume such as local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst, "
        "or an OS template as PVE names it, such as debian-12-standard, got 'debian 12'",
    ),
    'a container template several Iso manifests declare': (
        {
            'lxc/ct.yaml': vm('ct', 'template: debian-12-standard', kind='Container'),
            'isos/a.yaml': vm('a', f'source: {DEBIAN_CT_URL}\nstorage: local\n', kind='Iso'),
            'isos/b.yaml': vm('b', f'source: {DEBIAN_CT_URL}\nstorage: other\n', kind='Iso'),
        },
        "proxmox/lxc/ct.yaml (document 1): spec.template names 'debian-12-standard', which is the OS template of several Iso "
        'manifests (local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst, other:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst); give its volume',
    ),
    "a container's address that is not one": (
        {'lxc/ct.yaml': vm('ct', 'net:\n  - {bridge: vmbr0, ip: 127.0.0.300/24}', kind='Container')},
        "proxmox/lxc/ct.yaml (document 1): spec.net[0].ip must be 'dhcp' or an IPv4 address with its prefix, such as 127.0.0.53/24, got '127.0.0.300/24'",
    ),
    "a VM's field in a container": (
        {'lxc/ct.yaml': vm('ct', 'cpu: host', kind='Container')},
        'proxmox/lxc/ct.yaml (document 1): spec.cpu is not a known field; the fields here are cores, memory, sshKeys, password, unprivileged, features, '
        'onboot, vmid, provision, forceConfigCheck, replace, adopt, rootfs, net, template, state',
    ),
    # PyYAML's own message would quote the line, and the password with it.
    'invalid YAML': (
        {'vms/a.yaml': vm('a', f'cloudInit:\n  password: "{SECRET_PASSWORD}" trailing\n')},
        "proxmox/vms/a.yaml: invalid YAML at line 7, column 41: expected <block end>, but found '<scalar>'",
    ),
}


@pytest.mark.parametrize('files, message', INVALID.values(), ids=INVALID.keys())
def test_an_invalid_manifest_fails_naming_file_document_and_field(plugin, tmp_path, files, message):
    assert parse_failure(plugin, write_tree(tmp_path, files))[0] == message


@pytest.mark.parametrize('spec', ['cloudInit:\n  password: 123456789\n', 'userData: {runcmd: [echo 123456789]}\n'])
def test_a_refused_secret_is_named_but_never_shown(plugin, tmp_path, spec):
    message = parse_failure(plugin, write_tree(tmp_path, {'vms/a.yaml': vm('a', spec)}))[0]
    assert message.startswith('proxmox/vms/a.yaml (document 1): spec.')
    assert '123456789' not in message


def test_an_invalid_manifest_leaves_no_host_in_the_inventory(plugin, tmp_path):
    files = {'vms/a.yaml': vm('a'), 'vms/b.yaml': vm('b', 'memory: lots')}
    message, inventory = parse_failure(plugin, write_tree(tmp_path, files))
    assert message.startswith('proxmox/vms/b.yaml (document 1): spec.memory')
    assert list(inventory.hosts) == []


def test_a_missing_manifest_directory_is_an_error(plugin, tmp_path):
    config_file = write_tree(tmp_path, {}, config='plugin: puls.proxmox.manifests\npath: nowhere\n')
    assert parse_failure(plugin, config_file)[0] == f'path: {tmp_path / "nowhere"} is not a directory'


# --- options ---------------------------------------------------------------------------------------------------------


def test_constructed_options_and_import_storage_apply_to_manifest_hosts(plugin, tmp_path):
    config_file = write_tree(
        tmp_path,
        {
            'vms/web.yaml': vm('web', f'image:\n  source: {NOBLE_URL}\n', metadata='node: pve2\ntags: [web]\n'),
            'vms/db.yaml': vm('db', 'memory: 4096'),
        },
        config=textwrap.dedent('''\
        plugin: puls.proxmox.manifests
        path: proxmox
        import_storage: cloud-images
        compose:
          memory_gib: (pve_memory | default(1024)) // 1024
        groups:
          webservers: "'web' in (pve_tags | default([]))"
        keyed_groups:
          - key: pve_node | default('unplaced')
            prefix: node
    '''),
    )
    inventory = InventoryManager(loader=DataLoader(), sources=[str(config_file)])
    web = inventory.get_host('web').get_vars()
    assert web['pve_image'] == 'cloud-images:import/noble-server-cloudimg-amd64.qcow2'
    # An int since 2.19 (native Jinja types); before, Ansible's compose renders it as the string '4'.
    assert int(inventory.get_host('db').get_vars()['memory_gib']) == 4
    assert {name: sorted(host.name for host in group.get_hosts()) for name, group in inventory.groups.items()} == {
        'all': ['db', 'web'],
        'ungrouped': [],
        'pve_templates': [],
        'pve_vms': ['db', 'web'],
        'pve_containers': [],
        'webservers': ['web'],
        'node_pve2': ['web'],
        'node_unplaced': ['db'],
    }


def test_further_disks_and_network_devices_become_pve_disks_and_pve_nets(plugin, tmp_path):
    spec = textwrap.dedent("""\
        disks:
          - {storage: local-lvm, size: 40G}
          - {storage: fast, size: 100G}
          - {size: 8}
        net:
          - {bridge: vmbr0}
          - {bridge: vmbr1, tag: 20, model: virtio}
        """)
    config_file = write_tree(tmp_path, {'vms/web.yaml': vm('web-01', spec)})
    web = InventoryManager(loader=DataLoader(), sources=[str(config_file)]).get_host('web-01').get_vars()
    assert (web['pve_storage'], web['pve_disk_size'], web['pve_bridge']) == ('local-lvm', '40G', 'vmbr0')
    assert web['pve_disks'] == [{'slot': 'scsi1', 'size': '100G', 'storage': 'fast'}, {'slot': 'scsi2', 'size': '8'}]
    assert web['pve_nets'] == [{'slot': 'net1', 'bridge': 'vmbr1', 'vlan': 20, 'model': 'virtio'}]
    assert 'pve_vlan' not in web


def test_the_iso_of_a_vm_from_scratch_is_the_volume_of_its_iso_manifest(plugin, tmp_path):
    # proxmops' examples/proxmox/vms/web-01.yaml: blank disks, an installer ISO named by its file, declared by an Iso.
    web = vm(
        'web-01',
        'vmid: 101\ncores: 4\nmemory: 8192\ndisks:\n  - {storage: local-lvm, size: 40G}\nnet:\n  - {bridge: vmbr0, model: virtio}\n'
        'iso: debian-12.iso\nstate: running\n',
        metadata='node: pve-node1\n',
    )
    iso = vm('debian-12', f'source: {ISO_URL.rsplit("/", 1)[0]}/debian-12.iso\nstorage: isos\nnode: pve-node1\n', kind='Iso')
    config_file = write_tree(tmp_path, {'vms/web-01.yaml': web, 'isos/debian-12.yaml': iso})
    variables = InventoryManager(loader=DataLoader(), sources=[str(config_file)]).get_host('web-01').get_vars()
    assert variables['pve_cdrom'] == 'isos:iso/debian-12.iso'
    assert variables['pve_nets'] == [{'slot': 'net0', 'bridge': 'vmbr0', 'model': 'virtio'}]


def test_an_os_template_name_no_iso_manifest_declares_is_left_for_the_role_to_resolve_at_run_time(plugin, tmp_path):
    # proxmops' dns-01 as it is: its template is PVE's appliance name, on the node's storage or in its appliance index.
    config_file = write_tree(tmp_path, {'lxc/dns-01.yaml': vm('dns-01', 'template: debian-12-standard\n', kind='Container', metadata='node: pve1\n')})
    variables = InventoryManager(loader=DataLoader(), sources=[str(config_file)]).get_host('dns-01').get_vars()
    assert variables['pve_container'] == {'node': 'pve1', 'image': 'debian-12-standard'}


def test_a_container_is_pve_container_its_template_a_volume_or_its_iso_and_its_further_devices_nets(plugin, tmp_path):
    # proxmops' examples/proxmox/lxc/dns-01.yaml (its addresses on the loopback network), with extensions.
    dns = vm(
        'dns-01',
        'vmid: 201\ncores: 1\nmemory: 512\nrootfs: {storage: local-lvm, size: 8G}\n'
        'net:\n  - {bridge: vmbr0, tag: 20, ip: 127.0.0.53/24, gw: 127.0.0.1}\n  - {bridge: vmbr1, model: virtio, tag: 30, ip: 127.0.1.53/24, gw: 127.0.1.1}\n'
        f'template: debian-12-standard\nstate: running\nsshKeys: [ssh-ed25519 AAAA dns@example]\npassword: {SECRET_PASSWORD}\n'
        'features: [nesting]\nunprivileged: true\nonboot: true\nprovision: [dns.yml]\nadopt: true\n',
        kind='Container',
        metadata='node: pve-node1\ntags: [infra, dns]\n',
    )
    # A template given as a volume, on DHCP, declared absent.
    old = vm('old-ct', 'template: local:vztmpl/alpine.tar.xz\nnet:\n  - {ip: dhcp}\nstate: absent\n', kind='Container')
    # The Iso manifest of the OS template: on no node in particular, so on pve-node1 too.
    iso = vm('debian-12-ct', f'source: {DEBIAN_CT_URL}\nstorage: local\n', kind='Iso')
    config_file = write_tree(tmp_path, {'lxc/dns-01.yaml': dns, 'lxc/old-ct.yaml': old, 'isos/debian-12-ct.yaml': iso})
    inventory = InventoryManager(loader=DataLoader(), sources=[str(config_file)])
    assert sorted(host.name for host in inventory.groups['pve_containers'].get_hosts()) == ['dns-01', 'old-ct']
    variables = inventory.get_host('dns-01').get_vars()
    assert variables['pve_container'] == {
        'node': 'pve-node1',
        'tags': ['infra', 'dns'],
        'cores': 1,
        'memory': 512,
        'ssh_keys': ['ssh-ed25519 AAAA dns@example'],
        'password': SECRET_PASSWORD,
        'unprivileged': True,
        'features': ['nesting'],
        'onboot': True,
        'storage': 'local-lvm',
        'disk_size': '8G',
        'bridge': 'vmbr0',
        'vlan': 20,
        'ip': '127.0.0.53/24',
        'gateway': '127.0.0.1',
        'nets': [{'slot': 'net1', 'bridge': 'vmbr1', 'vlan': 30, 'ip': '127.0.1.53/24', 'gateway': '127.0.1.1'}],
        'image': 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst',
    }
    assert (variables['pve_vmid'], variables['pve_power'], variables['pve_provision'], variables['pve_adopt']) == (201, 'running', ['dns.yml'], True)
    assert 'pve_node' not in variables and 'pve_tags' not in variables
    old_ct = inventory.get_host('old-ct').get_vars()
    assert (old_ct['pve_container'], old_ct['pve_state']) == ({'image': 'local:vztmpl/alpine.tar.xz', 'ip': 'dhcp'}, 'absent')
    fleet = read_fleet(str(tmp_path / 'proxmox'), str(tmp_path), 'local')
    assert fleet.warnings == [
        'proxmox/lxc/dns-01.yaml (document 1): spec.net[1].model is not reconciled by puls.proxmox; ignored',
    ]


def test_network_manifests_become_the_interfaces_of_their_nodes_entries_in_pve_networks(plugin, tmp_path):
    # proxmops' Network fields: a VLAN-aware bridge with its ports, address, gateway, MTU and comments; two nodes.
    vmbr1 = vm(
        'vmbr1',
        'type: bridge\nports: [eno2]\nvlanAware: true\ncidr: 127.1.0.1/24\ngateway: 127.1.0.254\nmtu: 1500\ncomments: Guests\n',
        kind='Network',
        metadata='node: pve1\n',
    )
    bond0 = vm('bond0', 'type: bond\nports: [eno2, eno3]\nadopt: true\n', kind='Network', metadata='node: pve2\ntags: [lab]\n')
    vmbr2 = vm('vmbr2', 'type: bridge\n', kind='Network', metadata='node: pve1\n')
    config_file = write_tree(tmp_path, {'networks/pve1.yaml': vmbr1 + '---\n' + vmbr2, 'networks/pve2.yaml': bond0})
    variables = InventoryManager(loader=DataLoader(), sources=[str(config_file)]).groups['all'].get_vars()
    assert variables['pve_manifest_networks'] == [
        {
            'node': 'pve1',
            'interfaces': [
                {
                    'name': 'vmbr1',
                    'type': 'bridge',
                    'ports': ['eno2'],
                    'vlan_aware': True,
                    'cidr': '127.1.0.1/24',
                    'gateway': '127.1.0.254',
                    'mtu': 1500,
                    'comments': 'Guests',
                },
                {'name': 'vmbr2', 'type': 'bridge'},
            ],
        },
        # adopt, an extension, is the node entry's (pve_node_network takes it per node).
        {'node': 'pve2', 'interfaces': [{'name': 'bond0', 'type': 'bond', 'ports': ['eno2', 'eno3']}], 'adopt': True},
    ]
    assert read_fleet(str(tmp_path / 'proxmox'), str(tmp_path), 'local').warnings == [
        'proxmox/networks/pve2.yaml (document 1): metadata.tags is not reconciled by puls.proxmox; ignored'
    ]


@pytest.mark.parametrize(
    ('files', 'message'),
    [
        (
            {'networks/a.yaml': vm('vmbr1', 'type: bridge\n', kind='Network')},
            'proxmox/networks/a.yaml (document 1): metadata.node is required',
        ),
        (
            {'networks/a.yaml': vm('vmbr1', 'cidr: 127.1.0.1/24\n', kind='Network', metadata='node: pve1\n')},
            'proxmox/networks/a.yaml (document 1): spec.type is required, one of bridge, bond, vlan',
        ),
        (
            {'networks/a.yaml': vm('vmbr1', 'type: ovs\n', kind='Network', metadata='node: pve1\n')},
            "proxmox/networks/a.yaml (document 1): spec.type must be one of bridge, bond, vlan, got 'ovs'",
        ),
        (
            {
                'networks/a.yaml': vm('vmbr1', 'type: bridge\n', kind='Network', metadata='node: pve1\n'),
                'networks/b.yaml': vm('vmbr1', 'type: bridge\n', kind='Network', metadata='node: pve1\n'),
            },
            "proxmox/networks/b.yaml (document 1): metadata.name 'vmbr1 on node pve1' is already declared by proxmox/networks/a.yaml (document 1)",
        ),
        # proxmops' NetworkSpec.Ports is a []string, which proxmops' YAML decoder refuses to read from one string.
        (
            {'networks/a.yaml': vm('bond0', 'type: bond\nports: eno2 eno3\n', kind='Network', metadata='node: pve1\n')},
            "proxmox/networks/a.yaml (document 1): spec.ports must be a list of strings, got 'eno2 eno3'",
        ),
    ],
    ids=['no node', 'no type', 'unknown type', 'declared twice', 'ports as a string'],
)
def test_a_network_manifest_without_node_or_type_or_declared_twice_is_refused(plugin, tmp_path, files, message):
    assert parse_failure(plugin, write_tree(tmp_path, files))[0] == message


def test_sdn_zone_and_vnet_manifests_become_the_zones_vnets_and_subnets_of_pve_sdn(plugin, tmp_path):
    zones = (
        vm('lab', 'type: simple\ndhcp: dnsmasq\nnodes: [pve1, pve2]\n', kind='SdnZone', metadata='tags: [lab]\n')
        + '---\n'
        + vm('lan', 'type: vlan\nbridge: vmbr1\nmtu: 1500\n', kind='SdnZone')
        + '---\n'
        + vm('old', 'state: absent\n', kind='SdnZone')
    )
    labnet = vm(
        'labnet',
        'zone: lab\nalias: Lab guests\nisolatePorts: true\nsubnets:\n'
        '  - {cidr: 127.200.1.0/24, gateway: 127.200.1.1, snat: true, dhcpRanges: [{start: 127.200.1.100, end: 127.200.1.199}]}\n'
        '  - {cidr: 127.200.2.0/24}\n',
        kind='VNet',
    )
    web = vm('web', 'zone: lan\ntag: 20\nvlanAware: false\n', kind='VNet')
    gone = vm('gone', 'state: absent\n', kind='VNet')
    config_file = write_tree(tmp_path, {'sdn/zones.yaml': zones, 'sdn/labnet.yaml': labnet, 'sdn/web.yaml': web, 'sdn/gone.yaml': gone})
    variables = InventoryManager(loader=DataLoader(), sources=[str(config_file)]).groups['all'].get_vars()
    assert variables['pve_manifest_sdn'] == {
        'zones': [
            {'name': 'lab', 'type': 'simple', 'nodes': ['pve1', 'pve2'], 'dhcp': 'dnsmasq'},
            {'name': 'lan', 'type': 'vlan', 'bridge': 'vmbr1', 'mtu': 1500},
            {'name': 'old', 'state': 'absent'},
        ],
        # The files in sorted order: gone, labnet, web.
        'vnets': [
            {'name': 'gone', 'state': 'absent'},
            {'name': 'labnet', 'zone': 'lab', 'alias': 'Lab guests', 'isolate_ports': True},
            {'name': 'web', 'zone': 'lan', 'tag': 20, 'vlanaware': False},
        ],
        'subnets': [
            {
                'vnet': 'labnet',
                'cidr': '127.200.1.0/24',
                'gateway': '127.200.1.1',
                'snat': True,
                'dhcp_ranges': [{'start': '127.200.1.100', 'end': '127.200.1.199'}],
            },
            {'vnet': 'labnet', 'cidr': '127.200.2.0/24'},
        ],
    }
    assert read_fleet(str(tmp_path / 'proxmox'), str(tmp_path), 'local').warnings == [
        'proxmox/sdn/zones.yaml (document 1): metadata.tags is not reconciled by puls.proxmox; ignored'
    ]


def test_without_sdn_manifests_pve_manifest_sdn_is_not_set(plugin, tmp_path):
    config_file = write_tree(tmp_path, {'vms/a.yaml': vm('a')})
    assert 'pve_manifest_sdn' not in InventoryManager(loader=DataLoader(), sources=[str(config_file)]).groups['all'].get_vars()


@pytest.mark.parametrize(
    ('files', 'message'),
    [
        (
            {'sdn/a.yaml': vm('lab-net', 'zone: lab\n', kind='VNet')},
            "proxmox/sdn/a.yaml (document 1): metadata.name must be a lowercase letter, then lowercase letters or digits, 2 to 8 in all "
            "(a VNet ID of PVE), got 'lab-net'",
        ),
        (
            {'sdn/a.yaml': vm('labnet', 'zone: lab\n', kind='VNet', metadata='node: pve1\n')},
            "proxmox/sdn/a.yaml (document 1): metadata.node is not for a VNet: SDN is the cluster's; list the nodes of a zone in its spec.nodes",
        ),
        ({'sdn/a.yaml': vm('lab', 'mtu: 1500\n', kind='SdnZone')}, 'proxmox/sdn/a.yaml (document 1): spec.type is required, one of simple, vlan, vxlan'),
        (
            {'sdn/a.yaml': vm('lab', 'type: evpn\n', kind='SdnZone')},
            "proxmox/sdn/a.yaml (document 1): spec.type must be one of simple, vlan, vxlan, got 'evpn'",
        ),
        ({'sdn/a.yaml': vm('labnet', 'tag: 20\n', kind='VNet')}, 'proxmox/sdn/a.yaml (document 1): spec.zone is required'),
        (
            {'sdn/a.yaml': vm('labnet', 'zone: lab\nsubnets: [{cidr: 127.200.1.1/24}]\n', kind='VNet')},
            'proxmox/sdn/a.yaml (document 1): spec.subnets[0].cidr must be a network in CIDR notation with no host bits set, such as 127.77.2.0/24, '
            "got '127.200.1.1/24'",
        ),
        (
            {'sdn/a.yaml': vm('labnet', 'zone: lab\nsubnets: [{cidr: 127.200.1.0/24, gateway: 127.200.2.1}]\n', kind='VNet')},
            "proxmox/sdn/a.yaml (document 1): spec.subnets[0].gateway must be an address in 127.200.1.0/24, got '127.200.2.1'",
        ),
        (
            {'sdn/a.yaml': vm('labnet', 'zone: lab\nsubnets: [{cidr: 127.200.1.0/24, dhcp: true}]\n', kind='VNet')},
            'proxmox/sdn/a.yaml (document 1): spec.subnets[0].dhcp is not a known field; the fields here are cidr, gateway, snat, dhcpRanges',
        ),
        (
            {'sdn/a.yaml': vm('labnet', 'zone: lab\n', kind='VNet'), 'sdn/b.yaml': vm('labnet', 'zone: lan\n', kind='VNet')},
            "proxmox/sdn/b.yaml (document 1): metadata.name 'VNet labnet' is already declared by proxmox/sdn/a.yaml (document 1)",
        ),
    ],
    ids=['not a vnet id', 'a node', 'no zone type', 'unknown zone type', 'no zone', 'host bits', 'gateway outside', 'unknown subnet field', 'declared twice'],
)
def test_an_sdn_manifest_pve_would_refuse_is_refused_naming_the_field(plugin, tmp_path, files, message):
    assert parse_failure(plugin, write_tree(tmp_path, files))[0] == message


# --- the examples: one fleet, declared twice -------------------------------------------------------------------------


@pytest.fixture(scope='module')
def example_listings():
    return (ansible_inventory_list(EXAMPLES / 'manifests' / 'fleet.proxmops.yml')[0], ansible_inventory_list(EXAMPLES / 'inventory')[0])


def as_the_role_merges_them(hostvars):
    """A host's variables with the plugin's pve_manifest_isos, _networks and _sdn merged into pve_isos, pve_networks
    and pve_sdn, as the role's pre-flight merges them (filter merged_declarations)."""
    merged = {key: value for key, value in hostvars.items() if not key.startswith('pve_manifest_')}
    for kind, empty in (('isos', []), ('networks', []), ('sdn', {})):
        if f'pve_manifest_{kind}' in hostvars:
            merged[f'pve_{kind}'] = merged_declarations(
                hostvars.get(f'pve_{kind}', empty), hostvars[f'pve_manifest_{kind}'], kind, hostvars['pve_manifest_origins']
            )
    return merged


def test_example_manifests_and_example_inventory_declare_the_same_fleet(example_listings):
    from_manifests, from_inventory = example_listings
    assert group_members(from_manifests) == group_members(from_inventory)
    assert {host: as_the_role_merges_them(hostvars) for host, hostvars in from_manifests['_meta']['hostvars'].items()} == from_inventory['_meta']['hostvars']


def test_the_example_fleet_is_the_demo_fleet(example_listings):
    hostvars = example_listings[0]['_meta']['hostvars']
    assert group_members(example_listings[0])['pve_templates'] == (['golden-web'], [])
    assert group_members(example_listings[0])['pve_vms'] == (['web1', 'web2', 'web3', 'web4'], [])
    assert hostvars['golden-web']['pve_image'] == 'ubuntu-24.04-cloud'
    assert hostvars['golden-web']['pve_provision'] == ['base.yml', 'web.yml']
    assert {hostvars[name]['pve_image'] for name in ('web1', 'web2', 'web3', 'web4')} == {'golden-web'}
    assert (hostvars['web1']['pve_ip'], 'pve_ip' in hostvars['web2']) == ('127.77.0.21/24', False)
    assert hostvars['web3']['pve_user_data'].startswith('#cloud-config\n')
    assert hostvars['web4']['pve_replace'] == 'web-old'
    assert [iso['url'] for iso in hostvars['web1']['pve_manifest_isos']] == [
        'http://127.77.0.3/lab-tools.iso',
        'http://127.77.0.3/debian-12-standard_12.7-1_amd64.tar.zst',
    ]
    # A container from the OS template the fleet downloads, provisioned as root.
    assert group_members(example_listings[0])['pve_containers'] == (['dns1'], [])
    assert hostvars['dns1']['pve_container']['image'] == 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst'
    assert (hostvars['dns1']['pve_ssh_user'], hostvars['dns1']['pve_provision']) == ('root', ['base.yml'])
    # An SDN VNet in a simple zone, with a subnet.
    assert hostvars['web1']['pve_manifest_sdn'] == {
        'zones': [{'name': 'demo', 'type': 'simple'}],
        'vnets': [{'name': 'labnet', 'zone': 'demo', 'alias': 'Lab guests'}],
        'subnets': [{'vnet': 'labnet', 'cidr': '127.77.2.0/24', 'gateway': '127.77.2.1'}],
    }
    # A VLAN-aware bridge on pve1's spare NIC.
    assert hostvars['web1']['pve_manifest_networks'] == [
        {
            'node': 'pve1',
            'interfaces': [{'name': 'vmbr1', 'type': 'bridge', 'ports': ['eno2'], 'vlan_aware': True, 'cidr': '127.77.1.1/24', 'comments': 'Guest traffic'}],
        }
    ]


def test_the_example_provision_files_exist_next_to_the_inventories(example_listings):
    provision_dir = EXAMPLES / 'playbooks'
    assert example_listings[0]['_meta']['hostvars']['golden-web']['pve_provision_dir'] == '{{ inventory_dir }}/../playbooks'
    assert all((provision_dir / name).is_file() for name in example_listings[0]['_meta']['hostvars']['golden-web']['pve_provision'])


def test_every_address_in_the_examples_is_a_loopback_address():
    text = '\n'.join(path.read_text() for path in sorted(EXAMPLES.rglob('*.y*ml')))
    addresses = re.findall(r'\b\d{1,3}(?:\.\d{1,3}){3}\b', text)
    hosts = [urlparse(url).hostname for url in re.findall(r'https?://\S+', text)]
    assert addresses and all(ipaddress.ip_address(address).is_loopback for address in addresses + hosts)
