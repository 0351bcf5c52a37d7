# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Playbooks for the pve_vm tests: one host per VM, its options in the host variable `vm`.

Many VMs in one inventory run in parallel in one ansible-playbook run, which keeps the tests fast.
"""

from __future__ import annotations

import collections
import subprocess
from urllib.parse import parse_qsl

from ansible_collections.puls.proxmox.plugins.module_utils._guest_options import VM_OPTIONS

# pve_vm's options but its name, as the collection declares them.
OPTIONS = tuple(option.name for option in VM_OPTIONS if option.name != 'name')
TASK = 'pve_vm'


def vm_task(name=TASK):
    """The pve_vm task of a play: name from the inventory host, every option from the host's `vm` (omitted when unset)."""
    args = {'name': '{{ inventory_hostname }}'}
    args.update((option, '{{ vm.%s | default(omit) }}' % option) for option in OPTIONS)
    return {'name': name, 'puls.proxmox.pve_vm': args}


def vm_play(*tasks):
    return [{'name': 'VMs', 'hosts': 'all', 'gather_facts': False, 'tasks': list(tasks) or [vm_task()]}]


def inventory(vms):
    """An inventory of local hosts named like the VMs; vms maps each name to its options."""
    return {'all': {'vars': {'ansible_connection': 'local'}, 'hosts': {name: {'vm': options} for name, options in vms.items()}}}


def vm_env(lab, tmp_path, **extra):
    """The lab's PROXMOX_* settings, with a VMID lock directory of this test's own."""
    return dict(lab.env, XDG_CACHE_HOME=str(tmp_path / 'cache'), **extra)


def cluster_vms(lab):
    """(vmid -> config) of every VM in the lab, read from the model."""
    return lab.call(lambda: {vm.vmid: dict(vm.config) for vm in lab.pve.vms})


def vm_named(lab, name):
    """The lab's VM model with this name (exactly one)."""
    found = lab.call(lambda: [vm for vm in lab.pve.vms if vm.config.get('name') == name])
    assert len(found) == 1, f'expected one VM named {name}, found {len(found)}'
    return found[0]


def names_count(lab):
    return collections.Counter(config.get('name') for config in cluster_vms(lab).values())


def ssh_public_key(tmp_path, name='id_ed25519'):
    """A real OpenSSH public key made by ssh-keygen."""
    key = tmp_path / name
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', name + '@test', '-f', str(key)], check=True)
    return key.with_suffix('.pub').read_text().strip()


def sent(lab, method, suffix):
    """The form of every request with this method whose path ends with suffix, oldest first."""
    return [dict(parse_qsl(request.body)) for request in lab.requests() if request.method == method and request.path.endswith(suffix)]
