"""download-url and upload behave as pve-storage's (API2/Storage/Status.pm, PVE::Tools::download_file_from_url),
uploads are read as pve-http-server reads them (PVE/APIServer/AnyEvent.pm, file_upload_multipart), and the lab
keeps every file's bytes."""

import pytest
import requests
import zstandard
from lab import images
from lab.files import CHECKSUMS, checksums

DOWNLOAD = '/nodes/pve1/storage/{0}/download-url'
SEED_ISO = images.seed_files()['lab-tools.iso']


def isos(api):
    return [item['volid'] for item in api.data('GET', '/nodes/pve1/storage/local/content', content='iso')]


def test_a_download_is_verified_with_each_checksum_algorithm_and_kept(api, lab):
    url, sums = lab.serve('tools.iso', SEED_ISO)
    for algorithm in CHECKSUMS:
        filename = f'tools-{algorithm}.iso'
        status = api.download(url, 'iso', filename, checksum=sums[algorithm], **{'checksum-algorithm': algorithm})
        assert status['exitstatus'] == 'OK', status
        assert lab.volume_bytes('local:iso/' + filename) == SEED_ISO


def test_a_checksum_mismatch_fails_and_leaves_no_file(api, lab):
    url, sums = lab.serve('tools.iso', SEED_ISO)
    status = api.download(url, 'iso', 'tools.iso', checksum='0' * 64, **{'checksum-algorithm': 'sha256'})
    assert status['exitstatus'] == "checksum mismatch: got '{0}' != expect '{1}'".format(sums['sha256'], '0' * 64)
    assert 'local:iso/tools.iso' not in isos(api)


def test_an_existing_file_is_kept_unless_its_checksum_differs(api, lab):
    url, sums = lab.serve('tools.iso', SEED_ISO)
    assert api.download(url, 'iso', 'tools.iso')['exitstatus'] == 'OK'
    lab.serve('tools.iso', b'newer')
    assert api.download(url, 'iso', 'tools.iso')['exitstatus'] == "refusing to override existing file '/var/lib/vz/template/iso/tools.iso'"
    same = api.download(url, 'iso', 'tools.iso', checksum=sums['sha1'], **{'checksum-algorithm': 'sha1'})
    assert same['exitstatus'] == 'OK' and 'OK, got correct file already, no need to download' in same['log']
    other = api.download(url, 'iso', 'tools.iso', checksum='1' * 40, **{'checksum-algorithm': 'sha1'})
    assert other['exitstatus'] == "checksum mismatch: got '{0}' != expect '{1}', aborting".format(sums['sha1'], '1' * 40)
    assert lab.volume_bytes('local:iso/tools.iso') == SEED_ISO


@pytest.mark.lab(time_scale=0.2)
def test_a_file_that_appears_during_a_download_is_not_compared_and_survives_its_mismatch(api, lab):
    url, sums = lab.serve('tools.iso', SEED_ISO)
    upid = api.data('POST', DOWNLOAD.format('local'), url=url, content='iso', filename='tools.iso', checksum='0' * 64, **{'checksum-algorithm': 'sha256'})

    def another_run():
        lab.pve.store_file('local', 'tools.iso', 5, 'iso')
        lab.pve.volume_data['local:iso/tools.iso'] = b'other'

    lab.call(another_run)
    assert api.data('GET', f'/nodes/pve1/tasks/{upid}/status')['status'] == 'running'
    status = api.wait(upid)
    assert status['exitstatus'] == "checksum mismatch: got '{0}' != expect '{1}'".format(sums['sha256'], '0' * 64)
    assert lab.volume_bytes('local:iso/tools.iso') == b'other'


@pytest.mark.parametrize(
    'content, filename, message',
    [
        ('iso', 'tools.qcow2', 'wrong file extension'),
        ('vztmpl', 'debian.tar.lz4', 'wrong file extension'),
        ('vztmpl', 'debian.tgz', 'wrong file extension'),
        ('import', 'noble-server-cloudimg-amd64.img', 'invalid filename or wrong extension'),
    ],
)
def test_the_file_name_must_fit_the_content_type(api, lab, content, filename, message):
    url = lab.served.url('noble-server-cloudimg-amd64.img')
    status, _message, errors = api.error('POST', DOWNLOAD.format('local'), url=url, content=content, filename=filename)
    assert (status, errors) == (400, {'filename': message})


def test_a_plain_tar_is_a_container_template(api, lab):
    url, _sums = lab.serve('debian-12-standard.tar', b'a tar archive')
    for filename in ('debian-12-standard.tar', 'debian-12-standard.TAR', 'alpine.tar.xz'):
        assert api.download(url, 'vztmpl', filename)['exitstatus'] == 'OK', filename
    names = [item['volid'] for item in api.data('GET', '/nodes/pve1/storage/local/content', content='vztmpl')]
    assert {'local:vztmpl/debian-12-standard.tar', 'local:vztmpl/alpine.tar.xz'} <= set(names)


def test_the_file_name_is_normalized(api, lab):
    assert api.download(lab.served.url('lab-tools.iso'), 'iso', '../my tools.iso')['exitstatus'] == 'OK'
    assert 'local:iso/my_tools.iso' in isos(api)


def test_a_compressed_iso_is_decompressed(api, lab):
    # The checksum is the compressed file's, as PVE verifies before it decompresses.
    compressed = checksums(images.seed_files()['lab-tools.iso.gz'])
    status = api.download(
        lab.served.url('lab-tools.iso.gz'), 'iso', 'gz.iso', compression='gz', checksum=compressed['sha512'], **{'checksum-algorithm': 'sha512'}
    )
    assert status['exitstatus'] == 'OK'
    assert lab.volume_bytes('local:iso/gz.iso') == SEED_ISO
    zst_url, _sums = lab.serve('lab-tools.iso.zst', zstandard.ZstdCompressor().compress(SEED_ISO))
    assert api.download(zst_url, 'iso', 'zst.iso', compression='zst')['exitstatus'] == 'OK'
    assert lab.volume_bytes('local:iso/zst.iso') == SEED_ISO


def test_only_an_iso_is_decompressed(api, lab):
    status = api.download(lab.served.url('lab-tools.iso.gz'), 'import', 'x.raw', compression='gz')
    assert status['exitstatus'] == 'decompression not supported for import'
    errors = api.error('POST', DOWNLOAD.format('local'), url=lab.served.url('lab-tools.iso.gz'), content='iso', filename='x.iso', compression='rar')[2]
    assert errors == {'compression': "value 'rar' does not have a value in the enumeration 'gz, lzo, zst, bz2'"}


def test_only_the_labs_own_files_can_be_downloaded(api, lab):
    for url in ('https://releases.ubuntu.com/noble/ubuntu.iso', lab.served.url('missing.iso')):
        status = api.download(url, 'iso', 'outside.iso')
        assert status['exitstatus'].startswith(f'download failed: {url} is not a file the lab serves')
    assert 'local:iso/outside.iso' not in isos(api)


def test_download_needs_a_file_storage_configured_for_the_content(api, lab):
    url = lab.served.url('lab-tools.iso')
    assert api.error('POST', DOWNLOAD.format('local-lvm'), url=url, content='iso', filename='a.iso')[:2] == (
        500,
        "can't upload to storage type 'lvmthin', not a file based storage!",
    )
    lab.pve.storages['local']['content'] = 'iso'
    assert api.error('POST', DOWNLOAD.format('local'), url=url, content='import', filename='a.qcow2')[:2] == (
        500,
        "storage 'local' is not configured for content-type 'import'",
    )


def test_an_upload_is_kept(api, lab):
    response = api.session.post(
        lab.url + '/api2/json/nodes/pve1/storage/local/upload', verify=lab.cafile, data={'content': 'iso'}, files={'filename': ('seed.iso', SEED_ISO)}
    )
    assert response.status_code == 200, response.text
    assert api.wait(response.json()['data'])['exitstatus'] == 'OK'
    assert lab.volume_bytes('local:iso/seed.iso') == SEED_ISO


@pytest.mark.lab(time_scale=0.001)
def test_a_rate_limited_upload_is_read_at_the_labs_upload_rate_and_kept_whole(api, lab):
    # upload_rate is a lab knob (not a PVE behaviour): 1 MiB in 64 KiB reads at 256 KiB per PVE second is 4 PVE seconds.
    lab.pve.upload_rate, data = 256 << 10, bytes(range(256)) * 4096
    response = upload(api, lab, [('content', 'iso'), ('filename', ('slow.iso', data, 'application/octet-stream'))])
    assert response.status_code == 200, response.text
    assert api.wait(response.json()['data'])['exitstatus'] == 'OK'
    assert lab.volume_bytes('local:iso/slow.iso') == data
    body = lab.pve.upload_bodies[-1][1]
    assert lab.pve.upload_secs == [pytest.approx(len(body) / float(256 << 10))] and len(body) > len(data)


def upload(api, lab, parts, storage='local'):
    """POST a multipart body whose parts requests writes in list order: the response."""
    return api.session.post(
        lab.url + f'/api2/json/nodes/pve1/storage/{storage}/upload',
        verify=lab.cafile,
        files=[(name, value if isinstance(value, tuple) else (None, value)) for name, value in parts],
    )


def test_upload_fields_in_pve_order_are_accepted(api, lab):
    sums = checksums(SEED_ISO)
    response = upload(
        api,
        lab,
        [
            ('content', 'iso'),
            ('checksum-algorithm', 'sha256'),
            ('checksum', sums['sha256']),
            ('filename', ('ordered.iso', SEED_ISO, 'application/octet-stream')),
        ],
    )
    assert response.status_code == 200, response.text
    assert api.wait(response.json()['data'])['exitstatus'] == 'OK'
    assert lab.volume_bytes('local:iso/ordered.iso') == SEED_ISO


@pytest.mark.parametrize(
    'order',
    [
        ('content', 'checksum', 'checksum-algorithm'),
        ('checksum-algorithm', 'content', 'checksum'),
        ('checksum-algorithm', 'checksum', 'content'),
    ],
)
def test_upload_fields_out_of_pve_order_are_refused_and_nothing_is_stored(api, lab, order):
    # The field out of order is found further on, so its Content-Disposition spans a CRLF: AnyEvent.pm's response()
    # turns the status text with a line break into a bare 400 Bad Request.
    values = {'content': 'iso', 'checksum-algorithm': 'sha256', 'checksum': checksums(SEED_ISO)['sha256']}
    response = upload(api, lab, [(name, values[name]) for name in order] + [('filename', ('unordered.iso', SEED_ISO, 'application/octet-stream'))])
    assert (response.status_code, response.reason, response.content) == (400, 'Bad Request', b'')
    assert 'local:iso/unordered.iso' not in isos(api)


def test_upload_out_of_order_with_lf_line_ends_names_the_wrong_content_disposition(lab):
    sha = checksums(SEED_ISO)['sha256']
    body = (
        f'--B\nContent-Disposition: form-data; name="checksum"\n\n{sha}\n'
        '--B\nContent-Disposition: form-data; name="checksum-algorithm"\n\nsha256\n'
        '--B\nContent-Disposition: form-data; name="filename"; filename="lf.iso"\n\nISO\n--B--\n'
    )
    response = requests.post(
        lab.url + '/api2/json/nodes/pve1/storage/local/upload',
        verify=lab.cafile,
        data=body,
        headers={'Content-Type': 'multipart/form-data; boundary=B', 'Authorization': f'PVEAPIToken={lab.token_id}={lab.token_secret}'},
    )
    # The text before name="checksum-algorithm" spans lines; the status line keeps the first, the body all of it.
    spanned = f'form-data; name="checksum"\n\n{sha}\n--B\nContent-Disposition: form-data'
    assert (response.status_code, response.reason) == (500, 'wrong Content-Disposition \'form-data; name="checksum"')
    assert response.text == f"wrong Content-Disposition '{spanned}' in multipart, expected 'form-data'\n"


def test_upload_file_part_must_be_named_filename(api, lab):
    response = upload(api, lab, [('content', 'iso'), ('file', ('seed.iso', SEED_ISO, 'application/octet-stream'))])
    message = "wrong field name 'file' for file upload, expected 'filename' at /usr/share/perl5/PVE/APIServer/AnyEvent.pm line 1325."
    assert (response.status_code, response.reason, response.text) == (500, message, message + '\n')


def test_upload_without_a_file_part_fails(api, lab):
    response = upload(api, lab, [('content', 'iso')])
    message = 'upload failed at /usr/share/perl5/PVE/APIServer/AnyEvent.pm line 1370.'
    assert (response.status_code, response.reason) == (500, message)


def test_volume_bytes_needs_a_file_the_lab_holds(lab):
    with pytest.raises(KeyError, match='no volume local:iso/none.iso'):
        lab.volume_bytes('local:iso/none.iso')
    with pytest.raises(KeyError, match='holds no bytes'):
        lab.volume_bytes('local-lvm:base-9017-disk-0')
