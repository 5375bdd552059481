//! Object identifiers sealmq reads and writes.

use const_oid::ObjectIdentifier as Oid;

pub const ID_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.1");
pub const ID_SIGNED_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.2");
pub const ID_ENVELOPED_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.3");
pub const ID_AUTH_ENVELOPED_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.9.16.1.23");

pub const ATTR_CONTENT_TYPE: Oid = Oid::new_unwrap("1.2.840.113549.1.9.3");
pub const ATTR_MESSAGE_DIGEST: Oid = Oid::new_unwrap("1.2.840.113549.1.9.4");
pub const ATTR_SIGNING_TIME: Oid = Oid::new_unwrap("1.2.840.113549.1.9.5");
/// sealmq's header-binding attribute: its value is an OCTET STRING holding the 28-byte header
/// core (see `header.rs`). Provisional private arc, documented in docs/envelope.md.
pub const ATTR_SEALMQ_HEADER: Oid = Oid::new_unwrap("1.3.6.1.4.1.64500.1.1");

pub const SHA1: Oid = Oid::new_unwrap("1.3.14.3.2.26");
pub const SHA256: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.1");
pub const SHA384: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.2");
pub const SHA512: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.3");
pub const MD5: Oid = Oid::new_unwrap("1.2.840.113549.2.5");

pub const RSA_ENCRYPTION: Oid = Oid::new_unwrap("1.2.840.113549.1.1.1");
pub const RSAES_OAEP: Oid = Oid::new_unwrap("1.2.840.113549.1.1.7");
pub const MGF1: Oid = Oid::new_unwrap("1.2.840.113549.1.1.8");
pub const RSASSA_PSS: Oid = Oid::new_unwrap("1.2.840.113549.1.1.10");
pub const SHA256_WITH_RSA: Oid = Oid::new_unwrap("1.2.840.113549.1.1.11");
pub const SHA384_WITH_RSA: Oid = Oid::new_unwrap("1.2.840.113549.1.1.12");
pub const SHA512_WITH_RSA: Oid = Oid::new_unwrap("1.2.840.113549.1.1.13");
pub const ECDSA_SHA256: Oid = Oid::new_unwrap("1.2.840.10045.4.3.2");
pub const ECDSA_SHA384: Oid = Oid::new_unwrap("1.2.840.10045.4.3.3");
pub const ECDSA_SHA512: Oid = Oid::new_unwrap("1.2.840.10045.4.3.4");
pub const EC_PUBLIC_KEY: Oid = Oid::new_unwrap("1.2.840.10045.2.1");
pub const SECP256R1: Oid = Oid::new_unwrap("1.2.840.10045.3.1.7");
pub const SECP384R1: Oid = Oid::new_unwrap("1.3.132.0.34");
pub const ED25519: Oid = Oid::new_unwrap("1.3.101.112");

pub const AES128_GCM: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.6");
pub const AES256_GCM: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.46");
pub const AES128_WRAP: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.5");
pub const AES256_WRAP: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.45");
pub const AES128_CBC: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.2");
pub const AES256_CBC: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.42");
pub const DES_EDE3_CBC: Oid = Oid::new_unwrap("1.2.840.113549.3.7");
pub const RC2_CBC: Oid = Oid::new_unwrap("1.2.840.113549.3.2");

pub const ECDH_SHA1KDF: Oid = Oid::new_unwrap("1.3.133.16.840.63.0.2");
pub const ECDH_SHA224KDF: Oid = Oid::new_unwrap("1.3.132.1.11.0");
pub const ECDH_SHA256KDF: Oid = Oid::new_unwrap("1.3.132.1.11.1");
pub const ECDH_SHA384KDF: Oid = Oid::new_unwrap("1.3.132.1.11.2");
pub const ECDH_SHA512KDF: Oid = Oid::new_unwrap("1.3.132.1.11.3");

/// FIPS 203 ML-KEM (RFC 9935).
pub const ML_KEM_512: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.4.1");
pub const ML_KEM_768: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.4.2");
pub const ML_KEM_1024: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.4.3");
/// FIPS 204 ML-DSA (RFC 9881): the key's and the signature's algorithm.
pub const ML_DSA_44: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.3.17");
pub const ML_DSA_65: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.3.18");
pub const ML_DSA_87: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.3.19");
/// RFC 8619 id-alg-hkdf-with-sha256.
pub const HKDF_SHA256: Oid = Oid::new_unwrap("1.2.840.113549.1.9.16.3.28");
/// RFC 9629 id-ori-kem: an OtherRecipientInfo holding a KEMRecipientInfo.
pub const ORI_KEM: Oid = Oid::new_unwrap("1.2.840.113549.1.9.16.13.3");

pub const EKU_EMAIL_PROTECTION: Oid = Oid::new_unwrap("1.3.6.1.5.5.7.3.4");
pub const EKU_ANY: Oid = Oid::new_unwrap("2.5.29.37.0");

/// A readable name for an algorithm OID, for `inspect` and error details.
pub fn name(oid: &Oid) -> String {
    let known: &[(Oid, &str)] = &[
        (SHA1, "SHA1"),
        (SHA256, "SHA256"),
        (SHA384, "SHA384"),
        (SHA512, "SHA512"),
        (MD5, "MD5"),
        (RSA_ENCRYPTION, "RSA-PKCS1v1.5"),
        (RSAES_OAEP, "RSA-OAEP"),
        (RSASSA_PSS, "RSA-PSS"),
        (SHA256_WITH_RSA, "RSA-PKCS1v1.5-SHA256"),
        (SHA384_WITH_RSA, "RSA-PKCS1v1.5-SHA384"),
        (SHA512_WITH_RSA, "RSA-PKCS1v1.5-SHA512"),
        (ECDSA_SHA256, "ECDSA-SHA256"),
        (ECDSA_SHA384, "ECDSA-SHA384"),
        (ECDSA_SHA512, "ECDSA-SHA512"),
        (ED25519, "Ed25519"),
        (AES128_GCM, "AES128-GCM"),
        (AES256_GCM, "AES256-GCM"),
        (AES128_WRAP, "AES128-WRAP"),
        (AES256_WRAP, "AES256-WRAP"),
        (AES128_CBC, "AES128-CBC"),
        (AES256_CBC, "AES256-CBC"),
        (DES_EDE3_CBC, "3DES-CBC"),
        (RC2_CBC, "RC2-CBC"),
        (ECDH_SHA1KDF, "ECDH-SHA1KDF"),
        (ECDH_SHA224KDF, "ECDH-SHA224KDF"),
        (ECDH_SHA256KDF, "ECDH-SHA256KDF"),
        (ECDH_SHA384KDF, "ECDH-SHA384KDF"),
        (ECDH_SHA512KDF, "ECDH-SHA512KDF"),
        (SECP256R1, "P-256"),
        (SECP384R1, "P-384"),
        (ML_DSA_44, "ML-DSA-44"),
        (ML_DSA_65, "ML-DSA-65"),
        (ML_DSA_87, "ML-DSA-87"),
        (ML_KEM_512, "ML-KEM-512"),
        (ML_KEM_768, "ML-KEM-768"),
        (ML_KEM_1024, "ML-KEM-1024"),
        (HKDF_SHA256, "HKDF-SHA256"),
    ];
    known
        .iter()
        .find(|(o, _)| o == oid)
        .map(|(_, n)| n.to_string())
        .unwrap_or_else(|| oid.to_string())
}
