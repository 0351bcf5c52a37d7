"""Containers: what fakepve's LXC model leaves out that the lab's guests and pve_container rely on.

- root's SSH keys: a create's ``ssh-public-keys`` end up in the root file system's /root/.ssh/authorized_keys
  (pve-container src/PVE/API2/LXC.pm create_vm hands them to post_create_hook; src/PVE/LXC/Setup/Base.pm
  set_user_authorized_ssh_keys writes them), after PVE::Tools::validate_ssh_public_keys checked them. fakepve drops
  the parameter; the lab keeps it per VMID in ``ct_authorized_keys`` (what the container's root file system holds),
  and a clone copies its source's, as it copies the volume (LXC.pm clone_vm).
- The guests follow a container's power change before its task ends, as they follow a VM's (lifecycle.py).
- A network device's MTU: pve-container src/PVE/LXC/Config.pm update_pct_config refuses a ``netN`` whose ``mtu`` is
  above its bridge's, "netN: MTU size 'M' is bigger than bridge MTU 'B'", the bridge's MTU read from the running
  kernel (pve-common src/PVE/Network.pm read_bridge_mtu: /sys/class/net/BRIDGE/mtu, "bridge 'X' does not exist" when
  it is not up). A config update dies with it; a create runs update_pct_config in its task (src/PVE/API2/LXC.pm
  create_vm), which fails "unable to create CT N - ...". fakepve does not check it; the lab reads the bridge's MTU
  from the node's applied /etc/network/interfaces (network.py; 1500 when the stanza sets none) for the bridges that
  file declares, and leaves other bridges (SDN vnets) unchecked.
"""

import re

import asyncssh
from fakepve.model import PveError, TaskError

from .network import PHYSICAL_NICS, parse

# The container power tasks (pve-container src/PVE/API2/LXC/Status.pm: vzstart, vzstop, vzshutdown, vzreboot) and
# its destroy (LXC.pm destroy_vm: vzdestroy), after which a container may have started, stopped, or gone.
CT_POWER_TASKS = ('vzstart', 'vzstop', 'vzshutdown', 'vzreboot', 'vzdestroy')


class ContainersMixin:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # VMID -> the text of the container's /root/.ssh/authorized_keys.
        self.ct_authorized_keys = {}
        # VMID -> why the create task of that container fails (update_pct_config in create_vm's worker).
        self._ct_create_failures = {}

    def _bridge_mtu_problem(self, node, values):
        """update_pct_config's MTU check of each netN in values: the message it dies with, or None."""
        files = getattr(self, 'node_networks', {}).get(node)
        if files is None:
            return None
        ifaces = parse(files['current'], PHYSICAL_NICS, files['active'])['ifaces']
        for opt in sorted(key for key in values if re.fullmatch(r'net\d+', key)):
            props = dict(part.split('=', 1) for part in str(values[opt]).split(',') if '=' in part)
            bridge, mtu = props.get('bridge'), props.get('mtu')
            if not mtu or bridge not in ifaces:
                continue
            if not ifaces[bridge].get('active'):
                return f"bridge '{bridge}' does not exist"
            bridge_mtu = int(ifaces[bridge].get('mtu') or 1500)
            if int(mtu) > bridge_mtu:
                return f"{opt}: MTU size '{mtu}' is bigger than bridge MTU '{bridge_mtu}'"
        return None

    async def _update_config(self, ct, user, values, deletes, reverts):
        problem = self._bridge_mtu_problem(ct.node, values)
        if problem:
            raise PveError(500, problem)
        return await super()._update_config(ct, user, values, deletes, reverts)

    async def _lxc_create(self, user, v):
        keys = v.get('ssh-public-keys')
        if keys is not None:
            self._validate_ssh_keys(keys)
        problem = self._bridge_mtu_problem(v['node'], v)
        if problem:
            self._ct_create_failures[int(v['vmid'])] = problem
        try:
            upid = await super()._lxc_create(user, v)
        finally:
            self._ct_create_failures.pop(int(v['vmid']), None)  # the task took it, or none was started
        vmid = int(v['vmid'])
        if keys:
            self.ct_authorized_keys[vmid] = keys
        else:
            self.ct_authorized_keys.pop(vmid, None)
        return upid

    async def _lxc_clone(self, user, v):
        upid = await super()._lxc_clone(user, v)
        source = self.ct_authorized_keys.get(int(v['vmid']))
        if source is not None:
            self.ct_authorized_keys[int(v['newid'])] = source
        else:
            self.ct_authorized_keys.pop(int(v['newid']), None)
        return upid

    @staticmethod
    def _validate_ssh_keys(text):
        """pve-common src/PVE/Tools.pm validate_ssh_public_keys: each non-blank line must be a key `ssh-keygen -l` reads,
        else the request dies "SSH public key validation error" (asyncssh parses a key as ssh-keygen does)."""
        for line in str(text).split('\n'):
            if not line.strip():
                continue
            try:
                asyncssh.import_public_key(line.strip())
            except (asyncssh.KeyImportError, ValueError):
                raise PveError(500, 'SSH public key validation error') from None

    async def task(self, node, ttype, tid, user, body, vm=None, lock=True, log=()):
        if ttype in CT_POWER_TASKS:
            body = self._telling_power_listeners(body)
        problem = self._ct_create_failures.pop(int(tid), None) if ttype == 'vzcreate' and vm is not None else None
        if problem:

            async def failing():
                self._drop(vm)
                raise TaskError(f'unable to create CT {tid} - {problem}')

            body = failing

        return await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)
