# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""examples/execution-environment.yml, as ansible-builder turns it into a build context.

`ansible-builder create` runs for real on the example next to a tarball built from this checkout. Building
the image needs podman or docker, which this machine does not have; what the image build would do with the
collection (the galaxy stage's install, then the builder stage's introspection of the installed collections)
runs here outside a container, with the scripts the context itself carries.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from bindep.depends import Depends
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EXAMPLE = REPO / 'examples' / 'execution-environment.yml'
# What the modules import at run time; requirements.txt may grow, these must stay.
RUNTIME_PYTHON_PACKAGES = {'proxmoxer', 'requests', 'dnspython', 'pycdlib'}
# Where the galaxy stage installs collections in the image, and the builder stage introspects them.
IMAGE_COLLECTIONS_PATH = '/usr/share/ansible/collections'


def run(cmd, cwd, home):
    """Run a tool of the venv with nothing from the checkout on Ansible's paths; fail with its output."""
    env = {key: value for key, value in os.environ.items() if not key.startswith('ANSIBLE_') and key != 'PYTHONPATH'}
    env.update(
        ANSIBLE_HOME=str(home), ANSIBLE_COLLECTIONS_PATH=str(home / 'collections'), ANSIBLE_NOCOLOR='1', PATH='%s%s%s' % (BIN, os.pathsep, env.get('PATH', ''))
    )
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, '%s failed (%d):\n%s\n%s' % (' '.join(map(str, cmd)), proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout


def requirement_names(lines):
    """The package names of pip requirement lines (comments and blank lines ignored)."""
    names = set()
    for line in lines:
        text = line.split('#', 1)[0].strip()
        if text:
            names.add(Requirement(text).name.lower())
    return names


def bindep_packages(text, platform):
    """The packages bindep installs from text on a platform ('rpm' for the example's CentOS base, 'dpkg')."""
    profiles = {'rpm': ['platform:rpm', 'platform:redhat', 'platform:centos'], 'dpkg': ['platform:dpkg', 'platform:debian', 'platform:ubuntu']}[platform]
    return sorted(rule[0] for rule in Depends(text).active_rules(profiles + ['default']))


@pytest.fixture(scope='module')
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp('ee')


@pytest.fixture(scope='module')
def tarball(workdir):
    """The collection tarball ansible-galaxy builds from this checkout."""
    out = workdir / 'dist'
    run([BIN / 'ansible-galaxy', 'collection', 'build', str(REPO), '--output-path', str(out)], workdir, workdir / 'home')
    (built,) = out.glob('puls-proxmox-*.tar.gz')
    return built


@pytest.fixture(scope='module')
def definition():
    return yaml.safe_load(EXAMPLE.read_text())


@pytest.fixture(scope='module')
def context(workdir, tarball):
    """The build context `ansible-builder create` writes for the example placed next to the tarball."""
    project = workdir / 'ee-project'
    project.mkdir()
    shutil.copy(EXAMPLE, project / 'execution-environment.yml')
    shutil.copy(tarball, project / tarball.name)
    run(
        [BIN / 'ansible-builder', 'create', '-f', 'execution-environment.yml', '-c', 'context', '--output-filename', 'Containerfile'], project, workdir / 'home'
    )
    return project / 'context'


@pytest.fixture(scope='module')
def installed_in_image(workdir, context):
    """The galaxy stage of the image build, outside a container: the context's requirements.yml installed
    from /build (the context's _build directory) into a stand-in for /usr/share/ansible/collections."""
    collections = workdir / 'image-collections'
    run(
        [BIN / 'ansible-galaxy', 'collection', 'install', '-r', 'requirements.yml', '--collections-path', str(collections)],
        context / '_build',
        workdir / 'home',
    )
    return collections


def test_example_is_an_ansible_builder_format_3_definition_on_ansible_core_2_19(definition):
    assert definition['version'] == 3
    assert definition['images']['base_image']['name']
    core = Requirement(definition['dependencies']['ansible_core']['package_pip'])
    assert core.name == 'ansible-core'
    assert Version('2.19.14') in core.specifier
    assert Version('2.20.0') not in core.specifier and Version('2.18.9') not in core.specifier
    assert Requirement(definition['dependencies']['ansible_runner']['package_pip']).name == 'ansible-runner'


def test_example_names_the_tarball_that_galaxy_build_writes(definition, tarball):
    (collection,) = definition['dependencies']['galaxy']['collections']
    assert collection['type'] == 'file'
    assert Path(collection['name']).name == tarball.name, (
        'examples/execution-environment.yml installs %s, but ansible-galaxy collection build writes %s: '
        'update the example with galaxy.yml\'s version' % (collection['name'], tarball.name)
    )


def test_build_context_carries_the_tarball_built_from_this_checkout(context, tarball):
    copied = context / '_build' / 'collections' / tarball.name
    assert copied.read_bytes() == tarball.read_bytes()
    requirements = yaml.safe_load((context / '_build' / 'requirements.yml').read_text())
    assert requirements == {'collections': [{'name': 'collections/%s' % tarball.name, 'type': 'file'}]}


def test_tarball_in_the_context_carries_our_python_requirements_and_bindep_entries(context, tarball):
    with tarfile.open(context / '_build' / 'collections' / tarball.name) as archive:

        def member_text(name):
            return archive.extractfile(name).read().decode()

        meta = yaml.safe_load(member_text('meta/execution-environment.yml'))
        python_file, system_file = meta['dependencies']['python'], meta['dependencies']['system']
        python_lines = member_text(python_file).splitlines()
        bindep_text = member_text(system_file)
    assert requirement_names(python_lines) >= RUNTIME_PYTHON_PACKAGES
    assert requirement_names(python_lines) == requirement_names((REPO / 'requirements.txt').read_text().splitlines())
    assert bindep_text == (REPO / 'bindep.txt').read_text()
    assert bindep_packages(bindep_text, 'rpm') == ['openssh-clients']
    assert bindep_packages(bindep_text, 'dpkg') == ['openssh-client']


def test_containerfile_installs_core_runner_and_collection_then_our_dependencies(context, definition):
    containerfile = (context / 'Containerfile').read_text()
    base = definition['images']['base_image']['name']
    refs = '%s %s' % (definition['dependencies']['ansible_core']['package_pip'], definition['dependencies']['ansible_runner']['package_pip'])
    assert 'ARG EE_BASE_IMAGE="%s"' % base in containerfile
    assert 'ARG ANSIBLE_INSTALL_REFS="%s"' % refs in containerfile
    assert 'RUN $PYCMD -m pip install --no-cache-dir $ANSIBLE_INSTALL_REFS' in containerfile
    assert re.search(
        r'^RUN .*ansible-galaxy collection install .*-r requirements\.yml --collections-path "%s"$' % re.escape(IMAGE_COLLECTIONS_PATH), containerfile, re.M
    )
    # The builder stage reads the installed collections' dependency files, the final stage installs them.
    assert 'RUN $PYCMD /output/scripts/introspect.py introspect --write-bindep=/tmp/src/bindep.txt' in containerfile
    assert 'RUN /output/scripts/assemble' in containerfile
    assert 'RUN /output/scripts/install-from-bindep' in containerfile


def test_image_build_introspection_finds_our_python_and_system_dependencies(context, installed_in_image, workdir):
    assert (installed_in_image / 'ansible_collections' / 'puls' / 'proxmox' / 'MANIFEST.json').is_file()
    written = workdir / 'introspected'
    # The builder stage's step, with the context's own copy of the script and the stand-in collections path.
    run(
        [
            sys.executable,
            context / '_build' / 'scripts' / 'introspect.py',
            'introspect',
            str(installed_in_image),
            '--write-bindep=%s' % (written / 'bindep.txt'),
            '--write-pip=%s' % (written / 'requirements.txt'),
        ],
        workdir,
        workdir / 'home',
    )
    python_lines = (written / 'requirements.txt').read_text().splitlines()
    assert requirement_names(python_lines) >= RUNTIME_PYTHON_PACKAGES
    assert all(line.endswith('# from collection puls.proxmox') for line in python_lines if line)
    assert bindep_packages((written / 'bindep.txt').read_text(), 'rpm') == ['openssh-clients']
