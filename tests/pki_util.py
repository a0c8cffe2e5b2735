"""A test PKI written with ``cryptography``: one CA and leaf certificates signed by it, each as
``{stem}-cert.pem`` / ``{stem}-key.pem`` (PKCS#8) beside ``cacert.pem`` (the file names of the
official clients' CI). A server leaf names ``localhost`` and ``127.0.0.1``; a client leaf's CN is
its role under ``AuthenticationProviderTls``. Kept here (on ``sys.path``, beside conftest) so any
room imports it."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Mapping
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: The server leaves' subject alternative names.
LOOPBACK_SANS = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def write_pki(directory: Path, leaves: Mapping[str, tuple[str, bool]], ca_cn: str = "pulsar-rs test CA") -> Path:
    """Writes the CA and ``leaves`` (stem -> (CN, is a server)) into ``directory``; returns the
    CA's path. Valid from five minutes ago for a day; EC P-256 keys."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(ca_cn))
        .issuer_name(_name(ca_cn))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    ca_path = directory / "cacert.pem"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    for stem, (cn, server) in leaves.items():
        key = ec.generate_private_key(ec.SECP256R1())
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        )
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(LOOPBACK_SANS), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        (directory / f"{stem}-cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (directory / f"{stem}-key.pem").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    return ca_path
