# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NoCloud seed ("cidata") ISO: validate cloud-init data, then build a byte-reproducible ISO.

Pure: everything happens in memory. ``nocloud_seed()`` validates the input and computes the seed's
files and instance-id without touching pycdlib (the cheap comparison); ``build_seed_iso()`` turns a
seed into ISO bytes. The same input gives the same bytes on any host, at any time, so an unchanged
seed is never uploaded again.

A module must check ``HAS_YAML`` and ``HAS_PYCDLIB`` and call ``missing_required_lib`` when false.
"""

from __future__ import annotations

import contextlib
import email
import hashlib
import io
import sys
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from time import struct_time

try:
    import yaml
except ImportError:
    HAS_YAML = False
    YAML_IMPORT_ERROR: str | None = traceback.format_exc()
else:
    HAS_YAML = True
    YAML_IMPORT_ERROR = None

try:
    import pycdlib
except ImportError:
    HAS_PYCDLIB = False
    PYCDLIB_IMPORT_ERROR: str | None = traceback.format_exc()
else:
    HAS_PYCDLIB = True
    PYCDLIB_IMPORT_ERROR = None


VOLUME_IDENTIFIER = 'cidata'
INSTANCE_ID_PREFIX = 'iid-puls'
CONTENT_HASH_LENGTH = 12

# Every date pycdlib writes is pinned to this instant, in UTC: 1980-01-01T00:00:00Z, zip's epoch,
# the usual pin of reproducible builds.
SEED_EPOCH = 315532800

# The part headers cloud-init recognizes at the start of user-data (cloudinit/handlers/__init__.py,
# INCLUSION_TYPES_MAP), tried as cloud-init tries them: longest first, case-insensitively, after
# leading whitespace. MIME messages are recognized separately (see _check_user_data).
_CLOUD_CONFIG_HEADER = '#cloud-config'
_PART_HEADERS = tuple(
    sorted(
        (
            _CLOUD_CONFIG_HEADER,
            '#cloud-config-archive',
            '#cloud-config-jsonp',
            '#cloud-boothook',
            '#part-handler',
            '#include',
            '#include-once',
            '## template: jinja',
            '#!',
        ),
        key=len,
        reverse=True,
    )
)
# cloud-init treats user-data as MIME when this occurs in its first 4096 bytes (cloudinit/user_data.py).
_MIME_MARKER = b'mime-version:'
_MIME_SNIFF_BYTES = 4096


class SeedDataError(ValueError):
    """Invalid seed input. ``option`` names the module option at fault, and the message starts with it."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f'{option}: {problem}')
        self.option = option


@dataclass(frozen=True)
class NoCloudSeed:
    """The validated content of a seed, ready to build.

    ``files`` maps NoCloud file names (``user-data``, ``meta-data``, then ``network-config`` and
    ``vendor-data`` when given) to their exact bytes; ``content_hash`` is the short SHA-256 of all of
    them (``meta-data`` without its instance-id); ``instance_id`` is the prefix plus that hash.
    """

    files: dict[str, bytes]
    content_hash: str
    instance_id: str


@dataclass(frozen=True)
class SeedIso:
    """A built seed ISO: its bytes, their SHA-256 (hex), and the instance-id written in it."""

    data: bytes
    sha256: str
    instance_id: str


def nocloud_seed(
    *, user_data: str, local_hostname: str, meta_data: str | Mapping | None = None, network_config: str | Mapping | None = None, vendor_data: str | None = None
) -> NoCloudSeed:
    """Validate cloud-init data and compute the seed's files and instance-id, without building the ISO.

    ``user_data`` and ``vendor_data`` are raw text, kept byte for byte. ``meta_data`` and
    ``network_config`` are YAML text or mappings; ``network_config`` text is kept byte for byte.

    ``meta-data`` is ``local-hostname`` plus the user's ``meta_data``, whose keys win, and always an
    ``instance-id`` that ends with the content hash: a seed whose content changes must get a new
    instance-id, or cloud-init will not re-run its per-instance modules (proxmops' bug; PVE's own NoCloud
    drive derives its instance-id from a hash of the generated data: qemu-server
    ``PVE/QemuServer/Cloudinit.pm``, ``nocloud_gen_metadata``).
    An ``instance-id`` in ``meta_data`` is therefore not used as it is but as the prefix, in place of
    ``iid-puls``: the user keeps the name and the change detection still works.

    Raises ``SeedDataError`` naming the option at fault.
    """
    _check_user_data('user_data', user_data)
    if vendor_data is not None:
        _check_user_data('vendor_data', vendor_data)
    _check_hostname(local_hostname)
    user_meta = _yaml_mapping('meta_data', meta_data)
    prefix = user_meta.pop('instance-id', INSTANCE_ID_PREFIX)
    if not isinstance(prefix, str) or not prefix.strip():
        raise SeedDataError('meta_data', f'instance-id must be a non-empty string, got {prefix!r}')
    meta = {'local-hostname': local_hostname, **user_meta}

    files = {'user-data': user_data.encode('utf-8'), 'meta-data': _dump_yaml('meta_data', meta)}
    if network_config is not None:
        _check_network_config(_yaml_mapping('network_config', network_config))
        files['network-config'] = network_config.encode('utf-8') if isinstance(network_config, str) else _dump_yaml('network_config', network_config)
    if vendor_data is not None:
        files['vendor-data'] = vendor_data.encode('utf-8')

    content_hash = _content_hash(files)
    instance_id = f'{prefix}-{content_hash}'
    files['meta-data'] = _dump_yaml('meta_data', {'instance-id': instance_id, **meta})
    return NoCloudSeed(files=files, content_hash=content_hash, instance_id=instance_id)


def build_seed_iso(seed: NoCloudSeed) -> SeedIso:
    """Build the ISO of ``seed``: volume ``cidata``, ISO 9660 level 3 with Joliet and Rock Ridge.

    The Rock Ridge and Joliet names are the NoCloud names (``user-data``, ...); the plain ISO 9660
    names are their upper-case, underscore forms (``USER_DATA.;1``), as level 3 allows no ``-``.
    """
    output = io.BytesIO()
    with _pycdlib_clock_frozen():
        iso = pycdlib.PyCdlib()
        # pycdlib's banner is its default application id; ours keeps the bytes from changing with it.
        iso.new(interchange_level=3, vol_ident=VOLUME_IDENTIFIER, app_ident_str='PULS.PROXMOX', joliet=3, rock_ridge='1.09')
        try:
            for name, content in seed.files.items():
                iso_name = name.upper().replace('-', '_')
                iso.add_fp(io.BytesIO(content), len(content), iso_path=f'/{iso_name}.;1', rr_name=name, joliet_path=f'/{name}')
            iso.write_fp(output)
        finally:
            iso.close()
    data = output.getvalue()
    return SeedIso(data=data, sha256=hashlib.sha256(data).hexdigest(), instance_id=seed.instance_id)


def _check_user_data(option: str, text: object) -> None:
    """Accept what cloud-init accepts as user-data; parse a ``#cloud-config`` body as cloud-init will."""
    if not isinstance(text, str) or not text.strip():
        raise SeedDataError(option, 'must be non-empty text (#cloud-config, a #! script, a MIME multipart message, ...)')
    if _MIME_MARKER in text.encode('utf-8')[:_MIME_SNIFF_BYTES].lower():
        _check_mime(option, text)
        return
    header = _part_header(text)
    if header is None:
        if text.lstrip().lower().startswith('content-type:'):
            raise SeedDataError(option, 'a MIME message needs a MIME-Version header: cloud-init recognizes MIME by it')
        first_line = text.lstrip().splitlines()[0][:60]
        raise SeedDataError(option, f'must start with one of {", ".join(_PART_HEADERS)} or be a MIME message; it starts with {first_line!r}')
    if header == _CLOUD_CONFIG_HEADER:
        config = _load_yaml(option, text)
        if not isinstance(config, dict):
            raise SeedDataError(option, f'a #cloud-config document must be a YAML mapping, got {_yaml_kind(config)}')


def _part_header(text: str) -> str | None:
    start = text.lstrip().lower()
    return next((header for header in _PART_HEADERS if start.startswith(header)), None)


def _check_mime(option: str, text: str) -> None:
    defects = [defect for part in email.message_from_string(text).walk() for defect in part.defects]
    if defects:
        problems = ', '.join(type(defect).__name__ for defect in defects)
        raise SeedDataError(option, f'is a malformed MIME message ({problems})')


def _check_hostname(hostname: object) -> None:
    if not isinstance(hostname, str) or not hostname or any(char.isspace() for char in hostname):
        raise SeedDataError('local_hostname', f'must be a non-empty name without whitespace, got {hostname!r}')


def _check_network_config(config: dict) -> None:
    """Check what cloud-init checks first: a mapping, optionally under ``network:``, disabled or of version 1 or 2."""
    config = config.get('network', config)
    if not isinstance(config, dict):
        raise SeedDataError('network_config', f'network must be a mapping, got {_yaml_kind(config)}')
    if config.get('config') == 'disabled':
        return
    version = config.get('version')
    if version not in (1, 2):
        raise SeedDataError('network_config', f'version must be 1 or 2 (or config: disabled), got {version!r}')
    if version == 1 and not isinstance(config.get('config'), list):
        raise SeedDataError('network_config', 'a version 1 config needs a config list')


def _yaml_mapping(option: str, value: str | Mapping | None) -> dict:
    """``value`` as a new dict: None and empty YAML give an empty one."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if not isinstance(value, str):
        raise SeedDataError(option, f'must be YAML text or a mapping, got {type(value).__name__}')
    loaded = _load_yaml(option, value)
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise SeedDataError(option, f'must be a YAML mapping, got {_yaml_kind(loaded)}')
    return loaded


def _load_yaml(option: str, text: str) -> object:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SeedDataError(option, f'is not valid YAML: {exc}') from exc


def _yaml_kind(value: object) -> str:
    return 'nothing' if value is None else f'a {type(value).__name__}'


def _dump_yaml(option: str, mapping: Mapping) -> bytes:
    try:
        return yaml.safe_dump(dict(mapping), default_flow_style=False, sort_keys=False, allow_unicode=True).encode('utf-8')
    except yaml.YAMLError as exc:
        raise SeedDataError(option, f'cannot be written as YAML: {exc}') from exc


def _content_hash(files: Mapping[str, bytes]) -> str:
    """Short SHA-256 over every file's name, length and bytes (the lengths keep file boundaries unambiguous)."""
    digest = hashlib.sha256()
    for name, content in files.items():
        digest.update(f'{name}\0{len(content)}\0'.encode('ascii'))
        digest.update(content)
    return digest.hexdigest()[:CONTENT_HASH_LENGTH]


class _FrozenUtcClock:
    """Stands in for the ``time`` module inside pycdlib: the clock reads SEED_EPOCH, local time is UTC."""

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)

    @staticmethod
    def time() -> float:
        return float(SEED_EPOCH)

    @staticmethod
    def localtime(seconds: float | None = None) -> struct_time:
        return time.gmtime(SEED_EPOCH if seconds is None else seconds)


@contextlib.contextmanager
def _pycdlib_clock_frozen():
    """Make pycdlib's output independent of when and where it runs.

    pycdlib stamps ``time.time()``, rendered in the host's time zone, into the volume descriptors,
    every directory record and the Rock Ridge TF entries, and offers no option to set them. So each
    pycdlib module that uses ``time`` sees a frozen UTC clock meanwhile; the ``time`` module itself
    is untouched. Module processes are single-threaded, so no other pycdlib user can observe it.
    """
    patched = [module for name, module in list(sys.modules.items()) if name.partition('.')[0] == 'pycdlib' and getattr(module, 'time', None) is time]
    for module in patched:
        module.time = _FrozenUtcClock()
    try:
        yield
    finally:
        for module in patched:
            module.time = time
