# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every option of pve_container, declared once: its argument spec and when it applies.

``ARGUMENT_SPEC`` is the module's argument spec. Each option has one role:

- ``CONFIG``: a container config key PVE keeps, compared and written on every run (``_ct_config`` renders it);
- ``CREATE``: used only when the container is created (the source, its placement, secrets PVE writes into the
  root file system once: ``password``, ``ssh_keys``);
- ``CONTROL``: how the module runs (state, ownership, timeouts).

tests/unit/test_ct_options.py checks that the roles cover the argument spec, that every ``CONFIG`` option has a
config key rule, and that the module documents each option as declared here.

Pure data: no I/O.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._api import DEFAULT_TASK_TIMEOUT
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import DEFAULT_OWNER_TAG

CONFIG = 'config'
CREATE = 'create'
CONTROL = 'control'

# The container features pve_container manages (pve-container src/PVE/LXC/Config.pm, $features_desc): nesting may be
# set by any user with VM.Allocate, keyctl and fuse by root@pam only (src/PVE/LXC.pm, check_ct_modify_config_perm).
FEATURES = ('nesting', 'keyctl', 'fuse')
DEFAULT_SHUTDOWN_TIMEOUT = 180

_MOUNT_POINT = {
    'slot': {'type': 'int', 'required': True},
    'path': {'type': 'str', 'required': True},
    'storage': {'type': 'str'},
    'size': {'type': 'str', 'required': True},
}

# A further network device (netN); ip, gateway and the rest are written only when declared.
_NET = {
    'slot': {'type': 'str', 'required': True},
    'name': {'type': 'str'},
    'bridge': {'type': 'str'},
    'vlan': {'type': 'int'},
    'ip': {'type': 'str'},
    'gateway': {'type': 'str'},
    'firewall': {'type': 'bool'},
    'mtu': {'type': 'int'},
    'rate': {'type': 'float'},
}

# name -> (role, argument spec entry)
OPTIONS: dict[str, tuple[str, dict[str, Any]]] = {
    'name': (CONFIG, {'type': 'str', 'required': True}),
    'state': (CONTROL, {'type': 'str', 'choices': ['present', 'started', 'stopped', 'restarted', 'absent'], 'default': 'present'}),
    'image': (CREATE, {'type': 'str'}),
    'linked_clone': (CREATE, {'type': 'bool', 'default': False}),
    'node': (CREATE, {'type': 'str'}),
    'vmid': (CREATE, {'type': 'int'}),
    'pool': (CREATE, {'type': 'str'}),
    'storage': (CREATE, {'type': 'str'}),
    'disk_size': (CONFIG, {'type': 'str'}),
    'cores': (CONFIG, {'type': 'int'}),
    'memory': (CONFIG, {'type': 'int'}),
    'swap': (CONFIG, {'type': 'int'}),
    'mount_points': (CONFIG, {'type': 'list', 'elements': 'dict', 'options': _MOUNT_POINT}),
    'bridge': (CONFIG, {'type': 'str'}),
    'vlan': (CONFIG, {'type': 'int'}),
    'ip': (CONFIG, {'type': 'str'}),
    'gateway': (CONFIG, {'type': 'str'}),
    'firewall': (CONFIG, {'type': 'bool'}),
    'nets': (CONFIG, {'type': 'list', 'elements': 'dict', 'options': _NET}),
    'nameservers': (CONFIG, {'type': 'list', 'elements': 'str'}),
    'searchdomain': (CONFIG, {'type': 'str'}),
    'unprivileged': (CONFIG, {'type': 'bool'}),
    'features': (CONFIG, {'type': 'list', 'elements': 'str', 'choices': list(FEATURES)}),
    'ssh_keys': (CREATE, {'type': 'list', 'elements': 'str', 'no_log': False}),
    'password': (CREATE, {'type': 'str', 'no_log': True}),
    'onboot': (CONFIG, {'type': 'bool'}),
    'protection': (CONFIG, {'type': 'bool'}),
    'tags': (CONFIG, {'type': 'list', 'elements': 'str'}),
    'owner_tag': (CONTROL, {'type': 'str', 'default': DEFAULT_OWNER_TAG}),
    'adopt': (CONTROL, {'type': 'bool', 'default': False}),
    'apply_mode': (CONTROL, {'type': 'str', 'choices': ['report', 'reboot'], 'default': 'report'}),
    'shutdown_timeout': (CONTROL, {'type': 'int', 'default': DEFAULT_SHUTDOWN_TIMEOUT}),
    'timeout': (CONTROL, {'type': 'int', 'default': DEFAULT_TASK_TIMEOUT}),
}

ARGUMENT_SPEC = {name: dict(spec) for name, (_role, spec) in OPTIONS.items()}


def options_of(role: str) -> tuple[str, ...]:
    """The options of one role, in declaration order."""
    return tuple(name for name, (option_role, _spec) in OPTIONS.items() if option_role == role)
