"""Where a clone may go, and a VMID another node holds, as PVE decides them.

- qemu-server src/PVE/API2/Qemu.pm, clone_vm, `$load_and_check`: with a `target` node, a `storage` must be enabled
  on both nodes (pve-storage src/PVE/Storage.pm, storage_check_enabled) and shared ("can't clone to non-shared
  storage"); then `$check_storage_access_clone` counts every drive of the source but `none` and a physical `cdrom`:
  an ISO in a CD-ROM drive and the cloud-init drive count like disks, and one on a storage without `shared` makes
  the VM local ("can't clone VM to node ... (VM uses local storage)").
- clone_vm checks only `-f` of the new config on the source's own node before forking; a VMID held on another node
  passes, and the worker's write of the temporary config (pve-common src/PVE/File.pm, file_set_contents) is refused
  by pmxcfs (pve-cluster src/pmxcfs/memdb.c, memdb_rename: vmlist_different_vm_exists -> EEXIST): the task fails
  with "close (rename) atomic file '...' failed: File exists".
- A create (Qemu.pm create_vm -> pve-guest-common src/PVE/AbstractConfig.pm, create_and_lock_config) checks the
  cluster's vmlist (pve-cluster src/PVE/Cluster.pm, check_vmid_unused: "VM N already exists on node 'X'"). Only
  while another node's new config has not reached this node's vmlist yet does the write fail the pmxcfs way;
  `race_next_create` injects that race.
"""

from fakepve.model import PveError, TaskError
from fakepve.qemu import drives_of, is_cdrom, volume_ref
from fakepve.routing import die, split_list

from .config import normalize


def _conf_path(node, vmid):
    return f'/etc/pve/nodes/{node}/qemu-server/{vmid}.conf'


def file_exists_message(node, vmid):
    """PVE's text when pmxcfs refuses a VM config that another node holds (File.pm file_set_contents)."""
    return f"close (rename) atomic file '{_conf_path(node, vmid)}' failed: File exists"


class PlacementMixin:
    # node -> how many of the next creates or clones with a free VMID meet another controller's VM of that id on it.
    vmid_races = None

    def race_next_create(self, node='pve2', count=1):
        """The next `count` creates or clones with a free VMID lose a race: just before, another controller made a VM
        with that VMID on `node`, which the vmlist of the node asked has not seen yet."""
        if self.vmid_races is None:
            self.vmid_races = {}
        self.vmid_races[node] = self.vmid_races.get(node, 0) + count

    def _lose_race(self, node, vmid):
        """If a race is pending and vmid is free, another controller's VM now holds vmid on the other node; True."""
        for other, count in sorted((self.vmid_races or {}).items()):
            if count and other != node and self.guest(vmid) is None:
                self.vmid_races[other] = count - 1
                self.add_vm(vmid, f'other-controller-{vmid}', node=other)
                return True
        return False

    # -------------------------------------------------------------- create

    async def _qm_create(self, v, user):
        node, vmid = v['node'], int(v['vmid'])
        if self._lose_race(node, vmid):
            raise PveError(500, f'unable to create VM {vmid} - {file_exists_message(node, vmid)}')
        return await super()._qm_create(v, user)

    # --------------------------------------------------------------- clone

    def _shared_vm(self, config):
        """$check_storage_access_clone's answer: False if any drive but none / cdrom is on a non-shared storage."""
        for _key, volume, props in drives_of(config):
            if not volume or volume == 'none' or (is_cdrom(volume, props) and volume == 'cdrom'):
                continue
            sid = volume_ref(volume)[0]
            if sid is None:
                # A device path: parse_volume_id refuses it.
                raise die(f"unable to parse volume ID '{volume}'")
            if not self._store(sid).get('shared'):
                return False
        return True

    def _check_clone_target(self, v, node, target, source):
        """clone_vm's checks of a target node, in its order; fakepve's own checks fill the gaps between them."""
        storage = v.get('storage')
        if storage:
            store = self._check_enabled(storage, node)
            if 'images' not in split_list(store.get('content')):
                return  # fakepve: "does not support vm images"
            self._check_enabled(storage, target)
            if not store.get('shared'):
                return  # fakepve: "can't clone to non-shared storage"
        full = str(v['full']) in ('1', 'true') if v.get('full') is not None else not source.template
        if storage and not full:
            return  # fakepve: "parameter 'storage' not allowed for linked clones"
        snapname = v.get('snapname')
        if snapname and snapname not in source.snapshots:
            return  # fakepve: "snapshot ... does not exist"
        config = source.snapshots[snapname] if snapname else source.config
        if not self._shared_vm(config):
            raise die(f"can't clone VM to node '{target}' (VM uses local storage)")

    async def _qm_clone(self, v, user):
        v = normalize(v)
        node, vmid, newid = v['node'], int(v['vmid']), int(v['newid'])
        target = v.get('target')
        if v.get('storage') and v['storage'] in self.storages:
            # storage_check_enabled on the node the request runs on, with or without a target.
            self._check_enabled(v['storage'], node)
        if target and target not in (node, 'localhost') and target in self.nodes:
            self._check_clone_target(v, node, target, self.find(node, vmid))
        self._lose_race(node, newid)
        holder = self.guest(newid)
        if holder is None or holder.node == node:
            return await super()._qm_clone(v, user)
        # The early check looks only at this node's config file: the clone starts, and its worker fails.
        self.vms.remove(holder)
        self._held_elsewhere = getattr(self, '_held_elsewhere', {})
        self._held_elsewhere[newid] = holder.node
        try:
            return await super()._qm_clone(v, user)
        finally:
            self._held_elsewhere.pop(newid, None)
            if holder not in self.vms:
                self.vms.append(holder)

    async def task(self, node, ttype, tid, user, body, vm=None, lock=True, log=()):
        if ttype == 'qmclone' and vm is not None and vm.vmid in getattr(self, '_held_elsewhere', {}):
            body = self._refused_by_pmxcfs(body, node, vm)
        return await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)

    def _refused_by_pmxcfs(self, _body, node, new):
        """The clone worker: its write of the new config fails, nothing is copied."""
        self._held_elsewhere.pop(new.vmid)

        async def refused():
            if new in self.vms:
                self.vms.remove(new)
            raise TaskError(file_exists_message(node, new.vmid))

        return refused
