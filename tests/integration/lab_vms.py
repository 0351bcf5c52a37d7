# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""VMs for the provisioning tests, made straight through the API: clones of the lab's template with a
cloud-init user, a real SSH key and a static address, started so that their SSH guests listen."""

from __future__ import annotations

import subprocess
from urllib.parse import quote

from ansible_collections.puls.proxmox.plugins.module_utils._api import PveClient
from ansible_collections.puls.proxmox.plugins.module_utils._ownership import with_record

TEMPLATE = 9017
NODE = 'pve1'


def client(lab):
    return PveClient(lab.url, lab.user, lab.token_name, lab.token_secret, ca_path=str(lab.cafile))


def owned(vmid, notes='', owner_tag='puls-managed'):
    """The config that marks VM vmid as the collection's: the owner tag and the owner record naming vmid in its Notes."""
    return {'tags': owner_tag, 'description': with_record(notes, owner_tag, vmid)}


def ssh_key(directory):
    """An ed25519 key pair made by ssh-keygen in directory: (private key path, public key line)."""
    path = directory / 'id_ed25519'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'provision-test', '-f', str(path)], check=True)
    return path, path.with_suffix('.pub').read_text().strip()


def clone(api, vmid, name, **config):
    """Clone the template as VM vmid on pve1 and set config (description for Notes, cloud-init options...)."""
    upid = api.create_vm('/nodes/%s/qemu/%d/clone' % (NODE, TEMPLATE), vmid, name=name)
    api.wait_task(upid, 60)
    if config:
        api.put('/nodes/%s/qemu/%d/config' % (NODE, vmid), **config)


def boot(lab, api, vmid, name, address, public_key, user='alice', start=True, **config):
    """A clone with cloud-init user, key and static address, started unless start is false; returns its guest."""
    clone(api, vmid, name, ciuser=user, sshkeys=quote(public_key + '\n', safe=''), ipconfig0='ip=%s/24,gw=%s' % (address, lab.gateway), **config)
    return start_vm(lab, api, vmid) if start else lab.guest(vmid)


def start_vm(lab, api, vmid):
    """Start VM vmid; returns its guest, listening for SSH."""
    api.run_task('POST', '/nodes/%s/qemu/%d/status/start' % (NODE, vmid))
    guest = lab.guest(vmid)
    assert guest.endpoint is not None, guest.error
    return guest


def notes(api, vmid):
    return api.vm_config(NODE, vmid).get('description', '')
