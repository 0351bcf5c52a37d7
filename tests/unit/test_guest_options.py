"""Every place that spells a VM option agrees with its one declaration (plugins/module_utils/_guest_options.py), and the
files made from the declarations (make generate) are up to date."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.puls.proxmox.plugins.doc_fragments.vm_options import ModuleDocFragment
from ansible_collections.puls.proxmox.plugins.inventory import manifests
from ansible_collections.puls.proxmox.plugins.module_utils import _template_plan, _vm_config
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import PRIVILEGE_OF_KEY
from ansible_collections.puls.proxmox.plugins.module_utils._vm_options import ARGUMENT_SPEC
from ansible_collections.puls.proxmox.plugins.module_utils._guest_options import (
    OPTIONS_BY_NAME,
    VM_OPTIONS,
    manifest_fields,
    role_options,
    role_variables,
    template_config_keys,
)
from ansible_collections.puls.proxmox.plugins.modules import pve_vm

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('generate_options', REPO / 'hacking' / 'generate_options.py')
generate_options = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate_options)
# The role's files that used to list the options by hand; they now ask the lookup puls.proxmox.vm_options.
ROLE_MAPPINGS = ('roles/reconcile/vars/main.yml', 'roles/reconcile/tasks/template.yml')


@pytest.mark.parametrize('path', list(generate_options.generated()), ids=lambda path: str(path.relative_to(REPO)))
def test_a_generated_file_is_what_the_declarations_make(path):
    assert path.read_text() == generate_options.generated()[path], (
        f'{path.relative_to(REPO)} is out of date with plugins/module_utils/_guest_options.py; run: make generate'
    )


def test_pve_vm_documents_each_option_of_its_argument_spec_as_declared():
    documented = {**yaml.safe_load(pve_vm.DOCUMENTATION)['options'], **yaml.safe_load(ModuleDocFragment.DOCUMENTATION)['options']}
    assert sorted(documented) == sorted(ARGUMENT_SPEC)
    for name, spec in ARGUMENT_SPEC.items():
        for key in ('type', 'elements', 'choices', 'default', 'required'):
            assert documented[name].get(key) == spec.get(key), (name, key)


def test_each_option_vmspec_validates_is_declared_and_checked():
    spec_fields = [spec_field.name for spec_field in dataclasses.fields(_vm_config.VmSpec)]
    # VmSpec holds every declared option but those the API client and the DNS lookup take before it (_vm_io, _address).
    assert sorted(set(OPTIONS_BY_NAME) - set(spec_fields)) == ['agent_timeout', 'dns_servers', 'timeout']
    assert set(spec_fields) <= set(OPTIONS_BY_NAME)
    assert sorted(_vm_config._PARSERS) == sorted(spec_fields)


def test_each_declared_pve_key_is_rendered_and_compared_for_its_option():
    for option in VM_OPTIONS:
        if option.pve_key:
            assert _vm_config._KEYS[option.pve_key].options == (option.name,), option.name
    assert all(set(rule.options) <= set(OPTIONS_BY_NAME) for rule in _vm_config._KEYS.values())


def test_each_declared_pve_key_needs_the_privilege_pve_checks_for_it():
    assert all(option.pve_key in PRIVILEGE_OF_KEY for option in VM_OPTIONS if option.pve_key)


def test_each_role_variable_is_validated_by_the_role():
    specs = yaml.safe_load((REPO / 'roles' / 'reconcile' / 'meta' / 'argument_specs.yml').read_text())['argument_specs']
    validated = specs['main']['options']
    assert [option.variable for option in VM_OPTIONS if option.variable and option.variable not in validated] == []
    # A variable documented by hand belongs to an entry point that main merges in; any other is generated.
    hand_written = {option.variable for option in VM_OPTIONS if option.variable and not option.variable_doc}
    assert all(variable in validated for variable in hand_written)


def test_no_role_file_maps_a_declared_option_by_hand():
    for path in ROLE_MAPPINGS:
        text = (REPO / path).read_text()
        mapped = [option.variable for option in VM_OPTIONS if option.pve_key and re.search(rf'\b{option.variable}\b', text)]
        assert mapped == [], f'{path} maps {mapped} by hand; declare the option in plugins/module_utils/_guest_options.py'


def test_the_role_reads_every_variable_it_maps():
    for purpose in ('machine', 'build', 'template_spec'):
        declared = {variable: variable for variable in role_variables(purpose)}
        assert set(role_options(purpose, declared).values()) <= set(declared) | {'started', 'stopped'}


def test_the_template_spec_and_its_config_keys_are_the_declared_ones():
    assert template_config_keys() == _template_plan._CONFIG_KEYS
    assert all(OPTIONS_BY_NAME[key].template_spec for key in template_config_keys())


def test_the_manifests_plugin_maps_each_declared_field_to_its_variable():
    for field, option in manifest_fields().items():
        assert manifests._DIRECT_FIELDS[field][0] == option.variable
        assert field in manifests.SPEC_FIELDS[manifests.VIRTUAL_MACHINE]
