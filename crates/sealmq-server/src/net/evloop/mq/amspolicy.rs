//! IBM's AMS interceptor learns a queue's policy by browsing SYSTEM.PROTECTION.POLICY.QUEUE
//! (docs/mq-clients.md, "IBM MQ Advanced Message Security"): first an index message
//! (correlation id 24 × 0xFF) naming each policy and the correlation id of its message, then
//! that message. Both are PCF; their parameters were learned by observing IBM's Java client
//! read what sealmq offered. sealmq serves them from its own policies, so a policy set with
//! SET POLICY is the one IBM's interceptor applies.

use sealmq_fap::bytes::Order;
use sealmq_fap::pcf::{CFT_COMMAND, Param, Pcf};
use sealmq_protect::{EncAlg, KeyReuse, Policy, SignAlg};

/// The correlation id of the index message.
pub const INDEX_ID: [u8; 24] = [0xff; 24];
/// The queue IBM's interceptor moves a message that fails a check to.
const ERROR_QUEUE: &str = "SYSTEM.PROTECTION.ERROR.QUEUE";
/// MQCMD_CREATE_PROT_POLICY, the command the messages carry.
const COMMAND: u32 = 206;
/// Index parameters: the entries (policy name in 48, then its message's correlation id in
/// hex), the index version, the error queue.
const IX_ENTRIES: u32 = 2;
const IX_VERSION: u32 = 3;
const IX_ERROR_QUEUE: u32 = 4;
/// Policy parameters.
const P_VERSION: u32 = 5;
const P_NAME: u32 = 6;
const P_SIGN_ALG: u32 = 7;
/// The encryption algorithm in the low byte, the key reuse count above it.
const P_ENC_ALG: u32 = 8;
const P_AUDIT: u32 = 9;
const P_SIGNER: u32 = 11;
const P_RECIPIENT: u32 = 13;
const P_TOLERATE: u32 = 14;

/// The correlation id of `name`'s policy message.
pub fn policy_id(name: &str) -> [u8; 24] {
    let d = sealmq_protect::hmac_sha256(b"sealmq AMS policy id", name.as_bytes());
    let mut id = [0u8; 24];
    id.copy_from_slice(&d[..24]);
    id
}

/// The index message listing `policies`.
pub fn index(policies: &[Policy]) -> Pcf {
    let entries = policies
        .iter()
        .map(|p| {
            let hex: String = policy_id(&p.name)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            format!("{:<48}{hex}", p.name)
        })
        .collect();
    Pcf {
        kind: CFT_COMMAND,
        command: COMMAND,
        params: vec![
            Param::StrList(IX_ENTRIES, 96, entries),
            Param::Int(IX_VERSION, 1),
            Param::Str(IX_ERROR_QUEUE, ERROR_QUEUE.into()),
        ],
    }
}

/// The message describing one policy (MQ's MQMLP_* algorithm numbers).
pub fn message(p: &Policy) -> Pcf {
    let sign = match p.sign_alg {
        SignAlg::None => 0,
        SignAlg::Sha256 => 4,
        SignAlg::Sha384 => 5,
        SignAlg::Sha512 => 6,
    };
    let enc: i32 = match p.enc_alg {
        EncAlg::None => 0,
        EncAlg::Aes128 => 4,
        EncAlg::Aes256 => 5,
    };
    let reuse: i32 = match p.key_reuse {
        KeyReuse::Disabled => 0,
        KeyReuse::Unlimited => -1,
        KeyReuse::Count(n) => n as i32,
    };
    let mut params = vec![
        Param::Int(P_VERSION, 1),
        Param::Str(P_NAME, p.name.clone()),
        Param::Int(P_SIGN_ALG, sign),
        Param::Int(P_ENC_ALG, reuse.wrapping_shl(8) | enc),
        Param::Int(P_AUDIT, 0),
    ];
    params.extend(
        p.signers
            .iter()
            .map(|d| Param::Str(P_SIGNER, d.to_string())),
    );
    params.extend(
        p.recipients
            .iter()
            .map(|d| Param::Str(P_RECIPIENT, d.to_string())),
    );
    params.push(Param::Int(P_TOLERATE, i32::from(p.tolerate)));
    Pcf {
        kind: CFT_COMMAND,
        command: COMMAND,
        params,
    }
}

/// The byte order a getter asked for with its MQMD encoding (MQENC_INTEGER_REVERSED: little).
pub fn order_for(encoding: u32) -> Order {
    if encoding & 0x0f == 2 {
        Order::Little
    } else {
        Order::Big
    }
}

/// What a browse of the policy queue returns: the index (asked by its id, or a first browse
/// without a match) or the policy whose message id is asked; `None` is 2033.
pub fn answer(
    policies: &[Policy],
    correl: Option<&[u8; 24]>,
    first: bool,
) -> Option<(Pcf, [u8; 24])> {
    if policies.is_empty() {
        return None;
    }
    match correl {
        Some(id) if *id == INDEX_ID => Some((index(policies), INDEX_ID)),
        Some(id) => policies
            .iter()
            .find(|p| policy_id(&p.name) == *id)
            .map(|p| (message(p), *id)),
        None if first => Some((index(policies), INDEX_ID)),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sealmq_protect::Dn;

    #[test]
    fn the_index_names_each_policy_and_its_message() {
        let mut p = Policy::none("APP.Q");
        p.sign_alg = SignAlg::Sha256;
        p.enc_alg = EncAlg::Aes256;
        p.key_reuse = KeyReuse::Count(10);
        p.recipients = vec![Dn::parse("CN=bob,O=Test").unwrap()];
        let ps = vec![p];
        let (ix, id) = answer(&ps, None, true).unwrap();
        assert_eq!(id, INDEX_ID);
        let Param::StrList(_, 96, e) = &ix.params[0] else {
            panic!("{ix:?}")
        };
        assert!(e[0].starts_with("APP.Q   "));
        let pid = policy_id("APP.Q");
        let (m, _) = answer(&ps, Some(&pid), false).unwrap();
        assert!(m.params.contains(&Param::Int(P_ENC_ALG, (10 << 8) | 5)));
        assert!(
            m.params
                .contains(&Param::Str(P_RECIPIENT, "CN=bob,O=Test".into()))
        );
        assert!(answer(&ps, Some(&[1; 24]), false).is_none());
        assert!(answer(&[], None, true).is_none());
        let b = m.encode(Order::Big);
        assert_eq!(Pcf::decode(&b, Order::Big).unwrap(), m);
    }
}
