//! RSA-1024, only behind the explicit insecure switch (SPEC §5.2: "1024 only with an
//! explicit insecure switch, to reproduce the reports' figures").
//!
//! aws-lc-rs refuses RSA keys under 2048 bits, rightly. To reproduce IBM MQ's RSA-1024 figures
//! this module reaches the same aws-lc library through `aws-lc-sys` for the four operations
//! sealmq needs: key generation, PKCS#1 v1.5 signing and verification, and RSA-OAEP
//! (SHA-256) key transport. Every pointer is owned by a guard that frees it; aws-lc cleanses
//! private keys when they are freed. Nothing here runs unless a caller enabled the switch.

#![allow(unsafe_code)]

use crate::error::{ProtectError, Result};
use crate::policy::SignAlg;
use aws_lc_sys as sys;
use std::os::raw::c_int;
use std::ptr;
use zeroize::Zeroizing;

fn err(what: &str) -> ProtectError {
    ProtectError::Credential(format!("RSA-1024 (insecure mode): {what} failed"))
}

/// An owned `EVP_PKEY`.
struct Pkey(*mut sys::EVP_PKEY);

impl Drop for Pkey {
    fn drop(&mut self) {
        // SAFETY: the pointer came from aws-lc, is non-null, and is freed exactly once here.
        unsafe { sys::EVP_PKEY_free(self.0) }
    }
}

/// An owned `EVP_PKEY_CTX`.
struct Ctx(*mut sys::EVP_PKEY_CTX);

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: as for `Pkey`.
        unsafe { sys::EVP_PKEY_CTX_free(self.0) }
    }
}

// SAFETY: an EVP_PKEY is immutable after creation and aws-lc allows concurrent use of one
// key from several threads for signing and decryption.
unsafe impl Send for Pkey {}
unsafe impl Sync for Pkey {}

fn parse_private(der: &[u8]) -> Result<Pkey> {
    let mut cbs = sys::CBS {
        data: der.as_ptr(),
        len: der.len(),
    };
    // SAFETY: `cbs` points into `der`, which outlives the call; the result is checked.
    let p = unsafe { sys::EVP_parse_private_key(&mut cbs) };
    if p.is_null() {
        return Err(err("parsing the private key"));
    }
    Ok(Pkey(p))
}

fn parse_public(spki: &[u8]) -> Result<Pkey> {
    let mut cbs = sys::CBS {
        data: spki.as_ptr(),
        len: spki.len(),
    };
    // SAFETY: as above.
    let p = unsafe { sys::EVP_parse_public_key(&mut cbs) };
    if p.is_null() {
        return Err(err("parsing the public key"));
    }
    Ok(Pkey(p))
}

/// Runs an aws-lc marshal function into a CBB and returns the bytes.
fn marshal(f: impl FnOnce(*mut sys::CBB) -> c_int) -> Option<Vec<u8>> {
    // SAFETY: the CBB is initialised before use and cleaned up on every path; the buffer
    // CBB_finish hands over is copied and then freed with OPENSSL_free (which cleanses it).
    unsafe {
        let mut cbb: sys::CBB = std::mem::zeroed();
        if sys::CBB_init(&mut cbb, 1024) != 1 {
            return None;
        }
        if f(&mut cbb) != 1 {
            sys::CBB_cleanup(&mut cbb);
            return None;
        }
        let mut out: *mut u8 = ptr::null_mut();
        let mut len = 0usize;
        if sys::CBB_finish(&mut cbb, &mut out, &mut len) != 1 {
            sys::CBB_cleanup(&mut cbb);
            return None;
        }
        let v = std::slice::from_raw_parts(out, len).to_vec();
        sys::OPENSSL_free(out.cast());
        Some(v)
    }
}

/// An RSA key of fewer than 2048 bits.
pub struct LegacyRsa {
    pkey: Pkey,
    bits: usize,
}

impl std::fmt::Debug for LegacyRsa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LegacyRsa({} bits)", self.bits)
    }
}

impl LegacyRsa {
    /// Generates an RSA-1024 key; returns it with its PKCS#8 DER.
    pub fn generate() -> Result<(LegacyRsa, Zeroizing<Vec<u8>>)> {
        // SAFETY: every object is checked for null and owned by a guard or freed below.
        let pkey = unsafe {
            let e = sys::BN_new();
            let rsa = sys::RSA_new();
            let ok = !e.is_null()
                && !rsa.is_null()
                && sys::BN_set_word(e, sys::RSA_F4 as _) == 1
                && sys::RSA_generate_key_ex(rsa, 1024, e, ptr::null_mut()) == 1;
            if !e.is_null() {
                sys::BN_free(e);
            }
            if !ok {
                if !rsa.is_null() {
                    sys::RSA_free(rsa);
                }
                return Err(err("key generation"));
            }
            let p = sys::EVP_PKEY_new();
            if p.is_null() || sys::EVP_PKEY_assign_RSA(p, rsa) != 1 {
                sys::RSA_free(rsa);
                if !p.is_null() {
                    sys::EVP_PKEY_free(p);
                }
                return Err(err("key generation"));
            }
            Pkey(p)
        };
        let der = marshal(|cbb| unsafe { sys::EVP_marshal_private_key(cbb, pkey.0) })
            .ok_or_else(|| err("encoding the private key"))?;
        Ok((LegacyRsa { pkey, bits: 1024 }, Zeroizing::new(der)))
    }

    /// Loads a PKCS#8 RSA key of 1024 to 2047 bits.
    pub fn from_pkcs8(der: &[u8]) -> Result<LegacyRsa> {
        let pkey = parse_private(der)?;
        // SAFETY: pkey is a valid key.
        let (id, bits) = unsafe { (sys::EVP_PKEY_id(pkey.0), sys::EVP_PKEY_bits(pkey.0)) };
        if id != sys::EVP_PKEY_RSA || !(1024..2048).contains(&bits) {
            return Err(err("loading (not an RSA key of 1024-2047 bits)"));
        }
        Ok(LegacyRsa {
            pkey,
            bits: bits as usize,
        })
    }

    pub fn bits(&self) -> usize {
        self.bits
    }

    /// PKCS#8 DER of the private key.
    pub fn to_pkcs8(&self) -> Result<Zeroizing<Vec<u8>>> {
        marshal(|cbb| unsafe { sys::EVP_marshal_private_key(cbb, self.pkey.0) })
            .map(Zeroizing::new)
            .ok_or_else(|| err("encoding the private key"))
    }

    /// SubjectPublicKeyInfo DER of the public half.
    pub fn public_spki_der(&self) -> Result<Vec<u8>> {
        marshal(|cbb| unsafe { sys::EVP_marshal_public_key(cbb, self.pkey.0) })
            .ok_or_else(|| err("encoding the public key"))
    }

    /// PKCS#1 v1.5 signature of `msg` with SHA-256/384/512.
    pub fn sign(&self, alg: SignAlg, msg: &[u8]) -> Result<Vec<u8>> {
        let (nid, md) = nid_md(alg);
        let digest = aws_lc_rs::digest::digest(md, msg);
        // SAFETY: get1 returns a new reference that is freed below; `out` is RSA_size bytes.
        unsafe {
            let rsa = sys::EVP_PKEY_get1_RSA(self.pkey.0);
            if rsa.is_null() {
                return Err(err("signing"));
            }
            let mut out = vec![0u8; sys::RSA_size(rsa) as usize];
            let mut len: std::os::raw::c_uint = 0;
            let ok = sys::RSA_sign(
                nid,
                digest.as_ref().as_ptr(),
                digest.as_ref().len(),
                out.as_mut_ptr(),
                &mut len,
                rsa,
            );
            sys::RSA_free(rsa);
            if ok != 1 {
                return Err(err("signing"));
            }
            out.truncate(len as usize);
            Ok(out)
        }
    }

    /// RSA-OAEP (SHA-256, MGF1-SHA-256) decryption of a wrapped key.
    pub fn oaep_decrypt(&self, wrapped: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
        let ctx = oaep_ctx(&self.pkey, false)?;
        let mut out = Zeroizing::new(vec![0u8; self.bits.div_ceil(8)]);
        let mut len = out.len();
        // SAFETY: ctx is initialised for decryption; `out` has `len` writable bytes.
        let ok = unsafe {
            sys::EVP_PKEY_decrypt(
                ctx.0,
                out.as_mut_ptr(),
                &mut len,
                wrapped.as_ptr(),
                wrapped.len(),
            )
        };
        if ok != 1 {
            return Err(err(
                "RSA-OAEP key unwrap (wrong private key, or the message was altered)",
            ));
        }
        out.truncate(len);
        Ok(out)
    }
}

fn nid_md(alg: SignAlg) -> (c_int, &'static aws_lc_rs::digest::Algorithm) {
    match alg {
        SignAlg::Sha384 => (sys::NID_sha384, &aws_lc_rs::digest::SHA384),
        SignAlg::Sha512 => (sys::NID_sha512, &aws_lc_rs::digest::SHA512),
        _ => (sys::NID_sha256, &aws_lc_rs::digest::SHA256),
    }
}

fn oaep_ctx(pkey: &Pkey, encrypt: bool) -> Result<Ctx> {
    // SAFETY: the context is owned by the guard; every setter's result is checked.
    unsafe {
        let ctx = Ctx(sys::EVP_PKEY_CTX_new(pkey.0, ptr::null_mut()));
        if ctx.0.is_null() {
            return Err(err("RSA-OAEP setup"));
        }
        let init = if encrypt {
            sys::EVP_PKEY_encrypt_init(ctx.0)
        } else {
            sys::EVP_PKEY_decrypt_init(ctx.0)
        };
        if init != 1
            || sys::EVP_PKEY_CTX_set_rsa_padding(ctx.0, sys::RSA_PKCS1_OAEP_PADDING) != 1
            || sys::EVP_PKEY_CTX_set_rsa_oaep_md(ctx.0, sys::EVP_sha256()) != 1
            || sys::EVP_PKEY_CTX_set_rsa_mgf1_md(ctx.0, sys::EVP_sha256()) != 1
        {
            return Err(err("RSA-OAEP setup"));
        }
        Ok(ctx)
    }
}

/// RSA-OAEP (SHA-256) encryption of `key` to an RSA public key of any size aws-lc accepts.
pub fn oaep_encrypt(spki_der: &[u8], key: &[u8]) -> Result<Vec<u8>> {
    let pkey = parse_public(spki_der)?;
    let ctx = oaep_ctx(&pkey, true)?;
    // SAFETY: pkey is valid.
    let size = unsafe { sys::EVP_PKEY_size(pkey.0) } as usize;
    let mut out = vec![0u8; size];
    let mut len = size;
    // SAFETY: ctx is initialised for encryption; `out` has `len` writable bytes.
    let ok = unsafe {
        sys::EVP_PKEY_encrypt(ctx.0, out.as_mut_ptr(), &mut len, key.as_ptr(), key.len())
    };
    if ok != 1 {
        return Err(err("RSA-OAEP key wrap"));
    }
    out.truncate(len);
    Ok(out)
}

/// PKCS#1 v1.5 verification with an RSA public key of 1024 bits or more.
pub fn verify(spki_der: &[u8], alg: SignAlg, msg: &[u8], sig: &[u8]) -> Result<()> {
    let pkey = parse_public(spki_der)?;
    let (nid, md) = nid_md(alg);
    let digest = aws_lc_rs::digest::digest(md, msg);
    // SAFETY: get1 returns a new reference freed below.
    unsafe {
        let rsa = sys::EVP_PKEY_get1_RSA(pkey.0);
        if rsa.is_null() {
            return Err(err("verification"));
        }
        let ok = sys::RSA_verify(
            nid,
            digest.as_ref().as_ptr(),
            digest.as_ref().len(),
            sig.as_ptr(),
            sig.len(),
            rsa,
        );
        sys::RSA_free(rsa);
        if ok != 1 {
            return Err(err("verification"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsa1024_signs_verifies_wraps_unwraps() {
        let (k, pkcs8) = LegacyRsa::generate().unwrap();
        let k2 = LegacyRsa::from_pkcs8(&pkcs8).unwrap();
        assert_eq!(k2.bits(), 1024);
        let spki = k.public_spki_der().unwrap();
        let sig = k2.sign(SignAlg::Sha256, b"msg").unwrap();
        verify(&spki, SignAlg::Sha256, b"msg", &sig).unwrap();
        assert!(verify(&spki, SignAlg::Sha256, b"other", &sig).is_err());
        let wrapped = oaep_encrypt(&spki, &[7u8; 32]).unwrap();
        assert_eq!(&k.oaep_decrypt(&wrapped).unwrap()[..], &[7u8; 32]);
        let mut bad = wrapped.clone();
        bad[5] ^= 1;
        assert!(k.oaep_decrypt(&bad).is_err());
        assert!(LegacyRsa::from_pkcs8(b"junk").is_err());
    }
}
