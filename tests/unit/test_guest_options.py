"""Every place that spells a pve_vm or pve_container option agrees with its one declaration in the option table
(plugins/module_utils/_guest_options.py), and the files made from the declarations (make generate) are up to date."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.puls.proxmox.plugins.doc_fragments import ct_options, vm_options
from ansible_collections.puls.proxmox.plugins.inventory import manifests
from ansible_collections.puls.proxmox.plugins.module_utils import _ct_config, _template_plan, _vm_config
from ansible_collections.puls.proxmox.plugins.module_utils._guest import LXC, QEMU
from ansible_collections.puls.proxmox.plugins.module_utils._guest_options import (
    CONFIG,
    CONTROL,
    CREATE,
    CT_OPTIONS,
    OPTIONS,
    OPTIONS_BY_NAME,
    VM_OPTIONS,
    manifest_fields,
    role_options,
    role_variables,
    template_config_keys,
)
from ansible_collections.puls.proxmox.plugins.module_utils._option_specs import CT_ARGUMENT_SPEC, VM_ARGUMENT_SPEC
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import PRIVILEGE_OF_KEY
from ansible_collections.puls.proxmox.plugins.modules import pve_container, pve_vm
from ansible_collections.puls.proxmox.plugins.plugin_utils._role_options import CONTAINER_VARIABLES

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('generate_options', REPO / 'hacking' / 'generate_options.py')
generate_options = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate_options)
# The role's files that used to list the options by hand; they now ask the lookup puls.proxmox.vm_options.
ROLE_MAPPINGS = ('roles/reconcile/vars/main.yml', 'roles/reconcile/tasks/template.yml')
SPECS = yaml.safe_load((REPO / 'roles' / 'reconcile' / 'meta' / 'argument_specs.yml').read_text())['argument_specs']
VM_NAMES = {option.name for option in VM_OPTIONS}
CT_NAMES = {option.name for option in CT_OPTIONS}


@pytest.mark.parametrize('path', list(generate_options.generated()), ids=lambda path: str(path.relative_to(REPO)))
def test_a_generated_file_is_what_the_declarations_make(path):
    assert path.read_text() == generate_options.generated()[path], (
        f'{path.relative_to(REPO)} is out of date with plugins/module_utils/_guest_options.py; run: make generate'
    )


def test_every_option_applies_to_a_kind_and_each_name_is_declared_once():
    assert all(option.qemu or option.lxc for option in OPTIONS)
    assert len(OPTIONS_BY_NAME) == len(OPTIONS)
    assert [option for option in VM_OPTIONS if option.mapping(QEMU) is None] == []
    assert [option for option in CT_OPTIONS if option.mapping(LXC) is None] == []


@pytest.mark.parametrize(
    ('module', 'fragment', 'argument_spec'),
    [(pve_vm, vm_options, VM_ARGUMENT_SPEC), (pve_container, ct_options, CT_ARGUMENT_SPEC)],
    ids=['pve_vm', 'pve_container'],
)
def test_each_module_documents_each_option_of_its_argument_spec_as_declared(module, fragment, argument_spec):
    own = yaml.safe_load(module.DOCUMENTATION).get('options') or {}
    documented = {**own, **yaml.safe_load(fragment.ModuleDocFragment.DOCUMENTATION)['options']}
    assert sorted(documented) == sorted(argument_spec)
    for name, spec in argument_spec.items():
        for key in ('type', 'elements', 'choices', 'default', 'required'):
            assert documented[name].get(key) == spec.get(key), (name, key)
        for sub, sub_spec in (spec.get('options') or {}).items():
            assert documented[name]['suboptions'][sub].get('type') == sub_spec['type'], (name, sub)
            assert documented[name]['suboptions'][sub].get('required', False) == sub_spec.get('required', False), (name, sub)


def test_each_option_vmspec_validates_is_declared_and_checked():
    spec_fields = [spec_field.name for spec_field in dataclasses.fields(_vm_config.VmSpec)]
    # VmSpec holds every declared option but those the API client and the DNS lookup take before it (_vm_io, _address).
    assert sorted(VM_NAMES - set(spec_fields)) == ['agent_timeout', 'dns_servers', 'timeout']
    assert set(spec_fields) <= VM_NAMES
    assert sorted(_vm_config._PARSERS) == sorted(spec_fields)


def test_each_declared_pve_key_is_rendered_and_compared_for_its_option():
    for option in VM_OPTIONS:
        if option.qemu.pve_key:
            assert _vm_config._KEYS[option.qemu.pve_key].options == (option.name,), option.name
    assert all(set(rule.options) <= VM_NAMES for rule in _vm_config._KEYS.values())


def test_each_declared_pve_key_needs_the_privilege_pve_checks_for_it():
    assert all(option.qemu.pve_key in PRIVILEGE_OF_KEY for option in VM_OPTIONS if option.qemu.pve_key)


def test_each_container_option_applies_once_and_each_config_option_is_read_by_a_config_key_rule():
    assert all(option.lxc.use in (CONFIG, CREATE, CONTROL) for option in CT_OPTIONS)
    config = {option.name for option in CT_OPTIONS if option.lxc.use == CONFIG}
    assert config - {'name'} <= _ct_config.managed_options()
    assert _ct_config.managed_options() <= CT_NAMES
    spec_fields = {spec_field.name for spec_field in dataclasses.fields(_ct_config.CtSpec)}
    # CtSpec holds every option but the task timeout, which the I/O half takes.
    assert sorted(CT_NAMES - spec_fields) == ['timeout']
    assert set(_ct_config._PARSERS) == spec_fields


def test_the_container_password_is_never_logged():
    assert CT_ARGUMENT_SPEC['password']['no_log'] is True


def test_each_role_variable_is_validated_by_the_role():
    validated = SPECS['main']['options']
    assert [option.qemu.variable for option in VM_OPTIONS if option.qemu.variable and option.qemu.variable not in validated] == []
    # A variable documented by hand belongs to an entry point that main merges in; any other is generated.
    hand_written = {option.qemu.variable for option in VM_OPTIONS if option.qemu.variable and not option.qemu.variable_doc}
    assert all(variable in validated for variable in hand_written)
    assert set(CONTAINER_VARIABLES) <= set(validated)


def test_the_roles_pve_container_takes_the_modules_options_but_those_the_role_sets_itself():
    """roles/reconcile/meta/argument_specs.yml validates pve_container with the module's own option types; the role sets
    the rest from its pve_* variables (plugin_utils/_role_options.py, container_options), which its description names."""
    variable = SPECS['main']['options']['pve_container']
    by_role = {option.name for option in CT_OPTIONS if option.lxc.variable}
    assert by_role == {'name', 'state', 'vmid', 'owner_tag', 'adopt', 'apply_mode'}

    def shape(options):
        return {
            name: (spec['type'], spec.get('elements'), spec.get('choices'), bool(spec.get('no_log')), shape(spec['options']) if 'options' in spec else None)
            for name, spec in options.items()
        }

    assert shape(variable['options']) == shape({name: spec for name, spec in CT_ARGUMENT_SPEC.items() if name not in by_role})
    assert all(f'C({name})' in ' '.join(variable['description']) for name in by_role)


def test_no_role_file_maps_a_declared_option_by_hand():
    for path in ROLE_MAPPINGS:
        text = (REPO / path).read_text()
        mapped = [option.qemu.variable for option in VM_OPTIONS if option.qemu.pve_key and re.search(rf'\b{option.qemu.variable}\b', text)]
        assert mapped == [], f'{path} maps {mapped} by hand; declare the option in plugins/module_utils/_guest_options.py'


def test_the_role_reads_every_variable_it_maps():
    for purpose in ('machine', 'build', 'template_spec'):
        declared = {variable: variable for variable in role_variables(purpose)}
        assert set(role_options(purpose, declared).values()) <= set(declared) | {'started', 'stopped'}


def test_the_template_spec_and_its_config_keys_are_the_declared_ones():
    assert template_config_keys() == _template_plan._CONFIG_KEYS
    assert all(OPTIONS_BY_NAME[key].qemu.template_spec for key in template_config_keys())


def test_the_manifests_plugin_maps_each_declared_field_to_its_variable():
    for field, option in manifest_fields().items():
        assert manifests._DIRECT_FIELDS[field][0] == option.qemu.variable
        assert field in manifests.SPEC_FIELDS[manifests.VIRTUAL_MACHINE]
