# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reconcile role's module options from its pve_* variables (plugin_utils/_role_options.py): what the lookup
vm_options gives the role's tasks and what fleet_vars builds for the one-pass check, by the same code."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from ansible_collections.puls.proxmox.plugins.plugin_utils._role_options import (
    PURPOSES,
    container_options,
    fleet_machine,
    is_container,
    provision_options,
)

ROLE = pathlib.Path(__file__).resolve().parents[2] / 'roles' / 'reconcile'
CONTAINER = {'pve_vm_name': 'ct1', 'pve_power': 'running', 'pve_owner_tag': 'puls-managed', 'pve_adopt': False, 'pve_apply_mode': 'restart'}


def test_every_variable_the_options_read_is_a_validated_role_variable():
    """fleet_vars builds the options from the validated values, which are the role's argument spec options only: a
    variable the builders read outside the spec would silently be missing from the one-pass check."""
    options = yaml.safe_load((ROLE / 'meta' / 'argument_specs.yml').read_text())['argument_specs']['main']['options']
    for purpose, (variables, _build) in PURPOSES.items():
        assert set(variables) <= set(options), purpose


def test_the_roles_variables_use_the_lookup_purposes():
    role_vars = yaml.safe_load((ROLE / 'vars' / 'main.yml').read_text())
    assert role_vars['reconcile_ct_options'] == "{{ query('puls.proxmox.vm_options', 'container') | first }}"
    assert role_vars['reconcile_provision_options'] == "{{ query('puls.proxmox.vm_options', 'provision') | first }}"


def test_a_container_takes_pve_container_and_what_the_role_declares_for_every_machine():
    declared = dict(CONTAINER, pve_container={'image': 'local:vztmpl/debian-12.tar.zst', 'cores': 2, 'name': 'ignored'}, pve_adopt='yes', pve_vmid=301)
    assert container_options(declared) == {
        'image': 'local:vztmpl/debian-12.tar.zst',
        'cores': 2,
        'name': 'ct1',
        'state': 'started',
        'owner_tag': 'puls-managed',
        'adopt': True,
        'apply_mode': 'restart',
        'vmid': 301,
    }


@pytest.mark.parametrize(
    ('image', 'own_keys', 'expected'),
    [
        ('local:vztmpl/debian-12.tar.zst', None, ['ssh-ed25519 AAAA role']),
        ('local:vztmpl/debian-12.tar.zst', ['ssh-ed25519 AAAA own'], ['ssh-ed25519 AAAA own']),
        # A clone of a container template keeps the template's keys: pve_container refuses keys for it.
        ('ct-template', None, None),
    ],
)
def test_roots_keys_are_the_roles_only_for_a_container_from_an_os_template_that_names_none(image, own_keys, expected):
    container = {'image': image} if own_keys is None else {'image': image, 'ssh_keys': own_keys}
    options = container_options(dict(CONTAINER, pve_container=container, pve_ssh_keys=['ssh-ed25519 AAAA role']))
    assert options.get('ssh_keys') == expected


def test_a_stopped_container_without_a_vmid_declares_none():
    options = container_options(dict(CONTAINER, pve_power='stopped', pve_container={}))
    assert options['state'] == 'stopped'
    assert 'vmid' not in options


def test_the_provision_options_are_the_files_and_how_they_are_hashed():
    declared = {
        'pve_provision': ['web.yml'],
        'pve_force_config_check': False,
        'pve_provision_hash_mode': 'closure',
        'pve_provision_hash_include': [],
        'pve_provision_dir': '/srv/inventory',
        'pve_cores': 2,
    }
    assert provision_options(declared) == {'files': ['web.yml'], 'force': False, 'hash_mode': 'closure', 'hash_include': [], 'base_dir': '/srv/inventory'}


@pytest.mark.parametrize(
    ('host', 'templates', 'vms', 'containers', 'pve_container', 'expected'),
    [
        ('ct1', [], [], ['ct1'], {}, True),
        ('both', [], ['both'], ['both'], {}, False),
        ('tpl', ['tpl'], [], [], {'image': 'local:vztmpl/x.tar.zst'}, True),
        ('tpl', ['tpl'], [], [], {}, False),
        ('vm1', [], ['vm1'], [], {}, False),
    ],
)
def test_a_container_is_a_host_of_pve_containers_only_or_a_template_declaring_pve_container(host, templates, vms, containers, pve_container, expected):
    assert is_container(host, templates, vms, containers, pve_container) is expected


def test_the_fleet_machine_of_a_vm_holds_pve_vms_options_and_of_a_container_pve_containers():
    vm = fleet_machine('vm1', {'pve_vm_name': 'vm1', 'pve_power': 'running', 'pve_cores': 2, 'pve_replace': 'old1', 'pve_provision': []}, container=False)
    assert vm['type'] == 'qemu' and vm['replace'] == 'old1' and vm['provision'] == {'files': []}
    assert vm['vm']['name'] == 'vm1' and vm['vm']['cores'] == 2 and vm['vm']['state'] == 'started'
    container = fleet_machine('ct1', dict(CONTAINER, pve_container={'cores': 1}), container=True)
    assert container['type'] == 'lxc' and container['replace'] == '' and container['vm']['cores'] == 1 and container['vm']['name'] == 'ct1'
