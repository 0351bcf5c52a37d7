# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PVE privileges of pve_container's plan actions, checked with ``_privileges.require`` before the first write.

Per config key as pve-container's ``check_ct_modify_config_perm`` (src/PVE/LXC.pm) checks them; per endpoint as
src/PVE/API2/LXC.pm and LXC/Status.pm declare them. As in ``_privileges``, the check is never stricter than PVE:
what only root@pam may do (keyctl, fuse, a privileged container's features) is left to PVE to refuse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._ct_plan import CLONE, CONFIGURE, CREATE, DESTROY, RESIZE, SHUTDOWN, START
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import (
    Grant,
    Need,
    _allocate,
    _bridge_need,
    need,
    storage_path,
    through_pool,
    vm_path,
)
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import parse_property_string, storage_of

# check_ct_modify_config_perm: the privilege of each key it names; any other key takes VM.Config.Options.
_KEY_PRIVILEGES = {
    'cores': 'VM.Config.CPU',
    'cpulimit': 'VM.Config.CPU',
    'cpuunits': 'VM.Config.CPU',
    'memory': 'VM.Config.Memory',
    'swap': 'VM.Config.Memory',
    'nameserver': 'VM.Config.Network',
    'searchdomain': 'VM.Config.Network',
    'hostname': 'VM.Config.Network',
    'features': 'VM.Allocate',  # nesting; other flags are root@pam's alone
}
# Create parameters that are not config keys.
_CREATE_ONLY = ('ostemplate', 'unprivileged')
# A create checks its tags against none (src/PVE/LXC.pm check_ct_modify_config_perm without an old config), not
# against qemu-server's one tag HASH(0x...).
CT_CREATE_OLD_TAGS: dict[str, frozenset[str]] = {CREATE: frozenset()}


def _is_net(key: str) -> bool:
    return key.startswith('net') and key[3:].isdigit()


def _is_volume(key: str) -> bool:
    return key == 'rootfs' or (key.startswith('mp') and key[2:].isdigit())


def config_needs(settings: Mapping[str, Any], deletions: Iterable[str], path: str) -> list[Need]:
    """The needs of one container config write (a create's or an update's), per key set or deleted."""
    needs = []
    for key in [*settings, *deletions]:
        value = settings.get(key)
        if key in _CREATE_ONLY:
            continue
        if _is_volume(key):
            needs.append(need(f'to set {key}', 'VM.Config.Disk', path))
            volume = parse_property_string(value, 'volume').get('volume', '') if value is not None else ''
            name = volume.partition(':')[2]
            if storage_of(volume) and name.replace('.', '', 1).isdigit():
                needs.append(need(f'to allocate {key} on {storage_of(volume)}', 'Datastore.AllocateSpace', storage_path(volume)))
        elif _is_net(key):
            needs.append(need(f'to set {key}', 'VM.Config.Network', path))
            if value is not None:
                needs.append(_bridge_need(key, value))
        else:
            needs.append(need(f'to set {key}', _KEY_PRIVILEGES.get(key, 'VM.Config.Options'), path))
    return needs


def container_needs(actions: Iterable[Any], vmid: int | None, source_config: Mapping[str, Any] | None = None) -> list[Need]:
    """The needs of pve_container's plan actions on container vmid (None: a VMID allocated by the create or clone)."""
    actions = list(actions)
    needs: list[Need] = []
    path = vm_path(vmid)
    for action in actions:
        params = action.params
        if action.kind == CREATE:
            config = params['config']
            purpose = f'to create container {config.get("hostname", "")} on {params["node"]}'
            needs.append(_allocate(purpose, vmid, params.get('pool')))
            template = config['ostemplate']
            # pve-storage check_volume_access: a vztmpl volume is readable with Datastore.AllocateSpace or Datastore.Audit.
            template_path = storage_path(template)
            needs.append(need(f'to read {template}', 'Datastore.AllocateSpace', template_path, Grant('Datastore.Audit', template_path)))
            if not config.get('unprivileged', 1):
                needs.append(need('to create a privileged container (unprivileged: false)', 'Sys.Modify', '/'))
            needs += config_needs(config, (), path)
        elif action.kind == CLONE:
            purpose = f'to create container {params["name"]} as a clone of {params["vmid"]}'
            needs += [need(purpose, 'VM.Clone', vm_path(params['vmid'])), _allocate(purpose, vmid, params.get('pool'))]
            storages = (
                {params['storage']}
                if params.get('storage')
                else {storage_of(parse_property_string(value, 'volume').get('volume', '')) for key, value in (source_config or {}).items() if _is_volume(key)}
            )
            needs += [
                need(f'{purpose}: it copies volumes to {storage}', 'Datastore.AllocateSpace', storage_path(storage))
                for storage in sorted(filter(None, storages))
            ]
            needs += [_bridge_need(key, value, f'{purpose}: its {key} is on') for key, value in sorted((source_config or {}).items()) if _is_net(key)]
        elif action.kind == CONFIGURE:
            needs += config_needs(params['set'], params['delete'], path)
        elif action.kind == RESIZE:
            needs.append(need(f'to grow {params["disk"]}', 'VM.Config.Disk', path))
        elif action.kind in (SHUTDOWN, START):
            needs.append(need(f'to {action.kind} it', 'VM.PowerMgmt', path))
        elif action.kind == DESTROY:
            needs.append(need('to destroy it', 'VM.Allocate', path))
    pool = next((action.params.get('pool') for action in actions if action.kind in (CREATE, CLONE)), None)
    return [through_pool(item, path, pool) for item in needs] if pool else needs
