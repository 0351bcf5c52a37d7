# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every IPv4 address the repository writes (code, tests, the lab, docs, examples) is a loopback one.

The suite runs in a private network namespace where only 127.0.0.0/8 exists: an address outside it in a test is a
test that depends on a network it does not have, and one in the docs or EXAMPLES is one a user copies into a test.
"""

import ipaddress
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
THIS_FILE = Path(__file__).resolve().relative_to(ROOT).as_posix()

# A dotted quad not inside a longer dotted number (an OID, a long version number).
DOTTED_QUAD = re.compile(r'(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?!\.?\d)')

# Dotted quads that are not addresses: section numbers of RFC 5280 (the key identifier extensions).
NOT_ADDRESSES = {('tests/lab/certs.py', '4.2.1.1'), ('tests/lab/certs.py', '4.2.1.2')}


def outside_loopback(path, text):
    for literal in DOTTED_QUAD.findall(text):
        try:
            address = ipaddress.IPv4Address(literal)
        except ValueError:
            continue
        # 0.0.0.0 is PVE's "no address" (an interface without one); link-local addresses never leave the link.
        if not (address.is_loopback or address.is_unspecified or address.is_link_local) and (path, literal) not in NOT_ADDRESSES:
            yield f'{path}: {literal}'


def test_every_ipv4_address_in_the_repository_is_a_loopback_address():
    tracked = subprocess.run(['git', 'ls-files', '-z'], cwd=ROOT, check=True, capture_output=True, text=True).stdout.split('\0')
    texts = {}
    for path in filter(None, tracked):
        if path == THIS_FILE:
            continue  # it names the exceptions below
        try:
            texts[path] = (ROOT / path).read_text(encoding='utf-8')
        except (UnicodeDecodeError, FileNotFoundError):
            continue  # binary files (images, ISO fixtures) and files deleted in the work tree
    assert len(texts) > 100, 'the tracked files were not found'
    found = [finding for path, text in texts.items() for finding in outside_loopback(path, text)]
    assert found == []
