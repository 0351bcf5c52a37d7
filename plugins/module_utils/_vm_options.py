# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_vm's options (its documentation is the module's): one place for pve_vm and for pve_fleet_info, which plans
many VMs with the same options in one run."""

from __future__ import annotations

from ansible.module_utils.basic import env_fallback

from ansible_collections.puls.proxmox.plugins.module_utils._api import DEFAULT_TASK_TIMEOUT
from ansible_collections.puls.proxmox.plugins.module_utils._vm import DEFAULT_AGENT_TIMEOUT, DEFAULT_SHUTDOWN_TIMEOUT
from ansible_collections.puls.proxmox.plugins.module_utils._vmconfig import DEFAULT_OWNER_TAG

ARGUMENT_SPEC = dict(
    name=dict(type='str', required=True),
    state=dict(type='str', default='present', choices=['present', 'started', 'stopped', 'restarted', 'absent']),
    image=dict(type='str'),
    linked_clone=dict(type='bool', default=False),
    node=dict(type='str'),
    nodes=dict(type='list', elements='str', fallback=(env_fallback, ['PROXMOX_NODES'])),
    vmid=dict(type='int'),
    pool=dict(type='str'),
    storage=dict(type='str'),
    cores=dict(type='int'),
    sockets=dict(type='int'),
    memory=dict(type='int'),
    cpu=dict(type='str'),
    machine=dict(type='str', choices=['q35', 'i440fx']),
    disk_size=dict(type='str'),
    bridge=dict(type='str'),
    vlan=dict(type='int'),
    ip=dict(type='str'),
    gateway=dict(type='str'),
    nameservers=dict(type='list', elements='str'),
    searchdomain=dict(type='str'),
    dns_domain=dict(type='str', fallback=(env_fallback, ['PROXMOX_DNS_DOMAIN'])),
    dns_servers=dict(type='list', elements='str', fallback=(env_fallback, ['PROXMOX_DNS_SERVERS'])),
    ci_user=dict(type='str'),
    ci_password=dict(type='str', no_log=True),
    ssh_keys=dict(type='list', elements='str', no_log=False),
    user_data=dict(type='str', no_log=True),
    user_data_storage=dict(type='str'),
    tags=dict(type='list', elements='str'),
    protection=dict(type='bool'),
    onboot=dict(type='bool'),
    apply_mode=dict(type='str', default='report', choices=['report', 'reboot']),
    owner_tag=dict(type='str', default=DEFAULT_OWNER_TAG),
    adopt=dict(type='bool', default=False),
    shutdown_timeout=dict(type='int', default=DEFAULT_SHUTDOWN_TIMEOUT),
    timeout=dict(type='int', default=DEFAULT_TASK_TIMEOUT),
    agent_timeout=dict(type='int', default=DEFAULT_AGENT_TIMEOUT),
    planned_images=dict(type='list', elements='dict', options=dict(
        volume=dict(type='str', required=True),
        nodes=dict(type='list', elements='str', required=True),
    )),
)
