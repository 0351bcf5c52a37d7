# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hacking/system-deps, which make test and make demo run first: the missing packages of a bindep profile, and the
exact command to install them when it may not install them itself."""

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def system_deps(tmp_path, bindep_text, profile='test'):
    bindep_file = tmp_path / 'bindep.txt'
    bindep_file.write_text(bindep_text)
    env = {**os.environ, 'PULS_BINDEP_FILE': str(bindep_file), 'PULS_SYSTEM_DEPS_INSTALL': 'no'}
    return subprocess.run([str(REPO / 'hacking/system-deps'), profile], env=env, capture_output=True, text=True, check=False)


def test_a_missing_package_stops_the_stage_with_the_exact_install_command(tmp_path):
    # coreutils is installed on every Debian machine; the other package exists nowhere.
    result = system_deps(tmp_path, 'coreutils [platform:dpkg test]\npuls-no-such-package [platform:dpkg test]\n')
    assert result.returncode == 1
    assert 'needs these packages, which are not installed: puls-no-such-package\n' in result.stderr
    assert '    sudo apt-get install -y --no-install-recommends puls-no-such-package\n' in result.stderr


def test_only_the_asked_profile_counts(tmp_path):
    result = system_deps(tmp_path, 'coreutils [platform:dpkg demo]\npuls-no-such-package [platform:dpkg test]\n', 'demo')
    assert (result.returncode, result.stdout, result.stderr) == (0, '', '')


def test_the_repository_lists_every_package_the_test_stages_call_in_its_test_profile():
    from bindep.depends import Depends

    rules = Depends((REPO / 'bindep.txt').read_text()).active_rules(['platform:dpkg', 'platform:debian', 'test'])
    assert {'openssh-client', 'iproute2', 'git', 'xorriso', 'genisoimage', 'cloud-init', 'puppet', 'chromium', 'systemd'} <= {rule[0] for rule in rules}


def test_make_test_and_make_demo_run_the_check_of_their_profile(tmp_path):
    # make never searches pattern rules for a .PHONY target: a pattern rule system-deps-% made both targets
    # "Nothing to be done" and a fresh machine got no system packages. Here the check runs and stops make.
    bindep_file = tmp_path / 'bindep.txt'
    bindep_file.write_text('puls-no-such-package [platform:dpkg test demo]\n')
    env = {**os.environ, 'PULS_BINDEP_FILE': str(bindep_file), 'PULS_SYSTEM_DEPS_INSTALL': 'no'}
    for profile in ('test', 'demo'):
        result = subprocess.run(['make', '--no-print-directory', f'system-deps-{profile}'], cwd=REPO, env=env, capture_output=True, text=True, check=False)
        assert result.returncode != 0, result.stdout
        assert f"bindep.txt's {profile} profile needs these packages, which are not installed: puls-no-such-package" in result.stderr
