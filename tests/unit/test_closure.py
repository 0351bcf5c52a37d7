# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Closure hashes: a provision file's hash changes exactly when something it runs changes.

Each test works on a copy of fixtures/closure: ``tree/`` is a checkout with playbooks and roles,
``shared_roles/`` a roles path outside it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._closure import ProvisionFileError, closure_files, closure_hash, provision_hashes
from ansible_collections.puls.proxmox.plugins.module_utils._provision_hash import short_hash

FIXTURES = Path(__file__).parent / 'fixtures' / 'closure'
PLAYBOOKS = ['site.yml', 'db.yml', 'chain.yml', 'cycle.yml', 'external.yml']


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES, tmp_path / 'checkout')
    return tmp_path / 'checkout' / 'tree'


def hashes(tree: Path, **options) -> dict[str, str]:
    return {playbook: closure_hash(tree / playbook, **options) for playbook in PLAYBOOKS}


def changed_after(tree: Path, edit, **options) -> set[str]:
    """The playbooks whose hash changes when ``edit(tree)`` runs."""
    before = hashes(tree, **options)
    edit(tree)
    after = hashes(tree, **options)
    return {playbook for playbook in PLAYBOOKS if before[playbook] != after[playbook]}


def append(relative_path: str, text: str = '# changed\n'):
    def edit(tree: Path) -> None:
        path = tree / relative_path
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open('a', encoding='utf-8') as handle:
            handle.write(text)

    return edit


def test_closure_of_a_playbook_is_everything_it_runs_named_relative_to_its_directory(tree):
    closure = closure_files(tree / 'site.yml')
    assert list(closure.files.values()) == [
        'roles/common/tasks/main.yml',
        'roles/common/vars/main.yml',
        'roles/logging/tasks/main.yml',
        'roles/monitoring/handlers/main.yml',
        'roles/monitoring/tasks/main.yml',
        'roles/web/defaults/main.yml',
        'roles/web/meta/main.yml',
        'roles/web/tasks/install.yml',
        'roles/web/tasks/main.yml',
        'roles/web/templates/index.html.j2',
        'site.yml',
        'tasks/more.yml',
        'tasks/setup.yml',
        'vars/common.yml',
        'vars/default.yml',
        'vars/secrets.yml',
    ]
    assert all(path.is_absolute() and path.is_file() for path in closure.files)


def test_changing_a_role_template_changes_the_hash_of_the_playbook_using_the_role_only(tree):
    assert changed_after(tree, append('roles/web/templates/index.html.j2')) == {'site.yml'}


def test_changing_a_vars_file_changes_the_hash(tree):
    assert changed_after(tree, append('vars/common.yml')) == {'site.yml'}


def test_changing_the_fallback_of_a_first_found_vars_files_list_changes_the_hash(tree):
    assert changed_after(tree, append('vars/default.yml')) == {'site.yml'}


def test_changing_or_adding_an_unrelated_file_next_to_a_vars_file_changes_nothing(tree):
    assert changed_after(tree, append('vars/unused.yml')) == set()
    assert changed_after(tree, append('vars/new.yml')) == set()


def test_imported_playbook_chain_covers_the_roles_of_the_imported_playbook(tree):
    assert 'roles/db/files/schema.sql' in closure_files(tree / 'chain.yml').files.values()
    assert changed_after(tree, append('roles/db/files/schema.sql')) == {'db.yml', 'chain.yml'}
    assert changed_after(tree, append('db.yml')) == {'db.yml', 'chain.yml'}


def test_role_included_by_fqcn_include_role_is_covered_with_its_handlers(tree):
    assert changed_after(tree, append('roles/monitoring/handlers/main.yml')) == {'site.yml'}


def test_role_imported_by_short_import_role_in_an_imported_task_file_is_covered(tree):
    assert changed_after(tree, append('roles/logging/tasks/main.yml')) == {'site.yml'}


def test_task_file_imported_by_an_imported_task_file_resolves_next_to_it(tree):
    assert changed_after(tree, append('tasks/more.yml')) == {'site.yml'}


def test_role_meta_dependency_is_covered(tree):
    assert changed_after(tree, append('roles/common/vars/main.yml')) == {'site.yml'}


def test_new_file_in_a_used_role_changes_the_hash(tree):
    assert changed_after(tree, append('roles/web/files/extra.conf')) == {'site.yml'}


@pytest.mark.parametrize('cache_file', ['roles/web/__pycache__/filters.cpython-311.pyc', 'roles/web/filter_plugins/web.pyc', 'roles/web/.git/index'])
def test_python_caches_and_vcs_data_in_a_role_change_nothing(tree, cache_file):
    assert changed_after(tree, append(cache_file, 'bytecode')) == set()


def test_symbolic_links_in_a_role_are_followed_and_their_loops_terminate(tree):
    (tree / 'roles' / 'web' / 'files').mkdir()
    (tree / 'roles' / 'web' / 'files' / 'parent').symlink_to('..')
    (tree / 'roles' / 'web' / 'files' / 'vars').symlink_to('../../../vars')
    names = list(closure_files(tree / 'site.yml').files.values())
    assert 'roles/web/files/vars/unused.yml' in names
    assert not [name for name in names if '/parent/' in name]


def test_playbook_importing_itself_through_a_symbolic_link_terminates(tree):
    (tree / 'self').symlink_to('.')
    write(tree / 'looping.yml', '- name: Import through the link\n  ansible.builtin.import_playbook: self/looping.yml\n')
    assert list(closure_files(tree / 'looping.yml').files.values()) == ['looping.yml']


def test_playbook_importing_itself_and_roles_depending_on_each_other_terminate(tree):
    closure = closure_files(tree / 'cycle.yml')
    assert list(closure.files.values()) == [
        'cycle.yml',
        'roles/loop_a/meta/main.yml',
        'roles/loop_a/tasks/main.yml',
        'roles/loop_b/meta/main.yml',
        'roles/loop_b/tasks/main.yml',
    ]
    assert closure.unresolved == []


def test_moving_the_whole_tree_keeps_every_hash(tree, tmp_path):
    roles_path = [tree.parent / 'shared_roles']
    before = hashes(tree, roles_path=roles_path)
    moved = tmp_path / 'elsewhere' / 'deeper'
    shutil.move(tree.parent, moved)
    assert hashes(moved / 'tree', roles_path=[moved / 'shared_roles']) == before


def test_role_from_the_roles_path_is_named_by_role_wherever_the_roles_path_is(tree, tmp_path):
    before = closure_hash(tree / 'external.yml', roles_path=[tree.parent / 'shared_roles'])
    shutil.move(tree.parent / 'shared_roles', tmp_path / 'roles')
    closure = closure_files(tree / 'external.yml', roles_path=[tmp_path / 'roles'])
    assert list(closure.files.values()) == ['external.yml', 'roles/base/tasks/main.yml']
    assert closure_hash(tree / 'external.yml', roles_path=[tmp_path / 'roles']) == before


def test_role_in_the_playbook_roles_directory_wins_over_the_roles_path(tree):
    shutil.copytree(tree / 'roles' / 'web', tree.parent / 'shared_roles' / 'web')
    roles_path = [tree.parent / 'shared_roles']
    assert changed_after(tree, append('../shared_roles/web/templates/index.html.j2'), roles_path=roles_path) == set()


def test_collection_role_is_neither_hashed_nor_reported_but_a_missing_role_is_reported(tree):
    closure = closure_files(tree / 'external.yml', roles_path=[tree.parent / 'shared_roles'])
    assert closure.unresolved == ["external.yml: role 'absent' (not found)"]


def test_role_missing_from_the_roles_path_is_reported(tree):
    assert closure_files(tree / 'external.yml').unresolved == ["external.yml: role 'base' (not found)", "external.yml: role 'absent' (not found)"]


def test_templated_paths_are_reported_unresolved_and_skipped(tree):
    assert closure_files(tree / 'site.yml').unresolved == [
        """site.yml: vars_files 'vars/{{ deployment_env }}.yml' (templated)""",
        """site.yml: include_tasks/import_tasks "tasks/{{ ansible_facts['os_family'] }}.yml" (templated)""",
    ]


def test_file_mode_hashes_the_file_bytes_alone_as_puls_did(tree):
    for playbook in PLAYBOOKS:
        assert closure_hash(tree / playbook, mode='file') == short_hash((tree / playbook).read_bytes())


@pytest.mark.parametrize('name', ['bootstrap.sh', 'node.pp', 'plain.yml'])
def test_a_file_that_pulls_nothing_in_hashes_as_its_bytes(tmp_path, name):
    path = tmp_path / name
    path.write_text('- name: Nothing to include\n  hosts: all\n' if name.endswith('.yml') else 'echo hi\n', encoding='utf-8')
    closure = closure_files(path)
    assert list(closure.files.values()) == [name]
    assert closure_hash(path) == short_hash(path.read_bytes())


def test_closure_hash_is_the_short_hash_of_the_sorted_name_and_content_digests(tree):
    files = closure_files(tree / 'db.yml').files
    pairs = sorted((name, hashlib.sha256(path.read_bytes()).hexdigest()) for path, name in files.items())
    assert closure_hash(tree / 'db.yml') == short_hash(json.dumps(pairs).encode('utf-8'))


@pytest.mark.parametrize('mode', ['closure', 'file'])
def test_hash_include_counts_for_every_file(tree, mode):
    extras = [tree / 'vars' / 'unused.yml', tree / 'roles' / 'loop_a']
    before = hashes(tree, hash_include=extras, mode=mode)
    assert before != hashes(tree, mode=mode)
    assert changed_after(tree, append('vars/unused.yml'), hash_include=extras, mode=mode) == set(PLAYBOOKS)
    assert changed_after(tree, append('roles/loop_a/files/new.txt'), hash_include=extras, mode=mode) == set(PLAYBOOKS)


def test_provision_hashes_keys_by_declared_path_and_resolves_relative_paths_in_the_base_dir(tree):
    declared = ['tree/site.yml', 'tree/external.yml', 'tree/db.yml']
    result = provision_hashes(declared, tree.parent, roles_path=['shared_roles'], hash_include=['tree/vars/unused.yml'])
    assert result.hashes == {
        path: closure_hash(tree.parent / path, roles_path=[tree.parent / 'shared_roles'], hash_include=[tree / 'vars' / 'unused.yml']) for path in declared
    }
    assert list(result.unresolved) == ['tree/site.yml', 'tree/external.yml']
    assert result.unresolved['tree/external.yml'] == ["external.yml: role 'absent' (not found)"]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding='utf-8')
    return path


@pytest.mark.parametrize(
    ('name', 'problem'),
    [
        ('missing.yml', 'does not exist'),
        ('roles', 'is a directory, not a file'),
        ('notes.txt', 'has an unknown extension; a provision file is one of .yml, .yaml, .pp, .sh'),
    ],
)
def test_unusable_provision_file_is_an_error_naming_it(tree, name, problem):
    write(tree / 'notes.txt', 'hello\n')
    with pytest.raises(ProvisionFileError, match=f'^{re.escape(str(tree / name))} {re.escape(problem)}$') as caught:
        closure_hash(tree / name)
    assert caught.value.path == str(tree / name)


def test_invalid_yaml_is_an_error_naming_the_file_and_the_problem(tmp_path):
    path = write(tmp_path / 'broken.yml', '- name: Broken\n  hosts: [all\n')
    with pytest.raises(ProvisionFileError, match=r"broken\.yml is not valid YAML: while parsing a flow sequence") as caught:
        closure_hash(path)
    assert caught.value.path == str(path)
    assert closure_hash(path, mode='file') == short_hash(path.read_bytes())


def test_invalid_yaml_in_a_role_is_an_error_naming_that_file_and_the_provision_file(tree):
    write(tree / 'roles' / 'db' / 'tasks' / 'main.yml', 'key: [unclosed\n')
    with pytest.raises(ProvisionFileError, match=r'/roles/db/tasks/main\.yml \(pulled in by .*/chain\.yml\) is not valid YAML') as caught:
        closure_hash(tree / 'chain.yml')
    assert caught.value.path.startswith(str(tree / 'roles' / 'db' / 'tasks' / 'main.yml'))


def test_missing_hash_include_is_an_error_naming_it(tree):
    with pytest.raises(ProvisionFileError, match=r'^/.*/nothing\.txt \(in hash_include\) does not exist$'):
        closure_hash(tree / 'db.yml', hash_include=[tree / 'nothing.txt'])


def test_provision_hashes_error_names_the_declared_file(tree):
    with pytest.raises(ProvisionFileError, match=r'/tree/missing\.sh does not exist$'):
        provision_hashes(['tree/db.yml', 'tree/missing.sh'], tree.parent)


def test_unknown_hash_mode_is_an_error():
    with pytest.raises(ValueError, match="unknown hash mode 'deep'"):
        closure_hash(FIXTURES / 'tree' / 'db.yml', mode='deep')
