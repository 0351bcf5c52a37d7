"""Faults the lab injects on a schedule drawn from a seed (tests/chaos/campaign.py, make chaos).

    driver = FaultDriver(lab, seed=7)
    faults = driver.plan(count=6, window=20)     # pure: kinds, start times, durations, drawn from the seed
    driver.start(faults)                         # each fault starts at its time on the lab's loop, and ends by itself
    ...                                          # run ansible-playbook
    driver.stop()                                # every fault still pending or active ends now
    driver.injected                              # Counter: faults applied, by kind (driver.hit: task errors met)

Times and durations are real seconds (the lab's PVE seconds are scaled by time_scale, which must be > 0: a lab
without time runs every task before its request returns, so nothing could hold a lock or hang for a while).
Which VM a fault hits is drawn with the schedule and resolved against the VMs that exist when it starts; a fault
that finds no VM to hit is skipped (driver.skipped). Which single requests a flaky network drops or hangs is up to
fakepve's own random generator and the timing of the clients.
"""

import asyncio
import collections
import dataclasses
import logging
import random

from fakepve.model import TaskError

log = logging.getLogger('lab.faults')

# (method, path suffix or schema template, catalogue error): API calls whose PVE task then ends in TASK ERROR.
TASK_ERRORS = (
    ('POST', '/status/start', 'qemu_exited_code'),
    ('POST', '/status/shutdown', 'quit_powerdown_failed'),
    ('POST', '/status/stop', 'quit_powerdown_failed'),
    ('POST', '/status/reboot', 'could_not_remove_reboot_request'),
    ('DELETE', '/nodes/{node}/qemu/{vmid}', 'failed_remove_config_file'),
)
# Real seconds each kind lasts: (shortest, longest).
DURATIONS = {
    'flaky_network': (3.0, 8.0),
    'config_lock': (2.0, 6.0),
    'backup_lock': (2.0, 6.0),
    'task_error': (5.0, 15.0),
    'revoked_tickets': (0.0, 0.0),
    'lost_quorum': (1.0, 4.0),
    'slow_shutdown': (5.0, 15.0),
    'slow_ssh': (3.0, 10.0),
    'slow_cloud_init': (5.0, 15.0),
}
KINDS = tuple(DURATIONS)
# A flaky network: this share of requests is dropped (connection reset), as many hang, each for HANG_SECS real
# seconds: well inside the collection's 30 s request timeout.
DROP_RATE = 0.1
HANG_RATE = 0.1
HANG_SECS = 2.0
# A slow shutdown: the guest would take this many PVE seconds, far beyond any shutdown timeout.
SLOW_SHUTDOWN_SECS = 100000
# Real seconds of SSH slowness: before auth answers; before cloud-init is done and before SSH listens after a boot.
SSH_DELAY = (1.0, 4.0)
CLOUD_INIT_DELAY = (3.0, 10.0)
SSH_LISTEN_DELAY = (2.0, 6.0)


@dataclasses.dataclass
class Fault:
    """One fault of a schedule: kind, start (real seconds after start()), duration, and draws for what it hits."""

    kind: str
    at: float
    secs: float
    pick: float
    variant: int
    detail: str = ''


class FaultDriver:
    def __init__(self, lab, seed):
        self.lab = lab
        self.random = random.Random(seed)
        self.injected = collections.Counter()
        self.skipped = collections.Counter()
        # Faults that were armed and then met their request (a task error answered a call), by kind.
        self.hit = collections.Counter()
        # Faults applied so far: (kind, detail) in the order they started.
        self.log = []
        self._running = []
        self._undo = {}

    @property
    def pve(self):
        return self.lab.pve

    # ------------------------------------------------------------ schedule

    def plan(self, count, window, kinds=KINDS):
        """count faults of kinds drawn from the seed, starting within window real seconds, sorted by start."""
        faults = []
        while len(faults) < count:
            kind = self.random.choice(list(kinds))
            shortest, longest = DURATIONS[kind]
            faults.append(
                Fault(
                    kind,
                    round(self.random.uniform(0, window), 2),
                    round(self.random.uniform(shortest, longest), 2),
                    self.random.random(),
                    self.random.randrange(1 << 16),
                )
            )
        return sorted(faults, key=lambda fault: fault.at)

    def start(self, faults):
        if not self.pve.time_scale:
            raise ValueError('faults need a lab with time (time_scale > 0)')
        self.lab.call(lambda: self._running.extend(asyncio.ensure_future(self._run(fault)) for fault in faults))

    def stop(self):
        """End every fault now: cancel those not started, undo those active."""
        self.lab.call(self._stop())

    async def _stop(self):
        for task in self._running:
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)
        self._running = []
        for undo in list(self._undo.values()):
            undo()
        self._undo = {}

    async def _run(self, fault):
        await asyncio.sleep(fault.at)
        undo = getattr(self, '_' + fault.kind)(fault)
        if asyncio.iscoroutine(undo):
            undo = await undo
        if undo is None:
            self.skipped[fault.kind] += 1
            return
        self.injected[fault.kind] += 1
        self.log.append((fault.kind, fault.detail))
        log.info('fault %s %s for %.1f s', fault.kind, fault.detail, fault.secs)
        key = object()
        self._undo[key] = undo
        # Cancelled (stop()): _stop() undoes it.
        await asyncio.sleep(fault.secs)
        self._undo.pop(key)()

    # ------------------------------------------------------------ targets

    def _vms(self, fault, unlocked=False):
        """The VMs (not templates) a fault may hit, oldest VMID first; unlocked: only those without a config lock."""
        vms = sorted((vm for vm in self.pve.vms if not vm.template), key=lambda vm: vm.vmid)
        if unlocked:
            vms = [vm for vm in vms if vm.lock is None and vm.lock_holder is None]
        return vms

    def _one_vm(self, fault, unlocked=False):
        vms = self._vms(fault, unlocked)
        if not vms:
            return None
        vm = vms[int(fault.pick * len(vms))]
        fault.detail = f'VM {vm.vmid}'
        return vm

    def _scaled(self, real_secs):
        """PVE seconds that last real_secs."""
        return real_secs / self.pve.time_scale

    # ------------------------------------------------------------ kinds: each applies and returns its undo (None: skipped)

    def _flaky_network(self, fault):
        self.pve.flaky_network(drop_rate=DROP_RATE, hang_rate=HANG_RATE, hang_secs=self._scaled(HANG_SECS), seed=fault.variant)
        fault.detail = f'{DROP_RATE:.0%} dropped, {HANG_RATE:.0%} hung {HANG_SECS:.0f} s'
        return self.pve.flaky_network

    async def _config_lock(self, fault):
        vm = self._one_vm(fault, unlocked=True)
        if vm is None:
            return None
        try:
            # Until undone (secs None); takes the lock at once or not at all.
            await self.pve.hold_config_lock(vm.vmid, None)
        except TaskError:
            return None
        return lambda: self.pve.release_config_lock(vm.vmid)

    def _backup_lock(self, fault):
        vm = self._one_vm(fault, unlocked=True)
        if vm is None:
            return None
        asyncio.ensure_future(self.pve.backup(vm.vmid, secs=self._scaled(fault.secs)))

        def undo():
            if vm.lock == 'backup':
                self.pve.unlock(vm.vmid)

        return undo

    def _task_error(self, fault):
        method, suffix, error = TASK_ERRORS[fault.variant % len(TASK_ERRORS)]
        self.pve.fail(method, suffix, error=error, times=1)
        fault.detail = f'{method} {suffix}: {error}'

        def undo():
            # fakepve drops the rule once it answered its one request.
            if self.pve.failures.pop((method, suffix), None) is None:
                self.hit['task_error'] += 1

        return undo

    def _revoked_tickets(self, fault):
        self.pve.revoke_tickets()
        fault.detail = 'every login ticket'
        return lambda: None

    def _lost_quorum(self, fault):
        self.pve.lose_quorum()
        fault.detail = 'cluster'
        return self.pve.regain_quorum

    def _slow_shutdown(self, fault):
        vms = self._vms(fault)
        if not vms:
            return None
        before = {vm: vm.shutdown_secs for vm in vms}
        for vm in vms:
            vm.shutdown_secs = SLOW_SHUTDOWN_SECS
        fault.detail = f'{len(vms)} VMs'

        def undo():
            for vm, secs in before.items():
                vm.shutdown_secs = secs

        return undo

    def _guest_knobs(self, fault, knobs):
        """Set knobs on every guest, and on guests of VMs made while the fault lasts; undo restores them."""
        fleet = self.lab.guests
        before = {guest: {knob: getattr(guest, knob) for knob in knobs} for guest in fleet.guests.values()}
        for guest in before:
            for knob, value in knobs.items():
                setattr(guest, knob, value)
        fleet.new_guest_knobs.update(knobs)

        def undo():
            for knob in knobs:
                fleet.new_guest_knobs.pop(knob, None)
            for guest, values in before.items():
                for knob, value in values.items():
                    setattr(guest, knob, value)
            # Guests first seen while the fault lasted go back to the defaults.
            for guest in set(fleet.guests.values()) - set(before):
                for knob in knobs:
                    setattr(guest, knob, 0.0)

        return undo

    def _slow_ssh(self, fault):
        delay = round(random.Random(fault.variant).uniform(*SSH_DELAY), 1)
        fault.detail = f'auth after {delay} s'
        return self._guest_knobs(fault, {'ssh_delay': delay})

    def _slow_cloud_init(self, fault):
        draw = random.Random(fault.variant)
        cloud_init, listen = round(draw.uniform(*CLOUD_INIT_DELAY), 1), round(draw.uniform(*SSH_LISTEN_DELAY), 1)
        fault.detail = f'SSH listens {listen} s and cloud-init is done {cloud_init} s after boot'
        return self._guest_knobs(fault, {'cloud_init_delay': cloud_init, 'ssh_listen_delay': listen})
