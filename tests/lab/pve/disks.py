"""Disks as PVE allocates, imports, detaches and resizes them (qemu-server Qemu.pm create_disks, resize_vm;
QemuServer.pm vmconfig_register_unused_drive)."""

import re

from fakepve.lxc import SIZE_UNITS, format_size
from fakepve.model import PveError, TaskError
from fakepve.qemu import DRIVE_KEY, NEW_DISK, drives_of, is_cdrom, join_drive, split_drive, volume_ref
from fakepve.routing import die, param_error
from fakepve.storage import _is_file

from ..images import qcow2_virtual_size
from .cloudinit import CLOUDINIT_SIZE, CLOUDINIT_VOLUME, cloudinit_drive_key, drive_is_cloudinit
from .progress import convert_rows

# resize_vm's size: +N is relative; no unit means bytes.
RESIZE = re.compile(r'^(\+)?(\d+(?:\.\d+)?)([KMGT])?$')
OWNER = re.compile(r'(?:^|/)(?:vm|base)-(\d+)-[^/]*$')
# pve-edk2-firmware's OVMF_VARS files: 128 KiB for efitype 2m, 528 KiB for 4m.
EFIVARS_SIZE = {'2m': 128 * 1024, '4m': 528 * 1024}
# Storage types whose clone_image names a linked clone's volume "$basename/$name" (ZFSPoolPlugin, RBDPlugin).
BASE_IN_NAME = ('zfspool', 'rbd')


def disk_bytes(text):
    """A drive's size= ('3584M', '32G') in bytes; 0 when missing."""
    found = RESIZE.match(str(text or ''))
    return int(float(found.group(2)) * SIZE_UNITS.get(found.group(3), 1)) if found and not found.group(1) else 0


def prohibit_tpm_version_change(old, new):
    """qemu-server PVE/API2/Qemu.pm prohibit_tpm_version_change: the TPM state of a volume keeps its version (v1.2 unless
    given)."""
    if not old or not new:
        return
    (old_volume, before), (new_volume, after) = split_drive(old), split_drive(new)
    if old_volume == new_volume and before.get('version', 'v1.2') != after.get('version', 'v1.2'):
        raise PveError(500, 'cannot change TPM state version after creation')


class DisksMixin:
    # PVE seconds the disk copy of an import-from takes (scaled by time_scale), while its lines are logged.
    import_secs = 5

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # vmid -> the lines a create's imports log (import_lines), for its qmcreate task (lifecycle.py).
        self.create_import_lines = {}

    def _routes_lab_disks(self):
        return [('PUT', '/nodes/{node}/qemu/{vmid}/resize', self._lab_resize)]

    # ------------------------------------------------------ create_disks

    def _qm_check_drive(self, user, vmid, pool, key, value, default):
        volume, props = split_drive(value)
        source = props.get('import-from')
        if source is not None:
            self._check_import(key, volume, source)
        elif volume.endswith(':cloudinit'):
            self._qm_image_store(volume_ref(volume)[0] or default, user)
        return super()._qm_check_drive(user, vmid, pool, key, value, default)

    def _check_import(self, key, volume, source):
        """Qemu.pm check_drive_param and check_storage_access for import-from."""
        found = NEW_DISK.match(volume)
        if not found or float(found.group(2)) != 0:
            raise param_error(**{key: "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>"})
        sid, name = volume_ref(source)
        if sid is not None:
            vtype = self._parse_volname(self._store(sid), name)[0]
            if vtype not in ('images', 'import'):
                raise param_error(**{key: f"{source} has wrong type '{vtype}' - needs to be 'images' or 'import'"})

    def _qm_new_drive(self, vmid, key, value, default):
        volume, props = split_drive(value)
        if 'import-from' in props:
            return self._import_drive(vmid, volume, dict(props), default)
        if volume.endswith(':cloudinit'):
            return self._new_cloudinit_drive(vmid, key, volume, dict(props), default)
        if key == 'efidisk0' and NEW_DISK.match(volume):
            return self._new_efidisk(vmid, volume, dict(props), default)
        return super()._qm_new_drive(vmid, key, value, default)

    def _new_efidisk(self, vmid, volume, props, default):
        """qemu-server PVE/QemuServer/OVMF.pm create_efidisk: a copy of the OVMF vars template of the efitype (2m unless
        given, Drive.pm), whatever size was asked; a template with Microsoft's 2023 keys (pre-enrolled-keys) marks
        the disk ms-cert=2023k."""
        sid = NEW_DISK.match(volume).group(1) or default
        size = EFIVARS_SIZE[props.get('efitype', '2m')]
        volid, _fmt = self._qm_alloc(sid, vmid, props.pop('format', None), size)
        if props.get('pre-enrolled-keys') in ('1', 'true', 'yes', 'on'):
            props['ms-cert'] = '2023k'
        props['size'] = format_size(size)
        return join_drive(volid, props), [volid]

    async def _qm_create(self, v, user):
        vmid = int(v['vmid'])
        self.create_import_lines[vmid] = self._import_lines(v)
        try:
            return await super()._qm_create(v, user)
        finally:
            self.create_import_lines.pop(vmid, None)

    def _import_lines(self, params):
        """What a create's import-from drives print, in the order fakepve creates the drives (sorted keys).

        qemu-server src/PVE/API2/Qemu.pm create_disks: a PVE volume (the only source the lab imports from) goes
        through $import_from_volid to PVE::QemuServer::clone_disk, which prints ``create full clone of drive [NAME
        ](VOLID)``, NAME being the drive that holds the volume in its owner VM's config, if any; then
        PVE::QemuServer::QemuImage::convert prints ``transferred X of Y (P%)`` for the copy (progress.py
        convert_rows) of the source's size. A source that is not there fails before it prints anything."""
        lines = []
        for key in sorted(k for k in params if DRIVE_KEY.match(k)):
            source = split_drive(params[key])[1].get('import-from')
            if source is None:
                continue
            size = self._import_size(source)
            if size is None:
                break
            owner = OWNER.search(volume_ref(source)[1] or '')
            vm = self.vm(int(owner.group(1))) if owner else None
            drive = next((k for k, volume, _props in drives_of(vm.config) if volume == source), None) if vm is not None else None
            lines.append('create full clone of drive %s(%s)' % (drive + ' ' if drive else '', source))
            lines += convert_rows(size or 1 << 30)
        return lines

    def _import_size(self, source):
        """The (virtual) size of an import's source volume, None when it is not there."""
        sid, name = volume_ref(source)
        found = self._volumes(sid).get(name) if sid in self.storages else None
        if found is None:
            return None
        data = self.volume_data.get(source)
        return (qcow2_virtual_size(data) if data else None) or (len(data) if data else int(found.get('size') or 0))

    def _import_drive(self, vmid, volume, props, default):
        """The image is copied to a new disk of its (virtual) size; import-from does not stay in the config."""
        source = props.pop('import-from')
        size = self._import_size(source)
        if size is None:
            raise die(f"cannot import from '{source}' - volume '{source}' does not exist")
        volid, _fmt = self._qm_alloc(NEW_DISK.match(volume).group(1) or default, vmid, props.pop('format', None), size)
        self._qm_volume(volid)['imported_from'] = source
        props['size'] = format_size(size)
        return join_drive(volid, props), [volid]

    def _new_cloudinit_drive(self, vmid, key, volume, props, default):
        sid = volume_ref(volume)[0] or default
        if not sid:
            raise die('no storage ID specified (and no default storage)')
        attached = self._attached_cloudinit(vmid)
        if attached:
            raise die(f"{key} - cloud-init drive is already attached at '{attached}'")
        volid = self._alloc_cloudinit(sid, vmid, props.pop('format', None), key)
        props['media'] = 'cdrom'
        return join_drive(volid, props), [volid]

    def _attached_cloudinit(self, vmid):
        """The key of the VM's cloud-init drive: in its config, or allocated earlier in the same create."""
        vm = self.vm(vmid)
        if vm is not None:
            key = cloudinit_drive_key(dict(vm.config, **{k: v for k, v in vm.pending.items() if v}))
            if key:
                return key
        for store in self.storages.values():
            for name, vol in store.get('volumes', {}).items():
                if vol.get('vmid') == vmid and CLOUDINIT_VOLUME.search(':' + name):
                    return vol.get('drive', '?')
        return None

    def _alloc_cloudinit(self, sid, vmid, fmt, key):
        """vm-<vmid>-cloudinit (.qcow2 on a file storage), 4 MiB, as create_disks names it."""
        store = self._store(sid)
        volid, _fmt = self._qm_alloc(sid, vmid, fmt or ('qcow2' if _is_file(store) else None), CLOUDINIT_SIZE)
        name = volume_ref(volid)[1]
        ciname = re.sub(r'vm-\d+-disk-\d+', f'vm-{vmid}-cloudinit', name)
        volumes = store['volumes']
        if ciname in volumes:
            self._qm_free(volid)
            raise die(f"volume '{sid}:{ciname}' already exists")
        volumes[ciname] = dict(volumes.pop(name), drive=key)
        return f'{sid}:{ciname}'

    def _qm_alloc(self, sid, vmid, fmt, size, linked_from=None):
        volid, fmt = super()._qm_alloc(sid, vmid, fmt, size, linked_from)
        kind = self.storages[sid].get('type', 'dir')
        if linked_from and kind in BASE_IN_NAME:
            # ZFSPoolPlugin and RBDPlugin clone_image return "$basename/$name": the clone's volume names its base.
            # (fakepve already names a file storage's clone "$basevmid/$basename/$vmid/$name", Plugin.pm clone_image.)
            name = volume_ref(volid)[1]
            volumes = self.storages[sid]['volumes']
            volumes['{0}/{1}'.format(linked_from.split('/')[-1], name)] = volumes.pop(name)
            volid = '{0}:{1}/{2}'.format(sid, linked_from.split('/')[-1], name)
        if linked_from:
            # The base a linked clone uses ('<vmid>/base-<vmid>-disk-N'). On LVM-thin only the lab knows it:
            # LvmThinPlugin clone_image returns the plain vm-<vmid>-disk-<n> of a thin snapshot of the base LV.
            self._qm_volume(volid)['base'] = linked_from
        return volid, fmt

    def base_in_use(self, volid):
        """PVE::Storage::volume_is_base_and_used: a base volume whose name a linked clone's volume name carries.
        Never on LVM-thin: its volume names do not encode the base (pve-storage PVE/Storage.pm, the note above
        volume_is_base_and_used and vdisk_free: "LVM-thin allows deletion of still referenced base volumes")."""
        sid, name = volume_ref(volid)
        store = self.storages.get(sid, {})
        if store.get('type', 'dir') == 'lvmthin':
            return False
        base = name.split('/')[-1]
        return base.startswith('base-') and any(str(vol.get('base', '')).endswith('/' + base) for vol in store.get('volumes', {}).values())

    def linked_base(self, volid):
        """The base volume ('<vmid>/base-<vmid>-disk-N') a linked clone's volume was made from, also where PVE cannot
        tell (LVM-thin); None for any other volume. For tests."""
        record = self._qm_volume(volid)
        return record.get('base') if record else None

    def _allocate_drives(self, vm, user, updates):
        """create_disks for a config update: new disks, cloud-init drives and imports are allocated, as on create.
        Rewrites updates in place; returns the volume ids made."""
        made = []
        if 'tpmstate0' in updates:
            prohibit_tpm_version_change(vm.config.get('tpmstate0'), updates['tpmstate0'])
        try:
            for key in sorted(k for k in updates if DRIVE_KEY.match(k)):
                self._qm_check_drive(user, vm.vmid, None, key, updates[key], None)
                updates[key], volids = self._qm_new_drive(vm.vmid, key, updates[key], None)
                made.extend(volids)
        except PveError:
            for volid in made:
                self._qm_free(volid)
            raise
        return made

    # ------------------------------------------------------------ delete

    def _check_drive_deletes(self, vm, deletes):
        """update_vm: PVE::QemuConfig->check_protection before a drive or unused disk goes."""
        if str(vm.config.get('protection', 0)) not in ('1', 'True', 'true'):
            return
        for key in deletes:
            if DRIVE_KEY.match(key) and (key in vm.config or key in vm.pending):
                raise PveError(500, f"can't remove drive '{key}' - protection mode enabled")
            if re.fullmatch(r'unused\d+', key) and key in vm.config:
                raise PveError(500, f"can't remove unused disk '{vm.config[key]}' - protection mode enabled")

    def _detach_drives(self, vm, before, keys):
        """On a stopped VM, a removed or replaced drive's disk becomes unusedN, a cloud-init drive is freed, and
        a removed unusedN is freed (vmconfig_apply_pending, vmconfig_register_unused_drive)."""
        for key in keys:
            old = before.get(key)
            if old is None or split_drive(old)[0] == split_drive(vm.config.get(key) or '')[0]:
                continue
            volume, props = split_drive(old)
            if re.fullmatch(r'unused\d+', key) or drive_is_cloudinit(old):
                self._qm_free(volume)
            elif not is_cdrom(volume, props) and self._volume_owner(volume) == vm.vmid:
                n = 0
                while f'unused{n}' in vm.config:
                    n += 1
                vm.config[f'unused{n}'] = volume

    @staticmethod
    def _volume_owner(volume):
        found = OWNER.search(volume_ref(volume)[1])
        return int(found.group(1)) if found else None

    # ------------------------------------------------------------ resize

    async def _lab_resize(self, v, user):
        vm = self.find(v['node'], v['vmid'])
        self.need_quorum()
        disk, request = v['disk'], RESIZE.match(v['size'])

        async def body():
            if v.get('digest') and v['digest'] != vm.digest():
                raise TaskError('checksum mismatch (file change by other user?)')
            if not v.get('skiplock'):
                self._check_task_lock(vm)
            value = vm.config.get(disk)
            if value is None:
                raise TaskError(f"disk '{disk}' does not exist")
            volume, props = split_drive(value)
            if is_cdrom(volume, props):
                raise TaskError("you can't resize a cdrom")
            record = self._qm_volume(volume)
            size = int(record['size']) if record else disk_bytes(props.get('size'))
            new = int(float(request.group(2)) * SIZE_UNITS.get(request.group(3), 1)) + (size if request.group(1) else 0)
            if new < size:
                raise TaskError('shrinking disks is not supported')
            if new == size:
                return None
            if record:
                record['size'] = new
            props['size'] = format_size(new)
            vm.config[disk] = join_drive(volume, props)
            return None

        return await self.task(vm.node, 'resize', vm.vmid, user, body, vm=vm)

    def _check_task_lock(self, vm):
        if vm.lock:
            raise TaskError(f'VM is locked ({vm.lock})')
