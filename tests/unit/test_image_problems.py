# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pre-flight check of the declared machines' images (filter puls.proxmox.image_problems, plugin_utils/_image_problems.py)."""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.filter.image_problems import FilterModule
from ansible_collections.puls.proxmox.plugins.plugin_utils._image_problems import cycles, image_problems

GUESTS = [
    {'vmid': 9017, 'name': 'ubuntu-24.04-cloud', 'node': 'pve1', 'type': 'qemu', 'template': True},
    {'vmid': 9020, 'name': 'debian-13-a', 'node': 'pve1', 'type': 'qemu', 'template': True},
    {'vmid': 9021, 'name': 'debian-13-b', 'node': 'pve2', 'type': 'qemu', 'template': True},
    {'vmid': 300, 'name': 'web1', 'node': 'pve1', 'type': 'qemu', 'template': False},
]


def template(host, image, **more):
    return dict({'host': host, 'name': host, 'image': image, 'state': 'present', 'template': True}, **more)


def vm(host, image, **more):
    return dict({'host': host, 'name': host, 'image': image, 'state': 'present', 'template': False}, **more)


def test_templates_built_from_each_other_are_a_cycle_reported_once_in_build_order():
    machines = [
        template('a', 'b'),
        template('b', 'a'),
        template('c', 'd'),
        template('d', 'e'),
        template('e', 'c'),
        template('self', 'self'),
        template('leaf', 'a'),
        template('base', 'ubuntu'),
        template('top', 'base'),
    ]
    assert cycles(machines) == [['a', 'b'], ['c', 'd', 'e'], ['self']]
    assert image_problems(machines, GUESTS) == [
        'a and b are built from each other in a cycle (pve_image: a -> b -> a); a template cannot be built from itself: give one '
        'of them a base image from outside the cycle',
        'c and d and e are built from each other in a cycle (pve_image: c -> d -> e -> c); a template cannot be built from '
        'itself: give one of them a base image from outside the cycle',
        'self: pve_image is self, the template itself; a template cannot be built from itself: name its base image',
    ]


def test_a_template_is_referred_to_by_its_host_or_its_name():
    machines = [template('a', 'golden-b'), dict(template('b', 'a'), name='golden-b')]
    assert cycles(machines) == [['a', 'b']]


def test_an_image_matching_nothing_or_several_templates_is_refused_for_templates_and_new_vms():
    machines = [
        template('t1', 'debian-13'),
        vm('v1', 'nothing-like-it'),
        vm('v2', 'DEBIAN'),
        vm('v3', '777'),
        vm('v4', 'https://example.com/noble.img'),
        template('ok1', 'ubuntu'),
        vm('ok2', 'debian-13-a'),
        vm('ok3', '9017'),
        vm('ok4', 'local:import/noble.qcow2'),
        vm('ok5', 't1'),
        vm('ok6', ''),
    ]
    problems = image_problems(machines, GUESTS)
    assert problems[0] == (
        "t1: pve_image 'debian-13' is ambiguous: 2 templates whose names contain it: template debian-13-a "
        '(9020 on pve1), template debian-13-b (9021 on pve2); give a longer part of the name or the VMID'
    )
    assert problems[1] == (
        'v1: pve_image is nothing-like-it, which is neither a template declared in this inventory (group '
        'pve_templates) nor (part of) the name of a template in the cluster: declare the template, or correct '
        'pve_image'
    )
    assert problems[2].startswith("v2: pve_image 'DEBIAN' is ambiguous: 2 templates")
    assert problems[3] == 'v3: pve_image 777 is not the VMID of any VM or template in the cluster'
    assert problems[4].startswith("v4: pve_image 'https://example.com/noble.img' is a URL")
    assert len(problems) == 5


def test_an_existing_vm_or_a_machine_declared_absent_is_not_checked_but_an_existing_template_is():
    machines = [vm('web1', 'gone-base'), vm('old1', 'gone-base', state='absent'), template('debian-13-a', 'gone-base')]
    assert image_problems(machines, GUESTS) == [
        'debian-13-a: pve_image is gone-base, which is neither a template declared in this inventory (group pve_templates) '
        'nor (part of) the name of a template in the cluster: declare the template, or correct pve_image'
    ]


def test_a_new_vm_whose_template_another_run_is_building_is_left_to_the_wait():
    building = {'vmid': 130, 'name': 'db-golden-build', 'node': 'pve1', 'type': 'qemu', 'template': False, 'tags': ['puls-building']}
    assert image_problems([vm('db1', 'db-golden')], GUESTS + [building]) == []
    assert image_problems([vm('db1', 'db-golden')], GUESTS + [dict(building, tags=[])])[0].startswith('db1: pve_image is db-golden')


def test_the_filter_is_registered_by_its_name():
    assert FilterModule().filters() == {'image_problems': image_problems}
