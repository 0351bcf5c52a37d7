"""The lab's certificate authority: one CA per test session, one server certificate per lab address.

Both carry the key identifiers of RFC 5280 4.2.1.1 and 4.2.1.2, as PVE's own CA and node certificates do (pve-cluster
src/PVE/Cluster/Setup.pm gen_pveca_cert and gen_pve_ssl_cert make them with `openssl req -x509` and `openssl x509 -req`,
which add both identifiers by default since OpenSSL 3.0). Python 3.13's ssl verifies with VERIFY_X509_STRICT, which
refuses a chain without them ("Missing Authority Key Identifier").
"""

import datetime
import ipaddress
import os
import shutil

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=30)


def _write_key(path, key):
    # Private keys are for this process only: owner read/write, whatever the umask.
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'wb') as out:
        out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


def _builder(subject, issuer, public_key):
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + VALIDITY)
    )


class LabCa:
    """A private CA whose certificate clients trust (PROXMOX_CA_PATH) and which signs each lab's API certificate."""

    def __init__(self, certfile, key, cert):
        self.certfile = certfile
        self._key = key
        self._cert = cert

    @classmethod
    def create(cls, directory):
        """A new CA, its certificate written to directory/ca.crt."""
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'puls.proxmox lab CA')])
        cert = (
            _builder(name, name, key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        os.makedirs(directory, exist_ok=True)
        certfile = os.path.join(str(directory), 'ca.crt')
        with open(certfile, 'wb') as out:
            out.write(cert.public_bytes(serialization.Encoding.PEM))
        return cls(certfile, key, cert)

    def issue(self, directory, host):
        """A server certificate for host (an IP address), signed by this CA: (certfile, keyfile) in directory."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
        names = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName('localhost')])
        cert = (
            _builder(subject, self._cert.subject, key.public_key())
            .add_extension(names, critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        certfile = os.path.join(str(directory), 'pve.crt')
        keyfile = os.path.join(str(directory), 'pve.key')
        with open(certfile, 'wb') as out:
            out.write(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(keyfile, key)
        return certfile, keyfile

    def copy_to(self, path):
        """Put the CA certificate at path (so a lab's state directory holds what its clients need)."""
        shutil.copyfile(self.certfile, str(path))
        return str(path)
