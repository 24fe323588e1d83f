//! Certificates for the TLS tests, made with rcgen: a CA, and server or client certificates it
//! signs, written as PEM files (what an operator makes with openssl; docs/serve.md).

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// A certificate authority.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key, as PEM files.
pub struct Leaf {
    /// The certificate.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
}

impl Ca {
    /// A self-signed CA named `name`.
    pub fn new(name: &str) -> Ca {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        Ca {
            issuer: CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap(),
        }
    }

    /// Writes the CA's certificate to `dir/NAME.pem`.
    pub fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(format!("{name}.pem"));
        std::fs::write(&p, self.issuer.pem()).unwrap();
        p
    }

    /// A certificate for a server (`client` false: `localhost` and 127.0.0.1) or a client,
    /// signed by this CA, written to `dir/NAME.pem` and `dir/NAME.key`.
    pub fn leaf(&self, dir: &Path, name: &str, client: bool) -> Leaf {
        let names: Vec<String> = if client {
            Vec::new()
        } else {
            vec!["localhost".into(), "127.0.0.1".into()]
        };
        let mut p = CertificateParams::new(names).unwrap();
        p.distinguished_name.push(DnType::CommonName, name);
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        p.extended_key_usages = vec![if client {
            ExtendedKeyUsagePurpose::ClientAuth
        } else {
            ExtendedKeyUsagePurpose::ServerAuth
        }];
        p.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &self.issuer).unwrap();
        let leaf = Leaf {
            cert: dir.join(format!("{name}.pem")),
            key: dir.join(format!("{name}.key")),
        };
        std::fs::write(&leaf.cert, cert.pem()).unwrap();
        std::fs::write(&leaf.key, key.serialize_pem()).unwrap();
        leaf
    }
}
