"""Containers: what fakepve's LXC model leaves out that the lab's guests and pve_container rely on.

- root's SSH keys: a create's ``ssh-public-keys`` end up in the root file system's /root/.ssh/authorized_keys
  (pve-container src/PVE/API2/LXC.pm create_vm hands them to post_create_hook; src/PVE/LXC/Setup/Base.pm
  set_user_authorized_ssh_keys writes them), after PVE::Tools::validate_ssh_public_keys checked them. fakepve drops
  the parameter; the lab keeps it per VMID in ``ct_authorized_keys`` (what the container's root file system holds),
  and a clone copies its source's, as it copies the volume (LXC.pm clone_vm).
- The guests follow a container's power change before its task ends, as they follow a VM's (lifecycle.py).
"""

import asyncssh
from fakepve.model import PveError

# The container power tasks (pve-container src/PVE/API2/LXC/Status.pm: vzstart, vzstop, vzshutdown, vzreboot) and
# its destroy (LXC.pm destroy_vm: vzdestroy), after which a container may have started, stopped, or gone.
CT_POWER_TASKS = ('vzstart', 'vzstop', 'vzshutdown', 'vzreboot', 'vzdestroy')


class ContainersMixin:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # VMID -> the text of the container's /root/.ssh/authorized_keys.
        self.ct_authorized_keys = {}

    async def _lxc_create(self, user, v):
        keys = v.get('ssh-public-keys')
        if keys is not None:
            self._validate_ssh_keys(keys)
        upid = await super()._lxc_create(user, v)
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
        return await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)
