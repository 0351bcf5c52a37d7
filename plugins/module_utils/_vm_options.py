# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_vm's argument spec, built from the options' declarations (``_guest_options``; their documentation is the doc fragment
puls.proxmox.vm_options): one place for pve_vm and for pve_fleet_info, which plans many VMs with the same options in one run."""

from __future__ import annotations

from ansible.module_utils.basic import env_fallback

from ansible_collections.puls.proxmox.plugins.module_utils._api import DEFAULT_TASK_TIMEOUT
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import DEFAULT_OWNER_TAG
from ansible_collections.puls.proxmox.plugins.module_utils._vm_io import DEFAULT_AGENT_TIMEOUT, DEFAULT_SHUTDOWN_TIMEOUT
from ansible_collections.puls.proxmox.plugins.module_utils._guest_options import VM_OPTIONS

# Defaults that are constants of the code the options drive.
_CODE_DEFAULTS = {
    'owner_tag': DEFAULT_OWNER_TAG,
    'shutdown_timeout': DEFAULT_SHUTDOWN_TIMEOUT,
    'timeout': DEFAULT_TASK_TIMEOUT,
    'agent_timeout': DEFAULT_AGENT_TIMEOUT,
}


def _entry(option):
    spec = option.argument_spec()
    if option.name in _CODE_DEFAULTS:
        spec['default'] = _CODE_DEFAULTS[option.name]
    if option.env:
        spec['fallback'] = (env_fallback, [option.env])
    return spec


ARGUMENT_SPEC = {option.name: _entry(option) for option in VM_OPTIONS}
# Not a declaration of the VM: what an earlier task of the same check run will make (documented in pve_vm itself).
ARGUMENT_SPEC['planned_images'] = {
    'type': 'list',
    'elements': 'dict',
    'options': {
        'volume': {'type': 'str', 'required': True},
        'nodes': {'type': 'list', 'elements': 'str', 'required': True},
    },
}
