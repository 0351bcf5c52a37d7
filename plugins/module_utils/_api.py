# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""The Proxmox VE API client: the only code of the collection that talks to PVE.

Built on proxmoxer's https backend for what it does well: PVE's authentication on the wire (API
token header; ticket login, ticket cookie, CSRF header, age-based ticket renewal) and its requests
session (keep-alive; uploads are streamed through it by UploadBody). Its resource layer (ProxmoxAPI().nodes(...).get())
is not used: it raises without saying what was being done, lets raw requests exceptions through,
logs request bodies (cipassword included) at INFO level, and cannot tell a failure that is safe to
retry from one that is not. Those are this client's job, per request:
- TLS: `verify` is passed with every request, so validate_certs=false and ca_path win over
  REQUESTS_CA_BUNDLE (requests lets that variable override a session's verify setting).
- Retries: bounded, jittered, time-boxed; reads and idempotent writes after connection failures,
  any method when PVE refused before doing anything (lock timeouts, no quorum, ...); a create is
  never repeated blindly (see create_vm).
- Password auth: a 401 mid-run logs in again once and repeats the request.
- Errors: one PveApiError saying what was being done, PVE's message and fields, and a hint; secrets
  (token secret, password, ticket, CSRF token, cipassword) never appear in it.
"""

from __future__ import annotations

import binascii
import functools
import os
import random
import re
import time
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ansible_collections.puls.proxmox.plugins.module_utils._errors import (
    SECRET_PARAMS,
    PveApiError,
    Redactor,
    describe_failure,
    is_guest_locked,
    is_missing,
    is_permanent,
    permission_hint,
    transient_reason,
    vmid_taken,
)
from ansible_collections.puls.proxmox.plugins.module_utils._guest import LXC, QEMU, guest_path, noun
from ansible_collections.puls.proxmox.plugins.module_utils._tasks import TaskResult, wait_task, wait_unlocked

# (library, traceback) of the first required library that failed to import; the base module reports it.
MISSING_LIBRARY = None
try:
    import requests
    from urllib3.exceptions import InsecureRequestWarning, NewConnectionError
except ImportError:
    MISSING_LIBRARY = ('requests', traceback.format_exc())
else:
    # Imported only once requests is known to be there: proxmoxer's https backend exits the process without it.
    try:
        from proxmoxer.backends.https import Backend as ProxmoxerBackend
        from proxmoxer.core import AuthenticationError
    except ImportError:
        MISSING_LIBRARY = ('proxmoxer', traceback.format_exc())

DEFAULT_PORT = 8006
DEFAULT_TIMEOUT = 30
DEFAULT_TASK_TIMEOUT = 600
DEFAULT_LOCK_TIMEOUT = 300
# Answers from a proxy in front of PVE: the request may or may not have reached PVE.
GATEWAY_STATUSES = (502, 503, 504)
# After a create lost its answer, PVE's worker needs a moment to write the new config before we look for it.
CREATE_SETTLE_SECONDS = 2.0
# Seconds between two progress notes of an upload's bytes sent.
UPLOAD_NOTE_EVERY = 0.5


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long one call is retried: at most `attempts` tries within `budget` seconds,
    waiting an exponentially growing, jittered delay (base_delay doubling up to max_delay) in between."""

    attempts: int = 8
    budget: float = 120.0
    base_delay: float = 0.5
    max_delay: float = 10.0

    def next_delay(self, attempt, started):
        """Seconds to wait before try attempt+1 of a call begun at started (monotonic), or None when spent."""
        if attempt >= self.attempts:
            return None
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        delay = ceiling / 2 + random.uniform(0, ceiling / 2)
        if time.monotonic() - started + delay > self.budget:
            return None
        return delay


@dataclass(frozen=True)
class Endpoint:
    """Where the API is: host (bracketed if IPv6), port, and a path prefix when behind a reverse proxy."""

    host: str
    port: int = DEFAULT_PORT
    prefix: str = ''

    @property
    def url(self):
        return 'https://%s:%d%s/api2/json' % (self.host, self.port, self.prefix)


def parse_api_url(value):
    """The Endpoint of api_url: 'pve.example.com', 'pve.example.com:8006', 'https://pve.example.com',
    'https://pve.example.com:8006/api2/json/' all work; the scheme defaults to https, the port to 8006."""
    text = (value or '').strip()
    if not text:
        raise PveApiError('api_url is required: set the api_url option or the PROXMOX_URL environment variable (for example https://pve.example.com:8006)')
    if '://' not in text:
        text = 'https://' + text
    parts = urlsplit(text)
    if parts.username or parts.password:
        # Not echoed: the URL holds a credential.
        raise PveApiError('api_url must not contain a user or password; use api_user and api_token_secret or api_password')
    if parts.scheme.lower() != 'https':
        raise PveApiError('api_url %r: the PVE API is only served over https' % value)
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise PveApiError('api_url %r has an invalid port' % value) from None
    host = parts.hostname
    if not host:
        raise PveApiError('api_url %r has no host name' % value)
    if ':' in host:
        host = '[%s]' % host
    prefix = re.sub(r'/api2/json$', '', parts.path.rstrip('/')).rstrip('/')
    return Endpoint(host, port, prefix)


@dataclass(frozen=True)
class Credential:
    """Who calls the API: an API token (user, token name, secret) or a user with a password."""

    user: str
    token_name: str | None = None
    token_secret: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    @property
    def token_id(self):
        return '%s!%s' % (self.user, self.token_name) if self.token_secret else None

    @property
    def description(self):
        return 'API token %s' % self.token_id if self.token_secret else 'user %s' % self.user

    def rejected_hint(self):
        if self.token_secret:
            return (
                'PVE rejected API token %s: check api_user, api_token_name and api_token_secret (PROXMOX_USER, '
                'PROXMOX_TOKEN_NAME, PROXMOX_TOKEN_SECRET) and that the token exists and has not expired' % self.token_id
            )
        return 'PVE rejected user %s: check api_user and api_password (PROXMOX_USER, PROXMOX_PASSWORD)' % self.user


def resolve_credential(api_user=None, api_token_name=None, api_token_secret=None, api_password=None):
    """The Credential the options describe: token auth when a token secret is given, else password auth.
    api_token_name may also be the full token id 'user@realm!name'."""
    user, token_name = api_user or None, api_token_name or None
    if token_name and '!' in token_name:
        token_user, token_name = token_name.split('!', 1)
        if user and user != token_user:
            raise PveApiError('api_token_name %r names user %s, but api_user is %s' % (api_token_name, token_user, user))
        user = token_user
    if not (api_token_secret or api_password):
        raise PveApiError(
            'no credentials for the PVE API: set api_token_secret (PROXMOX_TOKEN_SECRET) together with '
            'api_user (PROXMOX_USER) and api_token_name (PROXMOX_TOKEN_NAME), or api_password '
            '(PROXMOX_PASSWORD) together with api_user (PROXMOX_USER)'
        )
    if not user or '@' not in user:
        raise PveApiError('api_user (PROXMOX_USER) must name the user with its realm, for example root@pam, not %r' % user)
    if api_token_secret:
        if not token_name:
            raise PveApiError('api_token_secret is set but api_token_name (PROXMOX_TOKEN_NAME) is not: name the token whose secret it is')
        return Credential(user, token_name, token_secret=api_token_secret)
    return Credential(user, password=api_password)


def tls_verify(validate_certs, ca_path):
    """requests' verify value: False, the CA file or directory, or True (the system's CAs)."""
    if not validate_certs:
        return False
    if ca_path:
        if not os.path.exists(ca_path):
            raise PveApiError('ca_path %s does not exist' % ca_path)
        return ca_path
    return True


def upload_parts(filename, data, content, checksum=None):
    """The multipart parts of a storage upload, in the only order PVE reads them.

    pve-http-server (PVE/APIServer/AnyEvent.pm, file_upload_multipart) takes ``content``, then
    ``checksum-algorithm``, then ``checksum``, then the file part named ``filename``, and refuses any other
    order. requests writes ``files=`` parts in list order after its ``data=`` fields, so every part goes into
    one list here and none into ``data``. The file part is typed (bugzilla 4344).
    """
    parts = [('content', (None, content))]
    if checksum:
        parts += [('checksum-algorithm', (None, checksum[0])), ('checksum', (None, checksum[1]))]
    return parts + [('filename', (filename, data, 'application/octet-stream'))]


class UploadBody:
    """A multipart body (the parts of upload_parts) that requests sends as it is read, in chunks, telling
    on_sent(file bytes sent, file bytes) as the file part goes out; the bytes are not copied into one body.

    The parts are laid out as urllib3's encode_multipart_formdata lays them out (which requests uses for ``files=``):
    each ``--BOUNDARY`` line, the part's headers (RequestField.render_headers), its value and CRLF, then
    ``--BOUNDARY--``. It has a length, so that requests sends it with a Content-Length, as pve-http-server needs."""

    CHUNK = 1 << 16

    def __init__(self, parts, on_sent=None, boundary=None):
        from urllib3.fields import RequestField  # imported with requests (MISSING_LIBRARY covers it)

        boundary = boundary or binascii.hexlify(os.urandom(16)).decode('ascii')
        self.content_type = 'multipart/form-data; boundary=%s' % boundary
        pieces, self._file = [], (0, 0)
        for name, (filename, value, *content_type) in parts:
            field = RequestField(name=name, data=value, filename=filename)
            field.make_multipart(content_type=content_type[0] if content_type else None)
            pieces.append(('--%s\r\n' % boundary).encode('latin-1') + field.render_headers().encode('latin-1'))
            value = value.encode('utf-8') if isinstance(value, str) else value
            if filename is not None:
                self._file = (sum(len(piece) for piece in pieces), len(value))
            pieces += [value, b'\r\n']
        pieces.append(('--%s--\r\n' % boundary).encode('latin-1'))
        self._pieces = [memoryview(piece) for piece in pieces]
        self.total = sum(len(piece) for piece in self._pieces)
        self.sent = 0
        self._index = self._offset = 0
        self._on_sent = on_sent

    def __len__(self):
        return self.total

    def __iter__(self):
        while True:
            chunk = self.read(self.CHUNK)
            if not chunk:
                return
            yield chunk

    def read(self, size=-1):
        """Up to size bytes (all that is left for a negative size) of the body from where the last read ended."""
        size = self.total - self.sent if size is None or size < 0 else size
        out = []
        while size > 0 and self._index < len(self._pieces):
            piece = self._pieces[self._index]
            part = piece[self._offset : self._offset + size]
            out.append(part)
            size -= len(part)
            self._offset += len(part)
            if self._offset >= len(piece):
                self._index, self._offset = self._index + 1, 0
        data = b''.join(out)
        self.sent += len(data)
        if data and self._on_sent is not None:
            start, length = self._file
            self._on_sent(min(max(self.sent - start, 0), length), length)
        return data


class _Failure(Exception):
    """One failed HTTP exchange (or login), secrets already redacted. sent=False: PVE certainly did nothing."""

    def __init__(self, status, reason, errors=None, sent=True, login=False, tls=False):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.errors = errors
        self.sent = sent
        self.login = login
        self.tls = tls

    @property
    def unanswered(self):
        """No answer from PVE itself: it may or may not have done what was asked."""
        return self.status is None or self.status in GATEWAY_STATUSES


def _never_sent(exc):
    """The connection could not be made, so the request never reached PVE."""
    cause = getattr(exc.args[0], 'reason', None) if exc.args else None
    return isinstance(exc, requests.exceptions.ConnectTimeout) or isinstance(cause, NewConnectionError)


@contextmanager
def _no_insecure_request_warnings():
    # Unverified TLS is reported once, in PveClient.warnings, not by urllib3 on every request.
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', InsecureRequestWarning)
        yield


def _json(response):
    try:
        return response.json()
    except ValueError:
        return None


class PveClient:
    """A session with one PVE cluster. Every method raises PveApiError on failure.

    on_request(method, path, status) is called after every HTTP exchange (status None when no answer
    came), logins included; request_count counts them. warnings holds what the caller should tell
    the user once (for example that certificates are not verified).
    """

    def __init__(
        self,
        api_url=None,
        api_user=None,
        api_token_name=None,
        api_token_secret=None,
        api_password=None,
        validate_certs=True,
        ca_path=None,
        api_timeout=DEFAULT_TIMEOUT,
        *,
        on_request=None,
        retry=None,
    ):
        if MISSING_LIBRARY:
            raise PveApiError('the Python library %s is required to talk to the PVE API' % MISSING_LIBRARY[0])
        self.endpoint = parse_api_url(api_url)
        self.base_url = self.endpoint.url
        self.credential = resolve_credential(api_user, api_token_name, api_token_secret, api_password)
        self.timeout = api_timeout or DEFAULT_TIMEOUT
        self.retry = retry or RetryPolicy()
        self.on_request = on_request
        self.request_count = 0
        self.warnings = []
        # A _progress.ProgressNotes: waits note what they wait for (and the task logs' new lines) for the action plugin.
        self.progress = None
        self._verify = tls_verify(validate_certs, ca_path)
        if self._verify is False:
            self.warnings.append(
                'validate_certs is false: the TLS certificate of %s is not verified, so the connection '
                'and the credentials sent over it can be intercepted; set ca_path (PROXMOX_CA_PATH) '
                "to the CA of PVE's certificate instead" % self.endpoint.host
            )
        self._redact = Redactor(api_token_secret, api_password)
        self._session = None

    def __repr__(self):
        return 'PveClient(%s, %s)' % (self.base_url, self.credential.description)

    # ------------------------------------------------------------------ plain calls

    def get(self, api_path, /, *, context=None, **params):
        """GET api_path (relative to /api2/json, for example /nodes/pve1/qemu) and return PVE's `data`."""
        return self._call('GET', api_path, params, context)

    def get_answer(self, api_path, /, *, context=None, **params):
        """GET api_path and return PVE's whole answer: `data` and the result attributes sent beside it (pve-http-server
        Formatter/Standard.pm prepare_response_data: `total`, `changes`)."""
        return self._call('GET', api_path, params, context, whole=True)

    def post(self, api_path, /, *, context=None, idempotent=False, **params):
        """POST api_path; idempotent=True allows repeating it after a connection failure."""
        return self._call('POST', api_path, params, context, idempotent)

    def put(self, api_path, /, *, context=None, idempotent=False, **params):
        """PUT api_path; mark idempotent=True when sending the same values twice is harmless (config updates)."""
        return self._call('PUT', api_path, params, context, idempotent)

    def delete(self, api_path, /, *, context=None, idempotent=False, **params):
        """DELETE api_path; mark idempotent=True when deleting something already gone is fine."""
        return self._call('DELETE', api_path, params, context, idempotent)

    def request(self, method, api_path, /, *, context=None, idempotent=False, **params):
        """Any method; see get, post, put and delete."""
        return self._call(method.upper(), api_path, params, context, idempotent)

    def upload(self, api_path, /, *, filename, data, content, checksum=None, context=None):
        """POST a multipart upload (PVE's storage upload): data (bytes) as the file filename of content type content.

        checksum is (algorithm, hex digest) or None. Returns what PVE answers (the upload's UPID). Sending the same
        file again is harmless (PVE replaces the file), so it is retried like an idempotent write.
        """
        return self._call('POST', api_path, {}, context, idempotent=True, files=upload_parts(filename, data, content, checksum))

    def _upload_body(self, files, context):
        """The streamed body of an upload; with progress notes asked for, the bytes sent are noted (at most every
        UPLOAD_NOTE_EVERY seconds, and when all are sent) under what is being done."""
        progress = self.progress
        if progress is None:
            return UploadBody(files)
        last = [None]

        def on_sent(sent, total):
            moment = time.monotonic()
            if sent >= total or last[0] is None or moment - last[0] >= UPLOAD_NOTE_EVERY:
                last[0] = moment
                progress.note(context, sent=sent, total=total)

        return UploadBody(files, on_sent)

    # ------------------------------------------------------------------ tasks and waits

    def run_task(self, method, api_path, /, *, context=None, task_timeout=DEFAULT_TASK_TIMEOUT, idempotent=False, **params):
        """Call a task-starting endpoint and wait for the task; returns its TaskResult.

        A task that failed because PVE could not take a lock (or had no quorum) did nothing, so the call
        is repeated within the retry policy. A synchronous answer (no UPID) is TaskResult(None).
        """
        context = context or '%s %s' % (method.upper(), api_path)
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            upid = self.request(method, api_path, context=context, idempotent=idempotent, **params)
            if not upid:
                return TaskResult(None)
            try:
                return self.wait_task(upid, task_timeout, context)
            except PveApiError as exc:
                delay = self.retry.next_delay(attempt, started) if transient_reason(None, exc.exitstatus) else None
                if delay is None:
                    raise
            time.sleep(delay)

    def wait_task(self, upid, timeout=DEFAULT_TASK_TIMEOUT, context=None):
        """Wait for task upid (real-time deadline); TaskResult on OK / WARNINGS, else PveApiError with its log tail."""
        return wait_task(self, upid, timeout, context)

    def wait_unlocked(self, node, vmid, timeout=DEFAULT_LOCK_TIMEOUT, guest_type=QEMU):
        """Wait until guest vmid's config lock clears; returns the config."""
        return wait_unlocked(self, node, vmid, timeout, guest_type)

    # ------------------------------------------------------------------ common reads

    def cluster_vms(self):
        """Every guest of the cluster, qemu and lxc (see `type`), from one GET /cluster/resources?type=vm."""
        return self.get('/cluster/resources', type='vm', context='listing the guests of the cluster')

    def vm_config(self, node, vmid, current=False, guest_type=QEMU):
        """Guest vmid's config: with pending changes applied (PVE's default), or as it runs (current=True)."""
        return self.get(
            guest_path(node, vmid, '/config', guest_type),
            current=1 if current else None,
            context=f'reading the config of {noun(guest_type)} {vmid} on {node}',
        )

    # ------------------------------------------------------------------ creating guests

    def create_vm(self, api_path, /, vmid, *, name=None, task_timeout=DEFAULT_TASK_TIMEOUT, context=None, guest_type=QEMU, retry_locked=True, **params):
        """POST a create (api_path /nodes/N/qemu) or clone (api_path /nodes/N/qemu/SRC/clone) of VM vmid.

        Returns the task's UPID, or None when the answer was lost and the VM turned out to be created
        (its task is then already finished). A create is never repeated blindly: after a lost answer
        the client looks for VM vmid; a VM with that id and `name` is ours, none means the create can
        be sent again, a VM with another name fails with PVE's "already exists" wording. A container
        (guest_type lxc, api_path /nodes/N/lxc) is named by its hostname. retry_locked=False fails at once when PVE
        answers that the source is locked, for a caller that waits for the lock itself.
        """
        name_key = 'hostname' if guest_type == LXC else 'name'
        node = api_path.strip('/').split('/')[1]
        context = context or 'creating VM %s on %s' % (vmid, node)
        params['newid' if api_path.rstrip('/').endswith('/clone') else 'vmid'] = vmid
        params[name_key] = name
        lost = []

        def check_created():
            lost.append(True)
            time.sleep(CREATE_SETTLE_SECONDS)
            return self._created(vmid, name, task_timeout, context, guest_type)

        try:
            return self._call('POST', api_path, params, context, lost_response=check_created, retry_locked=retry_locked)
        except PveApiError as exc:
            # Our own earlier try may have created it after all.
            if lost and exc.status is not None and vmid_taken(exc.reason, vmid) and self._created(vmid, name, task_timeout, context, guest_type):
                return None
            raise

    def _created(self, vmid, name, task_timeout, context, guest_type=QEMU):
        """True when VM vmid exists as ours (its create finished), False when it does not exist."""
        guest = next((g for g in self.cluster_vms() if str(g.get('vmid')) == str(vmid)), None)
        if guest is None:
            return False
        try:
            config = self.wait_unlocked(guest['node'], vmid, task_timeout, guest_type)
        except PveApiError as exc:
            if is_missing(exc.reason):  # its create task failed and PVE removed it
                return False
            raise
        if name is not None and config.get('hostname' if guest_type == LXC else 'name') != name:
            raise PveApiError(
                '%s failed: VM %s already exists on node %s and is named %r, not %r' % (context, vmid, guest['node'], config.get('name'), name),
                reason='VM %s already exists' % vmid,
            )
        return True

    # ------------------------------------------------------------------ the wire

    def _call(self, method, path, params, context, idempotent=False, lost_response=None, files=None, whole=False, retry_locked=True):
        """One API call with retries; see the module docstring for what is retried."""
        context = context or '%s %s' % (method, path)
        url = '%s/%s' % (self.base_url, path.lstrip('/'))
        form = self._form(params)
        started = time.monotonic()
        attempt = 0
        renewed = False
        while True:
            attempt += 1
            try:
                if self._session is None:
                    self._open_session()
                return self._exchange(method, path, url, form, files, context, whole)
            except _Failure as failure:
                if failure.status == 401 and self.credential.password and not (renewed or failure.login):
                    # The ticket expired or was revoked: log in again, once.
                    renewed = True
                    self._session = None
                    continue
                if self._after_failure(method, failure, idempotent, lost_response, context, retry_locked) == 'applied':
                    return None
                delay = self.retry.next_delay(attempt, started)
                if delay is None:
                    raise self._error(context, failure, attempts=attempt, started=started) from None
            time.sleep(delay)

    def _after_failure(self, method, failure, idempotent, lost_response, context, retry_locked=True):
        """'retry', or 'applied' when a write whose answer was lost turns out done; raises when the failure is final."""
        safe = method == 'GET' or idempotent or failure.login  # logging in changes nothing
        if failure.tls or (not retry_locked and is_guest_locked(failure.reason)):
            raise self._error(context, failure) from None
        if transient_reason(failure.status, failure.reason):
            return 'retry'
        if failure.unanswered:
            if not failure.sent or safe:
                return 'retry'
            if lost_response is None:
                raise self._error(context, failure, note='the answer was lost, so it may or may not have been applied') from None
            return 'applied' if lost_response() else 'retry'
        if (method == 'GET' or failure.login) and failure.status >= 500 and failure.status != 501 and not is_permanent(failure.reason):
            return 'retry'
        raise self._error(context, failure) from None

    def _form(self, params):
        """Parameters as PVE takes them: None dropped, booleans as 1/0; secret values noted for redaction."""
        form = {}
        for key, value in params.items():
            if value is None:
                continue
            if key in SECRET_PARAMS:
                self._redact.add(value)
            form[key] = int(value) if isinstance(value, bool) else value
        return form

    def _record(self, method, path, status):
        self.request_count += 1
        if self.on_request:
            self.on_request(method, path, status)

    def _open_session(self):
        credential = self.credential
        if credential.token_secret:
            auth = {'token_name': credential.token_name, 'token_value': credential.token_secret}
        else:
            auth = {'password': credential.password}
        try:
            # With a password, this logs in (POST /access/ticket).
            with _no_insecure_request_warnings():
                backend = ProxmoxerBackend(
                    self.endpoint.host,
                    user=credential.user,
                    port=self.endpoint.port,
                    path_prefix=self.endpoint.prefix.strip('/') or None,
                    verify_ssl=self._verify,
                    timeout=self.timeout,
                    **auth,
                )
        except AuthenticationError as exc:
            match = re.search(r'code: (\d+)', str(exc))
            status = int(match.group(1)) if match else 401
            self._record('POST', '/access/ticket', status)
            raise _Failure(status, 'login failed: %s' % self._redact(exc), login=True) from None
        except requests.RequestException as exc:
            self._record('POST', '/access/ticket', None)
            # Logging in changes nothing, so it is always safe to repeat.
            raise self._connection_failure(exc, sent=False, login=True) from None
        if credential.password:
            self._record('POST', '/access/ticket', 200)
            for secret in backend.get_tokens():
                self._redact.add(secret)
        self._session = backend.get_session()

    def _exchange(self, method, path, url, form, files=None, context=None, whole=False):
        where = {'params': form} if method in ('GET', 'DELETE') else {'data': form}
        send = self._session.request
        if files:
            # Streamed (UploadBody), through requests' own Session.request: proxmoxer's takes only a dict as data. The
            # session's auth (API token header; ticket renewal and CSRF header) applies as to every request, and the
            # ticket cookie is given as proxmoxer gives it.
            body = self._upload_body(files, context)
            where = {'data': body, 'headers': {'Content-Type': body.content_type}, 'cookies': self._session.auth.get_cookies()}
            send = functools.partial(requests.Session.request, self._session)
        try:
            with _no_insecure_request_warnings():
                response = send(method, url, verify=self._verify, timeout=self.timeout, **where)
        except AuthenticationError as exc:
            # proxmoxer renews a ticket older than an hour before the request; that renewal failed.
            self._record('POST', '/access/ticket', 401)
            raise _Failure(401, 'ticket renewal failed: %s' % self._redact(exc), sent=False) from None
        except requests.RequestException as exc:
            self._record(method, path, None)
            raise self._connection_failure(exc, sent=not _never_sent(exc)) from None
        self._record(method, path, response.status_code)
        body = _json(response)
        if response.status_code < 400:
            if isinstance(body, dict):
                return body if whole else body.get('data')
            raise _Failure(response.status_code, 'the answer is not PVE JSON (%s)' % response.headers.get('Content-Type'))
        message = body.get('message') if isinstance(body, dict) else None
        errors = body.get('errors') if isinstance(body, dict) and isinstance(body.get('errors'), dict) else None
        raise _Failure(response.status_code, self._redact(message or response.reason or 'HTTP error'), self._redact.mapping(errors))

    def _connection_failure(self, exc, sent, login=False):
        cause = exc.args[0] if exc.args else exc
        detail = self._redact(getattr(cause, 'reason', None) or cause)
        tls = isinstance(exc, requests.exceptions.SSLError)
        kind = 'TLS handshake failed' if tls else 'no answer from PVE'
        return _Failure(None, '%s (%s: %s)' % (kind, type(exc).__name__, detail), sent=sent and not tls, login=login, tls=tls)

    def _error(self, context, failure, attempts=None, started=None, note=None):
        hint = note
        if failure.tls:
            hint = (
                "give the CA that signed PVE's certificate in ca_path (PROXMOX_CA_PATH), "
                'or set validate_certs false (PROXMOX_VERIFY_SSL=false) to skip verification'
            )
        elif failure.status == 401:
            hint = self.credential.rejected_hint()
        elif failure.status == 403:
            hint = permission_hint(failure.reason, self.credential)
        message = describe_failure(context, failure.reason, failure.status, failure.errors, hint)
        if attempts and attempts > 1:
            message += ' (gave up after %d attempts in %.0f s)' % (attempts, time.monotonic() - started)
        return PveApiError(message, reason=failure.reason, status=failure.status, errors=failure.errors)
