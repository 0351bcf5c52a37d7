# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Seeded fleets for the plan-equals-run test (test_plan_equals_run.py): each seed draws one case, a small fleet with
names of its own (prefix cSEED-), over the dimensions users combine, and what the cluster holds before the run.

Dimensions (DIMENSIONS): the case's template (none, new, current, stale); each VM's source (an existing template, the
case's template declared and maybe unbuilt, a cloud image that pve_isos downloads in the same run, an import volume
already on the storage); its address (static, DNS, DHCP); user_data; provision files; replace; absent; protected;
prune; foreign and protected guests present; the starting cluster (empty, partly converged, drifted). Cases
without prune are packed several to one lab; a prune case prunes every owned guest its lab's inventory does not
declare, so it shares a lab only with other prune cases.
"""

from __future__ import annotations

import dataclasses
import random

BASE_TEMPLATE = 'ubuntu-24.04-cloud'
SOURCES = ('existing-template', 'declared-template', 'downloaded-image', 'import-volume')
ADDRESSES = ('static', 'dns', 'dhcp')
TEMPLATES = ('none', 'new', 'current', 'stale')
STARTS = ('empty', 'partly-converged', 'drifted')
DIMENSIONS = {
    'template': TEMPLATES,
    'source': SOURCES,
    'address': ADDRESSES,
    'user_data': (True,),
    'provision': (True,),
    'replace': (True,),
    'absent': (True,),
    'protected': (True,),
    'prune': (True,),
    'start': STARTS,
}
USER_DATA = '#cloud-config\nhostname: {name}\n'


@dataclasses.dataclass
class Vm:
    name: str
    source: str
    address: str
    provision: list
    user_data: bool = False
    replace: str = ''
    absent: bool = False
    protected: bool = False
    cores: int = 1


@dataclasses.dataclass
class Case:
    """One drawn fleet and the cluster it starts from."""

    seed: int
    template: str  # none / new / current / stale
    template_from_image: bool  # the case's template is imported from the downloaded cloud image
    vms: list
    start: str  # empty / partly-converged / drifted
    prune: bool = False

    @property
    def prefix(self):
        return f'c{self.seed}'

    @property
    def template_name(self):
        return f'{self.prefix}-golden'

    @property
    def image_file(self):
        return f'{self.prefix}-cloud.qcow2'

    @property
    def volume_file(self):
        return f'{self.prefix}-vol.qcow2'

    def uses(self):
        """The dimension values this case covers, as (dimension, value) pairs."""
        found = {('template', self.template), ('start', self.start)}
        for vm in self.vms:
            found |= {('source', vm.source), ('address', vm.address)}
            found |= {(flag, True) for flag in ('user_data', 'replace', 'absent', 'protected') if getattr(vm, flag)}
            found |= {('provision', True)} if vm.provision else set()
        found |= {('prune', True)} if self.prune else set()
        return found

    def describe(self):
        vms = ', '.join(
            f'{vm.name}({vm.source},{vm.address}{",ud" if vm.user_data else ""}{",prov" if vm.provision else ""}'
            f'{",replace" if vm.replace else ""}{",absent" if vm.absent else ""}{",protected" if vm.protected else ""})'
            for vm in self.vms
        )
        return (
            f'seed {self.seed}: template {self.template}{" (imported)" if self.template_from_image else ""}, '
            f'start {self.start}{", prune" if self.prune else ""}; VMs: {vms}'
        )


def generate(seed, prune=None):
    """The case of this seed (with prune when the seed is a multiple of 16, unless prune is given)."""
    rng = random.Random(seed)
    template = rng.choice(TEMPLATES)
    start = rng.choice(STARTS)
    # A prune case shares a lab only with other prune cases: one seed in 16.
    prune = seed % 16 == 0 if prune is None else prune
    sources = [source for source in SOURCES if source != 'declared-template' or template != 'none']
    vms = []
    for index in range(rng.choice((1, 2, 2, 3))):
        name = f'c{seed}-vm{index + 1}'
        source = rng.choice(sources)
        address = rng.choice(ADDRESSES)
        # An imported VM has no guest agent to report a DHCP address: provisioning it needs a static or DNS address.
        reachable = not (address == 'dhcp' and source in ('downloaded-image', 'import-volume'))
        user_data = rng.random() < 0.25
        # user_data brings its own users (no key of ours): such a VM is not provisioned.
        provision = ['mark.yml'] if reachable and not user_data and rng.random() < 0.5 else []
        vms.append(Vm(name, source, address, provision, user_data=user_data, cores=rng.choice((1, 2))))
    extra = rng.random()
    if extra < 0.3:
        vms[0].replace = f'c{seed}-old'
    elif extra < 0.55:
        vms.append(Vm(f'c{seed}-gone', rng.choice(('existing-template', 'import-volume')), 'dhcp', [], absent=True))
    if rng.random() < 0.3:
        vms[-1].protected = not vms[-1].absent
    return Case(seed, template, template != 'none' and rng.random() < 0.3, vms, start, prune)


def covered(cases):
    """The (dimension, value) pairs of DIMENSIONS that the cases cover."""
    found = set()
    for case in cases:
        found |= case.uses()
    return found


def missing(cases):
    wanted = {(dimension, value) for dimension, values in DIMENSIONS.items() for value in values}
    return sorted(wanted - covered(cases), key=str)
