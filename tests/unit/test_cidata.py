# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NoCloud seed ISO: what cloud-init and ISO readers the project did not write see in it."""

from __future__ import annotations

import io
import shutil
import subprocess
import time
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from pathlib import Path

import pycdlib
import pytest
import yaml

from ansible_collections.puls.proxmox.plugins.module_utils import _cidata
from ansible_collections.puls.proxmox.plugins.module_utils._cidata import SeedDataError, build_seed_iso, nocloud_seed

FIXTURES = Path(__file__).parent / 'fixtures' / 'cidata'
USER_DATA = (FIXTURES / 'user-data').read_text(encoding='utf-8')
NETWORK_CONFIG = (FIXTURES / 'network-config').read_text(encoding='utf-8')
VENDOR_DATA = '#!/bin/sh\necho vendor\n'
TOOL_PACKAGES = {'isoinfo': 'genisoimage', 'xorriso': 'xorriso', 'cloud-init': 'cloud-init', 'blkid': 'util-linux'}


def tool(name: str) -> str:
    """The path of a Debian tool the tests need; CI installs them, so a missing one fails, never skips."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f'{name} is missing: apt-get install -y {TOOL_PACKAGES[name]}', pytrace=False)
    return path


def run(*command: str) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def full_seed(**overrides):
    arguments = {'user_data': USER_DATA, 'local_hostname': 'web01', 'network_config': NETWORK_CONFIG, 'vendor_data': VENDOR_DATA}
    return nocloud_seed(**{**arguments, **overrides})


@pytest.fixture(scope='module')
def seed():
    return full_seed()


@pytest.fixture(scope='module')
def iso_file(seed, tmp_path_factory):
    path = tmp_path_factory.mktemp('seed') / 'seed.iso'
    path.write_bytes(build_seed_iso(seed).data)
    return path


@pytest.fixture(scope='module')
def extracted(iso_file, tmp_path_factory):
    """The ISO's tree as xorriso extracts it, by its Rock Ridge names."""
    target = tmp_path_factory.mktemp('extracted')
    run(tool('xorriso'), '-osirrox', 'on', '-indev', str(iso_file), '-extract', '/', str(target))
    return target


@pytest.fixture
def other_clock_and_zone(monkeypatch):
    """Another 'now' and a UTC+14 local zone, for everything that reads the standard clock."""
    monkeypatch.setattr(time, 'time', lambda: 1_900_000_000.5)
    monkeypatch.setenv('TZ', 'XYZ-14')
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


# What the ISO holds, read back by pycdlib and by tools from Debian.


def test_pycdlib_reads_label_and_exact_files_by_rock_ridge_and_joliet_names(seed):
    iso = pycdlib.PyCdlib()
    iso.open_fp(io.BytesIO(build_seed_iso(seed).data))
    try:
        assert iso.has_rock_ridge() and iso.has_joliet()
        assert iso.pvd.volume_identifier.rstrip(b' ') == b'cidata'
        for name, content in seed.files.items():
            for path_kind in ('rr_path', 'joliet_path'):
                out = io.BytesIO()
                iso.get_file_from_iso_fp(out, **{path_kind: f'/{name}'})
                assert out.getvalue() == content, (name, path_kind)
    finally:
        iso.close()


def test_isoinfo_sees_label_joliet_and_rock_ridge(iso_file):
    description = run(tool('isoinfo'), '-d', '-i', str(iso_file))
    assert 'Volume id: cidata\n' in description
    assert 'Joliet with UCS level 3 found' in description
    assert 'Rock Ridge signatures version 1 found' in description


@pytest.mark.parametrize('reader', ['-J', '-R'], ids=['joliet', 'rock-ridge'])
def test_isoinfo_lists_and_extracts_nocloud_files_exactly(seed, iso_file, reader):
    listing = run(tool('isoinfo'), reader, '-f', '-i', str(iso_file)).split()
    assert sorted(listing) == sorted(f'/{name}' for name in seed.files)
    for name, content in seed.files.items():
        extracted_bytes = subprocess.run([tool('isoinfo'), reader, '-i', str(iso_file), '-x', f'/{name}'], check=True, capture_output=True).stdout
        assert extracted_bytes == content, name


def test_xorriso_extracts_the_nocloud_files_exactly(seed, extracted):
    assert {path.name: path.read_bytes() for path in extracted.iterdir()} == seed.files


def test_blkid_reports_label_cidata_which_nocloud_looks_for(iso_file):
    assert run(tool('blkid'), '-p', '-o', 'value', '-s', 'LABEL', str(iso_file)).strip() == 'cidata'


def test_cloud_init_schema_accepts_the_user_data_on_the_iso(extracted):
    result = subprocess.run([tool('cloud-init'), 'schema', '--config-file', str(extracted / 'user-data')], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'Valid cloud-config' in result.stdout


def test_meta_data_holds_hashed_instance_id_and_hostname(seed, extracted):
    meta = yaml.safe_load((extracted / 'meta-data').read_text(encoding='utf-8'))
    assert meta == {'instance-id': f'iid-puls-{seed.content_hash}', 'local-hostname': 'web01'}
    assert seed.instance_id == meta['instance-id']
    assert len(seed.content_hash) == 12 and int(seed.content_hash, 16) >= 0


def test_optional_files_are_absent_unless_given():
    assert list(nocloud_seed(user_data=USER_DATA, local_hostname='web01').files) == ['user-data', 'meta-data']
    assert list(full_seed().files) == ['user-data', 'meta-data', 'network-config', 'vendor-data']


def test_text_input_is_kept_byte_for_byte_and_mappings_are_written_as_yaml():
    mapping = yaml.safe_load(NETWORK_CONFIG)
    from_mapping = full_seed(network_config=mapping).files['network-config']
    assert full_seed().files['network-config'] == NETWORK_CONFIG.encode('utf-8')
    assert from_mapping != NETWORK_CONFIG.encode('utf-8') and yaml.safe_load(from_mapping) == mapping


# Reproducible bytes and the instance-id.


def test_same_input_gives_identical_bytes_whatever_the_clock_and_time_zone(iso_file, other_clock_and_zone):
    # iso_file was built on the real clock in the host's zone; this build sees another time and UTC+14.
    rebuilt = build_seed_iso(full_seed())
    assert rebuilt.data == iso_file.read_bytes()
    assert rebuilt == build_seed_iso(full_seed())


def test_iso_dates_are_pinned_to_the_seed_epoch(iso_file):
    report = subprocess.run([tool('xorriso'), '-indev', str(iso_file), '-pvd_info'], check=True, capture_output=True, text=True)
    times = [line for line in report.stdout.splitlines() if line.startswith(('Creation Time', 'Modif. Time', 'Eff. Time'))]
    assert len(times) == 3 and all(line.endswith(': 1980010100000000') for line in times), times
    assert 'Jan  1 1980' in run(tool('isoinfo'), '-R', '-l', '-i', str(iso_file))


def test_build_leaves_pycdlib_on_the_real_clock_even_when_it_fails(seed, monkeypatch):
    def refuse(*_args, **_kwargs):
        raise pycdlib.pycdlibexception.PyCdlibInvalidInput('refused')

    build_seed_iso(seed)
    monkeypatch.setattr(pycdlib.PyCdlib, 'write_fp', refuse)
    with pytest.raises(pycdlib.pycdlibexception.PyCdlibInvalidInput):
        build_seed_iso(seed)
    assert all(module.time is time for module in (pycdlib.dates, pycdlib.headervd, pycdlib.pycdlib, pycdlib.utils))


@pytest.mark.parametrize(
    'change',
    [
        {'user_data': USER_DATA + 'timezone: Europe/Berlin\n'},
        {'local_hostname': 'web02'},
        {'network_config': NETWORK_CONFIG.replace('127.0.2.10', '127.0.2.11')},
        {'vendor_data': None},
        {'meta_data': {'public-keys': ['ssh-ed25519 AAAA x']}},
    ],
    ids=['user_data', 'local_hostname', 'network_config', 'vendor_data', 'meta_data'],
)
def test_any_content_change_changes_the_instance_id(seed, change):
    changed = full_seed(**change)
    assert changed.instance_id != seed.instance_id
    assert changed.instance_id.startswith('iid-puls-')


def test_instance_id_is_known_without_building_the_iso(seed, monkeypatch):
    monkeypatch.setattr(pycdlib, 'PyCdlib', None)
    assert full_seed() == seed
    monkeypatch.undo()
    assert build_seed_iso(seed).instance_id == seed.instance_id


def test_user_meta_data_keys_win_but_their_instance_id_only_names_the_prefix():
    meta_text = 'instance-id: web01-seed\nlocal-hostname: web01.example.com\navailability-zone: lab\n'
    seed = full_seed(meta_data=meta_text)
    meta = yaml.safe_load(seed.files['meta-data'])
    assert meta == {'instance-id': f'web01-seed-{seed.content_hash}', 'local-hostname': 'web01.example.com', 'availability-zone': 'lab'}
    assert full_seed(meta_data=yaml.safe_load(meta_text)) == seed
    assert full_seed(meta_data=meta_text.replace('web01-seed', 'other')).content_hash == seed.content_hash


# What counts as user-data, as cloud-init decides it.


def mime_user_data() -> str:
    message = MIMEMultipart()
    message.attach(MIMEText('#cloud-config\npackages: [htop]\n', 'cloud-config'))
    message.attach(MIMEText('#!/bin/sh\necho hi\n', 'x-shellscript'))
    return message.as_string()


@pytest.mark.parametrize(
    'user_data',
    [
        '#!/bin/sh\necho hello\n',
        '#cloud-config\n{}\n',
        '  #Cloud-Config\npackages: [htop]\n',
        '#include\nhttps://example.com/user-data\n',
        '## template: jinja\n#cloud-config\nhostname: {{ v1.local_hostname }}\n',
        '#cloud-config-archive\n- type: text/cloud-config\n  content: "packages: [htop]"\n',
        '#cloud-boothook\n#!/bin/sh\necho early\n',
        mime_user_data(),
    ],
    ids=['script', 'empty-mapping', 'case-and-indent', 'include', 'jinja', 'archive', 'boothook', 'mime'],
)
def test_user_data_forms_cloud_init_accepts_pass(user_data):
    assert nocloud_seed(user_data=user_data, local_hostname='web01').files['user-data'] == user_data.encode('utf-8')


@pytest.mark.parametrize(
    'option, value, problem',
    [
        ('user_data', None, 'non-empty text'),
        ('user_data', ' \n', 'non-empty text'),
        ('user_data', 'packages: [htop]\n', "it starts with 'packages: [htop]'"),
        ('user_data', '#cloud-config\n- htop\n', 'must be a YAML mapping, got a list'),
        ('user_data', '#cloud-config\n', 'must be a YAML mapping, got nothing'),
        ('user_data', '#cloud-config\npackages: [htop\n', 'is not valid YAML'),
        ('user_data', 'Content-Type: multipart/mixed; boundary="x"\n\n--x--\n', 'needs a MIME-Version header'),
        ('user_data', 'MIME-Version: 1.0\nContent-Type: multipart/mixed\n\nbody\n', 'malformed MIME message'),
        ('vendor_data', 'just words\n', 'must start with one of'),
        ('meta_data', '- a\n', 'must be a YAML mapping, got a list'),
        ('meta_data', 'a: [\n', 'is not valid YAML'),
        ('meta_data', {'instance-id': ''}, 'instance-id must be a non-empty string'),
        ('meta_data', 42, 'must be YAML text or a mapping'),
        ('meta_data', {'x': object()}, 'cannot be written as YAML'),
        ('network_config', '', 'version must be 1 or 2'),
        ('network_config', 'network: [eth0]\n', 'network must be a mapping'),
        ('network_config', {'version': 3}, 'version must be 1 or 2'),
        ('network_config', {'ethernets': {'eth0': {'dhcp4': True}}}, 'version must be 1 or 2'),
        ('network_config', {'version': 1, 'config': {'type': 'physical'}}, 'needs a config list'),
        ('local_hostname', '', 'non-empty name'),
        ('local_hostname', 'web 01', 'without whitespace'),
    ],
)
def test_bad_input_fails_naming_the_option(option, value, problem):
    arguments = {'user_data': USER_DATA, 'local_hostname': 'web01', option: value}
    with pytest.raises(SeedDataError) as raised:
        nocloud_seed(**arguments)
    assert raised.value.option == option
    assert str(raised.value).startswith(f'{option}: ') and problem in str(raised.value)
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize(
    'network_config',
    [
        {'network': {'config': 'disabled'}},
        {'version': 1, 'config': [{'type': 'physical', 'name': 'eth0', 'subnets': [{'type': 'dhcp'}]}]},
        {'version': 2, 'ethernets': {'eth0': {'dhcp4': True}}},
    ],
    ids=['disabled', 'v1', 'v2-unwrapped'],
)
def test_network_config_shapes_cloud_init_reads_pass(network_config):
    assert 'network-config' in full_seed(network_config=network_config).files


def test_missing_libraries_are_reported_for_missing_required_lib():
    assert (_cidata.HAS_PYCDLIB, _cidata.PYCDLIB_IMPORT_ERROR) == (True, None)
    assert (_cidata.HAS_YAML, _cidata.YAML_IMPORT_ERROR) == (True, None)
