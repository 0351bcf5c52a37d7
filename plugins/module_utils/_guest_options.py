# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every option of pve_vm and pve_container, declared once: its Ansible shape (type, choices, default) and, for each
kind of guest it applies to, how it maps there, as community.docker's OptionGroup declares an option once with a
mapping per engine (plugins/module_utils/_module_container/base.py). ``qemu`` (pve_vm): its documentation, its check,
its PVE config key and how that key is compared, the reconcile role's variable for it, whether it enters a template's
spec hash, and the proxmops manifest field for it. ``lxc`` (pve_container): its documentation, when it applies, the
entries of a list of dicts, and whether the role sets it from its own variable or takes it from a container's
``pve_container``.

The rest is derived: the modules' argument specs (``_option_specs``), VmSpec's checks and config-key rules
(``_vm_config``), the template spec-hash keys (``_template_plan``), the role's module options of a machine (the
``puls.proxmox.vm_options`` lookup), and the manifests inventory plugin's plain field mapping. The files Ansible needs
static (the doc fragments ``puls.proxmox.vm_options`` and ``puls.proxmox.ct_options``, roles/reconcile/meta/argument_specs.yml,
docs/index.md) are written by ``make generate`` (hacking/generate_options.py); tests/unit/test_guest_options.py fails
when one is out of date.

Pure data and pure functions: no I/O, no import of the collection but the names of the kinds (``_vm_config`` and
``_ct_config`` import this file).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._guest import LXC, QEMU

# The role variables' prefix: a template's spec key is its variable without it (pve_ssh_user -> ssh_user).
VARIABLE_PREFIX = 'pve_'
# What the role asks the options for: a machine's pve_vm, a template's build VM, a template's spec hash.
PURPOSES = ('machine', 'build', 'template_spec')

# When a pve_container option applies: CONFIG, a container config key PVE keeps, compared and written on every run
# (``_ct_config`` renders it); CREATE, only when the container is created (the source, its placement, secrets PVE
# writes into the root file system once: password, ssh_keys); CONTROL, how the module runs (state, ownership, timeouts).
CONFIG = 'config'
CREATE = 'create'
CONTROL = 'control'

# The container features pve_container manages (pve-container src/PVE/LXC/Config.pm, $features_desc): nesting may be
# set by any user with VM.Allocate, keyctl and fuse by root@pam only (src/PVE/LXC.pm, check_ct_modify_config_perm).
FEATURES = ('nesting', 'keyctl', 'fuse')


@dataclass(frozen=True)
class Qemu:
    """How an option maps to pve_vm; ``doc`` is its pve_vm documentation."""

    doc: tuple[str, ...]
    # The check of an integer option (an option of another type is checked by its choices, or by _vm_config's own parser).
    minimum: int | None = None
    maximum: int | None = None
    meaning: str = ''  # what the number is, for the error message (' MiB')
    # A PVE config key written as the option's value: compared as an integer (or a flag, for a bool option);
    # ``pve_default`` is PVE's value for an absent key, ``pve_default_property`` the property holding the number.
    pve_key: str | None = None
    pve_default: Any = None
    pve_default_property: str | None = None
    # The reconcile role's variable, and its documentation when argument_specs.yml's entry point main is to have it
    # generated (an empty one: documented by hand among another entry point's options that main merges in).
    variable: str | None = None
    variable_doc: tuple[str, ...] = ()
    variable_spec: Mapping[str, Any] | None = None  # the variable's type, choices and default, when not the option's
    build: bool = False  # given to a template's build VM as declared
    template_spec: bool = False  # enters a template's spec hash (under its variable's name without the prefix)
    template_config: bool = False  # a spec key whose value the template's config still holds ("cores 2 -> 4")
    manifest_field: str | None = None  # the proxmops manifest's spec field of the same meaning
    manifest_extension: bool = False  # a field proxmops does not have, which the manifests plugin adds
    manifest_rank: int = 0  # the field's place in the plugin's list of fields (proxmops's order, then the extensions)


@dataclass(frozen=True)
class Suboption:
    """One key of the dicts of a pve_container list option (mount_points, nets)."""

    name: str
    type: str
    doc: tuple[str, ...]
    required: bool = False
    variable_doc: tuple[str, ...] = ()  # its documentation in the role's pve_container, when not ``doc``

    def argument_spec(self) -> dict[str, Any]:
        return {'type': self.type, 'required': True} if self.required else {'type': self.type}


@dataclass(frozen=True)
class Lxc:
    """How an option maps to pve_container; ``doc`` is its pve_container documentation, ``use`` when it applies."""

    use: str  # CONFIG, CREATE or CONTROL
    doc: tuple[str, ...]
    # The role variable the role sets the option from, for every machine; without one, the option is a key of a
    # container's pve_container, documented there by ``variable_doc`` (or, when that is empty, by ``doc``).
    variable: str | None = None
    variable_doc: tuple[str, ...] = ()
    suboptions: tuple[Suboption, ...] = ()


@dataclass(frozen=True)
class Option:
    """One option of pve_vm (``qemu``), pve_container (``lxc``) or both. Argument spec: ``type`` .. ``env``."""

    name: str
    type: str
    elements: str | None = None
    choices: tuple[str, ...] = ()
    default: Any = None  # None: no default, or the one _option_specs gives from a constant of the code
    required: bool = False
    no_log: bool | None = None
    env: str | None = None  # environment variable the option falls back to
    qemu: Qemu | None = None
    lxc: Lxc | None = None

    def mapping(self, kind: str) -> Qemu | Lxc | None:
        """How the option maps to a guest of ``kind`` (QEMU or LXC); None when it does not apply to it."""
        return {QEMU: self.qemu, LXC: self.lxc}[kind]

    def argument_spec(self, kind: str) -> dict[str, Any]:
        """The option's entry of the argument spec of ``kind``'s module, without a fallback (``env``) or a code default."""
        spec: dict[str, Any] = {'type': self.type}
        for key in ('elements', 'choices', 'default', 'no_log'):
            value = getattr(self, key)
            if value not in (None, ()):
                spec[key] = list(value) if key == 'choices' else value
        if self.required:
            spec['required'] = True
        if kind == LXC and self.lxc and self.lxc.suboptions:
            spec['options'] = {sub.name: sub.argument_spec() for sub in self.lxc.suboptions}
        return spec

    def variable_argument_spec(self, kind: str) -> dict[str, Any]:
        """The option's entry of roles/reconcile/meta/argument_specs.yml: a role variable of entry point main (QEMU), or
        a key of main's pve_container (LXC; without a default, which pve_container gives)."""
        if kind == QEMU and self.qemu:
            description = self.qemu.variable_doc
            spec = dict(self.qemu.variable_spec) if self.qemu.variable_spec is not None else self.argument_spec(QEMU)
        elif kind == LXC and self.lxc:
            description = self.lxc.variable_doc or self.lxc.doc
            spec = self.argument_spec(LXC)
            spec.pop('default', None)
            if self.lxc.suboptions:
                spec['options'] = {sub.name: {'description': list(sub.variable_doc or sub.doc), **sub.argument_spec()} for sub in self.lxc.suboptions}
        else:
            raise ValueError(f'option {self.name} does not apply to {kind}')
        spec.pop('required', None)  # a variable has a role default or may be left out
        if not spec.get('no_log'):
            spec.pop('no_log', None)  # no_log false only quiets the module's sanity check of option names like "keys"
        if 'choices' in spec:
            spec['choices'] = list(spec['choices'])
        return {'description': list(description), **spec}


# PVE's values for an absent key (pve_default) are qemu-server's defaults in PVE/QemuServer.pm's $confdesc (cores and
# sockets 1; memory 512, in PVE/QemuServer/Memory.pm): an absent key equals its declared default.
OPTIONS = (
    Option(
        'name',
        'str',
        required=True,
        qemu=Qemu(
            doc=('Name of the VM, a DNS name. It identifies the VM unless O(vmid) is given; two VMs with this name are an error.',),
            variable='pve_vm_name',
        ),
        lxc=Lxc(
            CONFIG,
            doc=(
                'Host name of the container, a DNS name. It identifies the container unless O(vmid) is given; two containers with this host name are an error.',
            ),
            variable='pve_vm_name',
        ),
    ),
    Option(
        'state',
        'str',
        choices=('present', 'started', 'stopped', 'restarted', 'absent'),
        default='present',
        qemu=Qemu(
            doc=(
                'V(present) makes the VM exist as declared and leaves its power alone; a new VM stays stopped.',
                'V(started) and V(stopped) also set its power. V(stopped) shuts the guest down gracefully and stops it after O(shutdown_timeout) seconds.',
                'V(restarted) shuts a running VM down gracefully and starts it again (a stopped VM is started). It '
                'restarts on every run, so it always reports a change.',
                'V(absent) destroys the VM with its disks (purge, unreferenced disks included) after a graceful '
                'shutdown, and removes its O(user_data) seed ISO. A protected VM is refused.',
            ),
            variable='pve_power',
            variable_doc=('Whether the VM runs.',),
            variable_spec={'type': 'str', 'choices': ('running', 'stopped'), 'default': 'running'},
        ),
        lxc=Lxc(
            CONTROL,
            doc=(
                'V(present) makes the container exist as declared and leaves its power alone; a new container stays stopped.',
                'V(started) and V(stopped) also set its power. V(stopped) shuts it down and stops it after O(shutdown_timeout) seconds.',
                'V(restarted) shuts a running container down and starts it again, on every run.',
                'V(absent) destroys the container with its volumes (purge, unreferenced volumes included), after a shutdown. A protected container is refused.',
            ),
            variable='pve_power',
        ),
    ),
    Option(
        'image',
        'str',
        qemu=Qemu(
            doc=(
                'Where a new VM comes from; used only when the VM does not exist yet.',
                'A template or VM to clone, given by VMID (V(9017)), exact template name (V(ubuntu-24.04-cloud)) or a'
                ' unique part of a template name (V(ubuntu-24.04)). Several matching templates are an error that '
                'lists them.',
                'Or a disk image volume to import, V(STORAGE:import/NAME.qcow2) (also C(.raw), C(.vmdk); content type'
                ' C(import)) or V(STORAGE:VMID/DISK). The VM then gets what a cloud image needs to boot (VirtIO SCSI,'
                ' serial console, boot order, a cloud-init drive) and needs O(storage). URLs are refused; download '
                'the image first with P(puls.proxmox.pve_iso#module).',
                'Without it, a missing VM is created empty: a new boot disk of O(disk_size) on O(storage) (both required), '
                'a VirtIO network device on V(vmbr0) unless O(nets) says otherwise, and what O(disks), O(cdrom) (an '
                'installer ISO), O(boot) and the other options declare; PVE boots the disks, then the CD-ROM drives, unless'
                ' O(boot) says otherwise.',
            ),
            variable='pve_image',
            variable_doc=(
                "Where a new machine's disk comes from. A template VMID (V(9017)), the name of a template declared in"
                ' this inventory (a build dependency), an image volume to import (V(local:import/noble.qcow2)), or a '
                'unique part of the name of a template in the cluster. See P(puls.proxmox.pve_vm#module) '
                'O(puls.proxmox.pve_vm#module:image).',
                'A VM still to be created whose image is none of these fails the run before any change.',
            ),
            build=True,
            template_spec=True,
        ),
        lxc=Lxc(
            CREATE,
            doc=(
                'Where a new container comes from; used only when it does not exist yet.',
                'An OS template volume, V(STORAGE:vztmpl/FILE) (for example '
                'V(local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst)); it must be on the storage of the chosen '
                'node. Needs O(storage).',
                'Or the VMID or exact name of a container template to clone.',
            ),
            variable_doc=(
                'Where a new container comes from; used only when it does not exist yet.',
                'An OS template volume C(STORAGE:vztmpl/FILE), or the VMID or name of a container template, as M(puls.proxmox.pve_container) takes them.',
                "Or an OS template named as PVE's appliance index names it, its package (V(debian-12-standard), "
                "V(ubuntu-24.04-standard)) or its file name. The pre-flight resolves it on the container's C(node) "
                "(required then) with M(puls.proxmox.pve_os_template) - to the newest matching volume on the node's "
                "storages, else to a download from the node's appliance index onto the first storage with content "
                'C(vztmpl), which a check run plans and a real run makes before the containers. Its plan is the '
                "template's file name, of kind C(iso).",
                'For a container template (a host of C(pve_templates)), such a name is resolved so on every run, as its '
                "build is made from the volume and its spec names the volume; so a newer matching volume on the node's "
                'storages rebuilds it.',
            ),
        ),
    ),
    Option(
        'linked_clone',
        'bool',
        default=False,
        qemu=Qemu(
            doc=(
                'Clone as a copy-on-write linked clone of a template instead of a full copy.',
                "The clone keeps its disks on the template's storage, so O(storage) is refused. It is placed like a "
                'full clone, on another node only when every drive of the template is on shared storage.',
            ),
            variable='pve_linked_clone',
            variable_doc=('Make a new VM a copy-on-write linked clone of its template.',),
        ),
        lxc=Lxc(
            CREATE,
            doc=(
                'Clone a container template as a linked clone instead of a full copy.',
                'PVE makes linked clones of a container only on LVM-thin, ZFS, Ceph RBD and BTRFS storage; a template'
                ' with a volume on a directory, NFS, CIFS or (thick) LVM storage is refused before anything is sent; '
                "a storage plugin outside PVE's own is left to PVE.",
            ),
            variable_doc=(
                'Clone a container template as a linked clone instead of a full copy (PVE makes one only on LVM-thin,'
                ' ZFS, Ceph RBD and BTRFS storage; a template on another is refused).',
            ),
        ),
    ),
    Option(
        'node',
        'str',
        qemu=Qemu(
            doc=(
                'Node to create the VM on. An existing VM is never moved.',
                'Without it, the online node among O(nodes) with the most free memory is chosen, except that a clone '
                "goes to the template's node when any drive of the template is on local storage (an ISO in a CD-ROM "
                "drive and the cloud-init drive count, an empty CD-ROM drive does not), or when a full clone's "
                'O(storage) is not shared, since PVE clones to another node only from and to shared storage. A shared'
                ' O(storage) must be enabled on the node chosen.',
            ),
            variable='pve_node',
            variable_doc=('Node a new machine is created on. Default is the candidate of O(pve_nodes) with the most free memory.',),
            build=True,
        ),
        lxc=Lxc(
            CREATE,
            doc=('Node to create the container on. Default for an OS template, the online node with the most free memory; for a clone, the template\'s node.',),
        ),
    ),
    Option(
        'nodes',
        'list',
        elements='str',
        env='PROXMOX_NODES',
        qemu=Qemu(
            doc=(
                'Candidate nodes for placing a new VM when O(node) is not given; all online nodes when empty.',
                'If not set, E(PROXMOX_NODES) is used (comma-separated).',
            ),
            variable='pve_nodes',
            variable_doc=(
                'Placement candidates for new machines, and the nodes an ISO of O(pve_isos) without C(node) or C(nodes) is kept on.',
                'Default is the environment variable E(PROXMOX_NODES) (comma-separated); empty means every online node.',
            ),
            build=True,
        ),
    ),
    Option(
        'vmid',
        'int',
        qemu=Qemu(
            minimum=100,
            maximum=999999999,
            doc=(
                'VMID of the VM. When given, it identifies the VM (whose name must then be O(name)); a new VM is created with it.',
                'Without it, a new VM gets a free VMID, safely also when many VMs are created at once.',
            ),
            variable='pve_vmid',
            build=True,
            manifest_field='vmid',
            manifest_rank=1,
        ),
        lxc=Lxc(
            CREATE,
            doc=('VMID of the container. When omitted a free one is allocated at creation, safely for parallel runs.',),
            variable='pve_vmid',
        ),
    ),
    Option(
        'pool',
        'str',
        qemu=Qemu(
            doc=('Resource pool a new VM is created in.',),
            variable='pve_pool',
            variable_doc=('Resource pool a new machine is created in.',),
            build=True,
            manifest_field='pool',
            manifest_rank=13,
            manifest_extension=True,
        ),
        lxc=Lxc(
            CREATE,
            doc=('Resource pool a new container joins.',),
        ),
    ),
    Option(
        'storage',
        'str',
        qemu=Qemu(
            doc=(
                "Storage for a new VM's disks (a full clone's copy, or the imported disk, which requires it) and for "
                'a cloud-init drive added to a VM that has none.',
            ),
            variable='pve_storage',
            variable_doc=("Storage for a new machine's disks.",),
            build=True,
            template_spec=True,
        ),
        lxc=Lxc(
            CREATE,
            doc=(
                'Storage of the root file system (and of mount points that name none) of a container created from an '
                'OS template, for example V(local-lvm); the target storage of a full clone.',
            ),
        ),
    ),
    Option(
        'cores',
        'int',
        qemu=Qemu(
            minimum=1,
            pve_key='cores',
            pve_default=1,
            doc=('CPU cores per socket.',),
            variable='pve_cores',
            variable_doc=('CPU cores per socket.',),
            build=True,
            template_spec=True,
            template_config=True,
            manifest_field='cores',
            manifest_rank=2,
        ),
        lxc=Lxc(
            CONFIG,
            doc=('Number of CPU cores the container may use.',),
        ),
    ),
    Option(
        'sockets',
        'int',
        qemu=Qemu(
            minimum=1,
            pve_key='sockets',
            pve_default=1,
            doc=('CPU sockets.',),
            variable='pve_sockets',
            variable_doc=('CPU sockets.',),
            build=True,
            template_spec=True,
            template_config=True,
            manifest_field='sockets',
            manifest_rank=14,
            manifest_extension=True,
        ),
    ),
    Option(
        'memory',
        'int',
        qemu=Qemu(
            minimum=16,
            meaning=' MiB',
            pve_key='memory',
            pve_default=512,
            pve_default_property='current',
            doc=('Memory in MiB.',),
            variable='pve_memory',
            variable_doc=('Memory in MiB.',),
            build=True,
            template_spec=True,
            template_config=True,
            manifest_field='memory',
            manifest_rank=3,
        ),
        lxc=Lxc(
            CONFIG,
            doc=('Memory in MiB.',),
        ),
    ),
    Option(
        'swap',
        'int',
        lxc=Lxc(
            CONFIG,
            doc=('Swap in MiB.',),
        ),
    ),
    # qemu-server PVE/QemuServer.pm $confdesc: balloon is the "amount of target RAM for the VM in MiB", 0 disables the
    # balloon driver, no key leaves it on; with less than memory, PVE's automatic memory allocation may take the VM down
    # to it (PVE docs, qm(1), "Memory"). The check against memory is VmSpec's (_vm_config).
    Option(
        'balloon',
        'int',
        qemu=Qemu(
            minimum=0,
            meaning=' MiB',
            pve_key='balloon',
            doc=(
                'Minimum memory in MiB (PVE\'s C(balloon)): with less than O(memory), PVE may take memory back from the '
                'running VM down to this amount through its balloon driver. V(0) turns the balloon device off. At most '
                'O(memory), which PVE requires.',
                'Changing the amount applies at once; turning ballooning on or off takes effect at the next boot.',
            ),
            variable='pve_balloon',
            variable_doc=('Minimum memory in MiB that ballooning may leave the machine (at most O(pve_memory)); V(0) turns ballooning off.',),
            build=True,
            template_spec=True,
            template_config=True,
        ),
    ),
    Option(
        'cpu',
        'str',
        qemu=Qemu(
            doc=(
                'CPU type, for example V(host) or V(x86-64-v2-AES), optionally with properties (V(host,flags=+aes)). '
                'Properties the VM has and the value does not name are kept.',
            ),
            variable='pve_cpu',
            variable_doc=('CPU type, for example V(host).',),
            build=True,
            template_spec=True,
            template_config=True,
            manifest_field='cpu',
            manifest_rank=4,
        ),
    ),
    Option(
        'machine',
        'str',
        choices=('q35', 'i440fx'),
        qemu=Qemu(
            doc=(
                "Machine type. V(i440fx) is written as PVE's C(pc). A pinned version of the same family (C(pc-q35-9.0)) counts as "
                'that family and is left alone.',
            ),
            variable='pve_machine',
            variable_doc=('Machine type.',),
            build=True,
            template_spec=True,
            template_config=True,
            manifest_field='machine',
            manifest_rank=15,
            manifest_extension=True,
        ),
    ),
    Option(
        'disk_size',
        'str',
        qemu=Qemu(
            doc=(
                'Size of the boot disk, for example V(32G), V(512M) or V(1T); a bare number means GiB.',
                'The disk is grown when smaller. A size below the current one is an error naming the current size, '
                'since PVE cannot shrink a disk. An increment such as V(+8G) is refused; declare the total size.',
            ),
            variable='pve_disk_size',
            variable_doc=('Size of the boot disk, for example V(32G). It only grows.',),
            build=True,
            template_spec=True,
        ),
        lxc=Lxc(
            CONFIG,
            doc=(
                'Size of the root file system, such as V(8G) or V(1500M) (a bare number is GiB), in whole MiB. It '
                'only grows; a smaller size than the current one is an error.',
            ),
        ),
    ),
    Option(
        'disks',
        'list',
        elements='dict',
        qemu=Qemu(
            doc=(
                'Further disks of the VM, each a dict. C(slot) (required) is its PVE drive key: C(scsi0)-C(scsi30), '
                'C(virtio0)-C(virtio15), C(sata0)-C(sata5) or C(ide0)-C(ide3). C(size) (required) is its size as in '
                'O(disk_size) (V(32G); a bare number is GiB); it only grows, and a size below the current one is an '
                'error naming the disk.',
                'A missing disk is allocated on C(storage), else on O(storage), else on the storage of the boot disk. An '
                'existing disk is never moved to another storage.',
                'C(cache) (V(none), V(writethrough), V(writeback), V(unsafe), V(directsync)), C(discard), C(ssd) (not on '
                'VirtIO), C(iothread) (SCSI and VirtIO only) and C(backup) (booleans) are set when given; the disk\'s '
                'other properties are kept. On a running VM, PVE applies a changed C(cache), C(discard), C(ssd) or '
                'C(iothread), and a new IDE or SATA disk, only at the next boot (RV(reboot_required)).',
                'Disks the VM has and this list does not name are left alone, unless O(remove_undeclared_disks) is set. '
                'The boot disk is not one of them (O(disk_size) sizes it): a C(slot) naming it is refused.',
            ),
            variable='pve_disks',
            variable_doc=(
                'Further disks of the machine: a list of dicts with C(slot) (V(scsi1)), C(size) (V(32G), grow only) and '
                'optionally C(storage), C(cache), C(discard), C(ssd), C(iothread), C(backup). See '
                'P(puls.proxmox.pve_vm#module) O(puls.proxmox.pve_vm#module:disks).',
            ),
            build=True,
            template_spec=True,
        ),
    ),
    Option(
        'mount_points',
        'list',
        elements='dict',
        lxc=Lxc(
            CONFIG,
            doc=(
                'Mount points C(mpN) with a volume of their own. A new one is allocated; an existing one gets the '
                'declared path and grows to the declared size. Mount points not listed are left as they are.',
            ),
            suboptions=(
                Suboption('slot', 'int', doc=('The number N of C(mpN), 0 to 255.',), required=True),
                Suboption('path', 'str', doc=('Where the volume is mounted in the container, an absolute path.',), required=True),
                Suboption(
                    'storage',
                    'str',
                    doc=('Storage of a new volume; default O(storage).',),
                    variable_doc=('Storage of a new volume; default O(puls.proxmox.pve_container#module:storage).',),
                ),
                Suboption('size', 'str', doc=('Size of the volume, such as V(16G), in whole MiB; grow only.',), required=True),
            ),
        ),
    ),
    Option(
        'remove_undeclared_disks',
        'bool',
        default=False,
        qemu=Qemu(
            doc=(
                'Detach the disks of the VM that neither O(disks) names nor are its boot disk (CD-ROM drives, the '
                'cloud-init drive, the EFI disk and the TPM state are never touched).',
                'PVE keeps a detached disk\'s volume as an C(unusedN) entry of the VM\'s config; nothing is deleted. A '
                'running VM lets go of a SCSI or VirtIO disk at once with hotplug C(disk), of an IDE or SATA disk at its '
                'next boot.',
            ),
            variable='pve_remove_undeclared_disks',
            variable_doc=('Detach the disks of the machine that O(pve_disks) does not name (other than its boot disk); PVE keeps them as unused disks.',),
        ),
    ),
    Option(
        'bridge',
        'str',
        qemu=Qemu(
            doc=(
                "Bridge of the first network device (C(net0)), for example V(vmbr0). The device's MAC, model and "
                'other properties are kept. A VM without C(net0) gets a VirtIO device on V(vmbr0) unless this says '
                'otherwise.',
            ),
            variable='pve_bridge',
            variable_doc=('Bridge of the first network device, for example V(vmbr0).',),
            build=True,
            template_spec=True,
        ),
        lxc=Lxc(
            CONFIG,
            doc=('Bridge of the network device C(net0) (C(eth0)); a new one is on V(vmbr0).',),
        ),
    ),
    Option(
        'vlan',
        'int',
        qemu=Qemu(
            minimum=1,
            maximum=4094,
            meaning=' (an 802.1Q VLAN id)',
            doc=('VLAN tag (1-4094) of the first network device.',),
            variable='pve_vlan',
            variable_doc=('VLAN tag of the first network device.',),
            build=True,
            template_spec=True,
        ),
        lxc=Lxc(
            CONFIG,
            doc=('VLAN tag of C(net0).',),
        ),
    ),
    Option(
        'firewall',
        'bool',
        lxc=Lxc(
            CONFIG,
            doc=('The PVE firewall on C(net0).',),
        ),
    ),
    Option(
        'nets',
        'list',
        elements='dict',
        qemu=Qemu(
            doc=(
                'Network devices of the VM, each a dict. C(slot) (required) is its PVE key, C(net0)-C(net31); C(net0) only'
                ' when O(bridge) and O(vlan) are not declared, since they describe it.',
                'C(bridge), C(vlan) (1-4094, PVE\'s C(tag)), C(model) (V(virtio), V(e1000), V(vmxnet3), ...), C(firewall) '
                '(boolean) and C(mtu) (VirtIO only; V(1) takes the bridge\'s MTU) are set when given; the MAC PVE '
                'assigned and every other property are kept. A new device is VirtIO on V(vmbr0) unless it says '
                'otherwise.',
                'Devices the VM has and this list does not name are left alone.',
            ),
            variable='pve_nets',
            variable_doc=(
                'Network devices of the machine: a list of dicts with C(slot) (V(net1)) and optionally C(bridge), C(vlan),'
                ' C(model), C(firewall), C(mtu). See P(puls.proxmox.pve_vm#module) O(puls.proxmox.pve_vm#module:nets).',
            ),
            build=True,
            template_spec=True,
        ),
        lxc=Lxc(
            CONFIG,
            doc=(
                'Further network devices C(netN), or C(net0) when O(bridge), O(vlan), O(ip), O(gateway) and '
                'O(firewall) are not declared. Only the declared settings of a device are written; its MAC address '
                '(C(hwaddr)) and the rest stay as PVE has them. A new device is C(ethN) on V(vmbr0) unless declared '
                'otherwise.',
                'Devices not listed are left as they are. A running container takes the change at once.',
            ),
            variable_doc=(
                'Further network devices C(netN) (or C(net0) when the flat net0 options are not declared); only the '
                'declared settings are written, the MAC and the rest kept. Devices not listed are left as they are.',
            ),
            suboptions=(
                Suboption('slot', 'str', doc=('The device, V(net1) to V(net31) (or its number).',), required=True),
                Suboption('name', 'str', doc=('The interface name inside the container; a new device is C(ethN).',)),
                Suboption('bridge', 'str', doc=('Bridge of the device.',)),
                Suboption('vlan', 'int', doc=('VLAN tag.',)),
                Suboption(
                    'ip',
                    'str',
                    doc=('IPv4 address with its prefix (a bare address is /24), V(dhcp), or V(manual) (left to the container).',),
                    variable_doc=('IPv4 address with its prefix, V(dhcp), or V(manual).',),
                ),
                Suboption(
                    'gateway',
                    'str',
                    doc=('IPv4 gateway; only with a static O(nets[].ip) in the same entry. Never defaulted.',),
                    variable_doc=('IPv4 gateway; only with a static ip in the same entry.',),
                ),
                Suboption('firewall', 'bool', doc=('The PVE firewall on the device.',)),
                Suboption(
                    'mtu',
                    'int',
                    doc=("MTU of the interface, 64 to 65535; PVE refuses one above the bridge's.",),
                    variable_doc=('MTU of the interface, 64 to 65535.',),
                ),
                Suboption('rate', 'float', doc=('Rate limit in MB/s.',)),
            ),
        ),
    ),
    Option(
        'bios',
        'str',
        choices=('seabios', 'ovmf'),
        qemu=Qemu(
            doc=('Firmware: V(seabios) (BIOS, PVE\'s default) or V(ovmf) (UEFI; give it an O(efidisk)). Takes effect at the next boot.',),
            variable='pve_bios',
            variable_doc=('Firmware, V(seabios) or V(ovmf) (UEFI).',),
            build=True,
            template_spec=True,
            template_config=True,
        ),
    ),
    Option(
        'efidisk',
        'dict',
        qemu=Qemu(
            doc=(
                'The EFI disk (C(efidisk0)) that keeps the UEFI variables of O(bios=ovmf): a dict with C(storage) (else '
                'O(storage), else the boot disk\'s storage) and C(pre_enrolled_keys) (boolean: Microsoft and distribution '
                'Secure Boot keys enrolled). It is made with C(efitype=4m), which Secure Boot needs.',
                'A VM without one gets it; an existing EFI disk is kept as it is (its boot entries live there).',
            ),
            variable='pve_efidisk',
            variable_doc=('The EFI disk of a UEFI machine: a dict with C(storage) and C(pre_enrolled_keys).',),
            build=True,
            template_spec=True,
        ),
    ),
    Option(
        'tpm',
        'dict',
        qemu=Qemu(
            doc=(
                'The TPM state (C(tpmstate0)), for example for Windows 11: a dict with C(storage) (else O(storage), else '
                'the boot disk\'s storage) and C(version) (V(v2.0), the default, or V(v1.2)).',
                'A VM without one gets it. PVE cannot change the version of an existing TPM state, so another version is an error.',
            ),
            variable='pve_tpm',
            variable_doc=('The TPM state of the machine: a dict with C(storage) and C(version) (V(v2.0)).',),
            build=True,
            template_spec=True,
        ),
    ),
    Option(
        'serial',
        'str',
        qemu=Qemu(
            doc=(
                'The first serial port (C(serial0)): V(socket) (a console on PVE\'s terminal, which cloud images expect) or '
                'a host device such as V(/dev/ttyS0). An empty string removes it. Takes effect at the next boot.',
            ),
            variable='pve_serial',
            variable_doc=('The first serial port, V(socket) for a serial console.',),
            build=True,
            template_spec=True,
        ),
    ),
    Option(
        'vga',
        'str',
        qemu=Qemu(
            doc=(
                'The display (C(vga)): V(std), V(qxl), V(virtio), V(serial0) (the serial console as display), V(none), ...,'
                ' optionally with properties (V(std,memory=32)); properties the VM has and the value does not name are '
                'kept. An empty string removes the key (PVE\'s default display). Takes effect at the next boot.',
            ),
            variable='pve_vga',
            variable_doc=('The display, for example V(std) or V(serial0).',),
            build=True,
            template_spec=True,
            template_config=True,
        ),
    ),
    Option(
        'cdrom',
        'str',
        qemu=Qemu(
            doc=(
                'An ISO to insert into the VM\'s CD-ROM drive, as a volume V(STORAGE:iso/NAME.iso) (put it there with '
                'P(puls.proxmox.pve_iso#module)), for example an installer. An empty string ejects it.',
                'The drive is the VM\'s first CD-ROM drive that holds neither PVE\'s cloud-init drive nor the seed ISO of '
                'O(user_data); a VM without one gets one in the first free IDE or SATA slot (V(ide2) first). A running VM '
                'takes a new medium at once.',
            ),
            variable='pve_cdrom',
            variable_doc=('An ISO volume (V(local:iso/debian-12.iso)) in the machine\'s CD-ROM drive; an empty string ejects it.',),
            build=True,
        ),
    ),
    Option(
        'boot',
        'list',
        elements='str',
        qemu=Qemu(
            doc=(
                'The boot order: device keys, first tried first, for example V([ide2, scsi0]) to boot an installer ISO '
                'before the disk. Every device must exist on the VM (or be declared by this run), as PVE requires. Takes '
                'effect at the next boot.',
            ),
            variable='pve_boot',
            variable_doc=('The boot order, device keys such as V([ide2, scsi0, net0]).',),
            build=True,
            template_spec=True,
        ),
    ),
    Option(
        'ip',
        'str',
        qemu=Qemu(
            doc=(
                'IPv4 address of the first network device, set by cloud-init (C(ipconfig0)). V(127.0.0.5) (a /24), V(127.0.0.5/22), or V(dhcp).',
                'When not set and O(dns_domain) is, the address is looked up in DNS (see O(dns_domain)).',
                'When neither is set, C(ipconfig0) is not managed.',
                'Mutually exclusive with O(user_data).',
            ),
            variable='pve_ip',
            variable_doc=(
                'Address of the first network device, V(127.0.0.5), V(127.0.0.5/22) or V(dhcp).',
                'Without it and with O(pve_dns_domain), the address is looked up in DNS. Two machines with the same static address '
                'fail the run before any change.',
            ),
            build=True,
        ),
        lxc=Lxc(
            CONFIG,
            doc=('IPv4 address of C(eth0) with its prefix (V(127.0.0.5/24); a bare address is /24), or V(dhcp).',),
            variable_doc=('IPv4 address of C(eth0) with its prefix (a bare address is /24), or V(dhcp).',),
        ),
    ),
    Option(
        'gateway',
        'str',
        qemu=Qemu(
            doc=("IPv4 gateway for a static O(ip). Defaults to the address's first three octets and C(.1).",),
            variable='pve_gateway',
            variable_doc=('Gateway of a static O(pve_ip).',),
            build=True,
        ),
        lxc=Lxc(
            CONFIG,
            doc=('IPv4 gateway of a static O(ip); default the first address of its network ending in C(.1).',),
            variable_doc=('IPv4 gateway of a static O(puls.proxmox.pve_container#module:ip); default the first address of its network ending in C(.1).',),
        ),
    ),
    Option(
        'nameservers',
        'list',
        elements='str',
        qemu=Qemu(
            doc=('DNS servers (IP addresses) cloud-init configures in the guest. An empty list removes them.',),
            variable='pve_nameservers',
            variable_doc=('DNS servers cloud-init configures in the machine.',),
            build=True,
            template_spec=True,
        ),
        lxc=Lxc(
            CONFIG,
            doc=('DNS servers of the container (IP addresses); an empty list removes them.',),
        ),
    ),
    Option(
        'searchdomain',
        'str',
        qemu=Qemu(
            doc=('DNS search domain cloud-init configures in the guest. An empty string removes it.',),
            variable='pve_searchdomain',
            variable_doc=('DNS search domain cloud-init configures in the machine.',),
            build=True,
            template_spec=True,
        ),
        lxc=Lxc(
            CONFIG,
            doc=('DNS search domain; empty removes it.',),
        ),
    ),
    Option(
        'unprivileged',
        'bool',
        lxc=Lxc(
            CONFIG,
            doc=(
                'Whether the container is unprivileged; PVE creates unprivileged containers by default. It cannot '
                'change after creation, so a differing value is an error.',
            ),
        ),
    ),
    Option(
        'features',
        'list',
        elements='str',
        choices=FEATURES,
        lxc=Lxc(
            CONFIG,
            doc=(
                'The container features that are on, among V(nesting), V(keyctl) and V(fuse); the others of the three'
                ' are turned off. Only root@pam may set keyctl and fuse.',
            ),
        ),
    ),
    Option(
        'dns_domain',
        'str',
        env='PROXMOX_DNS_DOMAIN',
        qemu=Qemu(
            doc=(
                'DNS domain of the VMs. When O(ip) is not declared, C(NAME.DNS_DOMAIN) is looked up through '
                "O(dns_servers); an A record makes that the VM's static address; a name that does not exist (or has "
                "no A record) means DHCP. Any other DNS failure is an error, so a DNS outage never changes a VM's "
                'network.',
                'If not set, E(PROXMOX_DNS_DOMAIN) is used.',
            ),
            variable='pve_dns_domain',
            variable_doc=(
                'DNS domain of the machines; a machine without O(pve_ip) is looked up as C(NAME.DOMAIN).',
                'Default is the environment variable E(PROXMOX_DNS_DOMAIN).',
            ),
            build=True,
        ),
    ),
    Option(
        'dns_servers',
        'list',
        elements='str',
        env='PROXMOX_DNS_SERVERS',
        qemu=Qemu(
            doc=(
                'DNS servers to ask for O(dns_domain) lookups, as V(IP) or V(IP:PORT) (IPv6 as V([IP]:PORT)). The system resolver is never used.',
                'If not set, E(PROXMOX_DNS_SERVERS) is used (comma-separated).',
            ),
            variable='pve_dns_servers',
            variable_doc=(
                'DNS servers (V(IP) or V(IP:PORT)) for the O(pve_dns_domain) lookups.',
                'Default is the environment variable E(PROXMOX_DNS_SERVERS) (comma-separated).',
            ),
            build=True,
        ),
    ),
    Option(
        'ci_user',
        'str',
        qemu=Qemu(
            doc=('User cloud-init creates, whose O(ssh_keys) are authorized. An empty string removes the setting.',),
            variable='pve_ssh_user',
            build=True,
            template_spec=True,
        ),
    ),
    Option(
        'ci_password',
        'str',
        no_log=True,
        qemu=Qemu(
            doc=(
                'Password cloud-init sets for O(ci_user).',
                'PVE never returns it, so it is written only when the VM has no password set (at creation); changing '
                'it later is not detected. It never appears in the output or the diff.',
            ),
            variable='pve_ci_password',
            variable_doc=('Password cloud-init sets for O(pve_ssh_user). Never shown.',),
            build=True,
        ),
    ),
    Option(
        'password',
        'str',
        no_log=True,
        lxc=Lxc(
            CREATE,
            doc=('Root password, set when the container is created from an OS template. Never shown in output or diff, never compared afterwards.',),
        ),
    ),
    Option(
        'ssh_keys',
        'list',
        elements='str',
        no_log=False,
        qemu=Qemu(
            doc=(
                'OpenSSH public keys (the content of C(.pub) files) cloud-init authorizes for O(ci_user). Compared as'
                " keys, regardless of PVE's encoding. An empty list removes them.",
            ),
            variable='pve_ssh_keys',
            variable_doc=(
                "SSH public keys cloud-init authorizes for O(pve_ssh_user), who is then the machine's cloud-init user.",
                'Not written to a machine with O(pve_user_data), whose user-data brings its own users.',
            ),
            build=True,
        ),
        lxc=Lxc(
            CREATE,
            doc=(
                'SSH public keys for root, written into the container when it is created from an OS template. Not '
                'compared afterwards (PVE does not report them).',
            ),
        ),
    ),
    Option(
        'user_data',
        'str',
        no_log=True,
        qemu=Qemu(
            doc=(
                'Raw cloud-init user-data (C(#cloud-config), a C(#!) script, MIME multipart). It is delivered on a '
                'NoCloud seed ISO built by this module, whose C(instance-id) holds a hash of its content, so '
                "cloud-init runs it again when it changes. The ISO replaces PVE's own cloud-init drive, and is named "
                'C(puls-seed-NAME-HASH.iso) on O(user_data_storage). A changed user-data uploads a new ISO, attaches '
                'it and deletes the old one.',
                'Mutually exclusive with O(ip), O(gateway), O(nameservers), O(searchdomain), O(ci_user), '
                "O(ci_password) and O(ssh_keys), which live on PVE's cloud-init drive; put those settings into the "
                'user-data instead.',
                'It is never shown in the output or the diff.',
            ),
            variable='pve_user_data',
            variable_doc=(
                "Raw cloud-init user-data, delivered on a NoCloud seed ISO in place of PVE's cloud-init drive. Never shown.",
                'The machine then gets neither O(pve_ssh_user) nor O(pve_ssh_keys) as cloud-init settings; authorize a key in the user-data to provision it.',
            ),
            build=True,
            template_spec=True,
            manifest_field='userData',
            manifest_rank=6,
        ),
    ),
    Option(
        'user_data_storage',
        'str',
        qemu=Qemu(
            doc=(
                'Storage with content type C(iso) for the seed ISO of O(user_data). The seed stays attached to the VM.',
                'When not set, a seed already attached with the same content stays where it is; a new seed goes to '
                "the first shared storage (by name) with content C(iso) on the VM's node, else to C(local).",
                'A seed on C(local) or another non-shared storage blocks migration and HA relocation of the VM '
                '(Proxmox VE refuses to migrate a local CD-ROM image); set a shared storage here for VMs that must '
                'move.',
            ),
            variable='pve_user_data_storage',
            build=True,
        ),
    ),
    Option(
        'tags',
        'list',
        elements='str',
        qemu=Qemu(
            doc=(
                'Tags of the VM, compared as a set, as the cluster stores them: PVE lower-cases them unless the datacenter\'s'
                ' tag-style is case-sensitive, then they keep their spelling. The owner tag is always kept.',
                "When not set, the VM's tags are left alone except for adding the owner tag.",
            ),
            variable='pve_tags',
            variable_doc=('Tags of the machine (compared as a set; the owner tag is always kept).',),
            build=True,
        ),
        lxc=Lxc(
            CONFIG,
            doc=(
                "Tags of the container, compared as the cluster stores them (lower-cased unless the datacenter's "
                'tag-style is case-sensitive); the owner tag is always added.',
            ),
            variable_doc=('Tags of the container; the owner tag is always added.',),
        ),
    ),
    Option(
        'protection',
        'bool',
        qemu=Qemu(
            pve_key='protection',
            doc=(
                "PVE's protection flag, which blocks destroying the VM and removing its disks.",
                'A protected VM is never destroyed by O(state=absent); set this to V(false) first.',
            ),
            variable='pve_protected',
            variable_doc=("PVE's protection flag. The role never destroys a protected machine. Unset leaves the flag alone.",),
            manifest_field='protected',
            manifest_rank=10,
            manifest_extension=True,
        ),
        lxc=Lxc(
            CONFIG,
            doc=('PVE protection, which refuses removal of the container and its volumes.',),
        ),
    ),
    Option(
        'onboot',
        'bool',
        qemu=Qemu(
            pve_key='onboot',
            doc=('Start the VM when its node boots.',),
            variable='pve_onboot',
            variable_doc=('Start the VM when its node boots.',),
            manifest_field='onboot',
            manifest_rank=11,
            manifest_extension=True,
        ),
        lxc=Lxc(
            CONFIG,
            doc=('Start the container when its node boots.',),
        ),
    ),
    Option(
        'apply_mode',
        'str',
        choices=('report', 'reboot'),
        default='report',
        qemu=Qemu(
            doc=(
                'What to do with changes a running VM only takes at its next boot (hardware changes PVE keeps pending, cloud-init settings, a new seed ISO).',
                'V(report) lists them in RV(reboot_required) and leaves the VM running.',
                'V(reboot) regenerates the cloud-init drive and restarts the VM (graceful shutdown, then start).',
            ),
            variable='pve_apply_mode',
            variable_doc=('What to do with changes a running VM takes only at its next boot. V(report) lists them; V(reboot) restarts it.',),
            manifest_field='applyMode',
            manifest_rank=5,
        ),
        lxc=Lxc(
            CONTROL,
            doc=(
                'V(report) leaves changes that need a restart pending and lists them in RV(reboot_required); '
                'V(reboot) restarts a running container that has any.',
            ),
            variable='pve_apply_mode',
        ),
    ),
    Option(
        'owner_tag',
        'str',
        qemu=Qemu(
            doc=('Tag that marks VMs this module manages. It is put on every VM the module creates or adopts.',),
            variable='pve_owner_tag',
            build=True,
        ),
        lxc=Lxc(
            CONTROL,
            doc=('The tag marking containers this collection manages.',),
            variable='pve_owner_tag',
        ),
    ),
    Option(
        'adopt',
        'bool',
        default=False,
        qemu=Qemu(
            doc=('Take over an existing VM with this name that lacks the owner tag, adding the tag. Without it such a VM is refused.',),
            variable='pve_adopt',
            variable_doc=(
                "Take over an existing VM of this machine's name that lacks O(pve_owner_tag) (or whose owner record "
                'names another VMID). The owner tag and the owner record are then added, and the VM is converged as '
                'declared.',
                'Without it such a VM is never touched, and the run fails before any change, naming the VM and saying'
                ' how to adopt it (and when its Notes show that Puls provisioned it).',
            ),
            manifest_field='adopt',
            manifest_rank=12,
            manifest_extension=True,
        ),
        lxc=Lxc(
            CONTROL,
            doc=('Take over a container that lacks the owner tag (it is then added).',),
            variable='pve_adopt',
        ),
    ),
    Option(
        'shutdown_timeout',
        'int',
        qemu=Qemu(
            minimum=0,
            meaning=' (seconds)',
            doc=(
                'Seconds a graceful shutdown may take (for O(state=stopped), O(state=restarted), O(state=absent) and '
                'O(apply_mode=reboot)) before the VM is stopped forcibly.',
            ),
            variable='pve_shutdown_timeout',
            variable_doc=(
                'Seconds a graceful shutdown of the VM may take (stopped, restarted, destroyed, '
                "O(pve_apply_mode=reboot)) before it is stopped forcibly. Default is C(puls.proxmox.pve_vm)'s "
                'C(shutdown_timeout), 180.',
            ),
        ),
        lxc=Lxc(
            CONTROL,
            doc=('Seconds a shutdown waits for the container to stop before it is stopped by force.',),
        ),
    ),
    Option(
        'timeout',
        'int',
        qemu=Qemu(
            doc=("Seconds to wait for each PVE task (a clone, an import, a start, a destroy) and for a new VM's lock to clear.",),
            variable='pve_timeout',
            variable_doc=(
                'Seconds to wait for each PVE task of the VM (a clone, an import, a start, a destroy) and for a new '
                "VM's lock to clear. Default is C(puls.proxmox.pve_vm)'s C(timeout), 600.",
            ),
        ),
        lxc=Lxc(
            CONTROL,
            doc=(
                'Seconds to wait for each PVE task.',
                'A clone also waits up to this long for its turn, since PVE copies a container one clone at a time '
                '(it locks the source for each copy); clones of one template by parallel forks of this controller '
                'take turns.',
            ),
            variable_doc=('Seconds to wait for each PVE task; a clone also waits up to this long for its turn (PVE copies a container one clone at a time).',),
        ),
    ),
    Option(
        'agent_timeout',
        'int',
        qemu=Qemu(
            doc=(
                "How long after the VM's boot, in seconds, its guest agent may take to report the address of a DHCP "
                "VM. A VM that has been running longer is asked once. Nothing is asked when the VM's config does not "
                'enable the agent.',
                'No address is not an error; RV(address) is then null and a warning says why.',
            ),
            variable='pve_agent_timeout',
            variable_doc=(
                "How long after the VM's boot, in seconds, its guest agent may take to report the address of a DHCP "
                "VM. Default is C(puls.proxmox.pve_vm)'s C(agent_timeout), 120.",
            ),
        ),
    ),
)


def options_of(kind: str) -> tuple[Option, ...]:
    """The options that apply to a guest of ``kind``, in their declared order."""
    return tuple(option for option in OPTIONS if option.mapping(kind) is not None)


VM_OPTIONS = options_of(QEMU)
CT_OPTIONS = options_of(LXC)
OPTIONS_BY_NAME = {option.name: option for option in OPTIONS}


def role_given(kind: str, declared: Mapping[str, Any], selected: Callable[[Any], bool] = lambda mapping: True) -> dict[str, Any]:
    """The options of ``kind`` the role sets from its own variables, from those that are defined (``declared``, by
    name): each option of a ``selected`` mapping with a variable."""
    return {
        option.name: declared[variable]
        for option in options_of(kind)
        if (mapping := option.mapping(kind)) is not None and (variable := mapping.variable) is not None and variable in declared and selected(mapping)
    }


def role_variables(purpose: str) -> tuple[str, ...]:
    """The role variables that ``role_options(purpose, ...)`` reads."""
    wanted = {'machine': lambda qemu: True, 'build': lambda qemu: qemu.build, 'template_spec': lambda qemu: qemu.template_spec}[purpose]
    names = [option.qemu.variable for option in VM_OPTIONS if option.qemu and option.qemu.variable and wanted(option.qemu)]
    # The cloud-init user is written by what it is for (see machine_options), user-data brings its own.
    return tuple(dict.fromkeys(names + ['pve_ci_password', 'pve_ssh_keys', 'pve_user_data']))


def role_options(purpose: str, declared: Mapping[str, Any]) -> dict[str, Any]:
    """What the role gives for ``purpose``, from the role variables that are defined (``declared``, by name)."""
    return {'machine': machine_options, 'build': build_options, 'template_spec': template_spec}[purpose](declared)


def machine_options(declared: Mapping[str, Any]) -> dict[str, Any]:
    """pve_vm's options for a machine (roles/reconcile/tasks/vm.yml, and pve_fleet_info's plan of it)."""
    options = role_given(QEMU, declared)
    options['state'] = 'started' if declared.get('pve_power') == 'running' else 'stopped'
    # The cloud-init user is managed with what it is for (keys, a password); raw user-data brings its own users, so
    # the cluster-wide user and keys are not written to such a VM (pve_vm refuses the combination).
    has_login = 'pve_ssh_keys' in declared or 'pve_ci_password' in declared
    if 'pve_user_data' in declared or not has_login:
        options.pop('ci_user', None)
    if 'pve_user_data' in declared:
        options.pop('ssh_keys', None)
    return options


def build_options(declared: Mapping[str, Any]) -> dict[str, Any]:
    """pve_vm's options for a template's build VM, before the bake's own (name, state, VMID, tags, a temporary key)."""
    options = role_given(QEMU, declared, lambda qemu: qemu.build)
    if 'pve_user_data' in declared:  # user-data brings its own users
        options.pop('ci_user', None)
    return options


def template_spec(declared: Mapping[str, Any]) -> dict[str, Any]:
    """What enters a template's spec hash, by variable name without the prefix (the bake adds ``generalize``)."""
    return {
        variable[len(VARIABLE_PREFIX) :]: declared[variable]
        for option in VM_OPTIONS
        if option.qemu and option.qemu.template_spec and (variable := option.qemu.variable) is not None and variable in declared
    }


def template_config_keys() -> tuple[str, ...]:
    """Spec keys (option names) whose value a template's config still holds, for the rebuild reason "cores 2 -> 4"."""
    return tuple(option.name for option in VM_OPTIONS if option.qemu and option.qemu.template_config)


def manifest_fields() -> dict[str, Option]:
    """The proxmops manifest's plain spec fields, each the option it declares."""
    declared = [(option.qemu.manifest_rank, field, option) for option in VM_OPTIONS if option.qemu and (field := option.qemu.manifest_field)]
    return {field: option for _rank, field, option in sorted(declared, key=lambda item: item[0])}
