"""The lab serves files over HTTP: what tests register, and small real images from the start."""

import gzip
import hashlib
import io

import pycdlib
import requests
from lab.images import qcow2_virtual_size


def fetch(url):
    response = requests.get(url, timeout=5)
    return response.status_code, response.content


def test_a_served_file_comes_over_http_with_its_checksums(lab):
    url, sums = lab.serve('hello.txt', b'hello\n')
    assert url == f'http://{lab.block.files}/hello.txt'
    assert fetch(url) == (200, b'hello\n')
    assert sums == {name: hashlib.new(name, b'hello\n').hexdigest() for name in ('md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512')}


def test_an_unknown_file_is_not_found(lab):
    assert fetch(lab.served.url('missing.iso'))[0] == 404


def test_the_seeded_cloud_images_are_qcow2(lab):
    for name, size in (('noble-server-cloudimg-amd64.img', 3584 * 1024**2), ('debian-12-genericcloud-amd64.qcow2', 3 * 1024**3)):
        status, data = fetch(lab.served.url(name))
        assert status == 200 and data[:4] == b'QFI\xfb' and qcow2_virtual_size(data) == size


def test_the_seeded_iso_is_a_real_iso_also_served_compressed(lab):
    data = fetch(lab.served.url('lab-tools.iso'))[1]
    image = pycdlib.PyCdlib()
    image.open_fp(io.BytesIO(data))
    readme = io.BytesIO()
    image.get_file_from_iso_fp(readme, joliet_path='/readme.txt')
    image.close()
    assert readme.getvalue().startswith(b'puls.proxmox lab')
    assert gzip.decompress(fetch(lab.served.url('lab-tools.iso.gz'))[1]) == data
