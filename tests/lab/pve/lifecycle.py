"""Clone, start, hibernation and destroy as PVE runs them, and the cloud-init drive's generation.

fakepve's handlers pass their worker bodies to task(); the lab wraps those bodies by task type:
qmclone (Qemu.pm clone_vm), qmstart and qmreboot (vm_start generates the cloud-init drive), qmdestroy
(QemuServer.pm destroy_vm).

Hibernation (qemu-server PVE/API2/Qemu.pm vm_suspend with `todisk`, a `qmsuspend` task; refused for an HA-managed VM,
"Cannot suspend HA managed VM to disk"): fakepve stops the VM and locks it `suspended`. A start of a VM so locked
resumes it (PVE/QemuServer.pm vm_start: `resume` for the lock; vm_start_nolock): the saved guest runs on in a new
QEMU process (its `uptime` restarts) with the boot it had, no pending change is applied (only `!$statefile &&
!$resume`), the cloud-init drive is regenerated all the same (apply_cloudinit_config runs without `$migratedfrom`),
the lock goes, and the task logs `Resumed VM, removing state`. POST .../status/resume of such a VM does the same in a
`qmresume` task (vm_resume: vm_start for a VM locked `suspended`); fakepve refuses it as not running.
"""

import time

from fakepve.model import PveError, TaskError
from fakepve.qemu import drives_of, is_cdrom, join_drive, split_drive, volume_ref

from .cloudinit import cloudinit_drive_key, cloudinit_pending, cloudinit_values, drive_is_cloudinit
from .config import PASSWORD_MASK
from .progress import convert_rows, write_rows

CLOUDINIT = '/nodes/{node}/qemu/{vmid}/cloudinit'
# Tasks after which a VM may have powered on or off, or gone.
POWER_TASKS = ('qmstart', 'qmreboot', 'qmreset', 'qmstop', 'qmshutdown', 'qmsuspend', 'qmresume', 'qmdestroy')
# What vm_start_nolock prints when it resumes a hibernated VM.
RESUMED = 'Resumed VM, removing state'


class LifecycleMixin:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # new VMID -> whether its clone is full (the request's `full`, else not for a template: Qemu.pm clone_vm).
        self.clone_full = {}

    async def task(self, node, ttype, tid, user, body, vm=None, lock=True, log=()):
        wrap = {'qmclone': self._cloning, 'qmstart': self._booting, 'qmreboot': self._booting, 'qmdestroy': self._destroying}.get(ttype)
        # The task's log, for a body that writes to it as time passes (progress.py).
        log_ref = {}
        if wrap is not None and vm is not None:
            body = self._cloning(body, tid, vm, log_ref) if ttype == 'qmclone' else wrap(body, tid, vm)
        if ttype == 'qmcreate' and self.create_import_lines.get(int(tid)):
            body = self._importing(body, self.create_import_lines.pop(int(tid)), log_ref)
        if ttype in POWER_TASKS:
            body = self._telling_power_listeners(body)
        upid = await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)
        log_ref['log'] = self.tasks[upid]['log']
        return upid

    def _importing(self, body, lines, log_ref):
        """A create's disk imports log their lines (disks.py import_lines) over import_secs before the VM is made."""

        async def run():
            await write_rows(self, log_ref, self.import_secs, lines)
            return await body()

        return run

    async def _qm_clone(self, v, user):
        source = self.vm(int(v['vmid']))
        full = v.get('full')
        self.clone_full[int(v['newid'])] = bool(int(full)) if full is not None else not (source and source.template)
        return await super()._qm_clone(v, user)

    def _telling_power_listeners(self, body):
        """The lab's guests follow a power change before its task ends (power_listeners: coroutine functions)."""

        async def run():
            try:
                return await body()
            finally:
                for listener in self.power_listeners:
                    await listener()

        return run

    # ------------------------------------------------------------- clone

    # A clone to another node: placement.py.

    def _cloning(self, body, source_vmid, new, log_ref):
        """The new config is written inside the worker (so a duplicate id can fail there), locked 'clone' while
        the disks copy for clone_secs, with clone_disk's lines in the task log (progress.py); the clone gets its own
        cloud-init drive."""
        self.vms.remove(new)
        source = self.vm(int(source_vmid))

        async def clone():
            # The worker runs under the source's shared config lock: it waits while another task holds the lock.
            holder = object()
            await self.acquire(source, holder)
            self.release(source, holder)
            if self._qm_taken(new.vmid):
                raise TaskError(f'unable to create VM {new.vmid}: config file already exists')
            self.vms.append(new)
            await write_rows(self, log_ref, self.clone_secs, self._clone_lines(source, self.clone_full.pop(new.vmid, True)))
            note = await body()
            if new in self.vms:
                try:
                    self._own_cloudinit(source, new)
                except PveError as e:
                    raise TaskError(f'clone failed: {e.message}') from e
            return note

        return clone

    def _clone_lines(self, source, full):
        """What clone_disk prints for each disk of the source (not a CD-ROM, not the cloud-init drive, which PVE
        allocates anew): its header, and for a full clone the copy's progress (QemuImage::convert)."""
        lines = []
        for key, volume, _props in drives_of(source.config, skip_cdrom=True) if source else ():
            sid, name = volume_ref(volume)
            if sid is None or drive_is_cloudinit(source.config[key]):
                continue
            lines.append('create {0} clone of drive {1} ({2})'.format('full' if full else 'linked', key, volume))
            if full:
                # A volume the lab holds no size for is copied as 1 GiB.
                lines += convert_rows(int((self._volumes(sid).get(name) or {}).get('size') or 0) or 1 << 30)
        return lines

    def _own_cloudinit(self, source, new):
        key = cloudinit_drive_key(new.config)
        if key is None:
            return
        volume, props = split_drive(new.config[key])
        volid = self._alloc_cloudinit(volume_ref(volume)[0], new.vmid, None, key)
        new.config[key] = join_drive(volid, props)
        # The copy holds what the source's drive held.
        new.cloudinit_drive = dict(getattr(source, 'cloudinit_drive', None) or {})

    # ------------------------------------------------------------- start

    def _booting(self, body, _vmid, vm):
        async def boot():
            note = await body()
            if vm.status == 'running':
                self.generate_cloudinit(vm)
                if note != RESUMED:
                    # A boot of the guest: no longer the one a live migration or a hibernation carried over.
                    vm.guest_booted_at = None
            return note

        return boot

    # ------------------------------------------------------- hibernation

    async def _do_suspend(self, vm, user, p):
        self._need_running(vm)
        if str(p.get('todisk', '0')) in ('1', 'true') and vm.ha_managed:
            raise PveError(500, 'Cannot suspend HA managed VM to disk')
        return await super()._do_suspend(vm, user, p)

    async def _do_start(self, vm, user, p):
        if vm.lock != 'suspended':
            return await super()._do_start(vm, user, p)
        return await self._resuming(vm, user, 'qmstart')

    async def _do_resume(self, vm, user, p):
        if vm.lock != 'suspended':
            return await super()._do_resume(vm, user, p)
        return await self._resuming(vm, user, 'qmresume')

    async def _resuming(self, vm, user, task_type):
        """vm_start of a hibernated VM: the guest's boot runs on in a new process, its pending changes still pending."""

        async def resume():
            await self.pause(vm.start_secs)
            if vm.start_error:
                raise TaskError(vm.start_error)
            vm.guest_booted_at = getattr(vm, 'guest_booted_at', None) or vm.started_at
            vm.lock = None
            vm.config.pop('lock', None)
            vm.status = vm.qmpstatus = 'running'
            vm.started_at = time.time()
            self.generate_cloudinit(vm)
            return RESUMED

        return await self.task(vm.node, task_type, vm.vmid, user, resume, vm=vm)

    def generate_cloudinit(self, vm):
        """Write the VM's cloud-init drive from its config, as a start or PUT .../cloudinit does; the record of
        changes not yet on the drive goes (qemu-server PVE/QemuServer/Cloudinit.pm apply_cloudinit_config drops
        the special section)."""
        if cloudinit_drive_key(vm.config):
            vm.cloudinit_drive = cloudinit_values(vm.config)
        vm.cloudinit_record = {}

    def cloudinit_regenerated(self, vmid):
        """True if the VM's cloud-init drive holds its current cloud-init options (regenerated since the last
        change); False if a PUT .../cloudinit or a restart is due."""
        vm = self.vm(vmid)
        return (getattr(vm, 'cloudinit_drive', None) or {}) == cloudinit_values(vm.config)

    # ----------------------------------------------------------- destroy

    def _destroying(self, body, _vmid, vm):
        async def destroy():
            volumes = [volume for _key, volume, props in drives_of(vm.config) if not is_cdrom(volume, props)]
            volumes += [vm.config[key] for key in vm.config if key.startswith('unused')]
            for volume in volumes:
                if self.base_in_use(volume):
                    # PVE's own wording ("cloned"), QemuServer.pm destroy_vm.
                    raise TaskError(f"base volume '{volume}' is still in use by linked cloned")
            return await body()

        return destroy

    # -------------------------------------------------------- cloudinit

    def _routes_lab_cloudinit(self):
        return [('GET', CLOUDINIT, self._lab_cloudinit_pending), ('PUT', CLOUDINIT, self._lab_cloudinit_update)]

    async def _lab_cloudinit_update(self, v, user):
        vm = self.find(v['node'], v['vmid'])
        self.need_quorum()
        self._check_lock(vm)
        self.generate_cloudinit(vm)
        return None

    async def _lab_cloudinit_pending(self, v, user):
        """qemu-server PVE/API2/Qemu.pm cloudinit_pending: built from the config and the record of the changes a
        running VM's config took since the drive was generated (``vm.cloudinit_record``, see cloudinit.py); a
        stopped VM's changes are not recorded (vmconfig_apply_pending), so nothing of them is listed pending."""
        vm = self.find(v['node'], v['vmid'])
        return cloudinit_pending(vm.config, getattr(vm, 'cloudinit_record', None) or {}, PASSWORD_MASK)
