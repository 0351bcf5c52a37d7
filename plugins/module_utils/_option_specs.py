# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_vm's and pve_container's argument specs, built from the option table (``_guest_options``; their documentation
is the doc fragments puls.proxmox.vm_options and puls.proxmox.ct_options): one place for each module and for
pve_fleet_info, which plans many guests with the same options in one run."""

from __future__ import annotations

from typing import Any

from ansible.module_utils.basic import env_fallback

from ansible_collections.puls.proxmox.plugins.module_utils._api import DEFAULT_TASK_TIMEOUT
from ansible_collections.puls.proxmox.plugins.module_utils._guest import DEFAULT_SHUTDOWN_TIMEOUT, LXC, QEMU
from ansible_collections.puls.proxmox.plugins.module_utils._guest_options import options_of
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import DEFAULT_OWNER_TAG
from ansible_collections.puls.proxmox.plugins.module_utils._vm_io import DEFAULT_AGENT_TIMEOUT

# Defaults that are constants of the code the options drive.
_CODE_DEFAULTS = {
    'owner_tag': DEFAULT_OWNER_TAG,
    'shutdown_timeout': DEFAULT_SHUTDOWN_TIMEOUT,
    'timeout': DEFAULT_TASK_TIMEOUT,
    'agent_timeout': DEFAULT_AGENT_TIMEOUT,
}


def argument_spec(kind: str) -> dict[str, Any]:
    """The argument spec of the module of ``kind`` (QEMU: pve_vm, LXC: pve_container), in the table's order."""
    spec = {}
    for option in options_of(kind):
        entry = option.argument_spec(kind)
        if option.name in _CODE_DEFAULTS:
            entry['default'] = _CODE_DEFAULTS[option.name]
        if option.env:
            entry['fallback'] = (env_fallback, [option.env])
        spec[option.name] = entry
    return spec


VM_ARGUMENT_SPEC = argument_spec(QEMU)
# Not a declaration of the VM: what an earlier task of the same check run will make (documented in pve_vm itself).
VM_ARGUMENT_SPEC['planned_images'] = {
    'type': 'list',
    'elements': 'dict',
    'options': {
        'volume': {'type': 'str', 'required': True},
        'nodes': {'type': 'list', 'elements': 'str', 'required': True},
    },
}
CT_ARGUMENT_SPEC = argument_spec(LXC)
