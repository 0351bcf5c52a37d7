# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter merged_declarations: the inventory's pve_isos, pve_networks and pve_sdn merged with what the manifests
declare (pve_manifest_*), each object once, and two declarations of one object that disagree an error naming both."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.puls.proxmox.plugins.plugin_utils._declarations import merged_declarations

TOOLS = {'filename': 'tools.iso', 'url': 'http://127.0.0.9/tools.iso'}
DEBIAN = {'filename': 'debian-12.iso', 'storage': 'local', 'node': 'pve1', 'url': 'http://127.0.0.9/debian-12.iso', 'content': 'iso'}
ORIGINS = {
    'isos': {'ISO local:iso/debian-12.iso on node pve1': 'proxmox/isos/debian-12.yaml (document 1)'},
    'networks': {'interface vmbr0 of node pve1': 'proxmox/networks/vmbr0.yaml (document 1)'},
    'sdn': {'SDN zone lab': 'proxmox/sdn/lab.yaml (document 1)'},
}


def test_isos_of_both_places_are_kept_and_one_iso_declared_in_both_is_kept_once():
    declared = [TOOLS, {'filename': 'debian-12.iso', 'node': 'pve1', 'checksum': 'sha256:ab'}]
    merged = merged_declarations(declared, [DEBIAN], 'isos', ORIGINS)
    # The inventory's storage and content are pve_iso's defaults (local, iso): the same volume, its fields merged.
    assert merged == [TOOLS, dict(DEBIAN, checksum='sha256:ab')]
    assert merged_declarations([], [DEBIAN], 'isos') == [DEBIAN] and merged_declarations([TOOLS], [], 'isos') == [TOOLS]


def test_an_iso_declared_twice_from_different_urls_is_an_error_naming_both_places():
    with pytest.raises(AnsibleFilterError) as raised:
        merged_declarations([dict(DEBIAN, url='http://127.0.0.10/other.iso')], [DEBIAN], 'isos', ORIGINS)
    assert raised.value.message == (
        'Nothing was changed: ISO local:iso/debian-12.iso on node pve1 is declared twice and the two disagree on url: '
        "pve_isos of the inventory (group_vars or host_vars) has 'http://127.0.0.10/other.iso', "
        "proxmox/isos/debian-12.yaml (document 1) has 'http://127.0.0.9/debian-12.iso'. Keep one of the two declarations, or make them agree."
    )


def test_a_nodes_network_entry_takes_the_options_of_both_and_its_interfaces_by_name():
    declared = [{'node': 'pve1', 'adopt': True, 'allow_management_change': True, 'interfaces': [{'name': 'vmbr9', 'type': 'bridge'}]}]
    from_manifests = [{'node': 'pve1', 'interfaces': [{'name': 'vmbr0', 'type': 'bridge', 'vlan_aware': True}]}, {'node': 'pve2', 'interfaces': []}]
    assert merged_declarations(declared, from_manifests, 'networks', ORIGINS) == [
        {
            'node': 'pve1',
            'adopt': True,
            'allow_management_change': True,
            'interfaces': [{'name': 'vmbr9', 'type': 'bridge'}, {'name': 'vmbr0', 'type': 'bridge', 'vlan_aware': True}],
        },
        {'node': 'pve2', 'interfaces': []},
    ]
    disagreement = r'interface vmbr0 of node pve1 .* disagree on vlan_aware: .* proxmox/networks/vmbr0.yaml \(document 1\) has True'
    with pytest.raises(AnsibleFilterError, match=disagreement):
        merged_declarations([{'node': 'pve1', 'interfaces': [{'name': 'vmbr0', 'vlan_aware': False}]}], from_manifests, 'networks', ORIGINS)


def test_sdn_objects_merge_by_id_and_a_zone_of_two_types_is_an_error():
    declared = {'zones': [{'name': 'dc', 'type': 'simple'}], 'prune': False}
    from_manifests = {'zones': [{'name': 'lab', 'type': 'simple'}], 'vnets': [{'name': 'labnet', 'zone': 'lab'}], 'subnets': []}
    assert merged_declarations(declared, from_manifests, 'sdn', ORIGINS) == {
        'prune': False,
        'zones': [{'name': 'dc', 'type': 'simple'}, {'name': 'lab', 'type': 'simple'}],
        'vnets': [{'name': 'labnet', 'zone': 'lab'}],
    }
    assert merged_declarations({}, {}, 'sdn') == {}
    with pytest.raises(AnsibleFilterError, match=r"SDN zone lab .* disagree on type: .* has 'vlan', proxmox/sdn/lab.yaml \(document 1\) has 'simple'"):
        merged_declarations({'zones': [{'name': 'lab', 'type': 'vlan'}]}, from_manifests, 'sdn', ORIGINS)
