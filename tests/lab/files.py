"""Served files: a registry of downloadable files and the HTTP server (aiohttp) that serves it.

PVE's download-url fetches from this registry only (LabPve.fetch_url), so the lab never connects outside.
"""

import hashlib
import urllib.parse

from aiohttp import web

from . import images

PORT = 80
CHECKSUMS = ('md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512')


def checksums(data):
    """{algorithm: hex digest} for every algorithm PVE's download-url accepts."""
    return {name: hashlib.new(name, data).hexdigest() for name in CHECKSUMS}


class ServedFiles:
    """Files served at http://<address>/<name>; starts with images.seed_files()."""

    def __init__(self, address, port=PORT):
        self.address = address
        self.port = port
        self.files = dict(images.seed_files())
        # Names looked up by download-url or fetched over HTTP, oldest first.
        self.fetched = []
        self._runner = None

    @property
    def base_url(self):
        return 'http://{0}{1}'.format(self.address, '' if self.port == PORT else f':{self.port}')

    def url(self, name):
        return f'{self.base_url}/{urllib.parse.quote(name)}'

    def serve(self, name, data):
        """Add or replace a file: returns (url, checksums)."""
        self.files[name] = bytes(data)
        return self.url(name), checksums(self.files[name])

    def fetch(self, url):
        """The bytes the lab serves at url, or None (also for any URL that is not the lab's)."""
        prefix = self.base_url + '/'
        if not url.startswith(prefix):
            return None
        name = urllib.parse.unquote(url[len(prefix) :].split('?', 1)[0])
        if name in self.files:
            self.fetched.append(name)
        return self.files.get(name)

    async def start(self):
        app = web.Application()
        app.router.add_get('/{name:.+}', self._get)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.address, self.port).start()

    async def stop(self):
        if self._runner:
            await self._runner.cleanup()
            self._runner = None

    async def _get(self, request):
        data = self.fetch(self.url(request.match_info['name']))
        if data is None:
            raise web.HTTPNotFound()
        return web.Response(body=data, content_type='application/octet-stream')
