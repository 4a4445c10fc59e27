"""The cluster's X.509 material: a CA, the serving certificate of the secure port and client certificates
(CN = user name, O = groups, as kube-apiserver's x509 authenticator reads them). Generated once into the data
dir when no --tls-cert-file/--tls-private-key-file is given."""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)


@dataclass
class TLSFiles:
    """Paths of the secure port's material."""

    cert: str
    key: str
    client_ca: str
    ca_key: str = ""  # the CA's key, when dramock generated the CA (it signs `dramock kubeconfig` certs)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: str, data: bytes, private: bool = False) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _builder(subject: x509.Name, issuer: x509.Name, public_key,
             validity: datetime.timedelta = VALIDITY) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + validity))


def load_ca(cert_path: str, key_path: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    with open(cert_path, "rb") as f:
        cert = x509.load_pem_x509_certificate(f.read())
    with open(key_path, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), None)
    return cert, key  # type: ignore[return-value]


def _san(names: list[str]) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = []
    for n in dict.fromkeys(names):
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            entries.append(x509.DNSName(n))
    return x509.SubjectAlternativeName(entries)


def ensure_generated(data_dir: str, extra_sans: list[str]) -> TLSFiles:
    """The CA and serving certificate under `<data_dir>/pki`, created on first use. The serving certificate is
    made again when its SANs no longer cover the --tls-san names asked for."""
    pki = os.path.join(os.path.abspath(data_dir), "pki")
    os.makedirs(pki, exist_ok=True)
    files = TLSFiles(os.path.join(pki, "apiserver.crt"), os.path.join(pki, "apiserver.key"),
                     os.path.join(pki, "ca.crt"), os.path.join(pki, "ca.key"))
    if not (os.path.exists(files.client_ca) and os.path.exists(files.ca_key)):
        key = _key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dramock-ca")])
        cert = (_builder(name, name, key.public_key(), 10 * VALIDITY)
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, content_commitment=False,
                                             data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                             crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
                .sign(key, hashes.SHA256()))
        _write(files.ca_key, _pem_key(key), private=True)
        _write(files.client_ca, cert.public_bytes(serialization.Encoding.PEM))
        for stale in (files.cert, files.key):
            if os.path.exists(stale):
                os.remove(stale)
    sans = ["127.0.0.1", "::1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
            *extra_sans]
    if os.path.exists(files.cert) and os.path.exists(files.key):
        with open(files.cert, "rb") as f:
            current = x509.load_pem_x509_certificate(f.read())
        have = current.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        if set(_san(sans)) <= set(have):
            return files
    ca_cert, ca_key = load_ca(files.client_ca, files.ca_key)
    key = _key()
    cert = (_builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]), ca_cert.subject,
                     key.public_key())
            .add_extension(_san(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    _write(files.key, _pem_key(key), private=True)
    _write(files.cert, cert.public_bytes(serialization.Encoding.PEM))
    return files


def client_certificate(ca_cert_path: str, ca_key_path: str, user: str, groups: list[str]) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a client certificate for `user` in `groups`, signed by the cluster CA."""
    ca_cert, ca_key = load_ca(ca_cert_path, ca_key_path)
    key = _key()
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups),
                         x509.NameAttribute(NameOID.COMMON_NAME, user)])
    cert = (_builder(subject, ca_cert.subject, key.public_key())
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)
