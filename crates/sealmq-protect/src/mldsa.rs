//! ML-DSA (FIPS 204) signers: the parameter sets, their OIDs (RFC 9881, the same for the key and
//! the signature) and the aws-lc algorithms behind them. Pure ML-DSA, empty context, over the DER
//! of the signed attributes (RFC 9882); the message digest in those attributes is SHA-512, as
//! strong as any of the sets asks.

use crate::oids;
use aws_lc_rs::signature::{self, PqdsaSigningAlgorithm, PqdsaVerificationAlgorithm};
use const_oid::ObjectIdentifier as Oid;

/// One ML-DSA parameter set.
pub struct Level {
    /// 44, 65 or 87.
    pub level: u16,
    pub oid: Oid,
    pub signing: &'static PqdsaSigningAlgorithm,
    pub verifying: &'static PqdsaVerificationAlgorithm,
    pub rcgen: &'static rcgen::SignatureAlgorithm,
    /// The encoded public key's size.
    pub public_len: usize,
}

pub static LEVELS: [Level; 3] = [
    Level {
        level: 44,
        oid: oids::ML_DSA_44,
        signing: &signature::ML_DSA_44_SIGNING,
        verifying: &signature::ML_DSA_44,
        rcgen: &rcgen::PKCS_ML_DSA_44,
        public_len: 1312,
    },
    Level {
        level: 65,
        oid: oids::ML_DSA_65,
        signing: &signature::ML_DSA_65_SIGNING,
        verifying: &signature::ML_DSA_65,
        rcgen: &rcgen::PKCS_ML_DSA_65,
        public_len: 1952,
    },
    Level {
        level: 87,
        oid: oids::ML_DSA_87,
        signing: &signature::ML_DSA_87_SIGNING,
        verifying: &signature::ML_DSA_87,
        rcgen: &rcgen::PKCS_ML_DSA_87,
        public_len: 2592,
    },
];

impl Level {
    pub fn of(level: u16) -> Option<&'static Level> {
        LEVELS.iter().find(|l| l.level == level)
    }

    pub fn by_oid(oid: &Oid) -> Option<&'static Level> {
        LEVELS.iter().find(|l| l.oid == *oid)
    }
}
