"""HA-managed VMs as PVE runs them: the HA resources API (pve-ha-manager PVE/API2/HA/Resources.pm) and the power calls
it turns into requests to the HA manager (qemu-server PVE/API2/Qemu.pm vm_start, vm_stop, vm_shutdown).

For a VM in /etc/pve/ha/resources.cfg, start, stop and shutdown only queue a request: the API answers with an
`hastart` or `hastop` task that ends at once with OK, before the VM changes state. The HA stack acts a few seconds
later (`ha_delay` PVE seconds, fakepve's knob): the node's LRM starts the VM through vm_start (a `qmstart` task), stops
it through vm_shutdown with forceStop and the request's timeout, or through vm_stop for a timeout of 0
(pve-ha-manager PVE/HA/Resources/PVEVM.pm start and shutdown). A reboot is not routed through HA (vm_reboot).
"""

import asyncio
import re
import time

from fakepve.model import TaskError
from fakepve.routing import die, param_error

RESOURCES = '/cluster/ha/resources'
RESOURCE = '/cluster/ha/resources/{sid}'
# The LRM runs the guest's power tasks as root@pam (the pve-ha-lrm service).
LRM_USER = 'root@pam'
# PVE::API2::Qemu vm_shutdown: the HA request's timeout when none is given.
DEFAULT_SHUTDOWN_TIMEOUT = 60
STATES = ('started', 'stopped', 'enabled', 'disabled', 'ignored')


class HaMixin:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # sid ('vm:120') -> the resource's options as resources.cfg keeps them (state, comment, max_restart, ...).
        self.ha_resources = {}

    def _routes_lab_ha(self):
        return [
            ('GET', RESOURCES, self._lab_ha_list),
            ('POST', RESOURCES, self._lab_ha_create),
            ('GET', RESOURCE, self._lab_ha_read),
            ('DELETE', RESOURCE, self._lab_ha_delete),
        ]

    # ------------------------------------------------------------ resources

    def _ha_sid(self, sid):
        """PVE::HA::Config::parse_sid: 'vm:120', or a bare VMID typed by the guest it names."""
        if re.fullmatch(r'\d+', str(sid)):
            if self.vm(int(sid)) is None:
                raise die(f'unable to detect SID from VMID - VM/CT {sid} does not exist')
            return f'vm:{sid}'
        found = re.fullmatch(r'(\S+):(\S+)', str(sid))
        if not found:
            raise die(f"unable to parse service id '{sid}'")
        return sid

    def _ha_forget_destroyed(self):
        """destroy_vm with purge takes the VM out of resources.cfg (Qemu.pm destroy_vm; without purge it refuses)."""
        for sid in [sid for sid in self.ha_resources if self.vm(int(sid.split(':', 1)[1])) is None]:
            del self.ha_resources[sid]

    async def _lab_ha_list(self, v, user):
        self._ha_forget_destroyed()
        return [dict(options, sid=sid, type=sid.split(':')[0]) for sid, options in sorted(self.ha_resources.items())]

    async def _lab_ha_read(self, v, user):
        self._ha_forget_destroyed()
        sid = self._ha_sid(v['sid'])
        if sid not in self.ha_resources:
            raise die(f"no such resource '{sid}'")
        return dict(self.ha_resources[sid], sid=sid, type=sid.split(':')[0])

    async def _lab_ha_create(self, v, user):
        """Resources.pm create: the VM must exist; the CRM then brings it to the requested state."""
        self.need_quorum()
        sid = self._ha_sid(v['sid'])
        kind, name = sid.split(':', 1)
        if v.get('type') and v['type'] != kind:
            raise die('types does not match')
        if kind != 'vm':
            raise param_error(sid=f"the lab models HA for VMs only, not '{kind}'")
        vm = self.vm(int(name)) if name.isdigit() else None
        if vm is None:
            raise die(f"resource '{sid}' does not exist in cluster")
        self._ha_forget_destroyed()
        if sid in self.ha_resources:
            raise die(f"resource ID '{sid}' already defined")
        options = {k: val for k, val in v.items() if k not in ('sid', 'type')}
        state = options.setdefault('state', 'started')
        self.ha_resources[sid] = options
        if state == 'ignored':
            return None
        wanted = 'started' if state in ('started', 'enabled') else 'stopped'
        vm.ha_state = wanted if (vm.status == 'running') == (wanted == 'started') else 'request_' + wanted[:-2]
        if vm.ha_state != wanted:
            await self._ha_schedule(vm, wanted, DEFAULT_SHUTDOWN_TIMEOUT)
        return None

    async def _lab_ha_delete(self, v, user):
        self._ha_forget_destroyed()
        sid = self._ha_sid(v['sid'])
        if self.ha_resources.pop(sid, None) is None:
            raise die(f"cannot delete service '{sid}', not HA managed!")
        vm = self.vm(int(sid.split(':', 1)[1]))
        if vm is not None:
            vm.ha_state = None
        return None

    def _ha_managed(self, vm):
        """PVE::HA::Config::vm_is_ha_managed: in resources.cfg and not 'ignored'."""
        options = self.ha_resources.get(f'vm:{vm.vmid}')
        return options is not None and options.get('state') != 'ignored'

    # ------------------------------------------------------------ power calls

    async def _do_start(self, vm, user, p):
        if not self._ha_managed(vm):
            return await super()._do_start(vm, user, p)
        return await self._ha_request_task(vm, user, 'started', None)

    async def _do_stop(self, vm, user, p):
        if not self._ha_managed(vm):
            return await super()._do_stop(vm, user, p)
        if not p.get('skiplock'):
            self._check_lock(vm)
        if str(p.get('overrule-shutdown', '0')) in ('1', 'true'):
            raise param_error(**{'overrule-shutdown': 'Not applicable for HA resources.'})
        # vm_stop: 'ha-manager crm-command stop vm:N 0', a hard stop.
        return await self._ha_request_task(vm, user, 'stopped', 0)

    async def _do_shutdown(self, vm, user, p):
        if not self._ha_managed(vm):
            return await super()._do_shutdown(vm, user, p)
        self._need_running(vm)
        self._check_lock(vm)
        timeout = int(p['timeout']) if p.get('timeout') not in (None, '') else DEFAULT_SHUTDOWN_TIMEOUT
        return await self._ha_request_task(vm, user, 'stopped', timeout)

    async def _ha_request_task(self, vm, user, wanted, timeout):
        """The hastart/hastop task: it records the request and ends; the HA stack acts later."""
        verb = 'start' if wanted == 'started' else 'stop'

        async def body():
            self.ha_resources[f'vm:{vm.vmid}']['state'] = wanted
            if (vm.status == 'running') != (wanted == 'started'):
                vm.ha_state = 'request_' + verb
                await self._ha_schedule(vm, wanted, timeout)

        return await self.task(vm.node, 'ha' + verb, vm.vmid, user, body, lock=False, log=[f'Requesting HA {verb} for VM {vm.vmid}'])

    async def _ha_schedule(self, vm, wanted, timeout):
        """The HA stack acts in the background; in a lab without time (time_scale 0) at once, as fakepve does."""
        if self.time_scale:
            asyncio.ensure_future(self._ha_act(vm, wanted, timeout))
        else:
            await self._ha_act(vm, wanted, timeout)

    async def _ha_act(self, vm, wanted, timeout):
        """The CRM and LRM at work: after ha_delay, the power task PVEVM.pm runs, then the service state."""
        await self.pause(self.ha_delay)
        if vm not in self.vms or not self._ha_managed(vm):
            return
        if self.ha_resources[f'vm:{vm.vmid}'].get('state') not in (wanted, 'enabled' if wanted == 'started' else None):
            return  # a later request changed what is wanted
        if (vm.status == 'running') == (wanted == 'started'):
            vm.ha_state = wanted
            return
        if wanted == 'started':
            upid = await self.task(vm.node, 'qmstart', vm.vmid, LRM_USER, lambda: self._ha_start(vm), vm=vm)
        elif timeout:
            upid = await self.task(vm.node, 'qmshutdown', vm.vmid, LRM_USER, lambda: self._powerdown(vm, {'timeout': timeout, 'forceStop': 1}), vm=vm)
        else:
            upid = await self.task(vm.node, 'qmstop', vm.vmid, LRM_USER, lambda: self._ha_stop(vm), vm=vm)
        while self.tasks[upid]['status'] != 'stopped':
            await asyncio.sleep(0.01)
        vm.ha_state = wanted if self.tasks[upid]['exitstatus'] == 'OK' else 'error'

    async def _ha_start(self, vm):
        """QemuServer.pm vm_start, as fakepve's own start task runs it."""
        if vm.template:
            raise TaskError("you can't start a vm if it's a template")
        await self.pause(vm.start_secs)
        if vm.start_error:
            raise TaskError(vm.start_error)
        vm.apply_pending()
        vm.status = vm.qmpstatus = 'running'
        vm.started_at = time.time()

    async def _ha_stop(self, vm):
        await self.pause(vm.stop_secs)
        vm.status = vm.qmpstatus = 'stopped'
