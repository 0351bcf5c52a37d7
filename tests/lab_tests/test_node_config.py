"""A node's config keeps its notes as PVE does (pve-manager PVE/API2/NodeConfig.pm, PVE/NodeConfig.pm)."""

CONFIG = '/nodes/{0}/config'
# PVE::Tools::assert_if_modified
DIGEST_CHANGED = 'detected modified configuration - file changed by other user? Try again.'


def test_a_fresh_node_answers_an_empty_config_without_a_digest(api):
    # pve-manager PVE/NodeConfig.pm load_config: `return {} if !$raw`, only parse_node_config sets the digest.
    assert api.data('GET', CONFIG.format('pve1')) == {}


def test_a_write_to_an_empty_config_is_never_refused_whatever_digest_it_carries(api):
    # pve-common src/PVE/Tools.pm assert_if_modified compares only when both digests are set.
    api.data('PUT', CONFIG.format('pve1'), description='first', digest='0' * 40)
    assert api.data('GET', CONFIG.format('pve1'))['description'] == 'first\n'


def test_a_config_emptied_by_deleting_its_notes_has_no_digest_again_and_one_option_keeps_it(api):
    api.data('PUT', CONFIG.format('pve1'), description='notes')
    api.data('PUT', CONFIG.format('pve1'), delete='description')
    assert api.data('GET', CONFIG.format('pve1')) == {}
    api.data('PUT', CONFIG.format('pve1'), **{'startall-onboot-delay': 0})
    config = api.data('GET', CONFIG.format('pve1'))
    assert config['startall-onboot-delay'] == 0 and len(config['digest']) == 40
    api.data('PUT', CONFIG.format('pve1'), description='notes', digest=config['digest'])
    api.data('PUT', CONFIG.format('pve1'), delete='description')
    assert set(api.data('GET', CONFIG.format('pve1'))) == {'startall-onboot-delay', 'digest'}


def test_notes_are_kept_per_node_and_read_back_as_pve_parses_them(api):
    api.data('PUT', CONFIG.format('pve1'), description='Rack 4, row B.  \n\n[puls-files: local:iso/a.iso=0123456789ab]\n\n')
    # Each comment line comes back trimmed at its end and followed by a newline; trailing empty lines are gone.
    assert api.data('GET', CONFIG.format('pve1'))['description'] == 'Rack 4, row B.\n\n[puls-files: local:iso/a.iso=0123456789ab]\n'
    assert 'description' not in api.data('GET', CONFIG.format('pve2'))


def test_the_digest_changes_with_the_notes_and_a_stale_one_is_refused(api):
    api.data('PUT', CONFIG.format('pve1'), description='zeroth')
    before = api.data('GET', CONFIG.format('pve1'))['digest']
    api.data('PUT', CONFIG.format('pve1'), description='first', digest=before)
    after = api.data('GET', CONFIG.format('pve1'))['digest']
    assert after != before
    assert api.error('PUT', CONFIG.format('pve1'), description='second', digest=before)[:2] == (500, DIGEST_CHANGED)
    assert api.data('GET', CONFIG.format('pve1'))['description'] == 'first\n'


def test_delete_removes_the_notes(api):
    api.data('PUT', CONFIG.format('pve1'), description='notes', wakeonlan='BC:24:11:00:00:01')
    api.data('PUT', CONFIG.format('pve1'), delete='description')
    config = api.data('GET', CONFIG.format('pve1'))
    assert 'description' not in config and config['wakeonlan'] == 'BC:24:11:00:00:01'


def test_a_write_while_another_writer_holds_the_node_config_lock_times_out_and_a_read_does_not_wait(api, lab):
    # pve-manager PVE/NodeConfig.pm lock_config: lock_file('/var/lock/pvenode.lock', 10, ...) around the write only.
    lab.call(lambda: lab.pve.hold_node_config_lock('pve1'))
    assert api.data('GET', CONFIG.format('pve1')) == {}
    assert api.error('PUT', CONFIG.format('pve1'), description='x')[:2] == (500, "can't lock file '/var/lock/pvenode.lock' - got timeout")
    api.data('PUT', CONFIG.format('pve2'), description='other node')
    assert lab.call(lambda: lab.pve.node_config_lock_met) == {'pve1': {lab.token_id}}
    lab.call(lambda: lab.pve.release_node_config_lock('pve1'))
    api.data('PUT', CONFIG.format('pve1'), description='x')
    assert api.data('GET', CONFIG.format('pve1'))['description'] == 'x\n'


def test_one_property_comes_without_a_digest(api):
    api.data('PUT', CONFIG.format('pve1'), description='notes')
    assert api.data('GET', CONFIG.format('pve1'), property='description') == {'description': 'notes\n'}
    assert api.data('GET', CONFIG.format('pve1'), property='wakeonlan') == {}


def test_writing_notes_needs_sys_modify(api, lab):
    def restrict():
        lab.pve.users['auditor@pve'] = 'audit-Pass-1'
        lab.pve.grant('auditor@pve', '/', 'Sys.Audit')

    lab.call(restrict)
    api.session.headers.pop('Authorization')
    ticket = api.data('POST', '/access/ticket', username='auditor@pve', password='audit-Pass-1')
    api.session.cookies.set('PVEAuthCookie', ticket['ticket'])
    api.session.headers['CSRFPreventionToken'] = ticket['CSRFPreventionToken']
    assert api.data('GET', CONFIG.format('pve1')) == {}
    assert api.error('PUT', CONFIG.format('pve1'), description='x')[:2] == (403, 'Permission check failed (/, Sys.Modify)')
