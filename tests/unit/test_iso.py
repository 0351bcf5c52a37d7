# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_iso's options are refused before any call when PVE would refuse or silently change them, and the plan says
per node what happens to the file, from its declared source and the record of where the file came from."""

from __future__ import annotations

import hashlib

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._cidata import nocloud_seed
from ansible_collections.puls.proxmox.plugins.module_utils._iso_plan import (
    UNRECORDED,
    IsoOptionError,
    Observed,
    check_options,
    parse_checksum,
    plan,
    source_from_file,
    storage_filename,
)

SHA256 = hashlib.sha256(b'image').hexdigest()
URL = 'https://cloud-images.example.com/noble.img'
USER_DATA = '#cloud-config\npackages: [nginx]\n'


def params(**options):
    base = {
        'filename': 'noble.iso',
        'storage': 'local',
        'node': 'pve1',
        'nodes': None,
        'content': 'iso',
        'state': 'present',
        'url': None,
        'checksum': None,
        'compression': None,
        'src': None,
        'seed': None,
        'timeout': 1800,
    }
    base.update(options)
    return base


def refused(**options):
    with pytest.raises(IsoOptionError) as raised:
        check_options(params(**options))
    return raised.value


# Checksums.


def test_a_checksum_is_an_algorithm_and_a_hex_digest_of_its_length():
    assert str(parse_checksum(' SHA256:' + SHA256.upper())) == 'sha256:' + SHA256
    assert parse_checksum('md5:' + 'a' * 32).algorithm == 'md5'


@pytest.mark.parametrize(
    'text, problem',
    [
        (SHA256, 'has no algorithm: write it as ALGO:HEX'),
        ('sha3:' + SHA256, "unknown algorithm 'sha3'; Proxmox VE verifies md5, sha1, sha224, sha256, sha384, sha512"),
        ('sha256:' + SHA256[:40], 'a sha256 digest has 64 hex digits, this one has 40'),
        ('sha1:' + 'g' * 40, 'the sha1 digest must be hexadecimal'),
    ],
)
def test_a_bad_checksum_is_refused_naming_the_option(text, problem):
    with pytest.raises(IsoOptionError) as raised:
        parse_checksum(text)
    assert raised.value.option == 'checksum' and problem in str(raised.value)


# File names.


@pytest.mark.parametrize(
    'filename, content, stored',
    [
        ('noble.iso', 'iso', 'noble.iso'),
        ('RESCUE.IMG', 'iso', 'RESCUE.IMG'),
        ('noble-server-cloudimg-amd64.img', 'import', 'noble-server-cloudimg-amd64.qcow2'),
        ('noble.IMG', 'import', 'noble.qcow2'),
        ('debian-12.raw', 'import', 'debian-12.raw'),
        ('debian-12-standard_12.7-1_amd64.tar.zst', 'vztmpl', 'debian-12-standard_12.7-1_amd64.tar.zst'),
        ('alpine-3.22-default_20250617_amd64.tar', 'vztmpl', 'alpine-3.22-default_20250617_amd64.tar'),
    ],
)
def test_the_stored_name_follows_pves_rules_and_an_import_img_becomes_qcow2(filename, content, stored):
    assert storage_filename(filename, content) == stored


@pytest.mark.parametrize(
    'filename, content, problem',
    [
        ('isos/noble.iso', 'iso', 'contains a path separator'),
        ('..\\noble.iso', 'iso', 'contains a path separator'),
        ('my noble+1.iso', 'iso', "contains ' ', '+', which Proxmox VE replaces by _; name it 'my_noble_1.iso'"),
        ('noble.qcow2', 'iso', 'must end in .iso or .img'),
        ('noble.iso', 'import', 'must end in .qcow2, .raw or .vmdk (an Ubuntu .img cloud image is a qcow2'),
        ('noble.QCOW2', 'import', 'must end in .qcow2, .raw or .vmdk'),
        ('debian.tar.lz4', 'vztmpl', 'must end in .tar, .tar.gz, .tar.xz, .tar.zst or .tar.bz2'),
        ('debian.tgz', 'vztmpl', 'must end in .tar, .tar.gz, .tar.xz, .tar.zst or .tar.bz2'),
        ('.iso', 'iso', 'must end in .iso or .img'),
        (' ', 'iso', 'must be the name of the file on the storage'),
    ],
)
def test_a_name_pve_would_change_or_refuse_is_refused(filename, content, problem):
    with pytest.raises(IsoOptionError) as raised:
        storage_filename(filename, content)
    assert raised.value.option == 'filename' and problem in str(raised.value)


# Options.


def test_exactly_one_source_is_needed_for_present_and_none_for_absent():
    assert 'got none' in str(refused())
    assert 'got url and seed' in str(refused(url=URL, seed={'user_data': USER_DATA}))
    spec = check_options(params(state='absent', url=URL))
    assert spec.source is None and spec.volid == 'local:iso/noble.iso'


@pytest.mark.parametrize(
    'options, option, problem',
    [
        ({'src': '/tmp/a.iso', 'checksum': 'sha256:' + SHA256}, 'checksum', 'applies to url only'),
        ({'seed': {'user_data': USER_DATA}, 'compression': 'gz'}, 'compression', 'applies to url only'),
        ({'url': URL, 'content': 'import', 'filename': 'noble.img', 'compression': 'gz'}, 'compression', 'decompresses ISO images only'),
        ({'url': 'ftp://mirror.example.com/noble.iso'}, 'url', 'must be an http:// or https:// URL'),
        ({'url': 'https://mirror.example.com/my noble.iso'}, 'url', 'without blanks'),
        ({'seed': {'user_data': USER_DATA}, 'content': 'import', 'filename': 'seed.qcow2'}, 'seed', 'use content iso'),
        ({'seed': {'user_data': 'hello'}}, 'seed.user_data', 'must start with one of'),
        ({'seed': {'user_data': USER_DATA, 'meta_data': '[1, 2]'}}, 'seed.meta_data', 'must be a YAML mapping'),
        ({'seed': {'user_data': USER_DATA, 'network_config': {'version': 3}}}, 'seed.network_config', 'version must be 1 or 2'),
        ({'seed': {'user_data': USER_DATA, 'hostname': 'web 1'}}, 'seed.hostname', 'without whitespace'),
        ({'url': URL, 'timeout': 0}, 'timeout', 'must be a positive number of seconds'),
        ({'url': URL, 'node': None, 'nodes': ['pve1', '']}, 'nodes', 'must name nodes of the cluster'),
    ],
)
def test_an_option_pve_iso_cannot_honour_is_refused_by_name(options, option, problem):
    error = refused(**options)
    assert error.option == option and str(error).startswith(option + ': ') and problem in str(error), str(error)


def test_nodes_are_kept_in_order_once_each():
    spec = check_options(params(url=URL, node=None, nodes=['pve2', 'pve1', 'pve2']))
    assert (spec.nodes, spec.nodes_option) == (('pve2', 'pve1'), 'nodes')


def test_a_url_record_changes_with_the_url_the_checksum_and_the_compression_only():
    record = check_options(params(url=URL, checksum='sha256:' + SHA256)).source.record
    assert len(record) == 12 and int(record, 16) >= 0
    assert check_options(params(url=URL, checksum='SHA256:' + SHA256.upper(), filename='other.iso')).source.record == record
    others = [params(url=URL + '?v=2', checksum='sha256:' + SHA256), params(url=URL), params(url=URL, checksum='sha256:' + SHA256, compression='gz')]
    assert len({check_options(other).source.record for other in others} | {record}) == 4


def test_a_src_record_is_the_files_hash():
    spec = source_from_file(check_options(params(src='/srv/a.iso')), b'image')
    assert (spec.source.record, spec.source.sha256, spec.source.data) == (SHA256[:12], SHA256, b'image')


def test_a_seed_record_is_its_content_hash_and_its_hostname_defaults_to_the_file_name():
    source = check_options(params(filename='web1-seed.iso', seed={'user_data': USER_DATA})).source
    assert source.record == nocloud_seed(user_data=USER_DATA, local_hostname='web1-seed').content_hash
    assert b'local-hostname: web1-seed' in source.seed.files['meta-data']
    named = check_options(params(filename='web1-seed.iso', seed={'user_data': USER_DATA, 'hostname': 'web1'})).source
    assert b'local-hostname: web1' in named.seed.files['meta-data'] and named.record != source.record


# The plan.


def url_spec(**options):
    return check_options(params(url=URL, checksum='sha256:' + SHA256, node=None, nodes=['pve1', 'pve2'], **options))


def test_each_node_gets_what_its_copy_needs():
    spec = url_spec()
    record = spec.source.record
    result = plan(spec, [Observed('pve1', False, None), Observed('pve2', True, record)])
    assert [(step.node, step.action, step.reason) for step in result.steps] == [
        ('pve1', 'download', 'not on the storage'),
        ('pve2', 'none', 'on the storage from the declared source'),
    ]
    assert result.changed
    assert result.before == {'pve1': {}, 'pve2': {'local:iso/noble.iso': record}}
    assert result.after == {'pve1': {'local:iso/noble.iso': record}, 'pve2': {'local:iso/noble.iso': record}}


def test_a_changed_or_unknown_source_is_replaced():
    spec = url_spec()
    result = plan(spec, [Observed('pve1', True, '0123456789ab'), Observed('pve2', True, None)])
    changed, unknown = result.steps
    assert (changed.action, unknown.action) == ('replace', 'replace')
    assert changed.reason == 'the declared source changed (recorded 0123456789ab, declared %s)' % spec.source.record
    assert 'unknown origin' in unknown.reason
    assert result.before == {'pve1': {'local:iso/noble.iso': '0123456789ab'}, 'pve2': {'local:iso/noble.iso': UNRECORDED}}


def test_an_upload_is_planned_for_src_and_seed():
    spec = check_options(params(seed={'user_data': USER_DATA}))
    assert plan(spec, [Observed('pve1', False, None)]).steps[0].action == 'upload'


def test_absent_deletes_present_copies_only():
    spec = check_options(params(state='absent', node=None, nodes=['pve1', 'pve2']))
    result = plan(spec, [Observed('pve1', True, '0123456789ab'), Observed('pve2', False, '0123456789ab')])
    assert [step.action for step in result.steps] == ['delete', 'none']
    assert result.after == {'pve1': {}, 'pve2': {}}
    assert not plan(spec, [Observed('pve1', False, None)]).changed
