# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reconcile role's module options from a machine's pve_* variables, in one place: pve_vm's by the option
table (module_utils/_guest_options.py), pve_container's from the table's container mappings and pve_notes_hash's here. The lookup vm_options gives them to
the role's tasks (vars/main.yml); fleet_vars builds every machine's in one pass for the pre-flight's pve_fleet_info, in
Python rather than by templating the role's variables per host (a Jinja template is compiled anew each time it is
templated). Both give the modules the same options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.puls.proxmox.plugins.module_utils import _guest_options
from ansible_collections.puls.proxmox.plugins.module_utils._guest import LXC, QEMU

# pve_notes_hash's options, each from its role variable.
PROVISION_VARIABLES = {
    'files': 'pve_provision',
    'force': 'pve_force_config_check',
    'hash_mode': 'pve_provision_hash_mode',
    'hash_include': 'pve_provision_hash_include',
    'base_dir': 'pve_provision_dir',
}
# pve_container's options come from a container's pve_container, the ones the role sets for every machine from their
# variables (the option table's lxc mappings with a variable), and root's keys from pve_ssh_keys.
CONTAINER_VARIABLES = (
    'pve_container',
    'pve_ssh_keys',
    *(option.lxc.variable for option in _guest_options.CT_OPTIONS if option.lxc and option.lxc.variable),
)


def container_options(declared: Mapping[str, Any]) -> dict[str, Any]:
    """pve_container's options: pve_container as it is, and what the role declares for every machine (the name, the
    power, the VMID, the owner tag, adoption, the apply mode). Root's SSH keys are pve_ssh_keys unless pve_container
    names its own, and only for a container made from an OS template: a clone of a container template keeps the
    template's, and pve_container refuses keys for it."""
    container = declared.get('pve_container') or {}
    options = {}
    if 'pve_ssh_keys' in declared and ':vztmpl/' in str(container.get('image') or ''):
        options['ssh_keys'] = declared['pve_ssh_keys']
    options.update(container)
    options.update(_guest_options.role_given(LXC, declared))
    options['state'] = 'started' if declared.get('pve_power') == 'running' else 'stopped'
    options['adopt'] = boolean(declared.get('pve_adopt', False), strict=False)
    return options


def provision_options(declared: Mapping[str, Any]) -> dict[str, Any]:
    """pve_notes_hash's options for the machine's provision files."""
    return {option: declared[variable] for option, variable in PROVISION_VARIABLES.items() if variable in declared}


def _vm_purpose(purpose: str) -> tuple[tuple[str, ...], Any]:
    return _guest_options.role_variables(purpose), lambda declared: _guest_options.role_options(purpose, declared)


# Each purpose of the lookup vm_options: the role variables it reads, and what it makes of those that are defined.
PURPOSES = {
    **{purpose: _vm_purpose(purpose) for purpose in _guest_options.PURPOSES},
    'container': (CONTAINER_VARIABLES, container_options),
    'provision': (tuple(PROVISION_VARIABLES.values()), provision_options),
}


def is_container(host: str, templates: Any, vms: Any, containers: Any, pve_container: Any) -> bool:
    """Whether host declares a container (the role's reconcile_guest_type): a host of pve_containers only, or a host of
    pve_templates that declares pve_container (a container template)."""
    return (host in containers and host not in templates and host not in vms) or (host in templates and bool(pve_container))


def fleet_machine(host: str, declared: Mapping[str, Any], container: bool) -> dict[str, Any]:
    """What pve_fleet_info plans a machine with: its type, its module's options (``vm``), its provision files'
    options and the machine it replaces, from its role variables (``declared``)."""
    return {
        'host': host,
        'type': LXC if container else QEMU,
        'vm': container_options(declared) if container else _guest_options.machine_options(declared),
        'provision': provision_options(declared),
        'replace': declared.get('pve_replace', ''),
    }
