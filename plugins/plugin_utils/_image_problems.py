# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pre-flight check of the declared machines' images (filter puls.proxmox.image_problems, and the reconcile role's
fleet_problems): cycles of templates built from each other, and images pve_vm could not resolve."""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.module_utils._image import resolve_image
from ansible_collections.puls.proxmox.plugins.module_utils._template_plan import BUILD_SUFFIX, BUILDING_TAG
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError


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
        cycle = path[path.index(base['host']) :]
        if frozenset(cycle) not in seen:
            seen.add(frozenset(cycle))
            found.append(cycle)
    return found


def _cycle_problem(cycle):
    if len(cycle) == 1:
        return f'{cycle[0]}: pve_image is {cycle[0]}, the template itself; a template cannot be built from itself: name its base image'
    chain = ' -> '.join(cycle + cycle[:1])
    return (
        f'{" and ".join(sorted(cycle))} are built from each other in a cycle (pve_image: {chain}); a template cannot be '
        'built from itself: give one of them a base image from outside the cycle'
    )


def _resolution_problem(machine, guests):
    image = str(machine.get('image') or '')
    try:
        resolve_image(image, guests)
    except SpecError as exc:
        templates = [guest.get('name') or '' for guest in guests if guest.get('template')]
        if not image.isdigit() and ':' not in image and not any(image.lower() in name.lower() for name in templates):
            return (
                f'{machine["host"]}: pve_image is {image}, which is neither a template declared in this inventory (group '
                'pve_templates) nor (part of) the name of a template in the cluster: declare the template, or correct pve_image'
            )
        return f'{machine["host"]}: pve_{exc}'
    return None


def image_problems(machines, guests):
    """The problems of the declared machines' images (see the filter's DOCUMENTATION), cycles first."""
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
