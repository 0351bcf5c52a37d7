"""The Lab: LabPve, SSH guests, DNS and served files on one private event loop in a daemon thread."""

import asyncio
import atexit
import collections
import errno
import functools
import pathlib
import shutil
import tempfile
import threading

from . import seed
from .addresses import AddressBlock, next_block
from .certs import LabCa
from .dhcp import DhcpPool
from .dns import LabDns
from .files import ServedFiles
from .guests import GuestFleet
from .pve import LabPve

CALL_TIMEOUT = 60
# Blocks tried when another process already serves on one (outside a private network namespace).
BLOCK_ATTEMPTS = 5
Request = collections.namedtuple('Request', 'method path body')


@functools.cache
def process_ca():
    """A CA for labs started without one (python -m lab, a Lab outside pytest), removed at exit."""
    directory = tempfile.mkdtemp(prefix='lab-ca-')
    atexit.register(shutil.rmtree, directory, True)
    return LabCa.create(directory)


class Lab:
    """A lab cluster. Use as a context manager, or start() and stop().

    block: the '127.B.C' prefix of its addresses (default: the next free one of this process, see addresses.py).
    time_scale: real seconds per PVE second (0: tasks end before their request returns).
    clone_secs: PVE seconds a clone takes.
    """

    def __init__(self, state_dir, ca=None, block=None, time_scale=0.0, clone_secs=5, domain='lab.test', ssh_port=22):
        self.state_dir = pathlib.Path(state_dir).absolute()
        self.domain = domain
        self._ca = ca
        self._block = block
        self._time_scale = time_scale
        self._clone_secs = clone_secs
        self._ssh_port = ssh_port
        self._loop = None
        self._thread = None
        self.pve = None

    # ------------------------------------------------------------ lifecycle

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._ca = self._ca or process_ca()
        self.cafile = self._ca.copy_to(self.state_dir / 'ca.crt')
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name='lab', daemon=True)
        self._thread.start()
        try:
            for attempt in range(BLOCK_ATTEMPTS):
                try:
                    self._serve_on(AddressBlock(self._block or next_block()))
                    return self
                except OSError as exc:
                    self.call(self._unserve())
                    if exc.errno == errno.EACCES:
                        raise PermissionError(
                            exc.errno, 'the lab serves on ports 22, 53 and 80: run it as root, or in a private network namespace (unshare -rn)'
                        ) from exc
                    if self._block or exc.errno != errno.EADDRINUSE or attempt + 1 == BLOCK_ATTEMPTS:
                        raise
        except BaseException:
            self._halt()
            raise

    def _serve_on(self, block):
        self.block = block
        self.served = ServedFiles(block.files)
        self.pve = LabPve(block.api, self.served, clone_secs=self._clone_secs)
        self.pve.time_scale = self._time_scale
        self.token_secret = seed.seed(self.pve)
        self.dns = LabDns(block.dns, self.domain)
        self.dhcp_pool = DhcpPool(block.dhcp_range())
        self.guests = GuestFleet(self.pve, self.state_dir / 'guests', self.dhcp_pool, self._ssh_port)
        certfile, keyfile = self._ca.issue(self.state_dir, block.api)
        self.call(self._serve(certfile, keyfile))

    async def _serve(self, certfile, keyfile):
        await self.pve.start(certfile, keyfile)
        await self.dns.start()
        await self.served.start()
        await self.guests.start()

    async def _unserve(self):
        await self.guests.stop()
        await self.served.stop()
        await self.dns.stop()
        await self.pve.stop()
        # Tasks still running (a held lock, a long task) end with the lab.
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    def stop(self):
        if self._loop is None:
            return
        try:
            self.call(self._unserve())
        finally:
            self._halt()

    def _halt(self):
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CALL_TIMEOUT)
        if not self._thread.is_alive():
            self._loop.close()
        self._loop = None

    def call(self, work, timeout=CALL_TIMEOUT):
        """Run on the lab's loop and return the result: a coroutine (lab.call(pve.hold_config_lock(100, 30)))
        or a function (lab.call(pve.lose_quorum))."""

        async def run():
            result = work if asyncio.iscoroutine(work) else work()
            return await result if asyncio.iscoroutine(result) else result

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    # ------------------------------------------------------------ access

    @property
    def url(self):
        return self.pve.url

    user = seed.USER
    token_name = seed.TOKEN_NAME
    token_id = f'{seed.USER}!{seed.TOKEN_NAME}'

    @property
    def password(self):
        return self.pve.password

    @property
    def nodes(self):
        return sorted(self.pve.nodes)

    @property
    def env(self):
        """The collection's connection and cluster settings for this lab, as environment variables."""
        return {
            'PROXMOX_URL': self.url,
            'PROXMOX_USER': self.user,
            'PROXMOX_TOKEN_NAME': self.token_name,
            'PROXMOX_TOKEN_SECRET': self.token_secret,
            'PROXMOX_CA_PATH': str(self.cafile),
            'PROXMOX_DNS_SERVERS': self.dns.server,
            'PROXMOX_DNS_DOMAIN': self.domain,
            'PROXMOX_NODES': ','.join(self.nodes),
        }

    @property
    def gateway(self):
        """A gateway address for ipconfig0 in this lab's block (nothing listens there)."""
        return self.block.gateway

    def address(self, n):
        """The n-th (from 1) static address of this lab's block, free for a test to declare."""
        return self.block.static(n)

    def requests(self):
        """Every API request so far: (method, path, body), secrets redacted."""
        return [Request(method, path, body.decode('utf-8', 'replace')) for method, path, body in list(self.pve.requests)]

    def writes(self):
        """The requests that can change something: not GET or HEAD, and not a login (POST /access/ticket)."""
        return [r for r in self.requests() if r.method not in ('GET', 'HEAD') and not r.path.endswith('/access/ticket')]

    def serve(self, name, data):
        """Serve a file: returns (url, {'md5': ..., 'sha256': ..., ...})."""
        return self.served.serve(name, data)

    def volume_bytes(self, volid):
        """The bytes of an uploaded or downloaded file on a storage ('local:iso/seed.iso'); KeyError otherwise."""
        return self.call(lambda: self.pve.volume_bytes(volid))

    def guest(self, vmid):
        """The guest of a VMID (lab/guests.py Guest): home, connections, commands, knobs."""
        return self.call(lambda: self.guests.guest(vmid))

    def ssh_connections(self, vmid=None):
        """SSH connections accepted so far, by all guests or by one VMID's."""
        if vmid is None:
            return self.guests.connections
        return self.guest(vmid).connections
