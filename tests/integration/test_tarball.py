# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection as users get it: the tarball `ansible-galaxy collection build` writes, installed with
`ansible-galaxy collection install` into a fresh path, and its documentation rendered from there alone.

Also the documentation and changelog linters of the ecosystem on this checkout. Plugins and roles are
discovered from the checkout when the test runs, so a new module is checked without touching this file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from ansible_collections.puls.proxmox.plugins.doc_fragments.connection import ModuleDocFragment as ConnectionFragment

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FQCN = 'puls.proxmox'
# Plugin directories whose Python files document themselves, by the ansible-doc type they are.
DOCUMENTED_PLUGIN_TYPES = {
    'become': 'become',
    'cache': 'cache',
    'callback': 'callback',
    'connection': 'connection',
    'filter': 'filter',
    'inventory': 'inventory',
    'lookup': 'lookup',
    'vars': 'vars',
    'strategy': 'strategy',
}
# Plugin directories without documentation of their own: action plugins share their module's; code shared by plugins.
UNDOCUMENTED_PLUGIN_DIRS = {'action', 'module_utils', 'doc_fragments', 'plugin_utils'}
# What never belongs in the tarball: the venv, build and lab state, test output, caches, VCS data.
LEFT_OUT_DIRS = {'.venv', '.build', '.lab', '.git', '.ci', '.ansible', '.pytest_cache', '__pycache__'}
LEFT_OUT_PATHS = ('tests/output/', 'collections/', 'bench/results/')


def tool_env(home, collections_path):
    """The environment of a user's shell with only collections_path on Ansible's collection path: nothing from the
    checkout (no ANSIBLE_* settings, no PYTHONPATH, no site-packages collections)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith('ANSIBLE_') and key != 'PYTHONPATH'}
    env.update(
        ANSIBLE_HOME=str(home),
        ANSIBLE_COLLECTIONS_PATH=str(collections_path),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH='false',
        ANSIBLE_NOCOLOR='1',
        PATH='%s%s%s' % (BIN, os.pathsep, env.get('PATH', '')),
    )
    return env


def run(cmd, cwd, env):
    """Run a tool of the venv; fail with its output unless it exits 0. Returns (stdout, stderr)."""
    proc = subprocess.run([str(part) for part in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, '%s failed (%d):\n%s\n%s' % (' '.join(map(str, cmd)), proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout, proc.stderr


def build_tarball(output_dir, home):
    """ansible-galaxy collection build of this checkout into output_dir; returns the tarball's path."""
    run([BIN / 'ansible-galaxy', 'collection', 'build', REPO, '--output-path', output_dir], output_dir.parent, tool_env(home, home / 'collections'))
    (tarball,) = output_dir.glob('puls-proxmox-*.tar.gz')
    return tarball


def install_tarball(tarball, collections_path, home):
    """ansible-galaxy collection install of tarball into collections_path (a fresh directory)."""
    run([BIN / 'ansible-galaxy', 'collection', 'install', '-p', collections_path, tarball], tarball.parent, tool_env(home, collections_path))
    return collections_path / 'ansible_collections' / 'puls' / 'proxmox'


def checkout_plugins(directory):
    """The plugin names of plugins/<directory> in the checkout: its .py files not starting with '_'."""
    return sorted(path.stem for path in (REPO / 'plugins' / directory).glob('*.py') if not path.name.startswith('_'))


def checkout_modules():
    return checkout_plugins('modules')


def ansible_doc_json(env, cwd, plugin_type, names):
    stdout, _stderr = run([BIN / 'ansible-doc', '--json', '-t', plugin_type] + ['%s.%s' % (FQCN, name) for name in names], cwd, env)
    return json.loads(stdout)


@pytest.fixture(scope='module')
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp('tarball')


@pytest.fixture(scope='module')
def tarball(workdir):
    return build_tarball(workdir / 'dist', workdir / 'home')


@pytest.fixture(scope='module')
def members(tarball):
    with tarfile.open(tarball) as archive:
        return [member.name for member in archive.getmembers()]


@pytest.fixture(scope='module')
def installed(workdir, tarball):
    """(collections path, installed collection directory) of the tarball installed into a fresh path."""
    collections_path = workdir / 'fresh-collections'
    return collections_path, install_tarball(tarball, collections_path, workdir / 'home')


@pytest.fixture(scope='module')
def user_env(workdir, installed):
    return tool_env(workdir / 'home', installed[0])


def test_tarball_leaves_out_venv_build_lab_test_output_and_caches(members):
    offending = [name for name in members if LEFT_OUT_DIRS & set(name.split('/')) or name.startswith(LEFT_OUT_PATHS) or name.endswith('.pyc')]
    assert not offending, 'build_ignore in galaxy.yml lets these into the tarball: %s' % offending[:20]


def test_tarball_carries_every_plugin_role_playbook_and_doc_of_the_checkout(members):
    wanted = []
    for top in ('plugins', 'roles', 'playbooks', 'meta', 'docs'):
        for path in sorted((REPO / top).rglob('*')):
            relative = path.relative_to(REPO)
            if path.is_file() and not LEFT_OUT_DIRS & set(relative.parts) and path.suffix != '.pyc':
                wanted.append(relative.as_posix())
    wanted += ['requirements.txt', 'bindep.txt', 'examples/execution-environment.yml', 'changelogs/changelog.yaml', 'MANIFEST.json', 'FILES.json']
    missing = sorted(set(wanted) - set(members))
    assert not missing, 'missing from the tarball: %s' % missing


def test_installed_copy_comes_from_the_tarball(installed):
    _collections_path, collection = installed
    manifest = json.loads((collection / 'MANIFEST.json').read_text())['collection_info']
    galaxy = yaml.safe_load((REPO / 'galaxy.yml').read_text())
    assert (manifest['namespace'], manifest['name'], manifest['version']) == (galaxy['namespace'], galaxy['name'], galaxy['version'])
    assert not (collection / '.venv').exists() and not (collection / '.build').exists()


def test_ansible_doc_lists_exactly_the_modules_of_the_checkout(user_env, workdir):
    stdout, _stderr = run([BIN / 'ansible-doc', '--json', '-t', 'module', '-l', FQCN], workdir, user_env)
    assert sorted(json.loads(stdout)) == ['%s.%s' % (FQCN, name) for name in checkout_modules()]


def test_ansible_doc_renders_every_module_from_the_installed_copy(user_env, workdir, installed):
    modules = checkout_modules()
    assert modules
    docs = ansible_doc_json(user_env, workdir, 'module', modules)
    for name in modules:
        doc = docs['%s.%s' % (FQCN, name)]['doc']
        assert Path(doc['filename']).is_relative_to(installed[1]), doc['filename']
        assert doc['short_description'] and doc['options']
    stdout, _stderr = run([BIN / 'ansible-doc', '-t', 'module'] + ['%s.%s' % (FQCN, name) for name in modules], workdir, user_env)
    for name in modules:
        assert '> MODULE %s.%s' % (FQCN, name) in stdout


def test_modules_using_the_connection_fragment_render_its_options_and_action_group(user_env, workdir, installed):
    fragment_options = set(yaml.safe_load(ConnectionFragment.DOCUMENTATION)['options'])
    users = [name for name in checkout_modules() if 'puls.proxmox.connection' in (REPO / 'plugins' / 'modules' / ('%s.py' % name)).read_text()]
    assert users, 'no module extends the puls.proxmox.connection fragment'
    docs = ansible_doc_json(user_env, workdir, 'module', users)
    runtime = yaml.safe_load((installed[1] / 'meta' / 'runtime.yml').read_text())
    group = set(runtime['action_groups']['pve'])
    for name in users:
        doc = docs['%s.%s' % (FQCN, name)]['doc']
        assert fragment_options <= set(doc['options']), name
        membership = doc.get('attributes', {}).get('action_group', {}).get('membership')
        if membership is not None:
            assert membership == ['puls.proxmox.pve'], name
            assert name in group, '%s documents group/puls.proxmox.pve but meta/runtime.yml does not list it' % name
    assert group <= set(users), 'meta/runtime.yml groups modules without the connection options: %s' % sorted(group - set(users))


def test_ansible_doc_renders_every_documented_plugin_from_the_installed_copy(user_env, workdir, installed):
    directories = sorted(path.name for path in (REPO / 'plugins').iterdir() if path.is_dir() and path.name != '__pycache__')
    unknown = [
        name
        for name in directories
        if name not in DOCUMENTED_PLUGIN_TYPES and name not in UNDOCUMENTED_PLUGIN_DIRS and name != 'modules' and checkout_plugins(name)
    ]
    assert not unknown, 'plugins/%s: teach this test which ansible-doc type they are' % unknown
    rendered = []
    for directory, plugin_type in DOCUMENTED_PLUGIN_TYPES.items():
        names = checkout_plugins(directory) if (REPO / 'plugins' / directory).is_dir() else []
        if not names:
            continue
        docs = ansible_doc_json(user_env, workdir, plugin_type, names)
        for name in names:
            doc = docs['%s.%s' % (FQCN, name)]['doc']
            assert Path(doc['filename']).is_relative_to(installed[1]), doc['filename']
            rendered.append('%s %s' % (plugin_type, name))
        run([BIN / 'ansible-doc', '-t', plugin_type] + ['%s.%s' % (FQCN, name) for name in names], workdir, user_env)
    assert 'inventory manifests' in rendered


def test_ansible_doc_renders_every_role_with_an_argument_spec(user_env, workdir, installed):
    for role in sorted(path for path in (REPO / 'roles').iterdir() if path.is_dir()):
        spec_file = role / 'meta' / 'argument_specs.yml'
        if not spec_file.exists():
            continue
        entry_points = set(yaml.safe_load(spec_file.read_text())['argument_specs'])
        stdout, _stderr = run([BIN / 'ansible-doc', '--json', '-t', 'role', '%s.%s' % (FQCN, role.name)], workdir, user_env)
        doc = json.loads(stdout)['%s.%s' % (FQCN, role.name)]
        assert Path(doc['path']) == installed[1]
        assert set(doc['entry_points']) == entry_points
        run([BIN / 'ansible-doc', '-t', 'role', '%s.%s' % (FQCN, role.name)], workdir, user_env)


def test_antsibull_docs_lint_of_the_checkout_is_clean(workdir):
    env = tool_env(workdir / 'home', workdir / 'home' / 'collections')
    stdout, stderr = run([BIN / 'antsibull-docs', 'lint-collection-docs', '--plugin-docs', REPO], workdir, env)
    assert not stdout.strip(), stdout + stderr


def test_antsibull_changelog_lint_of_the_checkout_is_clean(workdir):
    env = tool_env(workdir / 'home', workdir / 'home' / 'collections')
    stdout, stderr = run([BIN / 'antsibull-changelog', 'lint'], REPO, env)
    assert not stdout.strip(), stdout + stderr
