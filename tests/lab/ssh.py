"""A lab guest's SSH server (asyncssh): public-key login for the cloud-init user, commands run for real
with /bin/sh in the guest's home, SFTP and scp. Enough for ansible-playbook over OpenSSH."""

import asyncio
import fcntl
import logging
import os
import posixpath
import re
import signal
import struct
import termios

import asyncssh

from lab.confine import confined

# What reading a session's input may raise besides data: asyncssh's out-of-band events.
CHANNEL_EVENTS = (asyncssh.TerminalSizeChanged, asyncssh.BreakReceived, asyncssh.SignalReceived)
# Commands still running this long after the guest's shell exits lose their terminal output.
PTY_DRAIN_SECS = 2
CHUNK = 65536
GUEST_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
# asyncssh logs every connection and channel at INFO.
logging.getLogger('asyncssh').setLevel(logging.WARNING)


def expand_home(text, user, home):
    """~user as the guest's passwd entry would expand it (the host has no such user), in a command or path."""
    return re.sub(rf'(?<![\w~/.-])~{re.escape(user)}(?=$|[/\s"\';&|)])', home, text)


class SshEndpoint:
    """One boot of one guest: listens on the guest's address until the guest stops."""

    def __init__(self, guest, boot, port):
        self.guest = guest
        self.boot = boot
        self.port = port
        self.connections = set()
        self.processes = set()
        self._server = None

    async def start(self):
        self._server = await asyncssh.create_server(
            lambda: _GuestServer(self),
            self.boot.address,
            self.port,
            server_host_keys=[self.guest.host_key],
            process_factory=self._run,
            sftp_factory=lambda chan: _GuestSftp(chan, self),
            allow_scp=True,
            encoding=None,
            line_editor=False,
        )

    async def stop(self):
        """The guest powers off: the listener, its connections and its processes go."""
        self._server.close()
        for conn in list(self.connections):
            conn.abort()
        for proc in list(self.processes):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        await self._server.wait_closed()

    # ----------------------------------------------------------- commands

    def _env(self, process, home):
        env = {k: v for k, v in process.env.items() if k == 'LANG' or k.startswith('LC_')}
        user = self.boot.user
        env.update(HOME=home, PWD=home, USER=user, LOGNAME=user, SHELL='/bin/sh', LANG=env.get('LANG', 'C.UTF-8'), PATH=f'{self.guest.bin}:{GUEST_PATH}')
        peer = process.get_extra_info('peername') or ('', 0)
        env['SSH_CONNECTION'] = f'{peer[0]} {peer[1]} {self.boot.address} {self.port}'
        if process.term_type:
            env['TERM'] = process.term_type
        return env

    async def _run(self, process):
        home = str(self.guest.home)
        command = process.command
        self.guest.commands.append(command)
        argv = ['/bin/sh', '-c', expand_home(command, self.boot.user, home)] if command is not None else ['/bin/sh']
        argv = confined(argv, home, self.guest.machine_id)
        env = self._env(process, home)
        try:
            if process.term_type:
                code = await self._run_pty(process, argv, env, home)
            else:
                code = await self._run_pipes(process, argv, env, home)
        except OSError as exc:
            process.stderr.write(f'lab guest: {exc}\n'.encode())
            code = 127
        process.exit(code if code >= 0 else 128 - code)

    async def _spawn(self, argv, env, home, **streams):
        proc = await asyncio.create_subprocess_exec(*argv, cwd=home, env=env, start_new_session=True, **streams)
        self.processes.add(proc)
        return proc

    async def _run_pipes(self, process, argv, env, home):
        proc = await self._spawn(argv, env, home, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)

        async def feed():
            try:
                while True:
                    data = await _read_input(process)
                    if not data:
                        break
                    proc.stdin.write(data)
                    await proc.stdin.drain()
            except (OSError, asyncssh.Error):
                pass
            finally:
                proc.stdin.close()

        feeder = asyncio.ensure_future(feed())
        try:
            await asyncio.gather(_pump(proc.stdout.read, process.stdout), _pump(proc.stderr.read, process.stderr))
            return await proc.wait()
        finally:
            feeder.cancel()
            self.processes.discard(proc)

    async def _run_pty(self, process, argv, env, home):
        loop = asyncio.get_running_loop()
        master, slave = os.openpty()
        cols, rows = process.term_size[:2]
        if cols and rows:
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
        try:
            proc = await self._spawn(argv, env, home, stdin=slave, stdout=slave, stderr=slave)
        finally:
            os.close(slave)
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(master, 'rb', 0))
        to_pty, _protocol = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(os.dup(master), 'wb', 0))

        async def feed():
            try:
                while True:
                    data = await _read_input(process)
                    if not data:
                        break
                    to_pty.write(data)
            except (OSError, asyncssh.Error):
                pass

        feeder = asyncio.ensure_future(feed())
        output = asyncio.ensure_future(_pump(reader.read, process.stdout))
        try:
            code = await proc.wait()
            # The terminal's last output is still in its buffer; a background child may hold it open for ever.
            await asyncio.wait([output], timeout=PTY_DRAIN_SECS)
            return code
        finally:
            for task in (feeder, output):
                task.cancel()
            to_pty.close()
            self.processes.discard(proc)


async def _read_input(process):
    """The next input from the client; terminal resizes, breaks and signals are not input."""
    while True:
        try:
            return await process.stdin.read(CHUNK)
        except CHANNEL_EVENTS:
            continue


async def _pump(read, channel):
    """Copy a child's output to the SSH channel until it ends (a closed terminal reads as EIO)."""
    while True:
        try:
            data = await read(CHUNK)
        except OSError:
            return
        if not data:
            return
        try:
            channel.write(data)
        except (OSError, asyncssh.Error):
            return


class _GuestServer(asyncssh.SSHServer):
    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.conn = None

    def connection_made(self, conn):
        self.conn = conn
        self.endpoint.connections.add(conn)
        self.endpoint.guest.count_connection()

    def connection_lost(self, exc):
        self.endpoint.connections.discard(self.conn)

    async def begin_auth(self, username):
        delay = self.endpoint.guest.ssh_delay
        if delay:
            await asyncio.sleep(delay)
        return True

    def public_key_auth_supported(self):
        return True

    def validate_public_key(self, username, key):
        boot = self.endpoint.boot
        return username == boot.user and key.public_data in boot.keys


class _GuestSftp(asyncssh.SFTPServer):
    """SFTP without a chroot: absolute paths as they are, relative ones (and ~user) in the guest's home."""

    def __init__(self, chan, endpoint):
        super().__init__(chan)
        self._home = str(endpoint.guest.home)
        self._user = endpoint.boot.user

    def map_path(self, path):
        text = expand_home(path.decode('utf-8', 'surrogateescape'), self._user, self._home)
        return posixpath.join(self._home, text).encode('utf-8', 'surrogateescape')
