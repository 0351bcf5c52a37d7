# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_iso's pure core: the declared file checked before any API call, its source record, and the plan.

``check_options`` turns the module's params into an ``IsoSpec`` or raises ``IsoOptionError`` naming
the option at fault; ``plan`` compares the spec with what each node has (``Observed``) and returns
the steps and the diff that check mode reports and a real run then executes, so both agree.

The source record is the short SHA-256 of what was declared (url: algorithm, checksum, URL and
compression; src: the file's content; seed: the seed's content hash). It is kept per volume in the
node's notes (``_files_record``), so the next run knows, without downloading anything, whether the
file on the storage came from the same declared source.

Pure: the src file is read by the caller (``source_from_file``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from ansible_collections.puls.proxmox.plugins.module_utils._cidata import NoCloudSeed, SeedDataError, nocloud_seed

CONTENT_TYPES = ('iso', 'import', 'vztmpl')
# PVE::Storage::Plugin KNOWN_COMPRESSION_FORMATS: what download-url can decompress (ISOs only).
COMPRESSIONS = ('gz', 'lzo', 'zst', 'bz2')
# download-url's checksum-algorithm enum, with the hex length of each digest.
CHECKSUM_LENGTHS = {'md5': 32, 'sha1': 40, 'sha224': 56, 'sha256': 64, 'sha384': 96, 'sha512': 128}
RECORD_LENGTH = 12

# PVE::Storage's rules per content type (ISO_EXT_RE_0, VZTMPL_EXT_RE_1, UPLOAD_IMPORT_EXT_RE_1 minus .ova).
# VZTMPL_EXT_RE_1 takes a plain .tar since pve-storage 9.0.15 (PVE 9); PVE 8 refuses it with "wrong file extension".
_EXTENSIONS = {
    'iso': (re.compile(r'.+\.(?:iso|img)', re.IGNORECASE), '.iso or .img'),
    'vztmpl': (re.compile(r'.+\.(?:tar|tar\.(?:gz|xz|zst|bz2))', re.IGNORECASE), '.tar, .tar.gz, .tar.xz, .tar.zst or .tar.bz2'),
    'import': (re.compile(r'.+\.(?:qcow2|raw|vmdk)'), '.qcow2, .raw or .vmdk'),
}
# PVE::Storage::normalize_content_filename replaces every other character with '_'.
_UNSAFE_CHARACTER = re.compile(r'[^a-zA-Z0-9_.-]')
# Ubuntu's cloud images are qcow2 files named .img, which PVE refuses as import content.
_QCOW2_NAMED_IMG = re.compile(r'\.img$', re.IGNORECASE)
_HEX = re.compile(r'[0-9a-fA-F]+')

URL, SRC, SEED = 'url', 'src', 'seed'
# Plan steps: what one node needs.
NONE, DOWNLOAD, UPLOAD, REPLACE, DELETE = 'none', 'download', 'upload', 'replace', 'delete'
# The diff's value for a file on the storage whose source is not recorded.
UNRECORDED = 'unrecorded'


class IsoOptionError(ValueError):
    """A declared option pve_iso refuses. ``option`` names it, and the message starts with it."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f'{option}: {problem}')
        self.option = option


@dataclass(frozen=True)
class Checksum:
    algorithm: str
    digest: str  # lower-case hex

    def __str__(self) -> str:
        return f'{self.algorithm}:{self.digest}'


@dataclass(frozen=True)
class Source:
    """Where the file comes from. ``record`` is the short hash the node's notes keep for it.

    url: ``url``, ``checksum`` (or None), ``compression`` (or None); src: ``path``, its ``data``
    (read once: the bytes hashed are the bytes uploaded) and their ``sha256``; seed: ``seed`` (a
    validated NoCloudSeed, built into an ISO only when uploaded).
    """

    kind: str
    record: str
    url: str | None = None
    checksum: Checksum | None = None
    compression: str | None = None
    path: str | None = None
    sha256: str | None = None
    data: bytes | None = field(default=None, repr=False, compare=False)
    seed: NoCloudSeed | None = None

    @property
    def transfer(self) -> str:
        """How the file reaches the storage: PVE downloads it, or the module uploads it."""
        return DOWNLOAD if self.kind == URL else UPLOAD


@dataclass(frozen=True)
class IsoSpec:
    """The declared file. ``filename`` is the name on the storage (an import ``.img`` is saved as ``.qcow2``).

    ``source`` is None with state absent, and for src until ``source_from_file`` has read the file.
    ``nodes_option`` is the option the nodes came from, for messages.
    """

    filename: str
    storage: str
    content: str
    nodes: tuple[str, ...]
    nodes_option: str
    state: str
    timeout: int
    source: Source | None = None
    src: str | None = None

    @property
    def volid(self) -> str:
        return f'{self.storage}:{self.content}/{self.filename}'


@dataclass(frozen=True)
class Observed:
    """What one node has: whether the volume is on its storage, and the source record its notes keep (or None)."""

    node: str
    present: bool
    record: str | None


@dataclass(frozen=True)
class Step:
    node: str
    action: str
    reason: str


@dataclass(frozen=True)
class IsoPlan:
    """The steps, one per node acted on, and the diff: {node: {volid: record}} before and after."""

    volid: str
    steps: tuple[Step, ...]
    before: dict
    after: dict

    @property
    def changed(self) -> bool:
        return any(step.action != NONE for step in self.steps)


def short_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:RECORD_LENGTH]


def parse_checksum(text: str) -> Checksum:
    """``ALGO:HEX`` as download-url takes it: a known algorithm and a hex digest of its length."""
    algorithms = ', '.join(CHECKSUM_LENGTHS)
    algorithm, colon, digest = str(text).strip().partition(':')
    if not colon:
        raise IsoOptionError('checksum', f'{text!r} has no algorithm: write it as ALGO:HEX, for example sha256:<64 hex digits> (algorithms: {algorithms})')
    algorithm, digest = algorithm.strip().lower(), digest.strip()
    if algorithm not in CHECKSUM_LENGTHS:
        raise IsoOptionError('checksum', f'unknown algorithm {algorithm!r}; Proxmox VE verifies {algorithms}')
    if not _HEX.fullmatch(digest):
        raise IsoOptionError('checksum', f'the {algorithm} digest must be hexadecimal, got {digest!r}')
    if len(digest) != CHECKSUM_LENGTHS[algorithm]:
        raise IsoOptionError(
            'checksum', f'a {algorithm} digest has {CHECKSUM_LENGTHS[algorithm]} hex digits, this one has {len(digest)}: is it the digest of another algorithm?'
        )
    return Checksum(algorithm, digest.lower())


def storage_filename(filename: str, content: str) -> str:
    """The name the file gets on the storage, after PVE's rules for the content type.

    An import ``.img`` becomes ``.qcow2``; a name PVE would change (path, unsafe characters) or refuse
    (extension) is an error, so the volid the module reports is the one PVE stores.
    """
    if not filename or not filename.strip():
        raise IsoOptionError('filename', 'must be the name of the file on the storage, for example noble.iso')
    if '/' in filename or '\\' in filename:
        raise IsoOptionError('filename', f'{filename!r} contains a path separator: give the name only; storage and content decide the directory')
    unsafe = sorted(set(_UNSAFE_CHARACTER.findall(filename)))
    if unsafe:
        suggestion = _UNSAFE_CHARACTER.sub('_', filename)
        raise IsoOptionError('filename', f'{filename!r} contains {", ".join(map(repr, unsafe))}, which Proxmox VE replaces by _; name it {suggestion!r}')
    if content == 'import':
        filename = _QCOW2_NAMED_IMG.sub('.qcow2', filename)
    pattern, extensions = _EXTENSIONS[content]
    if not pattern.fullmatch(filename):
        hint = ' (an Ubuntu .img cloud image is a qcow2: give it as .img or .qcow2 and it is saved as .qcow2)' if content == 'import' else ''
        raise IsoOptionError('filename', f'{filename!r} does not fit content {content}: its name must end in {extensions}{hint}')
    return filename


def check_options(params: Mapping) -> IsoSpec:
    """The IsoSpec of pve_iso's params, or IsoOptionError for the first option at fault. No I/O."""
    content, state = params['content'], params['state']
    filename = storage_filename(params['filename'], content)
    nodes_option = 'nodes' if params.get('nodes') else 'node'
    nodes = tuple(dict.fromkeys(params.get('nodes') or [params.get('node')]))
    if not all(isinstance(node, str) and node.strip() for node in nodes):
        raise IsoOptionError(nodes_option, 'must name nodes of the cluster, for example pve1')
    timeout = params.get('timeout')
    if timeout is not None and timeout <= 0:
        raise IsoOptionError('timeout', f'must be a positive number of seconds, got {timeout}')
    spec = {
        'filename': filename,
        'storage': params['storage'],
        'content': content,
        'nodes': nodes,
        'nodes_option': nodes_option,
        'state': state,
        'timeout': timeout,
    }
    given = [name for name in (URL, SRC, SEED) if params.get(name) is not None]
    _check_url_options(params, given)
    if state == 'absent':
        return IsoSpec(**spec)
    if len(given) != 1:
        got = 'none' if not given else ' and '.join(given)
        raise IsoOptionError(
            'url, src, seed',
            f'give exactly one source for state present, got {got}: url (downloaded by the node), '
            'src (a file uploaded from where the module runs) or seed (a NoCloud seed ISO built '
            'from cloud-init data)',
        )
    if given == [URL]:
        return IsoSpec(source=_url_source(params, content), **spec)
    if given == [SRC]:
        return IsoSpec(src=params[SRC], **spec)
    if content != 'iso':
        raise IsoOptionError('seed', f'a seed is an ISO image: use content iso, not {content}')
    return IsoSpec(source=_seed_source(params[SEED], filename), **spec)


def source_from_file(spec: IsoSpec, data: bytes) -> IsoSpec:
    """The spec with its src source, from the file's bytes."""
    sha256 = hashlib.sha256(data).hexdigest()
    source = Source(SRC, sha256[:RECORD_LENGTH], path=spec.src, sha256=sha256, data=data)
    return replace(spec, source=source)


def plan(spec: IsoSpec, observed: Sequence[Observed]) -> IsoPlan:
    """The step of each observed node (the nodes acted on) and the diff of their records."""
    volid = spec.volid
    steps, before, after = [], {}, {}
    for node in observed:
        before[node.node] = {volid: node.record or UNRECORDED} if node.present else {}
        step = _step(spec, node)
        steps.append(step)
        if step.action == NONE:
            after[node.node] = before[node.node]
        elif spec.state == 'present':
            after[node.node] = {volid: _declared_source(spec).record}
        else:
            after[node.node] = {}
    return IsoPlan(volid, tuple(steps), before, after)


def _declared_source(spec: IsoSpec) -> Source:
    """The source of a present spec, which from_params or source_from_file has set before planning."""
    if spec.source is None:
        raise ValueError(f'{spec.volid} has no source yet: plan a src spec after source_from_file')
    return spec.source


def _step(spec: IsoSpec, node: Observed) -> Step:
    if spec.state == 'absent':
        if node.present:
            return Step(node.node, DELETE, 'state is absent')
        return Step(node.node, NONE, 'not on the storage')
    source = _declared_source(spec)
    declared = source.record
    if not node.present:
        return Step(node.node, source.transfer, 'not on the storage')
    if node.record == declared:
        return Step(node.node, NONE, 'on the storage from the declared source')
    if node.record is None:
        return Step(
            node.node, REPLACE, 'on the storage with no record of its source (unknown origin, for example put there by hand): replaced by the declared one'
        )
    return Step(node.node, REPLACE, f'the declared source changed (recorded {node.record}, declared {declared})')


def _check_url_options(params: Mapping, given: Sequence[str]) -> None:
    if URL in given:
        return
    for option in ('checksum', 'compression'):
        if params.get(option) is not None:
            raise IsoOptionError(option, 'applies to url only (src and seed files are checksummed by the module itself)')


def _url_source(params: Mapping, content: str) -> Source:
    url = params[URL].strip()
    if not re.match(r'https?://[^/\s]+', url, re.IGNORECASE) or re.search(r'\s', url):
        raise IsoOptionError('url', f'{url!r} must be an http:// or https:// URL without blanks')
    checksum = parse_checksum(params['checksum']) if params.get('checksum') is not None else None
    compression = params.get('compression')
    if compression is not None and content != 'iso':
        raise IsoOptionError(
            'compression', f'Proxmox VE decompresses ISO images only, not content {content}: download an uncompressed file or leave compression out'
        )
    declared = '\n'.join((URL, str(checksum or ''), url, compression or '')).encode('utf-8')
    return Source(URL, short_hash(declared), url=url, checksum=checksum, compression=compression)


def _seed_source(seed: Mapping, filename: str) -> Source:
    hostname = seed.get('hostname') or os.path.splitext(filename)[0]
    try:
        # cast: nocloud_seed names a missing user_data itself.
        built = nocloud_seed(
            user_data=cast(str, seed.get('user_data')),
            local_hostname=hostname,
            meta_data=seed.get('meta_data'),
            network_config=seed.get('network_config'),
            vendor_data=seed.get('vendor_data'),
        )
    except SeedDataError as exc:
        option = 'hostname' if exc.option == 'local_hostname' else exc.option
        raise IsoOptionError(f'seed.{option}', str(exc).split(': ', 1)[1]) from None
    return Source(SEED, built.content_hash, seed=built)
