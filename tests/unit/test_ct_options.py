# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every place that spells a pve_container option agrees with its one declaration (plugins/module_utils/_ct_options.py)."""

from __future__ import annotations

import dataclasses
import pathlib

import yaml

from ansible_collections.puls.proxmox.plugins.module_utils import _ct_config
from ansible_collections.puls.proxmox.plugins.module_utils._ct_options import ARGUMENT_SPEC, CONFIG, CONTROL, CREATE, OPTIONS, options_of
from ansible_collections.puls.proxmox.plugins.modules import pve_container


def test_each_option_has_exactly_one_role():
    assert sorted(options_of(CONFIG) + options_of(CREATE) + options_of(CONTROL)) == sorted(OPTIONS)


def test_pve_container_documents_each_option_as_declared():
    documented = yaml.safe_load(pve_container.DOCUMENTATION)['options']
    assert list(documented) == list(ARGUMENT_SPEC), 'the documentation lists the options in their declared order'
    for name, spec in ARGUMENT_SPEC.items():
        for key in ('type', 'elements', 'choices', 'default', 'required'):
            assert documented[name].get(key) == spec.get(key), (name, key)
        for sub, sub_spec in (spec.get('options') or {}).items():
            assert documented[name]['suboptions'][sub].get('type') == sub_spec['type'], (name, sub)
            assert documented[name]['suboptions'][sub].get('required', False) == sub_spec.get('required', False), (name, sub)


def test_each_config_option_is_read_by_a_config_key_rule_and_every_option_is_validated():
    assert set(options_of(CONFIG)) - {'name'} <= _ct_config.managed_options()
    assert _ct_config.managed_options() <= set(OPTIONS)
    spec_fields = {spec_field.name for spec_field in dataclasses.fields(_ct_config.CtSpec)}
    # CtSpec holds every option but the task timeout, which the I/O half takes.
    assert sorted(set(OPTIONS) - spec_fields) == ['timeout']
    assert set(_ct_config._PARSERS) == spec_fields


def test_the_password_is_never_logged():
    assert ARGUMENT_SPEC['password']['no_log'] is True


def test_the_roles_pve_container_variable_takes_the_modules_options_but_those_the_role_declares_itself():
    """roles/reconcile/meta/argument_specs.yml validates pve_container with the module's own option types; the role sets
    the rest from its pve_* variables (vars/main.yml, reconcile_ct_options)."""
    specs = yaml.safe_load((pathlib.Path(__file__).resolve().parents[2] / 'roles/reconcile/meta/argument_specs.yml').read_text())
    variable = specs['argument_specs']['main']['options']['pve_container']
    by_role = {'name', 'state', 'vmid', 'owner_tag', 'adopt', 'apply_mode'}

    def shape(options):
        return {
            name: (spec['type'], spec.get('elements'), spec.get('choices'), bool(spec.get('no_log')), shape(spec['options']) if 'options' in spec else None)
            for name, spec in options.items()
        }

    assert shape(variable['options']) == shape({name: spec for name, spec in ARGUMENT_SPEC.items() if name not in by_role})
    assert all(f'C({name})' in ' '.join(variable['description']) for name in by_role)
