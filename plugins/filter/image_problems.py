# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: image_problems
short_description: What is wrong with the declared machines' images, before anything is built
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The pre-flight check of the C(puls.proxmox.reconcile) role over the C(pve_image) of every declared machine, one
    message per problem, each naming the hosts and C(pve_image).
  - Templates of the inventory that are built from each other in a cycle (C(A) from C(B), C(B) from C(A), or a
    template from itself).
  - An image that is not a template of the inventory and that P(puls.proxmox.pve_vm#module) could not resolve
    against the cluster's guests - a name that matches no template, or several (ambiguous), a VMID of no guest, a URL,
    a volume PVE cannot import from. A VM that exists already is not checked (its image no longer matters); a template
    is, on every run (its spec hash resolves its image). Nor is a new VM whose image is a template another run builds
    right now (a guest C(NAME-build) tagged C(puls-building), such as another AWX job slice's) - the role waits for
    that build.
positional: guests
options:
  _input:
    description:
      - The declared machines, each a dict with C(host), C(name) (C(pve_vm_name)), C(image) (C(pve_image), empty when
        none), C(state) (C(pve_state)) and C(template) (whether the host is in group C(pve_templates)).
    type: list
    elements: dict
    required: true
  guests:
    description: The guests of the cluster, as P(puls.proxmox.pve_guest_info#module) returns them in RV(puls.proxmox.pve_guest_info#module:guests).
    type: list
    elements: dict
    required: true
'''

EXAMPLES = r'''
- name: Stop before any change when an image cannot work
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "Nothing was changed: {{ problems | join('; ') }}"
  vars:
    problems: "{{ declared_machines | puls.proxmox.image_problems(cluster.guests) }}"
'''

RETURN = r'''
_value:
  description: The problems, one sentence each saying what to change; empty when there is none.
  type: list
  elements: str
'''

from ansible_collections.puls.proxmox.plugins.module_utils._image import resolve_image
from ansible_collections.puls.proxmox.plugins.module_utils._template import BUILD_SUFFIX, BUILDING_TAG
from ansible_collections.puls.proxmox.plugins.module_utils._vmconfig import SpecError


def _declared_templates(machines):
    """Template host or name -> the template's machine: pve_image names a template of the inventory either way."""
    templates = {}
    for machine in machines:
        if machine.get('template'):
            templates[machine['host']] = templates[machine.get('name') or machine['host']] = machine
    return templates


def cycles(machines):
    """The cycles of templates built from each other, each a list of hosts in build order (A built from B: [A, B])."""
    templates = _declared_templates(machines)
    found, seen = [], set()
    for machine in machines:
        if not machine.get('template'):
            continue
        path = [machine['host']]
        base = templates.get(str(machine.get('image') or ''))
        while base is not None and base['host'] not in path:
            path.append(base['host'])
            base = templates.get(str(base.get('image') or ''))
        if base is None:
            continue
        cycle = path[path.index(base['host']):]
        if frozenset(cycle) not in seen:
            seen.add(frozenset(cycle))
            found.append(cycle)
    return found


def _cycle_problem(cycle):
    if len(cycle) == 1:
        return f'{cycle[0]}: pve_image is {cycle[0]}, the template itself; a template cannot be built from itself: name its base image'
    chain = ' -> '.join(cycle + cycle[:1])
    return (f'{" and ".join(sorted(cycle))} are built from each other in a cycle (pve_image: {chain}); a template cannot be '
            'built from itself: give one of them a base image from outside the cycle')


def _resolution_problem(machine, guests):
    image = str(machine.get('image') or '')
    try:
        resolve_image(image, guests)
    except SpecError as exc:
        templates = [guest.get('name') or '' for guest in guests if guest.get('template')]
        if not image.isdigit() and ':' not in image and not any(image.lower() in name.lower() for name in templates):
            return (f'{machine["host"]}: pve_image is {image}, which is neither a template declared in this inventory (group '
                    'pve_templates) nor (part of) the name of a template in the cluster: declare the template, or correct pve_image')
        return f'{machine["host"]}: pve_{exc}'
    return None


def image_problems(machines, guests):
    """The problems of the declared machines' images (see DOCUMENTATION), cycles first."""
    problems = [_cycle_problem(cycle) for cycle in cycles(machines)]
    declared = _declared_templates(machines)
    existing = {guest.get('name') for guest in guests}
    # A VM's template that another run builds right now (an AWX job slice, say) is waited for (vm.yml).
    building = {guest.get('name') for guest in guests if BUILDING_TAG in (guest.get('tags') or [])}
    for machine in machines:
        image = str(machine.get('image') or '')
        if not image or machine.get('state', 'present') != 'present' or image in declared:
            continue
        if not machine.get('template') and ((machine.get('name') or machine['host']) in existing or image + BUILD_SUFFIX in building):
            continue
        problem = _resolution_problem(machine, guests)
        if problem:
            problems.append(problem)
    return problems


class FilterModule:
    def filters(self):
        return {'image_problems': image_problems}
