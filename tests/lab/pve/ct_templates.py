"""Container templates as pve-container makes them: the conversion's null answer and its failure on a storage without
the template feature, and a linked clone's volumes named after their base on ZFS and Ceph RBD (the
node's task list the collection watches the conversion in is tasks.py's).

- The conversion answers null: pve-container src/PVE/API2/LXC.pm ``template`` (``returns => { type => 'null' }``) forks
  the ``vztemplate`` worker inside the config lock and returns undef; the worker keeps the lock until it ends (it
  inherits the lock file's descriptor: pve-common src/PVE/RESTEnvironment.pm fork_worker closes only the standard
  streams, src/PVE/Tools.pm lock_file holds an flock on it). fakepve answers the UPID and runs the task unlocked.
- In that worker src/PVE/LXC.pm ``template_create`` dies "Template feature is not available for 'VOLID'" before it
  converts anything when a volume's storage lacks the feature: thick LVM (pve-storage src/PVE/Storage/LVMPlugin.pm
  volume_has_feature, its ``template`` entry commented out); fakepve converts on every storage.
- A linked clone's volume on ZFS and Ceph RBD is ``BASE/NAME`` (pve-storage src/PVE/Storage/ZFSPoolPlugin.pm and
  RBDPlugin.pm ``clone_image`` return "$basename/$name"): ``tank:basevol-200-disk-0/subvol-201-disk-0`` for a
  container on ZFS (ZFSPoolPlugin.pm create_base names its base ``basevol-``). fakepve names it plainly. Destroying a
  template whose base such a volume names fails in its task: src/PVE/LXC.pm destroy_lxc_container ->
  delete_mountpoint_volume -> pve-storage src/PVE/Storage.pm vdisk_free, "base volume 'NAME' is still in use by linked
  clones" (volume_is_base_and_used; never on LVM-thin, whose names do not tell).
"""

from fakepve.lxc import print_mount, to_base
from fakepve.model import PveError, TaskError

from .disks import BASE_IN_NAME

# pve-storage volume_has_feature: the storage types without the template feature.
TEMPLATE_LESS_TYPES = ('lvm',)


def base_name(volume):
    """The name a linked clone's volume is made after: the last part of its base's (parse_volname's name), as a
    template made from a linked clone has ``basevol-100-disk-0/basevol-162-disk-0`` and its clones
    ``basevol-162-disk-0/subvol-163-disk-0`` (pve-storage ZFSPoolPlugin.pm and RBDPlugin.pm parse_volname,
    clone_image; Storage.pm volume_is_base_and_used compares that name)."""
    return volume.partition(':')[2].rsplit('/', 1)[-1]


class CtTemplatesMixin:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # VMID of a linked clone being made -> its source container, whose base volumes its volumes are named after.
        self._ct_linked_sources = {}

    def _storage_type(self, volume):
        return self.storages.get(volume.split(':', 1)[0], {}).get('type', 'dir')

    # ------------------------------------------------------------------ the conversion

    async def _lxc_template(self, user, v):
        ct = self._find_ct(v['node'], v['vmid'])
        await self._config_lock(ct)
        try:
            self._ct_check_lock(ct)
            if ct.snapshots:
                raise PveError(500, 'unable to create template, because CT contains snapshots')
            if ct.template:
                raise PveError(500, "you can't convert a template to a template")
            if ct.status == 'running':
                raise PveError(500, "you can't convert a CT to template if the CT is running")
        except PveError:
            self.release(ct, 'config')
            raise

        async def body():
            try:
                await self.pause(self.ct_secs['template'])
                volumes = list(ct.volumes())
                for _key, mount in volumes:
                    if self._storage_type(mount['volume']) in TEMPLATE_LESS_TYPES:
                        raise TaskError(f"Template feature is not available for '{mount['volume']}'")
                for key, mount in volumes:
                    # vdisk_create_base: vm-N-disk-M becomes base-N-disk-M, a ZFS subvol-N-disk-M basevol-N-disk-M.
                    mount['volume'] = to_base(mount['volume'])
                    ct.config[key] = print_mount(mount, key == 'rootfs')
                ct.config['template'] = 1
            finally:
                self.release(ct, 'config')

        await self._ct_task(ct, 'vztemplate', user, body, lock=False)
        return None

    # ------------------------------------------------------------------ linked clones and their base

    async def _lxc_clone(self, user, v):
        source = self._find_ct(v['node'], v['vmid'])
        full = v.get('full')
        linked = not (str(full) in ('1', 'true', 'True') if full is not None else not source.template)
        if linked:
            self._ct_linked_sources[int(v['newid'])] = source
        try:
            return await super()._lxc_clone(user, v)
        except PveError:
            self._ct_linked_sources.pop(int(v['newid']), None)
            raise

    def _name_after_base(self, source, clone):
        """Each volume of a linked clone on ZFS or RBD, renamed BASE/NAME after the source's volume of its key."""
        bases = dict(source.volumes())
        for key, mount in list(clone.volumes()):
            base = bases.get(key)
            if base is None or self._storage_type(mount['volume']) not in BASE_IN_NAME:
                continue
            storage, _colon, name = mount['volume'].partition(':')
            mount['volume'] = f"{storage}:{base_name(base['volume'])}/{name}"
            clone.config[key] = print_mount(mount, key == 'rootfs')

    def _base_users(self, template):
        """The volumes of other containers named after a base volume of ``template`` (volume_is_base_and_used: the
        base's own name, whatever base it was itself made from)."""
        bases = [mount['volume'] for _key, mount in template.volumes() if self._storage_type(mount['volume']) in BASE_IN_NAME]
        return [
            (base, mount['volume'])
            for base in bases
            for ct in self.cts
            if ct is not template
            for _key, mount in ct.volumes()
            if mount['volume'].startswith(f"{base.partition(':')[0]}:{base_name(base)}/")
        ]

    async def task(self, node, ttype, tid, user, body, vm=None, lock=True, log=()):
        if ttype == 'vzclone' and vm is not None:
            clone, copy = vm, body

            async def body():
                try:
                    note = await copy()
                finally:
                    source = self._ct_linked_sources.pop(clone.vmid, None)
                if source is not None:
                    self._name_after_base(source, clone)
                return note

        elif ttype == 'vzdestroy' and vm is not None and vm.template:
            template, destroy = vm, body

            async def body():
                used = self._base_users(template)
                if used:
                    raise TaskError(f"base volume '{used[0][0].partition(':')[2]}' is still in use by linked clones")
                return await destroy()

        return await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)
