"""download-url and upload as pve-storage does them (PVE/API2/Storage/Status.pm; PVE::Tools::download_file_from_url),
keeping every file's bytes. Downloads come from the lab's served files only. An upload's multipart body is read
as pve-http-server reads it (PVE/APIServer/AnyEvent.pm, file_upload_multipart): its fields in a fixed order."""

import bz2
import gzip
import hashlib
import re

from aiohttp import web
from fakepve.model import TaskError
from fakepve.qemu import volume_ref
from fakepve.routing import die, param_error, split_list
from fakepve.server import USER, ok, params

from .progress import wget_rows, write_rows

# PVE::Storage's ISO_EXT_RE_0, VZTMPL_EXT_RE_1 and SAFE_CHAR_CLASS_RE + UPLOAD_IMPORT_EXT_RE_1.
FILENAME_RULES = {
    'iso': (re.compile(r'[^/]+\.(?:iso|img)', re.I), 'wrong file extension'),
    # VZTMPL_EXT_RE_1 takes a plain .tar too (pve-storage commit 0d392b2, libpve-storage-perl 9.0.15).
    'vztmpl': (re.compile(r'[^/]+\.(?:tar(?!\.)|tar\.(?:gz|xz|zst|bz2))', re.I), 'wrong file extension'),
    'import': (re.compile(r'[a-zA-Z0-9\-.+=_]+\.(?:ova|qcow2|raw|vmdk)'), 'invalid filename or wrong extension'),
}
# PVE::Storage::Plugin KNOWN_COMPRESSION_FORMATS
COMPRESSIONS = ('gz', 'lzo', 'zst', 'bz2')
# The form fields file_upload_multipart takes before the file part, in the only order it takes them.
UPLOAD_FIELDS = ('content', 'checksum-algorithm', 'checksum')
# Where Perl says a die without a newline happened: AnyEvent.pm as installed, and the lines of its dies.
ANYEVENT_PM = '/usr/share/perl5/PVE/APIServer/AnyEvent.pm'
WRONG_FIELD_LINE, UPLOAD_FAILED_LINE = 1325, 1370
# How many raw upload bodies the lab keeps (lab.pve.upload_bodies), newest last.
KEPT_UPLOAD_BODIES = 16
# Bytes the lab reads of an upload's body at a time when it reads at upload_rate.
UPLOAD_READ_CHUNK = 1 << 16


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
    raise TaskError(f'lab: {method} decompression is not supported')


class UploadRefused(Exception):
    """A die inside file_upload_multipart: its text, as Perl makes it."""


def _boundary(content_type):
    """AnyEvent.pm parse_content_type: (media type, boundary or None)."""
    media, *rest = re.split(r'\s*[;,]\s*', content_type or '')
    for item in rest:
        found = re.fullmatch(r'\s*boundary\s*=\s*(\S+?)\s*', item)
        if found:
            return media, found.group(1)
    return media, None


def parse_upload(content_type, body):
    """The fields and file of a multipart upload body as pve-http-server reads it, or UploadRefused.

    pve-http-server src/PVE/APIServer/AnyEvent.pm, file_upload_multipart: after the first delimiter it takes
    `content`, then `checksum-algorithm`, then `checksum` (each only if present), each as the part right at the
    front, then the file part, which must come next, be named `filename`, and have Content-Disposition as its
    first header. A field out of this order is found further on by a lazy `.*?`, so the text before its name
    is not 'form-data' and assert_form_disposition dies. Returns ({field: str}, data).
    """
    media, boundary = _boundary(content_type)
    if media != 'multipart/form-data' or not boundary:
        raise ValueError(f'not a multipart body: {content_type}')
    newline = rb'\r?\n'
    delim = rb'--' + re.escape(boundary.encode()) + newline
    close_delim = rb'--' + re.escape(boundary.encode()) + rb'--'
    fields = {}

    def form_data(disposition):
        if disposition != b'form-data':  # assert_form_disposition
            raise UploadRefused("wrong Content-Disposition '{0}' in multipart, expected 'form-data'\n".format(disposition.decode('utf-8', 'replace')))

    def until_data(buf):  # $remove_until_data: the part's remaining headers and the blank line
        return re.sub(rb'^.*?(?:' + newline + rb'){2}', b'', buf, count=1, flags=re.S)

    found = re.match(rb'^.*?(' + delim + rb')', body, re.S)  # phase 0
    buf = body[found.start(1) :] if found else None
    if buf is not None:  # phase 1
        for name in UPLOAD_FIELDS:  # $extract_form_disposition
            found = re.match(rb'^' + delim + rb'.*?Content-Disposition: (.*?); name="' + name.encode() + rb'"(.*?' + delim + rb')', buf, re.S)
            if found:
                form_data(found.group(1))
                buf = until_data(found.group(2) + buf[found.end() :])
                value = re.match(rb'^(.*?)(' + delim + rb')', buf, re.S)
                if value:
                    fields[name] = value.group(1).decode('utf-8', 'replace').strip()
                    buf = buf[value.start(2) :]
        found = re.match(rb'^' + delim + rb'Content-Disposition: (.*?); name="(.*?)"; filename="([^"]+)"', buf, re.S)
        if found:
            form_data(found.group(1))
            if found.group(2) != b'filename':
                raise UploadRefused(
                    "wrong field name '{0}' for file upload, expected 'filename' at {1} line {2}.\n".format(
                        found.group(2).decode('utf-8', 'replace'), ANYEVENT_PM, WRONG_FIELD_LINE
                    )
                )
            fields['filename'] = found.group(3).decode('utf-8', 'replace').strip()
            buf = until_data(buf[found.end() :])
            data = re.match(rb'^(.*?)(?:' + newline + rb')?+' + close_delim + rb'.*$', buf, re.S)  # phase 2
            if data:
                return fields, data.group(1)
    # The whole body was read and phase 100 was never reached.
    raise UploadRefused(f'upload failed at {ANYEVENT_PM} line {UPLOAD_FAILED_LINE}.\n')


def wget_size(total):
    """wget's human size after Length: (src/http.c, human_readable): 1.0G."""
    value, unit = float(total), 0
    while value >= 1024 and unit < 4:
        value, unit = value / 1024, unit + 1
    return '%.1f%s' % (value, ' KMGT'[unit]) if unit else str(total)


def refused_upload(error):
    """AnyEvent.pm's error() of a die in file_upload_multipart: 500 with the message as the status text and the body,
    except that response() answers 400 Bad Request with no body when the message's first line holds a CR (as
    requests' CRLF bodies make every out-of-order field's message)."""
    message = re.match(r'^(.*)$', error, re.M).group(1)
    if re.search(r'[\r\n]', message):
        return web.Response(status=400, reason='Bad Request')
    return web.Response(status=500, reason=message, body=error.encode())


class _Paced:
    """A request whose read() is the lab's paced read of its body (TransferMixin.upload_rate)."""

    def __init__(self, reading):
        self._reading = reading

    def read(self):
        return self._reading


class TransferMixin:
    # PVE seconds a download takes; the size the lab's wget pretends a file has (its progress rows, progress.py);
    # PVE seconds a download hangs after its first row, writing nothing (a stalled mirror).
    download_secs = 5
    download_bytes = 1 << 30
    download_hang_secs = 0
    # A lab knob, not a PVE behaviour: bytes per PVE second the lab reads an upload's body at (None: as fast as it
    # comes), so that an upload lasts long enough for its progress to be seen. PVE reads the body as fast as the
    # network brings it (pve-http-server PVE/APIServer/AnyEvent.pm, file_upload_multipart, on each read event).
    upload_rate = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # (Content-Type, raw body) of the latest uploads, as the client sent them.
        self.upload_bodies = []
        # The PVE seconds the lab spent reading each upload's body at upload_rate, newest last (the knob's effect).
        self.upload_secs = []

    def volume_bytes(self, volid):
        """The bytes of a stored file (uploaded or downloaded); KeyError if the lab holds none."""
        sid, name = volume_ref(volid)
        if sid not in self.storages or name not in self._volumes(sid):
            raise KeyError(f'no volume {volid}')
        if volid not in self.volume_data:
            raise KeyError(f'the lab holds no bytes for {volid}: only for uploaded and downloaded files')
        return self.volume_data[volid]

    async def _upload(self, request):
        body = await request.read()
        content_type = request.headers.get('Content-Type', '')
        self.upload_bodies = (self.upload_bodies + [(content_type, body)])[-KEPT_UPLOAD_BODIES:]
        try:
            parse_upload(content_type, body)
        except UploadRefused as exc:
            return refused_upload(str(exc))
        except ValueError:
            pass  # not multipart at all: fakepve refuses it
        response = await super()._upload(request)
        fields = self.uploaded  # fakepve keeps the form fields of the upload it just took
        volid = '{0}:{1}/{2}'.format(request.match_info['storage'], fields['content'], fields['filename'])
        self.volume_data[volid] = fields.get('data', b'')
        return response

    async def _read_body(self, request):
        """fakepve reads every request's body before its handler (within its body_timeout); an upload's is read at
        upload_rate bytes per PVE second when that lab knob is set."""
        if not (self.upload_rate and request.method == 'POST' and request.path.endswith('/upload')):
            return await super()._read_body(request)
        return await super()._read_body(_Paced(self._paced_read(request)))

    async def _paced_read(self, request):
        body, secs = bytearray(), 0.0
        while True:
            chunk = await request.content.read(UPLOAD_READ_CHUNK)
            if not chunk:
                break
            body += chunk
            secs += len(chunk) / float(self.upload_rate)
            await self.pause(len(chunk) / float(self.upload_rate))
        self.upload_secs.append(secs)
        # What request.read() answers from now on (aiohttp keeps the body it read there), for the handlers.
        request._read_bytes = bytes(body)
        return request._read_bytes

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
            raise param_error(compression="value '{0}' does not have a value in the enumeration '{1}'".format(compression, ', '.join(COMPRESSIONS)))
        p = self._verify(request, p)
        self._need_file_storage(store, "can't upload to storage type '{0}', not a file based storage!")
        content = p['content']
        if content not in split_list(store.get('content')):
            raise die(f"storage '{storage}' is not configured for content-type '{content}'")
        filename = normalize_filename(p['filename'])
        rule, message = FILENAME_RULES[content]
        if not rule.fullmatch(filename):
            raise param_error(filename=message)
        volname = f'{content}/{filename}'
        path = self._volume_path(storage, volname, content)
        url, expected, algorithm = p['url'], p.get('checksum'), p.get('checksum-algorithm')

        def verify(data, suffix=''):
            got = hashlib.new(algorithm, data).hexdigest()
            if got != expected.lower():
                raise TaskError(f"checksum mismatch: got '{got}' != expect '{expected}'{suffix}")

        async def body():
            if compression and content != 'iso':
                raise TaskError(f'decompression not supported for {content}')
            volid = f'{storage}:{volname}'
            # PVE::Tools::download_file_from_url (pve-common) checks for an existing file first, then runs wget: a
            # file that appears during the download is not compared, and a mismatch then leaves it alone.
            if volname in self._volumes(storage):
                if not expected:
                    raise TaskError(f"refusing to override existing file '{path}'")
                verify(self.volume_data.get(volid, b''), ', aborting')
                return 'OK, got correct file already, no need to download'
            if self.served.fetch(url) is not None:
                await self._downloading(log_ref, path)
            else:
                await self.pause(self.download_secs)
            data = self.served.fetch(url)
            if data is None:
                raise TaskError(f'download failed: {url} is not a file the lab serves (see lab.serve); the lab never connects outside')
            if expected:
                verify(data)
            if compression:
                data = decompress(data, compression)
            self.store_file(storage, filename, len(data), content)
            self.volume_data[volid] = data
            return f"download of '{url}' to '{path}' finished"

        log_ref = {}
        upid = await self.task(request.match_info['node'], 'download', filename, user, body, log=[f'downloading {url} to {path}'])
        log_ref['log'] = self.tasks[upid]['log']
        return ok(upid)

    async def _downloading(self, log_ref, path):
        """wget's output in the task log while the download takes download_secs (see progress.py), hanging
        download_hang_secs after its first row."""
        rows = wget_rows(self.download_bytes, self.download_secs)
        if 'log' in log_ref:
            log_ref['log'].extend(
                [f'Length: {self.download_bytes} ({wget_size(self.download_bytes)}) [application/octet-stream]', f"Saving to: '{path}.tmp_dwnl.{4242}'"]
            )
        texts = [text for _at, text in rows]
        await write_rows(self, log_ref, self.download_secs / float(len(texts)), texts[:1])
        await self.pause(self.download_hang_secs)
        await write_rows(self, log_ref, self.download_secs * (len(texts) - 1) / float(len(texts)), texts[1:])
