# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pre-flight's volume and OS template references (plugin_utils/_volume_check.py, _os_templates.py): a template's
volumes count only until it is built; a volume must be on the machine's declared node; a container template's OS
template name is resolved whether it exists or not."""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.plugin_utils._os_templates import os_template_references
from ansible_collections.puls.proxmox.plugins.plugin_utils._volume_check import volume_problems, volume_references

MISSING = 'local:import/missing.qcow2'
VM = {'web-01': {'type': 'qemu', 'vm': {'name': 'web-01', 'image': MISSING}}}
TEMPLATES = {'tpl-01': {'type': 'qemu', 'vm': {'name': 'tpl-01', 'image': MISSING, 'cdrom': 'local:iso/tools.iso'}}}


def cluster(guests=(), machines=None, volumes=None):
    return {'volumes': volumes or {MISSING: [], 'local:iso/tools.iso': []}, 'machines': machines or {}, 'guests': list(guests)}


def test_a_templates_volumes_are_referenced_as_its_builds_and_count_until_a_template_of_its_name_exists():
    references = volume_references(VM, TEMPLATES)
    assert [(ref['host'], ref['field'], ref['created_only'], ref['template'], ref['node']) for ref in references] == [
        ('web-01', 'pve_image', True, None, None),
        ('tpl-01', 'pve_cdrom', True, 'tpl-01', None),
        ('tpl-01', 'pve_image', True, 'tpl-01', None),
    ]
    problems = volume_problems(references, cluster())
    assert [problem.split(':')[0] for problem in problems] == ['web-01', 'tpl-01', 'tpl-01']
    assert problems[2].startswith('tpl-01: pve_image is local:import/missing.qcow2, which is on no storage of the cluster')
    built = cluster(guests=[{'name': 'tpl-01', 'template': True, 'vmid': 9000}], machines={'web-01': {'vmid': 101}})
    assert volume_problems(references, built) == []


def test_a_volume_of_another_nodes_storage_is_missing_for_a_machine_declared_on_its_own_node_and_not_for_one_placed():
    iso = 'local:iso/tools.iso'
    machines = {
        'web-01': {'type': 'qemu', 'vm': {'name': 'web-01', 'node': 'pve2', 'cdrom': iso}},
        'web-02': {'type': 'qemu', 'vm': {'name': 'web-02', 'cdrom': iso}},
    }
    problems = volume_problems(volume_references(machines), cluster(volumes={iso: ['pve1']}))
    assert problems == [
        'web-01: pve_cdrom is local:iso/tools.iso, which is on no storage of node pve2 (only of pve1) and which this inventory does not declare: '
        'declare it in pve_isos (or an Iso manifest) so that the run downloads it, put it on the storage first, or correct pve_cdrom'
    ]
    assert volume_problems(volume_references(machines), cluster(volumes={iso: ['pve1', 'pve2']})) == []


def test_a_container_templates_os_template_name_is_resolved_whether_it_exists_or_not():
    container = {'type': 'lxc', 'vm': {'name': 'dns-01', 'image': 'debian-12-standard', 'node': 'pve1'}}
    template = {'type': 'lxc', 'vm': {'name': 'ct-golden', 'image': 'debian-12-standard', 'node': 'pve1'}}
    guests = [{'name': 'dns-01', 'vmid': 201, 'type': 'lxc', 'template': False}, {'name': 'ct-golden', 'vmid': 900, 'type': 'lxc', 'template': True}]
    references = os_template_references({'dns-01': dict(container, vm=dict(container['vm'], vmid=201))}, guests, ['ct-golden'], {'ct-golden': template})
    assert references == [{'host': 'ct-golden', 'name': 'debian-12-standard', 'node': 'pve1'}]
    # A container template named as its image is a clone source, no OS template.
    clone_of_template = {'type': 'lxc', 'vm': {'name': 'ct-app', 'image': 'ct-golden', 'node': 'pve1'}}
    assert os_template_references({}, guests, ['ct-golden', 'ct-app'], {'ct-app': clone_of_template}) == []
