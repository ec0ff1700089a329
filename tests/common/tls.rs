//! Certificates made by a test, in the layout the docker CLI uses (`ca.pem`, `cert.pem`, `key.pem`)
//! for a client, and the server files `dockerd --tlsverify` takes.

use std::fs;
use std::path::Path;

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::x509::extension::{BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName};
use openssl::x509::{X509NameBuilder, X509};

/// A certificate authority that signs the engine's and the client's certificates.
pub struct Authority {
    key: PKey<Private>,
    cert: X509,
}

fn new_key() -> PKey<Private> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap()
}

fn builder(common_name: &str, key: &PKey<Private>) -> openssl::x509::X509Builder {
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", common_name).unwrap();
    let name = name.build();
    let mut cert = X509::builder().unwrap();
    cert.set_version(2).unwrap();
    let mut serial = BigNum::new().unwrap();
    serial.rand(64, MsbOption::MAYBE_ZERO, false).unwrap();
    cert.set_serial_number(&serial.to_asn1_integer().unwrap()).unwrap();
    cert.set_subject_name(&name).unwrap();
    cert.set_pubkey(key).unwrap();
    cert.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
    cert.set_not_after(&Asn1Time::days_from_now(2).unwrap()).unwrap();
    cert
}

impl Authority {
    pub fn new(common_name: &str) -> Authority {
        let key = new_key();
        let mut cert_builder = builder(common_name, &key);
        let mut name = X509NameBuilder::new().unwrap();
        name.append_entry_by_text("CN", common_name).unwrap();
        cert_builder.set_issuer_name(&name.build()).unwrap();
        cert_builder.append_extension(BasicConstraints::new().critical().ca().build().unwrap()).unwrap();
        cert_builder.append_extension(KeyUsage::new().critical().key_cert_sign().crl_sign().build().unwrap()).unwrap();
        cert_builder.sign(&key, MessageDigest::sha256()).unwrap();
        Authority { key, cert: cert_builder.build() }
    }

    /// Signs a certificate for the engine on 127.0.0.1 (`server`) or for a client.
    fn issue(&self, server: bool, key: PKey<Private>) -> X509 {
        let mut cert = builder(if server { "127.0.0.1" } else { "client" }, &key);
        cert.set_issuer_name(self.cert.subject_name()).unwrap();
        cert.append_extension(BasicConstraints::new().build().unwrap()).unwrap();
        cert.append_extension(KeyUsage::new().critical().digital_signature().key_agreement().build().unwrap()).unwrap();
        if server {
            cert.append_extension(ExtendedKeyUsage::new().server_auth().build().unwrap()).unwrap();
            let san = SubjectAlternativeName::new().ip("127.0.0.1").build(&cert.x509v3_context(Some(&self.cert), None));
            cert.append_extension(san.unwrap()).unwrap();
        } else {
            cert.append_extension(ExtendedKeyUsage::new().client_auth().build().unwrap()).unwrap();
        }
        cert.sign(&self.key, MessageDigest::sha256()).unwrap();
        cert.build()
    }

    /// `ca.pem`, `server-cert.pem` and `server-key.pem` for `dockerd --tlsverify`.
    pub fn write_server(&self, dir: &Path) {
        let key = new_key();
        let cert = self.issue(true, key.clone());
        fs::create_dir_all(dir).unwrap();
        fs::write(dir.join("ca.pem"), self.cert.to_pem().unwrap()).unwrap();
        fs::write(dir.join("server-cert.pem"), cert.to_pem().unwrap()).unwrap();
        fs::write(dir.join("server-key.pem"), key.private_key_to_pem_pkcs8().unwrap()).unwrap();
    }

    /// A client's `ca.pem`, `cert.pem` and `key.pem`, as `DOCKER_CERT_PATH` holds them; `ca` is the
    /// authority the client trusts (another one makes a client that cannot verify the engine).
    /// The client's key is RSA in PKCS#1 (`BEGIN RSA PRIVATE KEY`), as docker-machine and
    /// OpenSSL 1's `genrsa` (the docker docs' recipe) write it; the engine's is EC in PKCS#8: both
    /// shapes a real host's files have.
    pub fn write_client(&self, dir: &Path, ca: &Authority) {
        let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
        let cert = self.issue(false, key.clone());
        fs::create_dir_all(dir).unwrap();
        fs::write(dir.join("ca.pem"), ca.cert.to_pem().unwrap()).unwrap();
        fs::write(dir.join("cert.pem"), cert.to_pem().unwrap()).unwrap();
        fs::write(dir.join("key.pem"), key.rsa().unwrap().private_key_to_pem().unwrap()).unwrap();
    }
}
