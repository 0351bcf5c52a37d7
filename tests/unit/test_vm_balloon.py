# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""balloon, declared once (plugins/module_utils/_guest_options.py): checked, written, compared, planned and mapped."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._guest_options import role_options
from ansible_collections.puls.proxmox.plugins.module_utils._option_specs import VM_ARGUMENT_SPEC
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import (
    SpecError,
    VmSpec,
    desired_config,
    display_value,
    held_until_restart,
    same_value,
)


def test_balloon_is_a_pve_vm_option():
    assert VM_ARGUMENT_SPEC['balloon'] == {'type': 'int'}


@pytest.mark.parametrize('declared, parsed', [(0, 0), ('1024', 1024), (2048, 2048)])
def test_balloon_is_a_whole_number_of_mib_from_zero(declared, parsed):
    assert VmSpec.from_params({'name': 'web1', 'balloon': declared}).balloon == parsed


@pytest.mark.parametrize('declared', [-1, '1G', 'off', True])
def test_balloon_that_is_no_amount_is_refused_naming_it(declared):
    with pytest.raises(SpecError, match=r'^balloon must be an integer of at least 0 MiB') as caught:
        VmSpec.from_params({'name': 'web1', 'balloon': declared})
    assert caught.value.option == 'balloon'


def test_balloon_above_memory_is_refused_as_pve_refuses_it():
    with pytest.raises(SpecError, match=r'^balloon \(4096 MiB\) is more than memory \(2048 MiB\)'):
        VmSpec.from_params({'name': 'web1', 'memory': 2048, 'balloon': 4096})


@pytest.mark.parametrize('balloon', [0, 1024, 2048])
def test_balloon_up_to_memory_is_accepted(balloon):
    assert VmSpec.from_params({'name': 'web1', 'memory': 2048, 'balloon': balloon}).balloon == balloon


def test_balloon_is_written_as_its_number_and_only_when_declared():
    assert desired_config(VmSpec.from_params({'name': 'web1', 'balloon': 1024}), {})['balloon'] == 1024
    assert desired_config(VmSpec.from_params({'name': 'web1', 'balloon': 0}), {})['balloon'] == 0
    assert 'balloon' not in desired_config(VmSpec.from_params({'name': 'web1', 'memory': 2048}), {})


@pytest.mark.parametrize(
    'observed, desired, same',
    [
        ('1024', 1024, True),
        (1024, '1024', True),
        ('0', 0, True),
        (None, 1024, False),  # no key: ballooning up to memory, which a declared amount is not
        (None, 0, False),
        ('2048', 1024, False),
    ],
)
def test_balloon_compares_as_a_number(observed, desired, same):
    assert same_value('balloon', observed, desired) is same
    assert display_value('balloon', observed) == (None if observed is None else int(observed))


@pytest.mark.parametrize(
    'current, value, held',
    [
        ('1024', 2048, False),
        (None, 1024, False),  # a new target of an enabled balloon device: at once
        ('1024', 0, True),
        (None, 0, True),
        ('0', 1024, True),
        ('0', None, True),  # the device on or off: at the next boot
    ],
)
def test_a_new_balloon_target_applies_at_once_and_the_device_at_the_next_boot(current, value, held):
    assert held_until_restart('balloon', {'balloon': current} if current is not None else {}, value) is held


def test_the_role_maps_pve_balloon_for_a_machine_its_template_build_and_spec_hash():
    declared = {'pve_vm_name': 'web1', 'pve_power': 'running', 'pve_balloon': 1024}
    assert role_options('machine', declared)['balloon'] == 1024
    assert role_options('build', declared)['balloon'] == 1024
    assert role_options('template_spec', declared) == {'balloon': 1024}
