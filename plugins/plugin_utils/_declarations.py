# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster-level declarations of the manifests merged with the inventory's own (the filter merged_declarations).

The inventory plugin puls.proxmox.manifests sets pve_manifest_isos, pve_manifest_networks and pve_manifest_sdn, never
pve_isos, pve_networks or pve_sdn themselves: a group_vars file that sets one of those would replace the plugin's list
(a group variable of all, as the plugin's), and the ISO an Iso manifest declares would silently not be kept. Here
each object is named by its identity (an ISO by its volume and node, an interface by its name and node, an SDN object
by its ID); an object declared in both places is one object when the two agree field by field (a field only one of
them sets is taken), and an error naming both places when they disagree. The plugin records where each of its objects
comes from (pve_manifest_origins: identity -> the manifest file and document) by the same identities.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:  # ansible-core 2.19 tags a value loaded from a file with where it came from
    from ansible._internal._datatag._tags import Origin
except ImportError:  # older ansible-core: the variable is named without its file
    Origin = None

# The variable of each kind in the inventory, as the role and users set it.
VARIABLES = {'isos': 'pve_isos', 'networks': 'pve_networks', 'sdn': 'pve_sdn'}
# pve_sdn's lists, and the identity of an entry of each.
SDN_LISTS = {
    'zones': lambda zone: f'SDN zone {zone.get("name")}',
    'vnets': lambda vnet: f'SDN VNet {vnet.get("name")}',
    'subnets': lambda subnet: f'SDN subnet {subnet.get("cidr")} of VNet {subnet.get("vnet")}',
}


def iso_volume(entry):
    """The volume an entry of pve_isos keeps (pve_iso's defaults: storage local, content iso). pve_iso saves an import
    .img (a qcow2 named .img, as Ubuntu's cloud images are) as .qcow2."""
    content, filename = entry.get('content') or 'iso', str(entry.get('filename'))
    if content == 'import' and filename.endswith('.img'):
        filename = filename[: -len('.img')] + '.qcow2'
    return f'{entry.get("storage") or "local"}:{content}/{filename}'


def iso_identity(entry):
    """An entry of pve_isos by the volume it keeps and where."""
    volume = iso_volume(entry)
    if entry.get('node'):
        return f'ISO {volume} on node {entry["node"]}'
    if entry.get('nodes'):
        return f'ISO {volume} on nodes {", ".join(entry["nodes"])}'
    return f'ISO {volume}'


def network_identity(entry):
    return f'the network of node {entry.get("node")}'


def interface_identity(node, interface):
    return f'interface {interface.get("name")} of node {node}'


def merged_declarations(declared, from_manifests, kind, origins=None):
    """``declared`` (pve_isos, pve_networks or pve_sdn, as group_vars and host_vars set it) with ``from_manifests``
    (the plugin's list of that kind) merged in; ``origins`` is pve_manifest_origins."""
    if kind not in VARIABLES:
        raise AnsibleFilterError(f'merged_declarations: kind must be one of {", ".join(VARIABLES)}, got {kind!r}')
    merge = _Merge(VARIABLES[kind], _place(declared, VARIABLES[kind]), dict(origins or {}).get(kind) or {})
    if kind == 'sdn':
        return merge.sdn(dict(declared or {}), dict(from_manifests or {}))
    if kind == 'networks':
        return merge.listed(list(declared or []), list(from_manifests or []), network_identity, merge.network)
    return merge.listed(list(declared or []), list(from_manifests or []), iso_identity)


def _place(value, variable):
    """Where the inventory's variable was set: its file and line when ansible-core tags it, else the variable."""
    origin = Origin.get_tag(value) if Origin is not None else None
    if origin is not None and origin.path:
        line = f' line {origin.line_num}' if origin.line_num else ''
        return f'{variable} in {origin.path}{line}'
    return f'{variable} of the inventory (group_vars or host_vars)'


class _Merge:
    def __init__(self, variable, place, origins):
        self.variable = variable
        self.place = place
        self.origins = origins

    def listed(self, declared, from_manifests, identity, merge_entry=None):
        """The entries of both lists, each object once, in the order the inventory and then the manifests give them."""
        entries = {}
        for entry in declared:
            entries.setdefault(identity(entry), []).append(dict(entry))
        for entry in from_manifests:
            name = identity(entry)
            if name not in entries:
                entries[name] = [dict(entry)]
                continue
            (known,) = entries[name][:1]
            entries[name][0] = (merge_entry or self.fields)(name, known, entry)
        return [entry for group in entries.values() for entry in group]

    def fields(self, name, declared, from_manifest, skip=()):
        """One object from its two declarations, which must not disagree on a field both set."""
        merged = dict(declared)
        for key, value in from_manifest.items():
            if key in skip:
                continue
            if key in declared and declared[key] != value:
                raise self.conflict(name, key, declared[key], value)
            merged[key] = value
        return merged

    def network(self, name, declared, from_manifest):
        """A node's entry of pve_networks: its options as one object, its interfaces merged by name."""
        merged = self.fields(name, declared, from_manifest, skip=('interfaces',))
        node = declared.get('node')
        merged['interfaces'] = self.listed(
            declared.get('interfaces') or [], from_manifest.get('interfaces') or [], lambda interface: interface_identity(node, interface)
        )
        return merged

    def sdn(self, declared, from_manifests):
        merged = self.fields('pve_sdn', declared, from_manifests, skip=tuple(SDN_LISTS))
        for key, identity in SDN_LISTS.items():
            if declared.get(key) or from_manifests.get(key):
                merged[key] = self.listed(declared.get(key) or [], from_manifests.get(key) or [], identity)
        return merged

    def conflict(self, name, key, declared, from_manifest):
        origin = self.origins.get(name, 'the manifests (puls.proxmox.manifests)')
        return AnsibleFilterError(
            f'Nothing was changed: {name} is declared twice and the two disagree on {key}: {self.place} has {declared!r}, '
            f'{origin} has {from_manifest!r}. Keep one of the two declarations, or make them agree.'
        )
