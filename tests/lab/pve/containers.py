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
- Sizes: a new volume ``STORAGE:GiB`` is allocated at ``int(GiB * 1024) * 1024`` KiB, whole MiB rounded down
  (pve-container src/PVE/LXC.pm create_disks), which the config records as its ``size=``; on LVM (thin or not) the
  logical volume is that rounded up to whole 4 MiB extents (pve-storage src/PVE/Storage/LvmThinPlugin.pm alloc_image
  and LVMPlugin.pm volume_resize run lvcreate/lvextend with a size in KiB; LVM2 rounds a volume up to its volume
  group's extent size, 4 MiB by default: "Rounding up size to full physical extent"), so a volume can be larger than
  its config says. The storage's content (``GET .../storage/S/content/VOLUME``) shows the volume's size, and a
  resize compares the requested size with it, not with the config (src/PVE/API2/LXC.pm resize_vm: volume_size_info,
  "unable to shrink disk size", "disk is already at specified size").
- Clone: clone_vm holds the source's ``disk`` lock for the whole copy (src/PVE/API2/LXC.pm clone_vm: set_lock before
  the worker, remove_lock after the volumes are copied; fakepve models the lock), and the copy takes ``clone_secs``
  PVE seconds as a VM's does, so a second clone of the source meanwhile is refused "CT is locked (disk)"
  (pve-guest-common src/PVE/AbstractConfig.pm check_lock). A linked clone needs the storage's clone feature:
  clone_vm dies "Linked clone feature for 'VOLID' is not available" unless volume_has_feature('clone', ...,
  valid_target_formats raw and subvol) holds, which it does only on LVM-thin, ZFS, RBD and BTRFS (pve-storage
  src/PVE/Storage/Plugin.pm volume_has_feature refuses it for a directory, NFS or CIFS storage: "clone_image creates
  a qcow2 volume"; LVMPlugin.pm offers no clone). A full clone's volume is as large as its source's volume, which its
  config's size= records (src/PVE/LXC.pm copy_volume: ``$mp->{size} = volume_size_info(...)``); a linked clone keeps
  the source's size=.
"""

import re

import asyncssh
from fakepve.lxc import NEW_DISK, format_size, mount_type, parse_mount, parse_size, print_mount
from fakepve.model import PveError, TaskError

from .network import PHYSICAL_NICS, parse

# The container power tasks (pve-container src/PVE/API2/LXC/Status.pm: vzstart, vzstop, vzshutdown, vzreboot) and
# its destroy (LXC.pm destroy_vm: vzdestroy), after which a container may have started, stopped, or gone.
CT_POWER_TASKS = ('vzstart', 'vzstop', 'vzshutdown', 'vzreboot', 'vzdestroy')
MIB = 1024**2
# LVM2's default extent size (vgcreate), which PVE's installer keeps for its volume group.
LVM_EXTENT = 4 * MIB
LVM_TYPES = ('lvm', 'lvmthin')
# Storage types whose volume_has_feature offers 'clone' for a container's raw or subvol volume.
LINKED_CLONE_TYPES = ('lvmthin', 'zfspool', 'rbd', 'btrfs')


class ContainersMixin:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # VMID -> the text of the container's /root/.ssh/authorized_keys.
        self.ct_authorized_keys = {}
        # VMID -> why the create task of that container fails (update_pct_config in create_vm's worker).
        self._ct_create_failures = {}
        # new VMID of a full clone -> {mount key: its source volume's size}, for the clone's config (copy_volume).
        self._ct_clone_sizes = {}

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
        # The copy takes as long as a VM's (fakepve's own duration is 0); read at each clone, as tests set clone_secs.
        self.ct_secs['clone'] = self.clone_secs
        self._refuse_linked_clone(user, v)
        self._ct_clone_sizes[int(v['newid'])] = self._full_clone_sizes(v)
        try:
            upid = await super()._lxc_clone(user, v)
        finally:
            self._ct_clone_sizes.pop(int(v['newid']), None)  # the task took them, or none was started
        source = self.ct_authorized_keys.get(int(v['vmid']))
        if source is not None:
            self.ct_authorized_keys[int(v['newid'])] = source
        else:
            self.ct_authorized_keys.pop(int(v['newid']), None)
        return upid

    def _refuse_linked_clone(self, user, v):
        """clone_vm's linked-clone check of each volume. It comes after the source's lock, the new VMID and the
        request's own checks, which fakepve makes in PVE's order: a request failing one of those is left to fakepve."""
        source = self.ct(int(v['vmid']))
        if source is None or source.node != v['node'] or source.lock or self.guest(int(v['newid'])):
            return
        if (v.get('pool') and v['pool'] not in self.pools) or (v.get('target') and v['target'] not in self.nodes):
            return
        full = v.get('full')
        if v.get('storage') or v.get('snapname') or (bool(int(full)) if full is not None else not source.template):
            return
        for _key, mount in source.volumes():
            sid = mount['volume'].split(':')[0]
            if sid not in self.storages:
                return
            self.require(user, '/storage/' + sid, 'Datastore.AllocateSpace')
            if self.storages[sid].get('type', 'dir') not in LINKED_CLONE_TYPES:
                raise PveError(500, "Linked clone feature for '{0}' is not available".format(mount['volume']))

    def _full_clone_sizes(self, v):
        """The size of each source volume a full clone copies, by mount key; {} for a linked clone."""
        source = self.ct(int(v['vmid']))
        full = v.get('full')
        if source is None or not (bool(int(full)) if full is not None else not source.template):
            return {}
        config = source.snapshots.get(v['snapname'], source.config) if v.get('snapname') else source.config
        return {key: size for key, mount in source.volumes(config) if not key.startswith('unused') and (size := self.ct_volume_size(mount['volume']))}

    def _sized_like_the_source(self, body, new, sizes):
        """A full clone's config records each copied volume's size (copy_volume), once its worker has copied them."""

        async def run():
            note = await body()
            for key, size in sizes.items():
                if key in new.config:
                    new.config[key] = print_mount(dict(parse_mount(new.config[key]), size=format_size(size)), key == 'rootfs')
            return note

        return run

    # ------------------------------------------------------------- sizes

    def _realise(self, vmid, key, value, taken, default_storage=None):
        """create_disks: a new volume of int(GiB * 1024) * 1024 KiB, which the config's size= records."""
        realised = super()._realise(vmid, key, value, taken, default_storage)
        found = NEW_DISK.match(parse_mount(value).get('volume', ''))
        if not found:
            return realised
        mount = parse_mount(realised)
        size = int(float(found.group(2)) * 1024) * 1024 * 1024
        mount['size'] = format_size(size) if size else '0'
        return print_mount(mount, key == 'rootfs')

    def _volumes(self, name):
        """A container volume on LVM is its config's size rounded up to whole extents (the module docstring)."""
        volumes = super()._volumes(name)
        if self.storages[name].get('type', 'dir') not in LVM_TYPES:
            return volumes
        allocated = self.storages[name].get('volumes', {})
        for volname, volume in volumes.items():
            if volname not in allocated and self.ct(volume.get('vmid')) is not None and volume.get('size'):
                volumes[volname] = dict(volume, size=-(-int(volume['size']) // LVM_EXTENT) * LVM_EXTENT)
        return volumes

    def ct_volume_size(self, volid):
        """The size in bytes of a container's volume as its storage has it (volume_size_info), or None."""
        sid, _colon, volname = volid.partition(':')
        volume = self._volumes(sid).get(volname) if sid in self.storages else None
        return int(volume['size']) if volume and volume.get('size') else None

    async def _lxc_resize(self, user, v):
        """resize_vm compares the requested size with the volume's (volume_size_info), not with the config's size=,
        after the lock, privilege and digest checks: the lab refuses as PVE does, and hands fakepve (which compares
        with the config) the absolute size in bytes."""
        ct = self.ct(int(v['vmid']))
        text = str(v.get('size', ''))
        request = parse_size(text.lstrip('+'))
        if ct is None or ct.node != v['node'] or ct.lock or request is None or (v.get('digest') and v['digest'] != ct.digest()):
            return await super()._lxc_resize(user, v)
        volume = parse_mount(ct.config.get(v['disk'], '')).get('volume', '')
        size = self.ct_volume_size(volume) if volume and mount_type(volume) == 'volume' else None
        if size is None:
            return await super()._lxc_resize(user, v)
        self._check_modify_perm(user, ct.vmid, None, ct.config, {'disk': v['disk'], 'size': text}, [], ct.config.get('unprivileged'))
        self.require(user, '/storage/' + volume.split(':')[0], 'Datastore.AllocateSpace')
        new = size + request if text.startswith('+') else request
        if new < size:
            raise PveError(500, 'unable to shrink disk size')
        if new == size:
            raise PveError(500, 'disk is already at specified size')
        return await super()._lxc_resize(user, dict(v, size=str(new)))

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
        sizes = self._ct_clone_sizes.pop(vm.vmid, None) if ttype == 'vzclone' and vm is not None else None
        if sizes:
            body = self._sized_like_the_source(body, vm, sizes)
        problem = self._ct_create_failures.pop(int(tid), None) if ttype == 'vzcreate' and vm is not None else None
        if problem:

            async def failing():
                self._drop(vm)
                raise TaskError(f'unable to create CT {tid} - {problem}')

            body = failing

        return await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)
