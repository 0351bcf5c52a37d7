# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""A scriptable HTTPS stand-in for the PVE API on 127.0.0.1, for the client's HTTP-level unit tests.

It checks authentication as PVE does (token header; ticket cookie plus CSRF header on writes),
records every request, and answers each route from a script: a list of Reply values used in
order (the last one repeats). Reply(drop=True) closes the connection without an answer.
"""

from __future__ import annotations

import json
import secrets
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from fakepve.certs import make_cert

API = '/api2/json'


@dataclass
class Reply:
    status: int = 200
    data: object = None
    message: str | None = None
    errors: dict | None = None
    drop: bool = False
    raw: str | None = None


@dataclass
class Seen:
    method: str
    path: str
    query: dict
    form: dict
    headers: dict = field(repr=False)


class PveStub:
    def __init__(self, directory, user='root@pam', password='pw-Secret1', token_id='root@pam!puls', token_secret='tok-Secret1'):
        self.cafile, keyfile, _der = make_cert(str(directory), name='pve-stub', hosts=('127.0.0.1',))
        self.user, self.password = user, password
        self.token_id, self.token_secret = token_id, token_secret
        self.tickets = {}
        self.logins = 0
        self.seen = []
        self.routes = {}
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(('127.0.0.1', 0), _handler(self))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cafile, keyfile)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = 'https://127.0.0.1:%d' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def route(self, method, path, *replies):
        """Answer method path (without /api2/json) with these replies in turn; the last one repeats."""
        self.routes[(method, path)] = list(replies)

    def requests(self, method=None, path=None):
        return [s for s in self.seen if (method is None or s.method == method) and (path is None or s.path == path)]

    def revoke_tickets(self):
        self.tickets.clear()

    # -------------------------------------------------------------- serving

    def answer(self, method, path, query, form, headers):
        with self.lock:
            self.seen.append(Seen(method, path, query, form, headers))
        if path == '/access/ticket' and method == 'POST':
            return self._login(form)
        who = self._authenticate(method, headers)
        if who is None:
            return Reply(401, message='authentication failure')
        script = self.routes.get((method, path))
        if not script:
            return Reply(501, message="Method '%s %s' not implemented" % (method, path))
        with self.lock:
            reply = script.pop(0) if len(script) > 1 else script[0]
        return reply(method, path, query, form) if callable(reply) else reply

    def _login(self, form):
        if form.get('username') != self.user or form.get('password') != self.password:
            return Reply(401, message='authentication failure')
        self.logins += 1
        ticket = 'PVE:%s:6B0CCF68::%s' % (self.user, secrets.token_urlsafe(24))
        csrf = '6B0CCF68:%s' % secrets.token_urlsafe(24)
        self.tickets[ticket] = csrf
        return Reply(data={'ticket': ticket, 'CSRFPreventionToken': csrf, 'username': self.user})

    def _authenticate(self, method, headers):
        auth = headers.get('Authorization', '')
        if auth.startswith('PVEAPIToken='):
            token_id, _separator, secret = auth[len('PVEAPIToken=') :].partition('=')
            return token_id if (token_id, secret) == (self.token_id, self.token_secret) else None
        cookies = dict(part.strip().split('=', 1) for part in headers.get('Cookie', '').split(';') if '=' in part)
        ticket = cookies.get('PVEAuthCookie')
        if ticket not in self.tickets:
            return None
        if method != 'GET' and headers.get('CSRFPreventionToken') != self.tickets[ticket]:
            return None
        return self.user


def _handler(stub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'

        def log_message(self, *args):
            pass

        def _serve(self):
            parts = urlsplit(self.path)
            length = int(self.headers.get('Content-Length') or 0)
            body = self.rfile.read(length).decode() if length else ''
            path = parts.path[len(API) :] if parts.path.startswith(API) else parts.path
            reply = stub.answer(self.command, path, dict(parse_qsl(parts.query)), dict(parse_qsl(body)), dict(self.headers))
            if reply.drop:
                self.close_connection = True
                return
            if reply.raw is not None:
                payload, content_type = reply.raw.encode(), 'text/html'
            else:
                document = {'data': reply.data}
                if reply.message:
                    document['message'] = reply.message + '\n'
                if reply.errors:
                    document['errors'] = reply.errors
                payload, content_type = json.dumps(document).encode(), 'application/json'
            self.send_response(reply.status, (reply.message or '').splitlines()[0] if reply.message else None)
            self.send_header('Content-Type', content_type)
            self.send_header('Content-Length', str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = _serve

    return Handler
