"""The node's appliance index (tests/lab/pve/aplinfo.py, pve-manager PVE/API2/Nodes.pm aplinfo and apl_download): the
served OS templates listed as PVE/APLInfo.pm makes its entries, a download onto a storage by template name, and who may
do either."""

import hashlib

from lab.images import CONTAINER_TEMPLATE, UBUNTU_CONTAINER_TEMPLATE
from test_tags import as_token

APLINFO = '/nodes/pve1/aplinfo'


def test_the_index_lists_each_served_os_template_with_its_package_location_and_checksums(lab, api):
    index = {entry['template']: entry for entry in api.data('GET', APLINFO)}
    assert set(index) == {CONTAINER_TEMPLATE, UBUNTU_CONTAINER_TEMPLATE}
    debian = index[CONTAINER_TEMPLATE]
    fields = (debian['package'], debian['version'], debian['type'], debian['os'], debian['section'])
    assert fields == ('debian-12-standard', '12.7-1', 'lxc', 'debian-12', 'system')
    assert debian['location'] == lab.served.url(CONTAINER_TEMPLATE)
    assert debian['sha512sum'] == hashlib.sha512(lab.served.fetch(debian['location'])).hexdigest()


def test_a_download_by_template_name_puts_the_file_on_the_storage_and_a_second_one_keeps_it(lab, api):
    status = api.run('POST', APLINFO, storage='local', template=UBUNTU_CONTAINER_TEMPLATE)
    assert (status['type'], status['exitstatus']) == ('download', 'OK'), status
    volume = f'local:vztmpl/{UBUNTU_CONTAINER_TEMPLATE}'
    assert volume in [item['volid'] for item in api.data('GET', '/nodes/pve1/storage/local/content', content='vztmpl')]
    assert lab.volume_bytes(volume) == lab.served.fetch(lab.served.url(UBUNTU_CONTAINER_TEMPLATE))
    again = api.run('POST', APLINFO, storage='local', template=UBUNTU_CONTAINER_TEMPLATE)
    assert again['exitstatus'] == 'OK' and 'OK, got correct file already, no need to download' in again['log'], again


def test_a_template_not_in_the_index_or_a_storage_without_vztmpl_is_refused(lab, api):
    status, _message, errors = api.error('POST', APLINFO, storage='local', template='debian-11-standard_11.7-1_amd64.tar.zst')
    assert (status, errors) == (400, {'template': 'no such template'})
    status, message, _errors = api.error('POST', APLINFO, storage='local-lvm', template=CONTAINER_TEMPLATE)
    assert (status, message) == (500, "storage 'local-lvm' does not support templates")


def test_anyone_reads_the_index_and_a_download_takes_allocate_template_on_the_storage(lab):
    """aplinfo's permissions are user => 'all'; apl_download's check ['perm', '/storage/{storage}',
    ['Datastore.AllocateTemplate']] (pve-manager PVE/API2/Nodes.pm), as the lab's schema has them."""
    call = as_token(lab, {'/storage/local': ['Datastore.Audit', 'Datastore.AllocateSpace']}, name='apl')
    status, _message, index = call('GET', APLINFO)
    assert status == 200 and {entry['template'] for entry in index} == {CONTAINER_TEMPLATE, UBUNTU_CONTAINER_TEMPLATE}
    status, message, _data = call('POST', APLINFO, storage='local', template=UBUNTU_CONTAINER_TEMPLATE)
    assert (status, message) == (403, 'Permission check failed (/storage/local, Datastore.AllocateTemplate)')
    allowed = as_token(lab, {'/storage/local': ['Datastore.AllocateTemplate']}, name='apl-download')
    status, _message, upid = allowed('POST', APLINFO, storage='local', template=UBUNTU_CONTAINER_TEMPLATE)
    assert status == 200 and upid.startswith('UPID:pve1:')
