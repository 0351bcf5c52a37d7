#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: pve_notes_hash
short_description: Which provision files a VM still needs, recorded in its Notes
version_added: 0.1.0
description:
  - >-
    Keeps the provision record of a Proxmox VE VM in its Notes (the C(description)), as one line
    C([puls-provision: PATH=HASH,PATH=HASH]), and tells which provision files are pending:
    new, or changed since they were applied.
  - O(state=query) reports the pending files; O(state=applied) records files as applied after they ran.
  - Only that line is read and changed. Every other character of the Notes stays as it is; the line is
    appended after a blank line when absent. Entries of files that are no longer in O(files) are dropped
    when the record is written.
  - The Notes are written with the config digest of the read. When someone changed the VM's config in
    between, Proxmox VE refuses the write; the module reads the Notes again and records into what is there now.
  - A block written by Puls (keyed by file basename) is read as applied when the basename names exactly
    one file of O(files), and is rewritten with the full paths on the next record.
  - >-
    The hashes are computed on the controller by the module's action plugin, from the files as Ansible
    resolves them relative to the playbook's directory (or O(base_dir)). Run the task on the controller
    (C(delegate_to: localhost)), where the Proxmox VE API client is installed.
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.attributes.action
  - puls.proxmox.connection
  - puls.proxmox.connection.action_group
attributes:
  check_mode:
    support: full
    details: A record in check mode reports the change and its diff and writes nothing.
  diff_mode:
    support: full
    details: O(state=applied) shows the Notes before and after.
  action:
    support: full
    details: The action plugin hashes the provision files on the controller; the module never reads them.
options:
  name:
    description:
      - Name of the VM (the host name of a container). Must be unique in the cluster among guests of O(guest_type)
        unless O(vmid) is given too.
      - One of O(name) and O(vmid) is required. With both, the VM with that VMID must have that name.
    type: str
  vmid:
    description:
      - VMID of the VM.
    type: int
  files:
    description:
      - Every provision file of the VM, in the order they run, as declared. These paths are the keys of
        the record, so two files with one basename never collide.
      - Relative paths are relative to O(base_dir).
      - A path cannot contain C(,), C(=) or C(]) (they delimit the record), nor start or end with blanks;
        such a path, a missing file, a file of another kind than C(.yml), C(.yaml), C(.pp) or C(.sh), and a
        file declared twice are refused before anything is read from Proxmox VE.
    type: list
    elements: str
    required: true
  state:
    description:
      - V(query) reports which files are pending and changes nothing.
      - V(applied) records the files of O(record) as applied with their current hashes, keeps what is
        recorded for the other files of O(files), and drops entries of files that are not in O(files).
    type: str
    choices: [query, applied]
    default: query
  record:
    description:
      - With O(state=applied), the files of O(files) to record as applied, for example the one file that
        just ran. Default is every file of O(files).
    type: list
    elements: str
  force:
    description:
      - With O(state=query), report every file as pending whatever its hash.
    type: bool
    default: false
  hash_mode:
    description:
      - What a file's hash covers.
      - V(closure) hashes the file and what it pulls in when it runs. For a playbook, the roles it names
        (whole role directories, found as C(ansible-playbook) finds them next to the playbook and on the
        configured roles path), its C(vars_files), and statically imported or included task files and
        playbooks. A change of any of them makes the file pending.
      - V(file) hashes the file alone, as Puls does, so a record Puls wrote reads as applied.
      - A hash is the first 12 hex digits of a SHA-256.
    type: str
    choices: [closure, file]
    default: closure
  hash_include:
    description:
      - Further files or directories whose content counts for the hash of every file of O(files), for
        example an C(include_vars) file or a template source that the closure does not follow.
      - Relative paths are relative to O(base_dir).
    type: list
    elements: path
    default: []
  base_dir:
    description:
      - Directory that relative paths of O(files) and O(hash_include) are relative to.
      - Default is the directory of the playbook, as Ansible resolves a playbook's relative paths.
    type: path
  hashes:
    description:
      - The hash of each file of O(files), as RV(hashes) returned them.
      - Leave unset to have them computed from the files now. Give the hashes a query returned to record
        exactly what was queried before the files ran, even if a file changed meanwhile.
    type: dict
  guest_type:
    description:
      - Whether the guest is a VM (V(qemu)) or an LXC container (V(lxc)), such as P(puls.proxmox.pve_container#module)
        makes. A container keeps its Notes in its config as a VM does.
    type: str
    choices: [qemu, lxc]
    default: qemu
notes:
  - A VM that does not exist fails the task, except a query in check mode, which reports every file as
    pending (an earlier task of the same check run may create the VM).
  - The Notes of a VM hold at most 8192 characters. A query or record that would need more fails and
    names the excess; human text is never truncated.
seealso:
  - name: Proxmox VE API, VM config
    description: The C(description) and C(digest) of C(PUT /nodes/{node}/qemu/{vmid}/config).
    link: https://pve.proxmox.com/pve-docs/api-viewer/#/nodes/{node}/qemu/{vmid}/config
'''

EXAMPLES = r'''
- name: Ask which provision files web1 still needs
  puls.proxmox.pve_notes_hash:
    name: web1
    files:
      - playbooks/base.yml
      - playbooks/web.yml
  delegate_to: localhost
  register: provision

- name: Show them
  ansible.builtin.debug:
    msg: "{{ provision.pending }}"

- name: Record that playbooks/base.yml was applied, with the hash queried before it ran
  puls.proxmox.pve_notes_hash:
    name: web1
    files:
      - playbooks/base.yml
      - playbooks/web.yml
    state: applied
    record:
      - playbooks/base.yml
    hashes: "{{ provision.hashes }}"
  delegate_to: localhost

- name: Take over a record written by Puls, which hashed each file alone
  puls.proxmox.pve_notes_hash:
    vmid: 105
    files:
      - provision/docker.yaml
    hash_mode: file
  delegate_to: localhost
'''

RETURN = r'''
pending:
  description:
    - The files of O(files) that are not recorded with their current hash (every file with O(force)),
      in declared order. After a record, what is still pending.
  returned: success
  type: list
  elements: str
  sample: [playbooks/web.yml]
applied:
  description: The files of O(files) recorded with their current hash, in declared order.
  returned: success
  type: list
  elements: str
  sample: [playbooks/base.yml]
stale:
  description:
    - Keys of the record that the next record drops or rewrites, in their order in the record. Entries of files
      that are not in O(files), and basename keys Puls wrote, which become full paths. Empty after a record.
  returned: success
  type: list
  elements: str
  sample: [old/base.yml]
hashes:
  description: The current hash of each file of O(files), keyed as declared.
  returned: success
  type: dict
  sample: {playbooks/base.yml: 3f2a9c1b7d4e, playbooks/web.yml: 0c1d2e3f4a5b}
vmid:
  description: VMID of the VM; with a query in check mode of a VM that does not exist, the given O(vmid) or null.
  returned: success
  type: int
  sample: 105
node:
  description: Node the VM is on; null when it does not exist (a query in check mode).
  returned: success
  type: str
  sample: pve1
'''

from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule
from ansible_collections.puls.proxmox.plugins.module_utils._notes_io import ARGUMENT_SPEC, REQUIRED_ONE_OF, NotesRequest, reconcile


def main():
    module = PveModule(argument_spec=ARGUMENT_SPEC, required_one_of=REQUIRED_ONE_OF)
    try:
        request = NotesRequest.from_params(module.params)
        module.run(reconcile, module.client, request, check_mode=module.check_mode)
    except ValueError as exc:
        module.fail(str(exc))


if __name__ == '__main__':
    main()
