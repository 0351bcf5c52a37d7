# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: manifests
short_description: A directory of proxmops manifests as the inventory of the reconcile role
version_added: 0.1.0
description:
  - >-
    Reads a directory of L(proxmops,https://github.com/prop4n/proxmops) manifests (C(apiVersion: proxmops.dev/v1)) and
    turns them into the inventory that P(puls.proxmox.reconcile#role) reconciles. A proxmops repository works as it is.
  - >-
    The directory is scanned recursively, in sorted order. Hidden directories are skipped. A C(.yaml) or C(.yml) file is a
    manifest file when a line of it starts with C(apiVersion: proxmops.dev/). Other YAML files are ignored, so
    manifests can live next to unrelated content, this inventory's own configuration and C(group_vars/) included.
  - Every document of a manifest file is a manifest and is validated. A file can hold several documents separated by
    C(---).
  - Kind C(VirtualMachine) becomes a host of the group C(pve_vms). Kind C(Template) becomes a host of the group
    C(pve_templates). Kind C(Container) becomes a host of the group C(pve_containers). Kind C(Iso) becomes an entry of
    C(pve_manifest_isos), a variable of the group C(all). Kind C(Network) becomes an interface of the entry of its node
    in C(pve_manifest_networks), a variable of the group C(all). The extension kinds C(SdnZone) and C(VNet) become the
    zones, VNets and subnets of C(pve_manifest_sdn), a variable of the group C(all).
  - >-
    The role merges C(pve_manifest_isos), C(pve_manifest_networks) and C(pve_manifest_sdn) with C(pve_isos),
    C(pve_networks) and C(pve_sdn) from C(group_vars) and C(host_vars) (P(puls.proxmox.merged_declarations#filter)),
    so a C(group_vars/all.yml) that sets C(pve_isos) adds to the ISOs of the manifests rather than replacing them. Two
    declarations of one object that disagree are an error naming both places. C(pve_manifest_origins) records the
    manifest file and document of each object, for that message.
  - >-
    Every manifest is read and checked before the first host is added, so an invalid manifest never leaves a partial
    inventory. The error starts with the file and the document, counted from 1, and names the field. For example, a
    second document of C(proxmox/vms/app-01.yaml) with C(cores: two) fails with
    C(spec.cores must be a positive integer, got 'two').
  - A host gets a variable only for a field that its manifest declares, so group variables and the role's defaults
    apply to the rest.
  - Values from manifests are data, never templates. Passwords and user-data never appear in warnings or errors.
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - constructed
  - puls.proxmox.vm_options.manifests
options:
  plugin:
    description:
      - The name of this plugin. It marks a YAML file as this plugin's configuration. Name the file C(*.proxmops.yml) or
        C(*.manifests.yml) by convention.
    type: str
    required: true
    choices: [puls.proxmox.manifests]
  path:
    description:
      - The directory of manifests, relative to the directory of this configuration file, or absolute.
      - This is the path that proxmops watches, for example V(proxmox).
    type: str
    default: .
  owner_tag:
    description:
      - Sets C(pve_owner_tag) on the group C(all), the tag that marks the guests the collection owns.
      - When not set, the variable is left to group variables and the role's default.
      - proxmops marks its guests C(managed-by-proxmops). Set that value to keep managing guests that proxmops created.
    type: str
  prune:
    description:
      - Sets C(pve_prune) on the group C(all). V(true) destroys owned guests that no manifest declares any more, as
        proxmops does with C(reconcile.prune).
      - When not set, the variable is left to group variables and the role's default.
    type: bool
  import_storage:
    description:
      - The storage that cloud images from an C(image.source) URL are downloaded to, when the manifest gives no
        C(image.importStorage). It needs the content type C(import).
    type: str
    default: local
notes:
  - >-
    B(Mapping.) The fields of C(metadata) and C(spec) become these variables.
    C(metadata.name) is the host name. C(metadata.node) is C(pve_node). C(metadata.tags) is C(pve_tags).
    C(spec.disks[0].storage) is C(pve_storage). C(spec.disks[0].size) is C(pve_disk_size). Each further disk
    C(spec.disks[N]) is an entry C({slot: scsiN, size, storage}) of C(pve_disks) (its C(size) is required).
    C(spec.net[0].bridge) is C(pve_bridge). C(spec.net[0].tag) is C(pve_vlan). Each further device C(spec.net[N]) is an
    entry C({slot: netN, bridge, vlan, model}) of C(pve_nets) (C(tag) is C(vlan)); so is C(spec.net[0]) as C(net0) when
    it has a C(model). The fields that set one variable each follow (B(Fields.) and B(Field extensions.)).
  - >-
    B(Power and state.) C(spec.state) V(running) and V(stopped) are C(pve_power). V(absent), an extension, is
    C(pve_state=absent). A C(Template) accepts only V(absent).
  - >-
    B(Image.) C(spec.fromTemplate) is C(pve_image), the template's name or VMID. Its mapping form C({name, linked})
    also sets C(pve_linked_clone). C(spec.image.source) is C(pve_image) as it is, for a storage volume such as
    V(local:import/noble.qcow2). An C(http) or C(https) URL of a C(.qcow2), C(.raw), C(.vmdk) or C(.img) cloud image
    becomes an entry of C(pve_manifest_isos) with C(content=import). It is downloaded to C(spec.image.importStorage), or else
    O(import_storage), on C(metadata.node). C(pve_image) is then that volume, V(STORAGE:import/FILE). A C(.img) file is
    saved as C(.qcow2), as P(puls.proxmox.pve_iso#module) does. C(spec.image) and C(spec.fromTemplate) are mutually
    exclusive.
  - >-
    B(Cloud-init.) C(spec.cloudInit.user) is C(pve_ssh_user), which is both the cloud-init user and the user that
    provisioning connects as. C(password) is C(pve_ci_password). C(sshKeys) is C(pve_ssh_keys).
    C(ip) V(dhcp) is C(pve_ip=dhcp). C(ip) V(ip=ADDRESS/PREFIX,gw=GATEWAY) is C(pve_ip=ADDRESS/PREFIX) and
    C(pve_gateway=GATEWAY). C(nameserver), a list separated by spaces or commas, is C(pve_nameservers).
    C(searchDomain) (also spelled C(searchdomain)) is C(pve_searchdomain). C(spec.userData) and C(spec.cloudInit) are
    mutually exclusive.
  - >-
    B(Iso.) Kind C(Iso) becomes an entry C({filename, storage, node, url, checksum, content}) of C(pve_manifest_isos).
    C(filename) is the last path segment of C(spec.source). C(checksum) is V(ALGO:VALUE) from C(spec.checksum).
    C(content) is V(import) for C(.qcow2), C(.raw) and C(.vmdk) files, V(vztmpl) for C(.tar.*) files, and V(iso) for
    the rest. C(node) and C(checksum) are left out when the manifest has none.
  - >-
    B(Network.) Kind C(Network) is a network interface of a node, an entry of C(interfaces) of the node's entry
    C({node, interfaces}) of C(pve_manifest_networks) (P(puls.proxmox.pve_node_network#module)'s options). C(metadata.node) is
    the node and is required. C(metadata.name) is the interface's C(name), such as V(vmbr1). C(spec.type) (V(bridge),
    V(bond) or V(vlan)) is C(type) and is required. C(spec.ports) (a list of names) is C(ports). C(spec.vlanAware) is
    C(vlan_aware) and C(spec.cidr) C(cidr). The extensions C(spec.gateway), C(spec.mtu) and C(spec.comments) are
    C(gateway), C(mtu) and C(comments); the extensions C(spec.adopt) and C(spec.allowManagementChange) set the node
    entry's C(adopt) and C(allow_management_change) (for all its interfaces: the module takes them per node). Two
    manifests of one interface on one node are an error. The
    entry's C(prune) is left unset, so O(prune) (C(pve_prune)) decides whether the node's owned interfaces that no
    manifest declares any more are deleted; only the nodes that some C(Network) manifest names are pruned.
  - >-
    B(SDN.) proxmops has no SDN manifests; these two extension kinds (which proxmops refuses, so keep them out of the
    path it watches) make C(pve_manifest_sdn), the options of P(puls.proxmox.pve_sdn#module). Neither takes C(metadata.node).
    Kind C(SdnZone) is an entry of C(zones): C(metadata.name) is its C(name), C(spec.type) (V(simple), V(vlan) or
    V(vxlan), required) its C(type), and C(spec.bridge), C(spec.peers), C(spec.vxlanPort), C(spec.mtu),
    C(spec.nodes), C(spec.dhcp) and C(spec.ipam) are C(bridge), C(peers), C(vxlan_port), C(mtu), C(nodes), C(dhcp) and
    C(ipam). Kind C(VNet) is an entry of C(vnets): C(metadata.name) is its C(name), C(spec.zone) (required) its
    C(zone), and C(spec.tag), C(spec.alias), C(spec.vlanAware) and C(spec.isolatePorts) are C(tag), C(alias),
    C(vlanaware) and C(isolate_ports). Each entry of the VNet's C(spec.subnets) is an entry of C(subnets) on that
    VNet: C(cidr) (required), C(gateway), C(snat) and C(dhcpRanges) (C({start, end}) each, C(dhcp_ranges)).
    C(spec.state=absent) deletes the zone or VNet. Names are PVE's zone and VNet IDs (a lowercase letter, then
    lowercase letters or digits, 2 to 8 in all); a zone or VNet declared twice is an error. O(prune) (C(pve_prune))
    decides whether the owned VNets no manifest declares any more are deleted, when some C(SdnZone) or C(VNet)
    manifest is left.
  - >-
    B(Extensions.) proxmops has no fields for these variables, so these C(spec) fields carry them. proxmops ignores
    fields it does not know. C(provision) (a list of files) is C(pve_provision). C(forceConfigCheck) is
    C(pve_force_config_check). C(replace) is C(pve_replace). A C(Template) also accepts C(fromTemplate) and C(cloudInit), for the VM that builds it. It does not
    accept C(applyMode), C(userData), C(replace), C(onboot) or C(adopt).
  - >-
    B(Container.) A C(Container) sets the host's C(pve_container), the options of P(puls.proxmox.pve_container#module).
    C(metadata.node) is its C(node), C(metadata.tags) its C(tags). C(spec.cores) and C(spec.memory) are C(cores) and
    C(memory). C(spec.rootfs.storage) is C(storage), C(spec.rootfs.size) C(disk_size). C(spec.net[0]) is the container's
    C(eth0) - C(bridge), C(tag) (C(vlan)), C(ip) (V(dhcp) or C(ADDRESS/PREFIX)) and C(gw) (C(gateway)); each further
    device C(spec.net[N]) is the entry C({slot: netN, bridge, vlan, ip, gateway}) of C(nets), from the same fields (a
    gateway there needs a static C(ip)). C(model) is reported with a warning and ignored. C(spec.template) is C(image) - a volume such as
    V(local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst) as it is; or an OS template's name, its file name or the
    file name's part before C(_VERSION) (the package, such as V(debian-12-standard)): the volume of the one C(Iso)
    manifest (on the container's node, or on no node in particular) that downloads it, else the name as it is, which the
    role resolves at run time to the newest matching volume on the node's storages or downloads from the node's
    appliance index (P(puls.proxmox.pve_os_template#module)). C(spec.vmid) is C(pve_vmid), and C(spec.state) is C(pve_power)
    or C(pve_state), as for a VM.
  - >-
    B(Container extensions.) C(sshKeys), C(password), C(unprivileged), C(features) and C(onboot) are the options of
    P(puls.proxmox.pve_container#module) of the same names (C(sshKeys) is C(ssh_keys)). C(provision),
    C(forceConfigCheck), C(replace) and C(adopt) are the role variables they are for a VM.
  - >-
    B(ISO.) C(spec.iso) of a C(VirtualMachine) is C(pve_cdrom), the ISO in its CD-ROM drive: a volume such as
    V(local:iso/debian-12.iso) as it is, or a file name, which is the volume of the C(Iso) manifest of that file (on
    the machine's node, or on no node in particular). A file name no C(Iso) manifest declares is an error.
  - >-
    B(Not reconciled.) These proxmops fields are reported with a warning and ignored: C(spec.net[].ip) and
    C(spec.net[].gw) of a C(VirtualMachine) or C(Template) (proxmops applies them to containers only). A field that neither proxmops
    nor this plugin knows is an error, so a misspelt field never goes unnoticed.
  - >-
    B(Errors.) Ansible reports an inventory source that fails to parse as a warning and goes on without its hosts. The
    first play of C(puls.proxmox.site) parses the sources once more (P(puls.proxmox.inventory_problems#lookup)) and
    fails the run with this plugin's error before anything is read or written.
seealso:
  - name: proxmops
    description: The GitOps controller for Proxmox VE whose manifest format this plugin reads.
    link: https://github.com/prop4n/proxmops
'''

EXAMPLES = r'''
---
# inventory/cluster.proxmops.yml, next to the proxmox/ directory that proxmops watches:
plugin: puls.proxmox.manifests
path: ../proxmox
# Keep managing the guests that proxmops created and tagged.
owner_tag: managed-by-proxmops
prune: true

# Use it:
#   ansible-inventory -i inventory/cluster.proxmops.yml --graph
#   ansible-playbook -i inventory/cluster.proxmops.yml puls.proxmox.site

# Another inventory file, inventory/cluster.yml, with the constructed options: a group per node, and the VMs of one
# tag (one YAML document per example, so this one is shown as comments):
#   plugin: puls.proxmox.manifests
#   path: manifests
#   keyed_groups:
#     - key: pve_node | default('unplaced')
#       prefix: node
#   groups:
#     webservers: "'web' in (pve_tags | default([]))"
'''

import ipaddress
import os
import posixpath
import re
from collections.abc import Mapping
from functools import partial
from urllib.parse import unquote, urlparse

import yaml
from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Constructable

from ansible_collections.puls.proxmox.plugins.module_utils._guest_options import manifest_fields
from ansible_collections.puls.proxmox.plugins.module_utils._ostemplate import is_os_template_name
from ansible_collections.puls.proxmox.plugins.plugin_utils._declarations import SDN_LISTS, interface_identity, iso_identity, iso_volume, network_identity

API_VERSION = 'proxmops.dev/v1'
VM_GROUP = 'pve_vms'
TEMPLATE_GROUP = 'pve_templates'
CONTAINER_GROUP = 'pve_containers'
VIRTUAL_MACHINE = 'VirtualMachine'
TEMPLATE = 'Template'
ISO = 'Iso'
CONTAINER = 'Container'
NETWORK = 'Network'
# Extension kinds: proxmops has no SDN manifests.
SDN_ZONE = 'SdnZone'
VNET = 'VNet'
KINDS = (VIRTUAL_MACHINE, TEMPLATE, ISO, CONTAINER, NETWORK, SDN_ZONE, VNET)

# A file is a manifest file when one of its documents starts a top-level proxmops apiVersion line.
_MANIFEST_LINE = re.compile(r'''^apiVersion:\s*["']?proxmops\.dev/''', re.MULTILINE)
_YAML_SUFFIXES = ('.yaml', '.yml')
# PVE names guests with DNS names, and the name is the inventory host name.
_DNS_NAME = re.compile(r'^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$')
_URL_SCHEMES = ('http', 'https')
# Fields whose values never appear in a message.
_SECRET_FIELDS = frozenset(('password', 'userData'))
CLOUD_IMAGE_SUFFIXES = ('.qcow2', '.raw', '.vmdk', '.img')
IMPORT_SUFFIXES = ('.qcow2', '.raw', '.vmdk')
_CONTAINER_TEMPLATE = re.compile(r'\.tar\.(?:gz|xz|zst|bz2)$')


class Document:
    """One document of a manifest file: where an error or a warning points."""

    def __init__(self, source, index):
        self.source = source
        self.index = index

    def __str__(self):
        return f'{self.source} (document {self.index})'

    def error(self, field, problem):
        return AnsibleParserError(f'{self}: {field} {problem}')


def _join(path, key):
    return f'{path}.{key}' if path else key


def _is_integer(value):
    # YAML's true and false are Python bools, which are ints too.
    return isinstance(value, int) and not isinstance(value, bool)


def _described(value, secret=False):
    """How a message shows a value it refuses: scalars as written, containers and secrets by their type only."""
    if isinstance(value, Mapping):
        return 'got a mapping'
    if isinstance(value, list):
        return 'got a list'
    if secret:
        return f'got a value of type {type(value).__name__}'
    return f'got {value!r}'


class Fields:
    """A mapping of a manifest (the document, metadata, spec, spec.cloudInit, ...), read field by field.

    A getter returns None for a field that is absent, null or an empty string (proxmops' ``omitempty``) and raises an
    error naming the document and the field's full path for a value of the wrong type. ``not_reconciled`` lists the
    present fields that proxmops knows and puls.proxmox ignores.
    """

    def __init__(self, document, path, data, accepted, not_reconciled=()):
        if not isinstance(data, Mapping):
            raise document.error(path or 'a manifest', f'must be a mapping, {_described(data)}')
        self.document = document
        self.path = path
        self.data = data
        for key in data:
            if key not in accepted and key not in not_reconciled:
                raise self.fail(str(key), 'is not a known field; the fields here are ' + ', '.join(accepted))
        self.not_reconciled = [_join(path, key) for key in not_reconciled if self.value(key) is not None]

    def value(self, key):
        value = self.data.get(key)
        return None if value is None or value == '' else value

    def fail(self, key, problem):
        return self.document.error(_join(self.path, key), problem)

    def _typed(self, key, accepts, expected):
        value = self.value(key)
        if value is not None and not accepts(value):
            raise self.fail(key, f'must be {expected}, {_described(value, key in _SECRET_FIELDS)}')
        return value

    def text(self, key):
        return self._typed(key, lambda value: isinstance(value, str), 'a string')

    def required_text(self, key):
        value = self.text(key)
        if value is None:
            raise self.fail(key, 'is required')
        return value

    def positive_int(self, key, maximum=None):
        expected = f'an integer from 1 to {maximum}' if maximum else 'a positive integer'
        return self._typed(key, lambda value: _is_integer(value) and 0 < value <= (maximum or value), expected)

    def boolean(self, key):
        return self._typed(key, lambda value: isinstance(value, bool), 'true or false')

    def text_list(self, key):
        return self._typed(key, lambda value: isinstance(value, list) and all(isinstance(item, str) for item in value), 'a list of strings')

    def choice(self, key, choices):
        return self._typed(key, lambda value: value in choices, 'one of ' + ', '.join(choices))

    def size(self, key):
        """A disk size: 20G, or a bare number of GiB."""
        value = self._typed(key, lambda value: isinstance(value, str) or _is_integer(value) and value > 0, 'a size such as 20G')
        return None if value is None else str(value)

    def section(self, key, accepted, not_reconciled=()):
        value = self.value(key)
        return None if value is None else Fields(self.document, _join(self.path, key), value, accepted, not_reconciled)

    def sections(self, key, accepted, not_reconciled=()):
        """A list of mappings (spec.disks, spec.net)."""
        items = self._typed(key, lambda value: isinstance(value, list), 'a list') or []
        return [Fields(self.document, f'{_join(self.path, key)}[{index}]', item, accepted, not_reconciled) for index, item in enumerate(items)]


def _given(entry):
    """A dict without its unset (None) values."""
    return {key: value for key, value in entry.items() if value is not None}


def _read(option):
    """The variable of a VM option's manifest field (module_utils/_guest_options.py), and how the field is read."""
    variable = option.qemu.variable
    if option.choices:
        return variable, partial(Fields.choice, choices=option.choices)
    return variable, {'int': Fields.positive_int, 'bool': Fields.boolean}.get(option.type, Fields.text)


_OPTION_FIELDS = manifest_fields()
_EXTENSION_FIELDS = {field for field, option in _OPTION_FIELDS.items() if option.qemu and option.qemu.manifest_extension}
# Spec fields that set one variable each, and how each is read.
_DIRECT_FIELDS = {
    **{field: _read(option) for field, option in _OPTION_FIELDS.items() if field not in _EXTENSION_FIELDS},
    # Extensions: variables proxmops has no field for.
    'provision': ('pve_provision', Fields.text_list),
    'forceConfigCheck': ('pve_force_config_check', Fields.boolean),
    'replace': ('pve_replace', Fields.text),
    **{field: _read(option) for field, option in _OPTION_FIELDS.items() if field in _EXTENSION_FIELDS},
}
# Spec fields read by their own code.
_STRUCTURED_FIELDS = ('image', 'fromTemplate', 'disks', 'net', 'cloudInit', 'state')
# A template is not a running guest and is rebuilt, never replaced.
_VM_ONLY_FIELDS = ('applyMode', 'userData', 'replace', 'onboot', 'adopt')
# A container's spec fields (proxmops' ContainerSpec; the rest are extensions) that set one option of pve_container
# each, and how each is read. rootfs, net and template are read by their own code.
_CONTAINER_OPTION_FIELDS = {
    'cores': ('cores', Fields.positive_int),
    'memory': ('memory', Fields.positive_int),
    'sshKeys': ('ssh_keys', Fields.text_list),
    'password': ('password', Fields.text),
    'unprivileged': ('unprivileged', Fields.boolean),
    'features': ('features', Fields.text_list),
    'onboot': ('onboot', Fields.boolean),
}
# A container's spec fields that set a role variable, as a VM's do.
_CONTAINER_VARIABLE_FIELDS = {field: _DIRECT_FIELDS[field] for field in ('vmid', 'provision', 'forceConfigCheck', 'replace', 'adopt')}
SPEC_FIELDS = {
    VIRTUAL_MACHINE: tuple(_DIRECT_FIELDS) + _STRUCTURED_FIELDS + ('iso',),
    TEMPLATE: tuple(field for field in _DIRECT_FIELDS if field not in _VM_ONLY_FIELDS) + _STRUCTURED_FIELDS,
    ISO: ('source', 'node', 'storage', 'checksum'),
    CONTAINER: (*_CONTAINER_OPTION_FIELDS, *_CONTAINER_VARIABLE_FIELDS, 'rootfs', 'net', 'template', 'state'),
    # proxmops' NetworkSpec (type, ports, vlanAware, cidr); the rest are extensions.
    NETWORK: ('type', 'ports', 'vlanAware', 'cidr', 'gateway', 'mtu', 'comments', 'adopt', 'allowManagementChange'),
    SDN_ZONE: ('type', 'bridge', 'peers', 'vxlanPort', 'mtu', 'nodes', 'dhcp', 'ipam', 'state'),
    VNET: ('zone', 'tag', 'alias', 'vlanAware', 'isolatePorts', 'subnets', 'state'),
}
# pve_node_network's interface types (module_utils/_network_plan.py TYPES).
NETWORK_TYPES = ('bridge', 'bond', 'vlan')
# Network extensions: options of the node's pve_networks entry (pve_node_network's), not of one interface.
NETWORK_ENTRY_FIELDS = {'adopt': 'adopt', 'allowManagementChange': 'allow_management_change'}
STATES = {
    VIRTUAL_MACHINE: ('running', 'stopped', 'absent'),
    TEMPLATE: ('absent',),
    CONTAINER: ('running', 'stopped', 'absent'),
    SDN_ZONE: ('absent',),
    VNET: ('absent',),
}
# pve_sdn's zone types (module_utils/_sdn_plan.py ZONE_TYPES), and the zone and VNet IDs PVE takes (pve-network
# src/PVE/Network/SDN.pm, the pve-sdn-zone-id and pve-sdn-vnet-id formats: a lowercase letter, then lowercase
# letters or digits, 2 to 8 in all).
SDN_ZONE_TYPES = ('simple', 'vlan', 'vxlan')
_SDN_ID = re.compile(r'^[a-z][a-z0-9]{1,7}$')
SUBNET_FIELDS = ('cidr', 'gateway', 'snat', 'dhcpRanges')
CLOUD_INIT_FIELDS = ('user', 'password', 'sshKeys', 'ip', 'nameserver', 'searchDomain', 'searchdomain')
# proxmops fields that puls.proxmox does not reconcile: a warning, not an error.
NET_NOT_RECONCILED = ('ip', 'gw')
# A container's device has no NIC model (pve-container src/PVE/LXC/Config.pm, $netconf_desc).
CONTAINER_NET_NOT_RECONCILED = ('model',)


def _container_device(device):
    """A Container's spec.net[N] as pve_container's settings of a device: bridge, vlan, ip and gateway."""
    options = _given({'bridge': device.text('bridge'), 'vlan': device.positive_int('tag', maximum=4094)})
    ip, gateway = device.text('ip'), device.text('gw')
    try:
        if ip not in (None, 'dhcp'):
            ipaddress.IPv4Interface(ip)
    except ValueError:
        raise device.fail('ip', f"must be 'dhcp' or an IPv4 address with its prefix, such as 127.0.0.53/24, got {ip!r}") from None
    try:
        if gateway is not None:
            ipaddress.IPv4Address(gateway)
    except ValueError:
        raise device.fail('gw', f'must be an IPv4 address, got {gateway!r}') from None
    _set(options, 'ip', ip)
    _set(options, 'gateway', gateway)
    return options


class Fleet:
    """What the manifests declare: the machines, the pve_isos entries, and the warnings to show. No inventory here."""

    def __init__(self, import_storage):
        self.import_storage = import_storage
        # name -> (group, variables)
        self.machines = {}
        self.isos = []
        # node -> its pve_networks entry {node, interfaces}
        self.networks = {}
        # pve_sdn: {zones, vnets, subnets}, when some SdnZone or VNet manifest declares anything
        self.sdn = {}
        # kind (isos, networks, sdn) -> identity of an object (plugin_utils/_declarations.py) -> its document
        self.origins = {'isos': {}, 'networks': {}, 'sdn': {}}
        self.warnings = []
        # name -> the document declaring it; machines (hosts) and ISOs are named apart.
        self._machine_declarations = {}
        self._iso_declarations = {}
        self._network_declarations = {}
        self._sdn_declarations = {}
        # (machine name, spec.iso naming a file, its spec): resolved by resolve_isos
        self._iso_references = []
        # (container name, spec.template naming an OS template, its spec): resolved by resolve_isos
        self._template_references = []
        # (node, volume ID) -> (pve_isos entry, the document declaring it first)
        self._volumes = {}

    def add(self, document, manifest):
        """Read one parsed document of a manifest file."""
        top = Fields(document, '', manifest, ('apiVersion', 'kind', 'metadata', 'spec'))
        api_version = top.value('apiVersion')
        if api_version != API_VERSION:
            problem = 'is required' if api_version is None else f'must be {API_VERSION}, {_described(api_version)}'
            raise document.error('apiVersion', problem)
        kind = top.choice('kind', KINDS)
        if kind is None:
            raise document.error('kind', 'is required, one of ' + ', '.join(KINDS))
        metadata = top.section('metadata', ('name', 'node', 'tags'))
        if metadata is None:
            raise document.error('metadata.name', 'is required')
        name = metadata.required_text('name')
        if not _DNS_NAME.match(name):
            raise metadata.fail('name', f'must be a DNS name (letters, digits, "-" and "."), got {name!r}')
        spec = top.section('spec', SPEC_FIELDS[kind])
        if spec is None:
            raise document.error('spec', 'is required')
        if kind == NETWORK:
            self._add_interface(document, metadata, name, spec)
        elif kind in (SDN_ZONE, VNET):
            self._add_sdn_object(document, kind, metadata, name, spec)
        elif kind == ISO:
            self._claim(self._iso_declarations, name, document)
            self._add_volume(self._iso_entry(spec), document, 'spec.source')
        elif kind == CONTAINER:
            self._claim(self._machine_declarations, name, document)
            self.machines[name] = (CONTAINER_GROUP, self._container_variables(name, metadata, spec))
        else:
            self._claim(self._machine_declarations, name, document)
            self.machines[name] = (VM_GROUP if kind == VIRTUAL_MACHINE else TEMPLATE_GROUP, self._machine_variables(kind, metadata, spec))
            self._cdrom_variable(name, spec)

    def _cdrom_variable(self, name, spec):
        """spec.iso: a volume is pve_cdrom as it is; a file name is the Iso manifest's volume (see resolve_isos)."""
        iso = spec.text('iso')
        if iso is None:
            return
        if ':' in iso:
            self.machines[name][1]['pve_cdrom'] = iso
        else:
            self._iso_references.append((name, iso, spec))

    def resolve_isos(self):
        """Each spec.iso that names a file: the volume of the Iso manifest of that file, on the machine's node or on none
        (read once every document is, since the Iso may come later); and each container's spec.template naming an OS
        template (see _resolve_template)."""
        for name, template, spec in self._template_references:
            options = self.machines[name][1]['pve_container']
            options['image'] = self._resolve_template(template, options.get('node'), spec)
        for name, filename, spec in self._iso_references:
            variables = self.machines[name][1]
            volumes = [
                f"{entry['storage']}:iso/{filename}"
                for entry in self.isos
                if entry['content'] == 'iso' and entry['filename'] == filename and entry.get('node') in (None, variables.get('pve_node'))
            ]
            if not volumes:
                problem = f"names {filename!r}, which no Iso manifest declares on this VM's node; declare it, or give its volume"
                raise spec.fail('iso', f'{problem}, e.g. local:iso/{filename}')
            variables['pve_cdrom'] = volumes[0]

    def _resolve_template(self, template, node, spec):
        """The volume of the one Iso manifest of an OS template (content vztmpl) on the container's node or on none whose
        file is named ``template``, or is ``template`` followed by "_" and a version, as PVE's appliance files are
        (debian-12-standard_12.7-1_amd64.tar.zst for debian-12-standard). A name no Iso manifest declares stays as it
        is: the role resolves it at run time, on the node's storages or from its appliance index (pve_os_template)."""
        volumes = sorted(
            {
                f"{entry['storage']}:vztmpl/{entry['filename']}"
                for entry in self.isos
                if entry['content'] == 'vztmpl'
                and (entry['filename'] == template or entry['filename'].startswith(template + '_'))
                and entry.get('node') in (None, node)
            }
        )
        if len(volumes) == 1:
            return volumes[0]
        if volumes:
            raise spec.fail('template', f'names {template!r}, which is the OS template of several Iso manifests ({", ".join(volumes)}); give its volume')
        if not is_os_template_name(template):
            raise spec.fail(
                'template',
                f'must be a volume such as local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst, or an OS template as PVE names it, '
                f'such as debian-12-standard, got {template!r}',
            )
        return template

    def _add_interface(self, document, metadata, name, spec):
        """A Network manifest: one interface of its node's pve_networks entry."""
        node = metadata.required_text('node')
        if metadata.value('tags') is not None:
            self._ignore(['metadata.tags'], document)
        self._claim(self._network_declarations, f'{name} on node {node}', document)
        interface = {'name': name, 'type': spec.choice('type', NETWORK_TYPES)}
        if interface['type'] is None:
            raise spec.fail('type', 'is required, one of ' + ', '.join(NETWORK_TYPES))
        _set(interface, 'ports', spec.text_list('ports'))
        _set(interface, 'vlan_aware', spec.boolean('vlanAware'))
        _set(interface, 'cidr', spec.text('cidr'))
        _set(interface, 'gateway', spec.text('gateway'))
        _set(interface, 'mtu', spec.positive_int('mtu'))
        _set(interface, 'comments', spec.text('comments'))
        entry = self.networks.setdefault(node, {'node': node, 'interfaces': []})
        entry['interfaces'].append(interface)
        self.origins['networks'][interface_identity(node, interface)] = str(document)
        self.origins['networks'].setdefault(network_identity(entry), str(document))
        # The module takes them per node: one manifest's true is the whole entry's.
        for field, option in NETWORK_ENTRY_FIELDS.items():
            if spec.boolean(field):
                entry[option] = True

    def _add_sdn_object(self, document, kind, metadata, name, spec):
        """An SdnZone manifest: a zone of pve_sdn; a VNet manifest: a VNet of pve_sdn and its subnets."""
        if not _SDN_ID.match(name):
            raise metadata.fail('name', f'must be a lowercase letter, then lowercase letters or digits, 2 to 8 in all (a {kind} ID of PVE), got {name!r}')
        if metadata.value('node') is not None:
            raise metadata.fail('node', f'is not for a {kind}: SDN is the cluster\'s; list the nodes of a zone in its spec.nodes')
        if metadata.value('tags') is not None:
            self._ignore(['metadata.tags'], document)
        self._claim(self._sdn_declarations, f'{kind} {name}', document)
        if not self.sdn:
            self.sdn.update(zones=[], vnets=[], subnets=[])
        added = {}
        absent = spec.choice('state', STATES[kind]) == 'absent'
        if kind == SDN_ZONE:
            added['zones'] = [{'name': name, 'state': 'absent'} if absent else _sdn_zone(spec, name)]
        elif absent:
            added['vnets'] = [{'name': name, 'state': 'absent'}]
        else:
            added['vnets'] = [_vnet(spec, name)]
            added['subnets'] = [_subnet(subnet, name) for subnet in spec.sections('subnets', SUBNET_FIELDS)]
        for key, entries in added.items():
            self.sdn[key].extend(entries)
            self.origins['sdn'].update((SDN_LISTS[key](entry), str(document)) for entry in entries)

    def _ignore(self, fields, document):
        self.warnings.extend(f'{document}: {field} is not reconciled by puls.proxmox; ignored' for field in fields)

    @staticmethod
    def _claim(names, name, document):
        if name in names:
            raise document.error('metadata.name', f'{name!r} is already declared by {names[name]}')
        names[name] = document

    def _machine_variables(self, kind, metadata, spec):
        variables = {}
        _set(variables, 'pve_node', metadata.text('node'))
        _set(variables, 'pve_tags', metadata.text_list('tags'))
        for field in SPEC_FIELDS[kind]:
            if field in _DIRECT_FIELDS:
                variable, read = _DIRECT_FIELDS[field]
                _set(variables, variable, read(spec, field))
        # proxmops' state is the power state; absent, an extension, destroys the machine.
        state = spec.choice('state', STATES[kind])
        _set(variables, 'pve_state' if state == 'absent' else 'pve_power', state)
        variables.update(self._image_variables(metadata, spec))
        variables.update(self._disk_variables(spec))
        variables.update(self._network_variables(spec))
        variables.update(_cloud_init_variables(spec))
        return variables

    def _container_variables(self, name, metadata, spec):
        """pve_container (the module's options) and the role variables of a Container manifest."""
        options = {}
        _set(options, 'node', metadata.text('node'))
        _set(options, 'tags', metadata.text_list('tags'))
        for field, (option, read) in _CONTAINER_OPTION_FIELDS.items():
            _set(options, option, read(spec, field))
        rootfs = spec.section('rootfs', ('storage', 'size'))
        if rootfs is not None:
            _set(options, 'storage', rootfs.text('storage'))
            _set(options, 'disk_size', rootfs.size('size'))
        options.update(self._container_network(spec))
        template = spec.text('template')
        if template is not None and ':' in template:
            options['image'] = template
        elif template is not None:
            self._template_references.append((name, template, spec))
        variables = {'pve_container': options}
        for field, (variable, read) in _CONTAINER_VARIABLE_FIELDS.items():
            _set(variables, variable, read(spec, field))
        state = spec.choice('state', STATES[CONTAINER])
        _set(variables, 'pve_state' if state == 'absent' else 'pve_power', state)
        return variables

    def _container_network(self, spec):
        """net[0]: the container's eth0 (the flat options bridge, vlan, ip, gateway); net[N]: the entry netN of nets."""
        devices = spec.sections('net', ('bridge', 'tag', 'ip', 'gw'), CONTAINER_NET_NOT_RECONCILED)
        if not devices:
            return {}
        self._ignore([path for device in devices for path in device.not_reconciled], spec.document)
        options = _container_device(devices[0])
        nets = [{'slot': f'net{index}', **_container_device(device)} for index, device in enumerate(devices[1:], 1)]
        _set(options, 'nets', nets or None)
        return options

    def _image_variables(self, metadata, spec):
        image = spec.section('image', ('source', 'importStorage'))
        template = spec.value('fromTemplate')
        if image is not None and template is not None:
            raise spec.fail('fromTemplate', 'and spec.image are mutually exclusive: clone a template or import an image')
        if template is not None:
            return _template_variables(spec, template)
        if image is None:
            return {}
        source = image.required_text('source')
        if urlparse(source).scheme not in _URL_SCHEMES:
            return {'pve_image': source}
        filename = _url_filename(image, 'source', source)
        if not filename.endswith(CLOUD_IMAGE_SUFFIXES):
            raise image.fail('source', f'must name a cloud image ({", ".join(CLOUD_IMAGE_SUFFIXES)}), got {source!r}')
        entry = {'filename': filename, 'storage': image.text('importStorage') or self.import_storage, 'url': source, 'content': 'import'}
        _set(entry, 'node', metadata.text('node'))
        return {'pve_image': self._add_volume(entry, spec.document, 'spec.image.source')}

    def _disk_variables(self, spec):
        disks = spec.sections('disks', ('storage', 'size'))
        if not disks:
            return {}
        variables = {}
        _set(variables, 'pve_storage', disks[0].text('storage'))
        _set(variables, 'pve_disk_size', disks[0].size('size'))
        # The first disk is the boot disk (scsi0, as proxmops makes it); the others follow it on the SCSI bus.
        further = []
        for index, disk in enumerate(disks[1:], 1):
            size = disk.size('size')
            if size is None:
                raise disk.fail('size', 'is required for a disk after the first, which is created empty')
            further.append(_given({'slot': f'scsi{index}', 'size': size, 'storage': disk.text('storage')}))
        _set(variables, 'pve_disks', further or None)
        return variables

    def _network_variables(self, spec):
        devices = spec.sections('net', ('bridge', 'tag', 'model'), NET_NOT_RECONCILED)
        if not devices:
            return {}
        self._ignore([path for device in devices for path in device.not_reconciled], spec.document)
        variables = {}
        nets = [
            _given({'slot': f'net{index}', 'bridge': device.text('bridge'), 'vlan': device.positive_int('tag', maximum=4094), 'model': device.text('model')})
            for index, device in enumerate(devices)
        ]
        if 'model' not in nets[0]:
            # net0 without a model is pve_bridge and pve_vlan, which keep its model; with one, it joins pve_nets.
            first = nets.pop(0)
            _set(variables, 'pve_bridge', first.get('bridge'))
            _set(variables, 'pve_vlan', first.get('vlan'))
        _set(variables, 'pve_nets', nets or None)
        return variables

    @staticmethod
    def _iso_entry(spec):
        source = spec.required_text('source')
        if urlparse(source).scheme not in _URL_SCHEMES:
            raise spec.fail('source', f'must be an http or https URL, got {source!r}')
        filename = _url_filename(spec, 'source', source)
        entry = {'filename': filename, 'storage': spec.required_text('storage'), 'url': source, 'content': _content_type(filename)}
        _set(entry, 'node', spec.text('node'))
        checksum = spec.section('checksum', ('algo', 'value'))
        if checksum is not None:
            entry['checksum'] = _checksum(checksum)
        return entry

    def _add_volume(self, entry, document, field):
        """Add a pve_isos entry once, however many manifests use it; returns its volume ID."""
        volume = iso_volume(entry)
        key = (entry.get('node'), volume)
        if key in self._volumes:
            known, known_document = self._volumes[key]
            if known != entry:
                raise document.error(field, f'puts {volume} on the storage from {entry["url"]!r}, but {known_document} declares it from {known["url"]!r}')
            return volume
        self._volumes[key] = (entry, document)
        self.isos.append(entry)
        self.origins['isos'][iso_identity(entry)] = str(document)
        return volume


def _sdn_zone(spec, name):
    """An SdnZone's spec as an entry of pve_sdn's zones."""
    zone = {'name': name, 'type': spec.choice('type', SDN_ZONE_TYPES)}
    if zone['type'] is None:
        raise spec.fail('type', 'is required, one of ' + ', '.join(SDN_ZONE_TYPES))
    _set(zone, 'bridge', spec.text('bridge'))
    _set(zone, 'peers', spec.text_list('peers'))
    _set(zone, 'vxlan_port', spec.positive_int('vxlanPort', maximum=65535))
    _set(zone, 'mtu', spec.positive_int('mtu'))
    _set(zone, 'nodes', spec.text_list('nodes'))
    _set(zone, 'dhcp', spec.choice('dhcp', ('dnsmasq',)))
    _set(zone, 'ipam', spec.text('ipam'))
    return zone


def _vnet(spec, name):
    """A VNet's spec, without its subnets, as an entry of pve_sdn's vnets."""
    vnet = {'name': name, 'zone': spec.required_text('zone')}
    _set(vnet, 'tag', spec.positive_int('tag', maximum=16777215))
    _set(vnet, 'alias', spec.text('alias'))
    _set(vnet, 'vlanaware', spec.boolean('vlanAware'))
    _set(vnet, 'isolate_ports', spec.boolean('isolatePorts'))
    return vnet


def _subnet(subnet, vnet):
    """An entry of a VNet's spec.subnets as an entry of pve_sdn's subnets."""
    cidr = subnet.required_text('cidr')
    try:
        network = ipaddress.ip_network(cidr)
    except ValueError:
        raise subnet.fail('cidr', f'must be a network in CIDR notation with no host bits set, such as 127.77.2.0/24, got {cidr!r}') from None
    entry = {'vnet': vnet, 'cidr': network.with_prefixlen}
    gateway = subnet.text('gateway')
    if gateway is not None and not _in_network(gateway, network):
        raise subnet.fail('gateway', f'must be an address in {network.with_prefixlen}, got {gateway!r}')
    _set(entry, 'gateway', gateway)
    _set(entry, 'snat', subnet.boolean('snat'))
    ranges = [_given({'start': item.required_text('start'), 'end': item.required_text('end')}) for item in subnet.sections('dhcpRanges', ('start', 'end'))]
    _set(entry, 'dhcp_ranges', ranges or None)
    return entry


def _in_network(address, network):
    try:
        return ipaddress.ip_address(address) in network
    except ValueError:
        return False


def _set(variables, name, value):
    if value is not None:
        variables[name] = value


def _template_variables(spec, template):
    # A scalar is the template's name, or its VMID (pve_image takes both).
    if isinstance(template, str) or _is_integer(template):
        return {'pve_image': str(template)}
    clone = spec.section('fromTemplate', ('name', 'linked'))
    variables = {'pve_image': clone.required_text('name')}
    _set(variables, 'pve_linked_clone', clone.boolean('linked'))
    return variables


def _cloud_init_variables(spec):
    cloud_init = spec.section('cloudInit', CLOUD_INIT_FIELDS)
    if cloud_init is None:
        return {}
    if spec.value('userData') is not None:
        raise spec.fail(
            'userData', 'and spec.cloudInit are mutually exclusive: the user-data replaces the cloud-init drive, so put the cloud-init settings into it'
        )
    if cloud_init.value('searchDomain') is not None and cloud_init.value('searchdomain') is not None:
        raise cloud_init.fail('searchdomain', 'and spec.cloudInit.searchDomain are one field spelled twice; give one')
    variables = {}
    _set(variables, 'pve_ssh_user', cloud_init.text('user'))
    _set(variables, 'pve_ci_password', cloud_init.text('password'))
    _set(variables, 'pve_ssh_keys', cloud_init.text_list('sshKeys'))
    nameservers = cloud_init.text('nameserver')
    if nameservers is not None:
        variables['pve_nameservers'] = nameservers.replace(',', ' ').split()
    _set(variables, 'pve_searchdomain', cloud_init.text('searchDomain') or cloud_init.text('searchdomain'))
    ip = cloud_init.text('ip')
    if ip is not None:
        variables.update(_ip_variables(cloud_init, ip))
    return variables


def _ip_variables(cloud_init, ip):
    """cloudInit.ip, a PVE ipconfig0 value: 'dhcp', or 'ip=ADDRESS/PREFIX[,gw=GATEWAY]' in any order."""
    if ip in ('dhcp', 'ip=dhcp'):
        return {'pve_ip': 'dhcp'}
    settings = dict(part.partition('=')[::2] for part in ip.split(','))
    try:
        if set(settings) - {'ip', 'gw'} or '/' not in settings.get('ip', ''):
            raise ValueError(ip)
        ipaddress.IPv4Interface(settings['ip'])
        if 'gw' in settings:
            ipaddress.IPv4Address(settings['gw'])
    except ValueError:
        raise cloud_init.fail('ip', f"must be 'dhcp' or 'ip=ADDRESS/PREFIX,gw=GATEWAY' (IPv4), got {ip!r}") from None
    variables = {'pve_ip': settings['ip']}
    _set(variables, 'pve_gateway', settings.get('gw'))
    return variables


def _checksum(checksum):
    algorithm = checksum.required_text('algo')
    digest = checksum.required_text('value')
    if not re.match(r'^[A-Za-z0-9]+$', algorithm):
        raise checksum.fail('algo', f'must be an algorithm name such as sha256, got {algorithm!r}')
    if not re.match(r'^[0-9A-Fa-f]+$', digest):
        raise checksum.fail('value', f'must be a hexadecimal digest, got {digest!r}')
    return f'{algorithm.lower()}:{digest.lower()}'


def _url_filename(fields, key, url):
    filename = unquote(posixpath.basename(urlparse(url).path))
    if not filename:
        raise fields.fail(key, f'must end with a file name, got {url!r}')
    return filename


def _content_type(filename):
    """The PVE content type an Iso manifest's file is kept as, from its name."""
    if filename.endswith(IMPORT_SUFFIXES):
        return 'import'
    if _CONTAINER_TEMPLATE.search(filename):
        return 'vztmpl'
    return 'iso'


def manifest_files(root):
    """The YAML files under root, recursively and sorted, hidden directories skipped."""
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(name for name in subdirectories if not name.startswith('.'))
        for name in sorted(files):
            if name.endswith(_YAML_SUFFIXES):
                yield os.path.join(directory, name)


def manifest_documents(path, source):
    """(Document, content) for each non-empty document of a manifest file; nothing for any other file."""
    with open(path, encoding='utf-8') as stream:
        text = stream.read()
    if not _MANIFEST_LINE.search(text):
        return []
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.MarkedYAMLError as error:
        # The problem and its position only: PyYAML's message quotes the file, which may hold a password.
        mark = error.problem_mark
        raise AnsibleParserError(f'{source}: invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {error.problem}') from None
    except yaml.YAMLError:
        raise AnsibleParserError(f'{source}: invalid YAML') from None
    return [(Document(source, index), content) for index, content in enumerate(documents, 1) if content is not None]


def read_fleet(root, base, import_storage):
    """Read and check every manifest under root. Files are named relative to base in messages."""
    if not os.path.isdir(root):
        raise AnsibleParserError(f'path: {root} is not a directory')
    fleet = Fleet(import_storage)
    for path in manifest_files(root):
        for document, content in manifest_documents(path, os.path.relpath(path, base)):
            fleet.add(document, content)
    fleet.resolve_isos()
    return fleet


class InventoryModule(BaseInventoryPlugin, Constructable):
    NAME = 'puls.proxmox.manifests'

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(_YAML_SUFFIXES)

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        base = os.path.dirname(os.path.abspath(path))
        fleet = read_fleet(os.path.join(base, self.get_option('path')), base, self.get_option('import_storage'))
        for warning in fleet.warnings:
            self.display.warning(warning)
        self._populate(fleet)

    def _populate(self, fleet):
        for group in (TEMPLATE_GROUP, VM_GROUP, CONTAINER_GROUP):
            self.inventory.add_group(group)
        for variable, option in (('pve_owner_tag', 'owner_tag'), ('pve_prune', 'prune')):
            if self.get_option(option) is not None:
                self.inventory.set_variable('all', variable, self.get_option(option))
        # Variables of their own, never pve_isos, pve_networks and pve_sdn, which group_vars may set too: the role
        # merges the two (filter merged_declarations), where one variable of all would replace the other.
        if fleet.isos:
            self.inventory.set_variable('all', 'pve_manifest_isos', fleet.isos)
        if fleet.networks:
            self.inventory.set_variable('all', 'pve_manifest_networks', list(fleet.networks.values()))
        if fleet.sdn:
            self.inventory.set_variable('all', 'pve_manifest_sdn', fleet.sdn)
        if fleet.isos or fleet.networks or fleet.sdn:
            self.inventory.set_variable('all', 'pve_manifest_origins', {kind: origins for kind, origins in fleet.origins.items() if origins})
        strict = self.get_option('strict')
        for name, (group, variables) in fleet.machines.items():
            self.inventory.add_host(name, group=group)
            for variable, value in variables.items():
                self.inventory.set_variable(name, variable, value)
            self._set_composite_vars(self.get_option('compose'), variables, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option('groups'), variables, name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option('keyed_groups'), variables, name, strict=strict)
