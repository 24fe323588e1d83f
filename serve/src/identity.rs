//! Who a request comes from, and which jobs it may touch.
//!
//! ## Design
//! A job belongs to the identity that submitted it: another identity can neither see it (in
//! Status), follow it (Await), nor cancel it; to it the job does not exist (`NOT_FOUND`, the
//! answer for a job that never was). Identities configured as **admins** see and manage every
//! job and the daemon's parameters.
//!
//! An identity is decided once, where a request arrives (the gRPC service's interceptor,
//! [`crate::server::Auth`]), from the strongest proof the connection carries:
//! 1. `tls:SUBJECT`: a client certificate that the daemon's client CA signed (mutual TLS), by
//!    its subject's common name (`tls:CN=alice`), or by its SHA-256 fingerprint when it has no
//!    common name (`tls:sha256:…`);
//! 2. `token:NAME`: the name of the bearer token the client sent (a token file may list several
//!    named tokens, one per user or service);
//! 3. `uid:N`: the user id of the peer of a unix socket, from the kernel;
//! 4. `local`: anything else, a client on the loopback interface without token or certificate
//!    (one identity for every local user: give the daemon a unix socket or tokens to tell local
//!    users apart).
//!
//! The engine ([`crate::engine::Engine`]) takes the identity with every call and applies
//! [`Access`]: any front end on the same engine (this gRPC API or another) gets the same rule.

use std::fmt;

use sha2::{Digest, Sha256};

/// Who a request comes from (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Identity(String);

impl Identity {
    /// Longest identity kept (a certificate's name is cut to fit).
    pub const MAX_LEN: usize = 256;

    /// A client on loopback with neither token nor certificate.
    pub fn local() -> Self {
        Identity("local".into())
    }

    /// The holder of the token named `name`.
    pub fn token(name: &str) -> Self {
        Identity(format!("token:{name}"))
    }

    /// The peer of a unix socket with user id `uid`.
    pub fn uid(uid: u32) -> Self {
        Identity(format!("uid:{uid}"))
    }

    /// The holder of the client certificate `der` (already verified by the TLS layer): its
    /// subject's common name, else its fingerprint.
    pub fn tls(der: &[u8]) -> Self {
        match common_name(der) {
            Some(cn) => {
                let cn: String = cn.chars().filter(|c| !c.is_control()).take(200).collect();
                Identity(format!("tls:CN={cn}"))
            }
            None => {
                let d = Sha256::digest(der);
                Identity(format!("tls:sha256:{}", crate::params::hex(&d[..16])))
            }
        }
    }

    /// The identity as text (`token:ops`, `tls:CN=alice`, `uid:1000`, `local`): what the
    /// journal records as a job's owner and what `admins` lists.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Identity {
    type Err = String;
    /// Parses an identity as configured (`admins`): `local`, `token:NAME`, `tls:CN=NAME`,
    /// `tls:sha256:HEX` or `uid:N`.
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let ok = s == "local"
            || s.strip_prefix("token:").is_some_and(valid_token_name)
            || s.strip_prefix("tls:CN=").is_some_and(|n| !n.is_empty())
            || s.strip_prefix("tls:sha256:")
                .is_some_and(|h| h.len() == 32 && h.chars().all(|c| c.is_ascii_hexdigit()))
            || s.strip_prefix("uid:")
                .is_some_and(|n| n.parse::<u32>().is_ok());
        if !ok || s.len() > Self::MAX_LEN {
            return Err(format!(
                "{s:?} is not an identity: give local, token:NAME, tls:CN=NAME, tls:sha256:HEX \
                 (32 hex digits) or uid:N"
            ));
        }
        Ok(Identity(s.to_string()))
    }
}

/// Whether `name` may name a token: 1 to 64 letters, digits, `-`, `_` or `.`.
pub fn valid_token_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Which identities may do what (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    admins: Vec<Identity>,
}

impl Access {
    /// Access with these admins (none: every identity reaches its own jobs only, and every
    /// identity may preload and evict parameters).
    pub fn new(admins: Vec<Identity>) -> Self {
        Self { admins }
    }

    /// Whether `who` is an admin.
    pub fn is_admin(&self, who: &Identity) -> bool {
        self.admins.contains(who)
    }

    /// Whether `who` may see, await and cancel a job that `owner` submitted (an empty owner: a
    /// job journaled before owners were recorded, anyone's).
    pub fn may_use(&self, who: &Identity, owner: &str) -> bool {
        owner.is_empty() || owner == who.as_str() || self.is_admin(who)
    }

    /// Whether `who` may preload and evict the daemon's parameters: the admins when any are
    /// configured, else everyone.
    pub fn may_manage(&self, who: &Identity) -> bool {
        self.admins.is_empty() || self.is_admin(who)
    }

    /// The owner to list jobs of for `who`: `None` (every job) for an admin.
    pub fn listing_filter<'a>(&self, who: &'a Identity) -> Option<&'a str> {
        (!self.is_admin(who)).then(|| who.as_str())
    }
}

/// One DER element: its tag, its contents, and what follows it.
fn der(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = b.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |a, &x| (a << 8) | x as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The common name (OID 2.5.4.3) of a certificate's subject, if it has one in a string type.
fn common_name(cert: &[u8]) -> Option<String> {
    const CN: &[u8] = &[0x55, 0x04, 0x03];
    let parsed = rustls_pki_types::CertificateDer::from(cert);
    let ee = webpki::EndEntityCert::try_from(&parsed).ok()?;
    // The subject is a sequence of SETs of SEQUENCE { OID, value }; the last CN wins (the
    // most specific, as RFC 4514 prints them first).
    let mut rdns = ee.subject();
    let mut found = None;
    while let Some((0x31, set, rest)) = der(rdns) {
        let mut atvs = set;
        while let Some((0x30, atv, more)) = der(atvs) {
            if let Some((0x06, oid, value)) = der(atv) {
                if oid == CN {
                    if let Some((t, v, _)) = der(value) {
                        // UTF8String, PrintableString, IA5String, T61String.
                        if matches!(t, 0x0c | 0x13 | 0x16 | 0x14) {
                            found = std::str::from_utf8(v).ok().map(str::to_string);
                        }
                    }
                }
            }
            atvs = more;
        }
        rdns = rest;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_parse_as_configured() {
        for ok in ["local", "token:ops", "tls:CN=alice", "uid:0", "uid:1000"] {
            assert_eq!(ok.parse::<Identity>().unwrap().as_str(), ok);
        }
        for bad in [
            "",
            "root",
            "token:",
            "token:a b",
            "uid:-1",
            "tls:sha256:zz",
            "tls:CN=",
        ] {
            assert!(bad.parse::<Identity>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn owners_reach_their_jobs_and_admins_every_job() {
        let (alice, bob) = (Identity::token("alice"), Identity::token("bob"));
        let open = Access::default();
        assert!(open.may_use(&alice, "token:alice"));
        assert!(!open.may_use(&bob, "token:alice"));
        assert!(
            open.may_use(&bob, ""),
            "a job from before owners is anyone's"
        );
        assert!(open.may_manage(&bob));
        let ops = Access::new(vec![Identity::uid(0)]);
        assert!(ops.may_use(&Identity::uid(0), "token:alice"));
        assert!(!ops.may_manage(&bob));
        assert_eq!(ops.listing_filter(&bob), Some("token:bob"));
        assert_eq!(ops.listing_filter(&Identity::uid(0)), None);
    }
}
