#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: pve_template
short_description: One golden Proxmox VE template, rebuilt only when what built it changed
version_added: 0.1.0
description:
  - Finds a QEMU template (or, with O(guest_type=lxc), a container template) by O(name), reports whether it is current
    against the declared O(spec) and O(provision_hashes), converts a provisioned build VM (or build container) into it,
    retires it, or removes it.
  - >-
    A template made by this module records what built it in its Notes, on two managed lines that leave every other line
    alone, C([puls-provision: PATH=HASH,...]) (the provision files, as P(puls.proxmox.pve_notes_hash#module) reads them)
    and C([puls-template: spec=HASH,KEY=HASH,...]) (the hash of the whole spec, and one per spec key, so that a change can
    be named).
  - Building the VM (cloning, provisioning, generalizing) is not this module's job; the C(puls.proxmox.reconcile) role
    does it with P(puls.proxmox.pve_vm#module) and then calls this module with O(state=converted).
  - Check mode writes nothing and reports the same C(changed) and diff as the real run.
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
options:
  name:
    description:
      - Name of the template, a DNS name. Without O(vmid) it identifies the template; two templates with this name are
        an error that lists them.
    type: str
    required: true
  guest_type:
    description:
      - V(qemu) for a VM template, V(lxc) for a container template (pve-container's C(POST /nodes/{node}/lxc/{vmid}/template),
        C(src/PVE/API2/LXC.pm) C(template)). Only templates, build guests and linked clones of this type are looked at.
      - A container template's O(spec) key C(image) is resolved as P(puls.proxmox.pve_container#module) resolves its
        O(puls.proxmox.pve_container#module:image) (an OS template volume, or a container template); its name is its
        C(hostname). Its conversion keeps C(nameserver) and C(searchdomain) (the container's DNS settings, which its
        clones inherit) and turns each static address of the build's network devices into C(ip=dhcp) (C(ip6=auto)),
        without the gateway, so that a clone that declares no address never comes up on the build's.
      - PVE answers a container's conversion with no task (C(src/PVE/API2/LXC.pm) C(template) forks it); the module
        finds its C(vztemplate) task in the node's task list, waits for it, and checks that the build became a template.
        A build container with a volume on thick LVM (storage type C(lvm), which has no template feature) is refused
        before any write, and so is a O(spec) whose C(storage) or C(mount_points[].storage) is one, when the template
        is to be built.
    type: str
    choices: [qemu, lxc]
    default: qemu
    version_added: 0.1.0
  vmid:
    description:
      - With O(state=converted), the VMID of the build VM to convert (required). It must be a QEMU VM (a container
        with O(guest_type=lxc)) tagged C(puls-building), so that a mistyped VMID cannot turn a server into a template.
        Converting it again once it is template O(name) with the same spec changes nothing.
      - With the other states, the VMID of the template, which must then be template O(name) or a retired generation
        of it (C(NAME-<hash>), tagged C(puls-retired)).
    type: int
  state:
    description:
      - V(present) reports whether template O(name) exists and is current against O(spec) and O(provision_hashes), in
        RV(current) and RV(reason), and whether a build of it runs right now (RV(building)). It never changes anything.
      - V(converted) turns build VM O(vmid) into template O(name) - graceful shutdown (forced stop after
        O(shutdown_timeout) seconds), the build-time cloud-init settings deleted (C(ciuser), C(cipassword), C(sshkeys),
        C(ipconfigN), C(nameserver), C(searchdomain), C(cicustom)) and its cloud-init drive regenerated without them,
        a NoCloud seed ISO of C(user_data) detached (an empty cloud-init drive takes its slot, and the ISO file is
        deleted when it is the build VM's own), the Notes written with the provision and spec blocks, then the PVE
        template conversion. A previous template named O(name) is first retired, then the new one takes the name, with
        the tag C(puls-building) replaced by O(owner_tag) in the same write, then the previous one is destroyed unless
        linked clones use it or it is protected (it then stays retired). Until that write the build counts as in
        progress (RV(building)), so a run waiting for it never clones the previous template or none.
      - V(retired) renames template O(name) to C(NAME-<hash>) and tags it C(puls-retired). It stays, for the linked
        clones that use it.
      - V(absent) destroys the template with its disks. Refused while linked clones use it, or when it is protected.
      - V(converted), V(retired) and V(absent) act only on templates carrying O(owner_tag).
    type: str
    choices: [present, converted, retired, absent]
    default: present
  spec:
    description:
      - What builds the template, required with O(state=converted). A dict, for example the base image, hardware and
        build cloud-init settings as P(puls.proxmox.pve_vm#module) options; or a string, hashed whole.
      - With O(state=present) and no O(spec), RV(current) only says whether the template exists.
      - The key C(image) is resolved as P(puls.proxmox.pve_vm#module) resolves its O(puls.proxmox.pve_vm#module:image),
        and what it resolves to is hashed instead of the text - the VMID and name of the template, or the volume and the
        source P(puls.proxmox.pve_iso#module) recorded for it. So a rebuilt base template or a new download of an image
        is a change, and writing the same image differently is not.
      - The keys C(ci_password), C(cipassword) and C(password) are never hashed; a password is stripped from the
        template anyway.
      - Keys are letters, digits, C(_), C(.) and C(-).
    type: raw
  provision_hashes:
    description:
      - The hashes of the provision files that built the template, path to lower-case hex hash, as
        P(puls.proxmox.pve_notes_hash#module) returns them in its C(hashes).
      - Part of the spec hash; recorded in the template's provision block on conversion (no block when empty).
    type: dict
  owner_tag:
    description:
      - The tag marking guests this collection manages. A converted template gets it; O(state=converted) replaces,
        O(state=retired) retires and O(state=absent) destroys only templates that carry it.
    type: str
    default: puls-managed
  shutdown_timeout:
    description:
      - Seconds the build VM has to shut down gracefully before it is stopped.
    type: int
    default: 180
  timeout:
    description:
      - Seconds to wait for each PVE task (shutdown beyond O(shutdown_timeout), conversion, destroy).
    type: int
    default: 600
  wait:
    description:
      - Seconds to wait, with O(state=present), while a build of template O(name) runs (RV(building)); the template
        is asked for again every O(wait_delay) seconds until no build runs or the time is up; V(0) answers at once.
      - Meanwhile the action plugin shows a progress line naming the build VM and the time elapsed (C(pve_progress)).
      - Out of time, the result is the last answer, with RV(building) still set.
    type: int
    default: 0
  wait_delay:
    description:
      - Seconds between two looks while waiting (O(wait)).
    type: int
    default: 10
notes:
  - Linked clones are found by the base volume names in the configs of all other guests of the template's type
    (C(base-VMID-disk-N/...), a container's C(basevol-VMID-disk-N/...) on ZFS), which takes one read per guest. On a
    storage whose volume names do not show the base, PVE still refuses to destroy a base in use; the module then keeps
    the previous template retired and warns.
'''

EXAMPLES = r'''
- name: Is the golden image current?
  puls.proxmox.pve_template:
    name: web-golden
    spec:
      image: ubuntu-24.04-cloud
      cores: 2
      memory: 2048
    provision_hashes:
      playbooks/web.yml: 3f2a9c1b7d4e
  register: golden

- name: Say why it must be rebuilt
  ansible.builtin.debug:
    msg: "rebuild web-golden: {{ golden.reason }}"
  when: not golden.current

- name: Turn the provisioned build VM into the template
  puls.proxmox.pve_template:
    name: web-golden
    vmid: 4711
    state: converted
    spec:
      image: ubuntu-24.04-cloud
      cores: 2
      memory: 2048
    provision_hashes:
      playbooks/web.yml: 3f2a9c1b7d4e
    shutdown_timeout: 60
  when: not golden.current

- name: Keep the old template for its linked clones, under another name
  puls.proxmox.pve_template:
    name: web-golden
    state: retired

- name: Turn a provisioned build container into a container template
  puls.proxmox.pve_template:
    name: cache-golden
    guest_type: lxc
    vmid: 4712
    state: converted
    spec:
      image: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
      memory: 512

- name: Remove a retired generation once no clone uses it
  puls.proxmox.pve_template:
    name: web-golden
    vmid: 4711
    state: absent
'''

RETURN = r'''
vmid:
  description: VMID of the template (of the build VM with O(state=converted)); null when there is none.
  returned: always
  type: int
  sample: 4711
node:
  description: Node the template is on; null when there is none.
  returned: always
  type: str
  sample: pve1
name:
  description: Name of the template after the run (C(NAME-<hash>) once retired); null when there is none.
  returned: always
  type: str
  sample: web-golden
current:
  description: Whether the template exists and was built from the declared spec and provision files.
  returned: when O(state) is V(present) or V(converted)
  type: bool
  sample: false
reason:
  description:
    - What differs, C(; )-separated, empty when current. For example C(template web-golden does not exist),
      C(provision file playbooks/web.yml changed), C(cores 2 -> 4), C(base image changed (now template
      ubuntu-24.04-cloud (9017 on pve1))), C(it records no spec (it was not made by pve_template)).
  returned: when O(state) is V(present) or V(converted)
  type: str
  sample: cores 2 -> 4; provision file playbooks/web.yml changed
spec_hash:
  description: The hash of the declared spec and provision hashes, as recorded in the template's Notes.
  returned: when O(spec) is given and O(state) is V(present) or V(converted)
  type: str
  sample: 9e107d9d372b
waited:
  description: Seconds waited for another build of the template to end (O(wait)); 0 when none was waited for.
  returned: when O(state=present)
  type: int
  sample: 42
building:
  description:
    - The build of template O(name) in progress - a guest of O(guest_type) named C(NAME-build) tagged
      C(puls-building), as the C(puls.proxmox.reconcile) role makes it, converted already or not - or null when none runs.
  returned: when O(state=present)
  type: dict
  contains:
    vmid:
      description: VMID of the build VM.
      type: int
    node:
      description: Its node.
      type: str
    name:
      description: Its name.
      type: str
previous:
  description: The template that had O(name) before the conversion; null when there was none.
  returned: when O(state=converted)
  type: dict
  contains:
    vmid:
      description: Its VMID.
      type: int
    name:
      description: The name it was retired under.
      type: str
    action:
      description: V(retired) (kept under its new name) or V(destroyed).
      type: str
    linked_clones:
      description: The linked clones that use it, as C(name (VMID)).
      type: list
      elements: str
diff:
  description:
    - With O(state=converted), the build VM before and the template after - C(name), C(template), C(status), C(tags),
      C(notes), each deleted build-time setting (the password masked), C(user_data) and C(cloudinit_drive) for a detached
      seed ISO, and C(previous). With O(state=retired), C(name)
      and C(tags). With O(state=absent), C(state).
  returned: when diff mode is on and O(state) is not V(present)
  type: dict
  contains:
    before:
      description: Before the run.
      type: dict
    after:
      description: After the run.
      type: dict
'''

from ansible_collections.puls.proxmox.plugins.module_utils._api import DEFAULT_TASK_TIMEOUT
from ansible_collections.puls.proxmox.plugins.module_utils._guest import DEFAULT_SHUTDOWN_TIMEOUT, GUEST_TYPES
from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule
from ansible_collections.puls.proxmox.plugins.module_utils._template_io import reconcile
from ansible_collections.puls.proxmox.plugins.module_utils._template_plan import STATES, TemplateRequest
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import DEFAULT_OWNER_TAG, SpecError

ARGUMENT_SPEC = {
    'name': {'type': 'str', 'required': True},
    'vmid': {'type': 'int'},
    'state': {'type': 'str', 'default': 'present', 'choices': list(STATES)},
    'spec': {'type': 'raw'},
    'provision_hashes': {'type': 'dict'},
    'owner_tag': {'type': 'str', 'default': DEFAULT_OWNER_TAG},
    'shutdown_timeout': {'type': 'int', 'default': DEFAULT_SHUTDOWN_TIMEOUT},
    'timeout': {'type': 'int', 'default': DEFAULT_TASK_TIMEOUT},
    'wait': {'type': 'int', 'default': 0},
    'wait_delay': {'type': 'int', 'default': 10},
    'guest_type': {'type': 'str', 'default': 'qemu', 'choices': list(GUEST_TYPES)},
}


def main():
    module = PveModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        request = TemplateRequest.from_params(module.params)
        module.run(reconcile, module.client, request, check_mode=module.check_mode)
    except SpecError as exc:
        module.fail(str(exc), option=exc.option)


if __name__ == '__main__':
    main()
