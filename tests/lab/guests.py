"""Lab guests: what each running VM or container is on the network, and its SSH endpoint.

The guests follow the model after every power task (LabPve.power_listeners), and a watcher polls it every
POLL_SECS for other changes (a VM seeded running, HA, a test changing the model). Each boot (a guest's
started_at) takes its user, keys and address from what the guest reads at boot. A VM applies its cloud-init
drive: a static ipconfig0 address, or a DHCP lease (ip=dhcp or no ipconfig0) that the guest agent reports when
agent is enabled. A container is root with the keys its root file system holds (LabPve.ct_authorized_keys), at the
address of net0's ip (a static CIDR, or a DHCP lease for its hwaddr), as pve-container configures eth0 at start
(src/PVE/LXC/Setup/Base.pm, setup_network). The SSH endpoint goes when the guest stops or is destroyed; a new
guest gets a new host key and an empty home.
"""

import asyncio
import collections
import ipaddress
import logging
import pathlib
import shutil
import urllib.parse

import asyncssh
from fakepve.lxc import FakeCt, split_props
from fakepve.qemu import NET_MODELS

from . import shims
from .addresses import is_loopback
from .pve.cloudinit import cloudinit_drive_key, cloudinit_values
from .ssh import SshEndpoint

POLL_SECS = 0.05
# The default user of an Ubuntu cloud image, when cloud-init names none.
DEFAULT_USER = 'ubuntu'
# A container's user: root, whose authorized keys the create wrote.
CONTAINER_USER = 'root'
log = logging.getLogger('lab.guests')

# What a guest took from its cloud-init drive at one boot. keys: the accepted public keys' blobs.
Boot = collections.namedtuple('Boot', 'started_at user keys address mac prefix')


class Guest:
    """One VMID's guest: its files, knobs and counters (lab.guest(vmid)). Knobs apply from the next boot
    (ssh_delay at once)."""

    def __init__(self, vmid, root, fleet):
        self.vmid = vmid
        self.root = pathlib.Path(root)
        self.home = self.root / 'home'
        self.bin = self.root / 'bin'
        self.cloud_init_state = self.root / 'cloud-init'
        # Its /etc/machine-id until a generalization empties it (lab/confine.py: HOME/.system/etc/machine-id).
        self.machine_id = f'{vmid:032x}'
        self._fleet = fleet
        # Knobs: seconds before cloud-init reports done (None: until finish_cloud_init()); report error instead;
        # seconds before SSH auth answers; seconds after boot before SSH listens (a slow boot).
        self.cloud_init_delay = 0.0
        self.cloud_init_error = False
        self.ssh_delay = 0.0
        self.ssh_listen_delay = 0.0
        # SSH connections accepted, and the commands run (None for an interactive shell), oldest first.
        self.connections = 0
        self.commands = []
        self.vm = None
        self.boot = None
        # The boot a hibernation saved, for the resume.
        self.saved_boot = None
        self.host_key = None
        self.endpoint = None
        # Why the guest has no SSH endpoint while running, if it has none.
        self.error = None
        self._cloud_init_timer = None
        self._cloud_init_outcome = 'done\n'
        self._late_listen = None

    @property
    def address(self):
        return self.boot.address if self.boot else None

    @property
    def user(self):
        return self.boot.user if self.boot else None

    @property
    def cloud_init_cleans(self):
        """The arguments of every `cloud-init clean` run in the guest."""
        try:
            return (self.cloud_init_state / 'clean.log').read_text().splitlines()
        except FileNotFoundError:
            return []

    def finish_cloud_init(self):
        """cloud-init of the current boot ends now (done, or error if cloud_init_error was set at boot)."""
        (self.cloud_init_state / 'result').write_text(self._cloud_init_outcome)

    def count_connection(self):
        self.connections += 1
        self._fleet.connections += 1

    def adopt(self, vm):
        """A new VM has this VMID: a fresh disk (home) and a new host key."""
        self.vm, self.boot, self.saved_boot, self.host_key, self.error = vm, None, None, None, None
        shutil.rmtree(self.root, ignore_errors=True)
        self.home.mkdir(parents=True)
        self.cloud_init_state.mkdir()
        shims.install(self.bin, self.cloud_init_state)

    async def power_off(self):
        if self._cloud_init_timer:
            self._cloud_init_timer.cancel()
            self._cloud_init_timer = None
        if self._late_listen:
            self._late_listen.cancel()
            self._late_listen = None
        if self.endpoint:
            await self.endpoint.stop()
            self.endpoint = None

    def _start_cloud_init(self):
        result = self.cloud_init_state / 'result'
        if result.exists():
            result.unlink()
        self._cloud_init_outcome = 'error\n' if self.cloud_init_error else 'done\n'
        delay = self.cloud_init_delay
        if delay is not None and delay <= 0:
            self.finish_cloud_init()
        elif delay is not None:
            self._cloud_init_timer = asyncio.get_running_loop().call_later(delay, self.finish_cloud_init)

    async def power_on(self, boot, port, resumed=False):
        """Boot: cloud-init starts over, and SSH listens on the guest's address; resumed (after hibernation), the boot
        runs on as it was saved, cloud-init's outcome with it."""
        self.boot, self.error = boot, None
        if not resumed:
            self._start_cloud_init()
        if boot.address is None:
            self.error = 'no address: net0 missing, or the DHCP pool is exhausted'
        elif not is_loopback(boot.address):
            self.error = f'{boot.address} is not a loopback address: the lab serves no SSH there'
        if self.error:
            return
        self.host_key = self.host_key or asyncssh.generate_private_key('ssh-ed25519')
        if self.ssh_listen_delay > 0:
            self._late_listen = asyncio.ensure_future(self._listen_later(self.ssh_listen_delay, boot, port))
            return
        await self._listen(boot, port)

    async def _listen_later(self, delay, boot, port):
        # Cancelled by power_off (also while it binds), so no listener outlives its boot.
        await asyncio.sleep(delay)
        await self._listen(boot, port)
        self._late_listen = None

    async def _listen(self, boot, port):
        endpoint = SshEndpoint(self, boot, port)
        try:
            await endpoint.start()
        except OSError as exc:
            self.error = f'SSH on {boot.address}:{port}: {exc}'
            log.warning('guest %s: %s', self.vmid, self.error)
            return
        self.endpoint = endpoint


def booted_at(vm):
    """When the guest's running boot began: its QEMU process's start, or the start a live migration carried over to
    a new process (pve/migration.py)."""
    return getattr(vm, 'guest_booted_at', None) or vm.started_at


def agent_enabled(config):
    """agent: 1 or enabled=1,... (fakepve's reading, which matches PVE's)."""
    return str(config.get('agent', '0')).split(',', maxsplit=1)[0].rsplit('=', maxsplit=1)[-1] in ('1', 'true', 'yes', 'on')


def net_mac(value):
    """The MAC of a net device (virtio=BC:24:11:..,bridge=vmbr0), or None."""
    _first, props = split_props(value or '')
    return next((mac for key, mac in props.items() if key in NET_MODELS or key == 'macaddr'), None)


def agent_answers(boot):
    """The guest agent's answers: network-get-interfaces reports lo and eth0 with the guest's address."""
    eth0 = {'name': 'eth0', 'hardware-address': (boot.mac or '').lower(), 'ip-addresses': []}
    if boot.address:
        eth0['ip-addresses'].append({'ip-address': boot.address, 'ip-address-type': 'ipv4', 'prefix': boot.prefix})
    lo = {'name': 'lo', 'hardware-address': '00:00:00:00:00:00', 'ip-addresses': [{'ip-address': '127.0.0.1', 'ip-address-type': 'ipv4', 'prefix': 8}]}
    return {'interfaces': [lo, eth0]}


def _public_keys(sshkeys):
    """The key blobs of sshkeys (percent-encoded, one key a line), as authorized_keys would take them."""
    blobs = set()
    for line in urllib.parse.unquote(sshkeys or '').splitlines():
        try:
            blobs.add(asyncssh.import_public_key(line.strip()).public_data)
        except (asyncssh.KeyImportError, ValueError):
            continue
    return frozenset(blobs)


class GuestFleet:
    """All guests of a lab and the watcher that boots and powers them off as the model's VMs change."""

    def __init__(self, pve, root, dhcp, ssh_port=22):
        self.pve = pve
        self.root = root
        self.dhcp = dhcp
        self.ssh_port = ssh_port
        self.guests = {}
        # Knob values (Guest attributes) every guest seen from now on starts with (lab/faults.py: a slow boot of a VM
        # that does not exist yet).
        self.new_guest_knobs = {}
        # SSH connections accepted by any guest.
        self.connections = 0
        self._watcher = None
        self._syncing = asyncio.Lock()

    def guest(self, vmid):
        if vmid not in self.guests:
            guest = self.guests[vmid] = Guest(vmid, pathlib.Path(self.root) / str(vmid), self)
            for knob, value in self.new_guest_knobs.items():
                setattr(guest, knob, value)
        return self.guests[vmid]

    async def start(self):
        shutil.rmtree(self.root, ignore_errors=True)
        await self.sync()
        self.pve.power_listeners.append(self.sync)
        self._watcher = asyncio.ensure_future(self._watch())

    async def stop(self):
        if self._watcher:
            self._watcher.cancel()
        for guest in self.guests.values():
            await guest.power_off()

    async def _watch(self):
        while True:
            await asyncio.sleep(POLL_SECS)
            try:
                await self.sync()
            except Exception:  # noqa: BLE001 - the watcher must outlive one bad VM
                log.exception('guest watcher')

    async def sync(self):
        async with self._syncing:
            await self._sync()

    async def _sync(self):
        vms = {vm.vmid: vm for vm in [*self.pve.vms, *self.pve.cts]}
        for vmid, guest in list(self.guests.items()):
            if guest.vm is not None and vms.get(vmid) is not guest.vm:
                await guest.power_off()
                guest.vm = None
        for vm in vms.values():
            guest = self.guest(vm.vmid)
            if guest.vm is not vm:
                guest.adopt(vm)
            if vm.status != 'running' or vm.template:
                if guest.endpoint or guest.boot:
                    await guest.power_off()
                    # Hibernated (qemu-server vm_suspend todisk locks it `suspended`), the guest is saved with its
                    # boot, which a resume runs on (pve/lifecycle.py).
                    guest.saved_boot = guest.boot if getattr(vm, 'lock', None) == 'suspended' else None
                    guest.boot = None
                continue
            if isinstance(vm, FakeCt):
                # A running container's new net0 address applies at once (pve-container src/PVE/LXC.pm update_net,
                # update_ipconfig): its endpoint moves there.
                boot = self._container_boot(vm)
                if guest.boot is None or (guest.boot.started_at, guest.boot.address) != (boot.started_at, boot.address):
                    await guest.power_off()
                    await guest.power_on(boot, self.ssh_port)
                continue
            if guest.boot is None or guest.boot.started_at != booted_at(vm):
                await guest.power_off()
                saved, guest.saved_boot = guest.saved_boot, None
                if saved is not None and saved.started_at == booted_at(vm):
                    await guest.power_on(saved, self.ssh_port, resumed=True)
                    continue
                boot = self._boot(vm)
                vm.agent = agent_answers(boot) if agent_enabled(vm.config) else None
                await guest.power_on(boot, self.ssh_port)

    def _boot(self, vm):
        """What the guest applies at boot from its cloud-init drive (the config, if it was never generated)."""
        if cloudinit_drive_key(vm.config):
            drive = getattr(vm, 'cloudinit_drive', None)
            values = cloudinit_values(vm.config) if drive is None else drive
        else:
            values = {}
        mac = net_mac(vm.config.get('net0'))
        _first, ipconfig = split_props(values.get('ipconfig0', ''))
        ip = ipconfig.get('ip', 'dhcp')
        if ip == 'dhcp':
            address, prefix = (self.dhcp.lease(mac) if mac else None), 24
        else:
            interface = ipaddress.ip_interface(ip)
            address, prefix = str(interface.ip), interface.network.prefixlen
        return Boot(booted_at(vm), values.get('ciuser') or DEFAULT_USER, _public_keys(values.get('sshkeys')), address, mac, prefix)

    def _container_boot(self, ct):
        """What a container is at start: root with its authorized keys, at net0's address."""
        _first, net = split_props(ct.config.get('net0', ''))
        mac = net.get('hwaddr')
        ip = net.get('ip')
        if ip == 'dhcp':
            address, prefix = (self.dhcp.lease(mac) if mac else None), 24
        elif ip:
            interface = ipaddress.ip_interface(ip)
            address, prefix = str(interface.ip), interface.network.prefixlen
        else:
            address, prefix = None, None
        keys = _public_keys(urllib.parse.quote(self.pve.ct_authorized_keys.get(ct.vmid, '')))
        return Boot(ct.started_at, CONTAINER_USER, keys, address, mac, prefix)
