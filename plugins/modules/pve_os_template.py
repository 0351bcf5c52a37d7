#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: pve_os_template
short_description: Find an OS template by the name PVE's appliance index gives it, and download it when missing
version_added: 0.1.0
description:
  - Resolves an OS template (a container's root file system archive) named as PVE's appliance index names it, the
    package such as V(debian-12-standard) or V(ubuntu-24.04-standard), or the whole file name such as
    V(debian-12-standard_12.7-1_amd64.tar.zst), to a volume C(STORAGE:vztmpl/FILE) on O(node).
  - The newest matching volume on the node's active storages that hold OS templates (content C(vztmpl)) is taken as it
    is. Versions are compared part by part, numbers as numbers.
  - When none matches, the newest matching entry of the node's appliance index (C(GET /nodes/{node}/aplinfo), the list
    C(pveam available) shows) is downloaded by PVE (C(POST /nodes/{node}/aplinfo), as C(pveam download) does, with
    the index's checksum) onto the first of those storages, by storage ID. Check mode plans the download.
  - A name that is neither on the node's storages nor in its index is an error naming both.
  - The C(puls.proxmox.reconcile) role uses it for a container whose C(pve_container.image) names an OS template.
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.connection
  - puls.proxmox.connection.action_group
attributes:
  check_mode:
    support: full
    details: Resolves the name and plans the download; downloads nothing.
  diff_mode:
    support: full
    details: A download is shown as the volume it makes.
options:
  name:
    description:
      - The OS template, as its package (V(debian-12-standard)) or file name (V(debian-12-standard_12.7-1_amd64.tar.zst)).
    type: str
    required: true
  node:
    description: The node whose storages hold the OS template.
    type: str
    required: true
  timeout:
    description: Seconds to wait for the download.
    type: int
    default: 1800
notes:
  - >-
    The download needs C(Datastore.AllocateTemplate) on C(/storage/STORAGE) (pve-manager C(PVE/API2/Nodes.pm),
    C(apl_download)), checked before it, in check mode too: a credential without it is refused naming the privilege,
    its path and the grant, before any change. The reads need C(Datastore.Audit) or C(Datastore.AllocateSpace) on the
    node's storages: PVE lists a storage, and its OS templates, only to who holds one, so a storage without either is
    neither searched nor downloaded to. See docs/privileges.md.
seealso:
  - module: puls.proxmox.pve_container
  - module: puls.proxmox.pve_iso
  - name: pveam (the Proxmox VE appliance manager)
    description: The Proxmox VE documentation of container templates and their index.
    link: https://pve.proxmox.com/wiki/Linux_Container#pct_container_images
'''

EXAMPLES = r'''
- name: Have Debian 12's standard OS template on pve1
  puls.proxmox.pve_os_template:
    name: debian-12-standard
    node: pve1
  register: debian

- name: Create a container from it
  puls.proxmox.pve_container:
    name: dns-01
    node: pve1
    image: "{{ debian.volume }}"
    storage: local-lvm
'''

RETURN = r'''
volume:
  description: The OS template's volume (after the download, in a real run).
  returned: success
  type: str
  sample: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
download:
  description: The download made (or, in check mode, planned), C({storage, template}); null when the volume was there.
  returned: success
  type: dict
  sample: {storage: local, template: debian-12-standard_12.7-1_amd64.tar.zst}
'''

from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule
from ansible_collections.puls.proxmox.plugins.module_utils._ostemplate import OsTemplateError
from ansible_collections.puls.proxmox.plugins.module_utils._ostemplate_io import DEFAULT_TIMEOUT, reconcile

ARGUMENT_SPEC = {
    'name': {'type': 'str', 'required': True},
    'node': {'type': 'str', 'required': True},
    'timeout': {'type': 'int', 'default': DEFAULT_TIMEOUT},
}


def main():
    module = PveModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    try:
        module.run(reconcile, module.client, params['name'], params['node'], params['timeout'], check_mode=module.check_mode)
    except OsTemplateError as error:
        module.fail(str(error))


if __name__ == '__main__':
    main()
