"""download-url and upload as pve-storage does them (PVE/API2/Storage/Status.pm; PVE::Tools::download_file_from_url),
keeping every file's bytes. Downloads come from the lab's served files only."""

import bz2
import gzip
import hashlib
import re

from fakepve.model import TaskError
from fakepve.qemu import volume_ref
from fakepve.routing import die, param_error, split_list
from fakepve.server import USER, ok, params

# PVE::Storage's ISO_EXT_RE_0, VZTMPL_EXT_RE_1 and SAFE_CHAR_CLASS_RE + UPLOAD_IMPORT_EXT_RE_1.
FILENAME_RULES = {
    'iso': (re.compile(r'[^/]+\.(?:iso|img)', re.I), 'wrong file extension'),
    'vztmpl': (re.compile(r'[^/]+\.tar\.(?:gz|xz|zst|bz2)', re.I), 'wrong file extension'),
    'import': (re.compile(r'[a-zA-Z0-9\-.+=_]+\.(?:ova|qcow2|raw|vmdk)'), 'invalid filename or wrong extension'),
}
# PVE::Storage::Plugin KNOWN_COMPRESSION_FORMATS
COMPRESSIONS = ('gz', 'lzo', 'zst', 'bz2')
# PVE seconds a download takes.
DOWNLOAD_SECS = 5


def normalize_filename(name):
    """PVE::Storage::normalize_content_filename: no directories, unsafe characters become _."""
    return re.sub(r'[^a-zA-Z0-9_.-]', '_', re.sub(r'^.*[/\\]', '', name.rstrip('\n')))


def decompress(data, method):
    if method == 'gz':
        return gzip.decompress(data)
    if method == 'bz2':
        return bz2.decompress(data)
    if method == 'zst':
        try:
            import zstandard
        except ImportError:
            raise TaskError('lab: zst decompression needs the zstandard package') from None
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    raise TaskError('lab: {0} decompression is not supported'.format(method))


class TransferMixin(object):
    def volume_bytes(self, volid):
        """The bytes of a stored file (uploaded or downloaded); KeyError if the lab holds none."""
        sid, name = volume_ref(volid)
        if sid not in self.storages or name not in self._volumes(sid):
            raise KeyError('no volume {0}'.format(volid))
        if volid not in self.volume_data:
            raise KeyError('the lab holds no bytes for {0}: only for uploaded and downloaded files'.format(volid))
        return self.volume_data[volid]

    async def _upload(self, request):
        response = await super()._upload(request)
        fields = self.uploaded  # fakepve keeps the form fields of the upload it just took
        volid = '{0}:{1}/{2}'.format(request.match_info['storage'], fields['content'], fields['filename'])
        self.volume_data[volid] = fields.get('data', b'')
        return response

    async def _download_url(self, request):
        storage, store = self._file_storage(request, 'download')
        user = request[USER]
        self.require(user, '/storage/' + storage, 'Datastore.AllocateTemplate')
        self.require(user, '/', 'Sys.Audit')
        self.require(user, '/', 'Sys.Modify')
        p = await params(request)
        # fakepve's schema has no values for compression's enum (it answers 500): checked here.
        compression = p.pop('compression', None)
        if compression is not None and compression not in COMPRESSIONS:
            raise param_error(compression="value '{0}' does not have a value in the enumeration '{1}'".format(
                compression, ', '.join(COMPRESSIONS)))
        p = self._verify(request, p)
        self._need_file_storage(store, "can't upload to storage type '{0}', not a file based storage!")
        content = p['content']
        if content not in split_list(store.get('content')):
            raise die("storage '{0}' is not configured for content-type '{1}'".format(storage, content))
        filename = normalize_filename(p['filename'])
        rule, message = FILENAME_RULES[content]
        if not rule.fullmatch(filename):
            raise param_error(filename=message)
        volname = '{0}/{1}'.format(content, filename)
        path = self._volume_path(storage, volname, content)
        url, expected, algorithm = p['url'], p.get('checksum'), p.get('checksum-algorithm')

        def verify(data, suffix=''):
            got = hashlib.new(algorithm, data).hexdigest()
            if got != expected.lower():
                raise TaskError("checksum mismatch: got '{0}' != expect '{1}'{2}".format(got, expected, suffix))

        async def body():
            await self.pause(DOWNLOAD_SECS)
            if compression and content != 'iso':
                raise TaskError('decompression not supported for {0}'.format(content))
            volid = '{0}:{1}'.format(storage, volname)
            if volname in self._volumes(storage):
                if not expected:
                    raise TaskError("refusing to override existing file '{0}'".format(path))
                verify(self.volume_data.get(volid, b''), ', aborting')
                return 'OK, got correct file already, no need to download'
            data = self.served.fetch(url)
            if data is None:
                raise TaskError('download failed: {0} is not a file the lab serves (see lab.serve); the lab never '
                                'connects outside'.format(url))
            if expected:
                verify(data)
            if compression:
                data = decompress(data, compression)
            self.store_file(storage, filename, len(data), content)
            self.volume_data[volid] = data
            return "download of '{0}' to '{1}' finished".format(url, path)
        return ok(await self.task(request.match_info['node'], 'download', filename, user, body,
                                  log=['downloading {0} to {1}'.format(url, path)]))
