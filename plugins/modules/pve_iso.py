#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: pve_iso
short_description: Keep an ISO image, a cloud image or a NoCloud seed ISO on Proxmox VE storage
version_added: 0.1.0
description:
  - Keeps one file on a storage of one or more Proxmox VE nodes, or removes it.
  - The file comes from exactly one source. O(url) is downloaded by the node itself (PVE's C(download-url)), which
    verifies O(checksum). O(src) is a file uploaded from the host the module runs on, checksummed before and after the
    upload. O(seed) is cloud-init data that the module builds into a NoCloud seed ISO (volume label C(cidata)) and uploads.
  - Idempotent by source, not by name. The module records which declared source each file came from (see the notes), so
    the next run compares without downloading anything. The same source again does nothing. A changed O(url),
    O(checksum), O(src) content or O(seed) replaces the file.
  - The same O(seed) always gives the same bytes. Its C(instance-id) holds a hash of the content, so cloud-init runs its
    per-instance modules again when the content changes.
  - Bad input fails before the first write. This covers the options, the node names, and a storage that does not exist,
    is not enabled on a node, or cannot hold the content type.
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.attributes.progress
  - puls.proxmox.connection
  - puls.proxmox.connection.action_group
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details:
      - "The diff is C({node: {volid: record}}) before and after, where C(record) is the short hash of the declared source,
        or V(unrecorded) for a file with no record."
options:
  filename:
    description:
      - Name of the file on the storage, without a directory. For example V(noble.iso).
      - It must fit the O(content) type. C(iso) files end in C(.iso) or C(.img). C(vztmpl) files end in C(.tar),
        C(.tar.gz), C(.tar.xz), C(.tar.zst) or C(.tar.bz2) (a plain C(.tar) needs Proxmox VE 9, whose pve-storage 9.0.15
        or later takes it; Proxmox VE 8 refuses it). C(import) images end in C(.qcow2), C(.raw) or C(.vmdk).
      - An C(import) image named C(.img), such as Ubuntu's cloud images (qcow2 files), is saved as C(.qcow2), so that
        VMs can import it. RV(volid) has the final name.
      - Only letters, digits, C(_), C(.) and C(-) are allowed. Proxmox VE would rename any other character.
    type: str
    required: true
  storage:
    description:
      - The storage to keep the file on. It must be file based (C(dir), C(nfs), C(cifs), ...) and configured for
        O(content).
      - A shared storage holds the file once, for all of O(nodes). The module acts on it, and records it, through
        the first node of the list.
    type: str
    default: local
  node:
    description:
      - The node whose storage holds the file.
      - Exactly one of O(node) and O(nodes) is required.
    type: str
  nodes:
    description:
      - Several nodes, each with its own copy on its own O(storage). A shared storage holds only one copy.
      - On several nodes, each node's download starts at the same time.
    type: list
    elements: str
  content:
    description:
      - The content type of the file.
      - V(iso) is for installer images and seed ISOs. V(import) is for disk images that VMs import, such as cloud images
        (PVE 8.4 or later). V(vztmpl) is for container templates.
      - The storage must be configured for this type. If it is not, the error says how to add the type, for example
        C(pvesm set local --content iso,vztmpl,import).
    type: str
    choices: [iso, import, vztmpl]
    default: iso
  state:
    description:
      - V(present) keeps the file from the declared source. V(absent) deletes it, and no source is needed.
    type: str
    choices: [present, absent]
    default: present
  url:
    description:
      - An C(http) or C(https) URL that the node downloads the file from.
      - Mutually exclusive with O(src) and O(seed). With O(state=present), exactly one of the three is required.
    type: str
  checksum:
    description:
      - The checksum of the file at O(url), as C(ALGORITHM:HEX). For example C(sha256:) followed by 64 hex digits.
      - The algorithm is one of V(md5), V(sha1), V(sha224), V(sha256), V(sha384) or V(sha512). The digest must have that
        algorithm's length.
      - The node verifies the checksum before it keeps the file. On a mismatch, the module fails with both checksums and
        leaves no file.
      - If the file is compressed (O(compression)), give the checksum of the compressed file.
      - Only with O(url).
    type: str
  compression:
    description:
      - The compression of the file at O(url). The node decompresses it after downloading.
      - Proxmox VE decompresses only for O(content=iso).
    type: str
    choices: [gz, lzo, zst, bz2]
  src:
    description:
      - >-
        A file to upload. The path is on the host the module runs on, which is normally the controller
        (C(hosts: localhost) or C(delegate_to: localhost)).
      - The module reads the whole file into memory, hashes it, and sends the SHA-256 with the upload for PVE to verify.
        After the upload, it checks the stored size.
    type: path
  seed:
    description:
      - Cloud-init data for a NoCloud seed ISO. The module builds the ISO and uploads it. O(content) must be V(iso).
      - The ISO has the volume label C(cidata), Joliet and Rock Ridge, and fixed timestamps. It holds the files
        C(user-data) and C(meta-data), plus C(network-config) and C(vendor-data) when they are given.
      - C(meta-data) holds C(local-hostname), the keys of O(seed.meta_data), and an C(instance-id) that ends with a hash
        of the content.
    type: dict
    suboptions:
      user_data:
        description:
          - The user-data, kept byte for byte. It must be a C(#cloud-config) YAML mapping, a C(#!) script, another
            cloud-init part type, or a MIME multipart message.
          - Not logged, because user-data often holds secrets.
        type: str
        required: true
      meta_data:
        description:
          - More meta-data keys, as a mapping or as YAML text.
          - An C(instance-id) given here becomes the prefix of the generated one.
        type: raw
      network_config:
        description:
          - Network configuration (version 1 or 2), as a mapping or as YAML text. YAML text is kept byte for byte.
        type: raw
      vendor_data:
        description:
          - Vendor-data, in the same formats as O(seed.user_data).
          - Not logged.
        type: str
      hostname:
        description:
          - The C(local-hostname) of the meta-data.
          - Defaults to O(filename) without its extension. A C(local-hostname) in O(seed.meta_data) takes precedence.
        type: str
  timeout:
    description:
      - Seconds that the module waits for its tasks (deletes, downloads, uploads), counted together from the start of
        the run.
      - When the time is up, a download may still be running on the node. The next run replaces the file.
    type: int
    default: 1800
notes:
  - >-
    B(Where the source is recorded.) Proxmox VE keeps no notes for ISO or import files. The module therefore writes one
    line in the notes of the node (Datacenter, then the node, then Notes in the web interface). The line looks like
    C([puls-files: local:iso/noble.iso=3f2a9c1b7d4e,...]). Each entry is a volid and the short SHA-256 of its declared
    source. For O(url), that is the URL, O(checksum) and O(compression). For O(src), it is the file's content. For
    O(seed), it is the seed's content. Every other character of the notes is kept. The module writes with the digest of
    its read, and reads and merges again when someone else changed the node's config in between. An empty node
    config reads back without a digest; the module then first writes the node option C(startall-onboot-delay: 0)
    (its default) alone, so that its write has a digest to carry.
  - >-
    B(Files of unknown origin.) A file that is on the storage but has no record was put there by hand or by another tool.
    The module cannot tell whether it matches the declared source, so it replaces the file. C(reason) in the result says
    so. A hand-placed file is replaced only once: from then on, its record exists.
  - >-
    B(Replacing.) The node downloads only to a free name, so a file from O(url) is deleted before the new download
    starts. An upload overwrites the file in place.
  - >-
    B(Privileges.) C(Datastore.Audit) on the storage lets the module list files. C(Datastore.AllocateTemplate) lets it
    download and upload. C(Datastore.Allocate) lets it delete. C(Sys.Audit) and C(Sys.Modify) on C(/) let it read and
    write the node's notes. A download also needs C(Sys.Audit) and C(Sys.Modify) on C(/), or C(Sys.AccessNetwork) on the
    node. When a privilege is missing, the error names it.
requirements:
  - pycdlib (for O(seed))
  - PyYAML (for O(seed))
seealso:
  - name: Proxmox VE storage content types
    description: Which storage types hold which content.
    link: https://pve.proxmox.com/pve-docs/chapter-pvesm.html
'''

EXAMPLES = r'''
# The connection options come from the PROXMOX_* environment variables (see the puls.proxmox.connection options).

- name: Keep Ubuntu 24.04's cloud image on two nodes as an import image (saved as noble-server-cloudimg-amd64.qcow2)
  puls.proxmox.pve_iso:
    nodes: [pve1, pve2]
    storage: local
    content: import
    filename: noble-server-cloudimg-amd64.img
    url: https://cloud-images.ubuntu.com/releases/noble/release-20250805/ubuntu-24.04-server-cloudimg-amd64.img
    # From the release's SHA256SUMS file.
    checksum: "sha256:{{ noble_image_sha256 }}"
  register: noble

- name: Show the volume VMs import from
  ansible.builtin.debug:
    msg: "import-from={{ noble.volid }}"

- name: Keep a rescue ISO that the mirror serves gzip-compressed
  puls.proxmox.pve_iso:
    node: pve1
    filename: rescue.iso
    url: https://mirror.example.com/isos/rescue.iso.gz
    compression: gz
    checksum: "sha512:{{ rescue_iso_gz_sha512 }}"

- name: Upload the VirtIO drivers ISO from the controller
  puls.proxmox.pve_iso:
    node: pve1
    filename: virtio-win.iso
    src: /srv/isos/virtio-win.iso

- name: Build and upload a NoCloud seed ISO for web1
  puls.proxmox.pve_iso:
    node: pve1
    filename: web1-seed.iso
    seed:
      hostname: web1
      user_data: |
        #cloud-config
        users:
          - name: deploy
            groups: [sudo]
            shell: /bin/bash
            ssh_authorized_keys:
              - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHVwbHMtcHJveG1veC1leGFtcGxlLWtleS0wMDA deploy@example.com
        package_update: true
        packages: [nginx]
      network_config:
        version: 2
        ethernets:
          eth0:
            dhcp4: true
  register: web1_seed

- name: Show the seed's instance-id (it changes whenever the seed's content changes)
  ansible.builtin.debug:
    msg: "{{ web1_seed.volid }} has instance-id {{ web1_seed.instance_id }}"

- name: Remove the VirtIO drivers ISO
  puls.proxmox.pve_iso:
    node: pve1
    filename: virtio-win.iso
    state: absent
'''

RETURN = r'''
volid:
  description:
    - The volume ID of the file, as C(STORAGE:CONTENT/FILENAME). It is the same on every node.
    - An C(import) C(.img) shows here with its final C(.qcow2) name.
  returned: always
  type: str
  sample: local:import/noble-server-cloudimg-amd64.qcow2
action:
  description:
    - What was done on each node that was acted on, or what would be done in check mode.
    - V(none), V(download), V(upload), V(replace) (the file from another or an unknown source was replaced) or V(delete).
    - For a shared storage, only the first node is listed.
  returned: always
  type: dict
  sample: {pve1: download, pve2: none}
reason:
  description: Why each node got its action.
  returned: always
  type: dict
  sample: {pve1: not on the storage, pve2: on the storage from the declared source}
record:
  description: The short hash of the declared source, as kept in the node's notes.
  returned: when O(state=present)
  type: str
  sample: 3f2a9c1b7d4e
instance_id:
  description: The C(instance-id) in the seed's meta-data.
  returned: when O(seed) is given and O(state=present)
  type: str
  sample: iid-puls-5d41402abc4b
'''

from ansible_collections.puls.proxmox.plugins.module_utils._iso_io import declare, reconcile
from ansible_collections.puls.proxmox.plugins.module_utils._iso_plan import COMPRESSIONS, CONTENT_TYPES, IsoOptionError
from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule

ARGUMENT_SPEC = {
    'filename': {'type': 'str', 'required': True},
    'storage': {'type': 'str', 'default': 'local'},
    'node': {'type': 'str'},
    'nodes': {'type': 'list', 'elements': 'str'},
    'content': {'type': 'str', 'default': 'iso', 'choices': list(CONTENT_TYPES)},
    'state': {'type': 'str', 'default': 'present', 'choices': ['present', 'absent']},
    'url': {'type': 'str'},
    'checksum': {'type': 'str'},
    'compression': {'type': 'str', 'choices': list(COMPRESSIONS)},
    'src': {'type': 'path'},
    'seed': {
        'type': 'dict',
        'options': {
            'user_data': {'type': 'str', 'required': True, 'no_log': True},
            'meta_data': {'type': 'raw'},
            'network_config': {'type': 'raw'},
            'vendor_data': {'type': 'str', 'no_log': True},
            'hostname': {'type': 'str'},
        },
    },
    'timeout': {'type': 'int', 'default': 1800},
}


def main():
    module = PveModule(argument_spec=ARGUMENT_SPEC, mutually_exclusive=[('node', 'nodes')], required_one_of=[('node', 'nodes')])
    try:
        spec = declare(module.params)
    except IsoOptionError as exc:
        module.fail(str(exc))
    module.run(reconcile, module.client, spec, check_mode=module.check_mode)


if __name__ == '__main__':
    main()
