"""The cluster every lab starts with: two nodes (each with vmbr0 on eno1 carrying its address and a link-local IPv6
address, and vmbr10 on eno4 by DHCP and SLAAC), local and local-lvm, the shared NFS storage nfs-shared, the base
template 9017, an API token and a random root password."""

import secrets
import time
import uuid

from .addresses import AddressBlock
from .pve.cloudinit import CLOUDINIT_SIZE

GIB = 1024**3
MIB = 1024**2
USER = 'root@pam'
TOKEN_NAME = 'puls'
TEMPLATE_VMID = 9017
TEMPLATE_NAME = 'ubuntu-24.04-cloud'
TEMPLATE_DISK = 3584 * MIB  # the noble cloud image's virtual size
# (total, used by the node itself): pve1 has the most free memory, so placement by free memory picks it.
NODE_MEMORY = {'pve1': (64 * GIB, 12 * GIB), 'pve2': (64 * GIB, 40 * GIB)}
# A storage every node reaches: the one placement across nodes can clone to.
SHARED_STORAGE = 'nfs-shared'


def seed(pve):
    """Set up pve (a LabPve not yet started); returns the API token's secret."""
    pve.user = USER
    pve.password = secrets.token_urlsafe(18)
    pve.nodes = {}
    for node in sorted(NODE_MEMORY):
        pve.add_node(node)
    pve.node_memory = dict(NODE_MEMORY)
    # Each node's vmbr0 on eno1 carries its address (in the lab's block, beside the API's) and a link-local IPv6
    # address: PVE's check_ipv6_settings refuses reserved ranges such as 2001:db8::/32 as host addresses.
    block = AddressBlock(pve.host.rsplit('.', 1)[0])
    for index, node in enumerate(sorted(NODE_MEMORY), 1):
        pve.add_node_network(node, block.node(index) + '/24', block.gateway, f'fe80::20{index}/64', 'fe80::1')
    # A fresh PVE's local has no import content; the collection downloads cloud images as import.
    pve.storages['local']['content'] = 'iso,vztmpl,import,snippets'
    pve.storages[SHARED_STORAGE] = _nfs_storage()
    secret = str(uuid.uuid4())
    pve.apitokens[f'{USER}!{TOKEN_NAME}'] = secret
    _base_template(pve)
    return secret


def _nfs_storage():
    """An NFS export mounted on every node. pve-storage marks every nfs storage shared (Plugin.pm parse_config,
    @SHARED_STORAGE); no `nodes` line means it is enabled on all nodes (Storage.pm storage_check_enabled)."""
    return {
        'type': 'nfs',
        'active': 1,
        'shared': 1,
        'content': 'images,iso,import,vztmpl',
        'files': set(),
        'server': '127.0.0.1',
        'export': '/export/pve',
        'path': '/mnt/pve/' + SHARED_STORAGE,
        'options': 'vers=4.2',
    }


def _base_template(pve):
    vmid = TEMPLATE_VMID
    volumes = pve.storages['local-lvm'].setdefault('volumes', {})
    now = int(time.time())
    volumes[f'base-{vmid}-disk-0'] = {'content': 'images', 'format': 'raw', 'size': TEMPLATE_DISK, 'vmid': vmid, 'ctime': now}
    volumes[f'vm-{vmid}-cloudinit'] = {'content': 'images', 'format': 'raw', 'size': CLOUDINIT_SIZE, 'vmid': vmid, 'ctime': now, 'drive': 'ide2'}
    vm = pve.add_vm(
        vmid,
        TEMPLATE_NAME,
        node='pve1',
        template=True,
        config={
            'agent': '1',
            'boot': 'order=scsi0',
            'cores': 2,
            'description': 'Ubuntu 24.04 LTS (noble) cloud image, imported from noble-server-cloudimg-amd64.img',
            'ide2': f'local-lvm:vm-{vmid}-cloudinit,media=cdrom',
            'memory': '2048',
            'meta': f'creation-qemu=10.0.2,ctime={now}',
            'net0': 'virtio=BC:24:11:5E:90:17,bridge=vmbr0',
            'ostype': 'l26',
            'scsi0': f'local-lvm:base-{vmid}-disk-0,size=3584M',
            'scsihw': 'virtio-scsi-pci',
            'serial0': 'socket',
            'smbios1': f'uuid={uuid.uuid4()}',
            'tags': 'puls-base;ubuntu',
            'template': 1,
            'vga': 'serial0',
            'vmgenid': str(uuid.uuid4()),
        },
    )
    pve.generate_cloudinit(vm)
