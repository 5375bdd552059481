//! Channel definitions (SPEC §2.2, §6). This release serves SVRCONN channels (client
//! connections); the message channel types are defined here so MQSC and the log carry them,
//! and the channel initiator (a later issue) runs them.

use crate::error::{MqResult, mqerr};
use sealmq_storage::codec::{Dec, DecodeError, Enc, Field, Result};
use sealmq_types::{named_enum, put_fields, take_fields};

named_enum! {
    /// - AMQP: MQ's AMQP channel: AMQP 1.0 applications connect to its PORT (sealmq-amqp).
    pub enum ChlType("channel type") {
        Sdr = 1 "SDR", Svr = 2 "SVR", Rcvr = 3 "RCVR", Rqstr = 4 "RQSTR", Svrconn = 5 "SVRCONN",
        Amqp = 6 "AMQP"
    }
}

/// A channel definition with MQ's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelDef {
    pub name: String,
    pub chltype: ChlType,
    pub descr: String,
    pub conname: String,
    pub xmitq: String,
    pub batchsz: u32,
    pub hbint: u32,
    pub max_msg_len: u32,
    /// TLS cipher suite required (empty: no TLS needed; `ANY` accepts any suite).
    pub sslciph: String,
    /// Filter on the peer certificate's DN (`*` wildcards), empty: any.
    pub sslpeer: String,
    /// The principal applications on this channel run as (empty: their own).
    pub mcauser: String,
    /// SVRCONN: the queue manager protects and unprotects for the applications on this
    /// channel with its own identity (QM-side interception, SPEC §5.5.2).
    pub intercept: bool,
    /// Milliseconds a sender keeps a batch open waiting for more messages (BATCHINT).
    pub batchint: u32,
    /// Non-persistent messages move outside the batch's unit of work (NPMSPEED(FAST)).
    pub npm_fast: bool,
    /// Connection retries: SHORTRTY times every SHORTTMR seconds, then LONGRTY every LONGTMR.
    pub shortrty: u32,
    pub shorttmr: u32,
    pub longrty: u32,
    pub longtmr: u32,
    /// Receiver put retries (MRRTY times, MRTMR milliseconds apart) before the DLQ.
    pub mrrty: u32,
    pub mrtmr: u32,
    /// AMS interception at this channel (SPEC §5.5.3).
    pub splprot: SplProt,
    /// TLS: refresh the traffic keys after this many bytes (0: never).
    pub sslrkeyc: u64,
    /// Receiving channels: PUTAUT(CTX) puts each message with the authority of the user id in
    /// its context; PUTAUT(DEF), the default, with the channel's own (MCAUSER) authority.
    pub putaut_ctx: bool,
    /// SSLCAUTH(REQUIRED) (the default): a TLS partner must present a certificate.
    pub sslcauth_required: bool,
    /// Instances of this channel at once (MAXINST), and from one client address (MAXINSTC).
    pub maxinst: u32,
    pub maxinstc: u32,
    /// DISCINT: seconds a sender waits on an empty transmission queue before it ends (a
    /// trigger starts it again), or a SVRCONN client may stay idle (0: for ever).
    pub discint: u32,
    /// SEQWRAP: the message sequence number wraps to 1 after this value.
    pub seqwrap: u32,
    /// KAINT: TCP keepalive idle seconds on the channel's socket (0: the system's; AUTO: -1).
    pub kaint: i32,
    /// USEDLQ: a receiver that cannot put a message puts it on the dead-letter queue (YES)
    /// or stops the channel, leaving the batch in doubt (NO).
    pub usedlq: bool,
    /// CERTLABL: the certificate label (sealmq's keystore holds one identity; kept as set).
    pub certlabl: String,
    /// Attributes accepted without effect.
    pub noted: crate::noted::Noted,
}

named_enum! {
    /// SPLPROT: what a server-to-server channel does with protection (SPEC §5.5.3).
    pub enum SplProt("SPLPROT") {
        Passthru = 0 "PASSTHRU", Remove = 1 "REMOVE", AsPolicy = 2 "ASPOLICY"
    }
}

impl ChannelDef {
    pub fn new(name: &str, chltype: ChlType) -> ChannelDef {
        ChannelDef {
            name: name.to_string(),
            chltype,
            descr: String::new(),
            conname: String::new(),
            xmitq: String::new(),
            batchsz: 50,
            hbint: 300,
            max_msg_len: 4_194_304,
            sslciph: String::new(),
            sslpeer: String::new(),
            mcauser: String::new(),
            intercept: false,
            batchint: 0,
            npm_fast: true,
            shortrty: 10,
            shorttmr: 60,
            longrty: 999_999_999,
            longtmr: 1200,
            mrrty: 10,
            mrtmr: 1000,
            splprot: SplProt::Passthru,
            sslrkeyc: 0,
            putaut_ctx: false,
            sslcauth_required: true,
            maxinst: 999_999_999,
            maxinstc: 999_999_999,
            discint: if chltype == ChlType::Svrconn { 0 } else { 6000 },
            seqwrap: 999_999_999,
            kaint: -1,
            usedlq: true,
            certlabl: String::new(),
            noted: Default::default(),
        }
    }

    /// An AMQP channel's PORT (kept with the noted attributes; MQ's default 5672).
    pub fn amqp_port(&self) -> u16 {
        self.noted
            .get("PORT")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or(5672)
    }

    /// A SVRCONN's SHARECNV: conversations one MQ client socket may carry (kept with the noted
    /// attributes; MQ's default 10; 0, MQ's "no sharing", serves one).
    pub fn sharecnv(&self) -> u32 {
        self.noted
            .get("SHARECNV")
            .and_then(|v| v.trim().parse::<u32>().ok())
            .unwrap_or(10)
            .clamp(1, 999_999_999)
    }

    /// An AMQP channel's AMQPKA: how long a connection may send nothing before it is closed
    /// (`None`: AUTO or 0, no keepalive).
    pub fn amqp_keepalive(&self) -> Option<std::time::Duration> {
        self.noted
            .get("AMQPKA")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map(std::time::Duration::from_millis)
    }

    /// An AMQP channel's IPADDR: the address it listens on (blank: every interface).
    pub fn amqp_ipaddr(&self) -> String {
        self.noted
            .get("IPADDR")
            .map(|a| a.trim().to_string())
            .unwrap_or_default()
    }

    /// Whether this channel sends (SDR, SVR) rather than receives (RCVR, RQSTR).
    pub fn sends(&self) -> bool {
        matches!(self.chltype, ChlType::Sdr | ChlType::Svr)
    }

    pub fn validate(&self) -> MqResult<()> {
        if self.name.is_empty()
            || self.name.len() > 20
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '%'))
        {
            return mqerr!(
                ObjectNameError,
                "channel name '{}' must be 1-20 characters of A-Z a-z 0-9 . _ / %",
                self.name
            );
        }
        let (t, n) = (self.chltype.name(), &self.name);
        // The default channels (SYSTEM.DEF.*) are templates, defined without CONNAME or XMITQ.
        let template = self.name.starts_with("SYSTEM.DEF.");
        if matches!(self.chltype, ChlType::Sdr | ChlType::Rqstr)
            && self.conname.is_empty()
            && !template
        {
            return mqerr!(OptionsError, "{t} channel {n} needs CONNAME");
        }
        if self.intercept && !matches!(self.chltype, ChlType::Svrconn | ChlType::Amqp) {
            return mqerr!(
                OptionsError,
                "INTERCEPT applies only to SVRCONN and AMQP channels; use SPLPROT on {t} channel {n}"
            );
        }
        // The queue manager decrypts for whoever connects through an intercepting channel:
        // only to a partner TLS has authenticated with a certificate.
        if self.intercept && (self.sslciph.is_empty() || !self.sslcauth_required) {
            return mqerr!(
                OptionsError,
                "INTERCEPT(YES) on channel {} needs TLS with client authentication: set \
                 SSLCIPH (a suite, or ANY) and SSLCAUTH(REQUIRED), so that the queue manager \
                 removes protection only for an authenticated client",
                self.name
            );
        }
        if self.putaut_ctx && !matches!(self.chltype, ChlType::Rcvr | ChlType::Rqstr) {
            return mqerr!(
                OptionsError,
                "PUTAUT(CTX) applies only to RCVR and RQSTR channels, not {t} channel {n}"
            );
        }
        let splprot_fits = match self.splprot {
            SplProt::Passthru => true,
            SplProt::Remove => matches!(self.chltype, ChlType::Sdr | ChlType::Svr),
            SplProt::AsPolicy => matches!(self.chltype, ChlType::Rcvr | ChlType::Rqstr),
        };
        if !splprot_fits {
            let fits = if self.splprot == SplProt::Remove {
                "SDR and SVR"
            } else {
                "RCVR and RQSTR"
            };
            let p = self.splprot.name();
            return mqerr!(
                OptionsError,
                "SPLPROT({p}) applies only to {fits} channels, not {t} channel {n}"
            );
        }
        if matches!(self.chltype, ChlType::Sdr | ChlType::Svr) && self.xmitq.is_empty() && !template
        {
            return mqerr!(OptionsError, "{t} channel {n} needs XMITQ");
        }
        Ok(())
    }

    pub fn encode(&self, e: &mut Enc) {
        put_fields!(e, self: name, chltype, descr, conname, xmitq, batchsz, hbint, max_msg_len,
            sslciph, sslpeer, mcauser, intercept);
        // Extension block (docs/storage.md): version 2 added the message-channel attributes,
        // version 3 PUTAUT, SSLCAUTH, MAXINST and MAXINSTC at its end, version 4 DISCINT,
        // SEQWRAP, KAINT, USEDLQ, CERTLABL and the noted attributes. Records written before
        // it decode with the defaults.
        e.u8(4);
        put_fields!(e, self: batchint, npm_fast, shortrty, shorttmr, longrty, longtmr, mrrty,
            mrtmr, splprot, sslrkeyc, putaut_ctx, sslcauth_required, maxinst, maxinstc,
            discint, seqwrap, kaint, usedlq, certlabl, noted);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<ChannelDef> {
        let name = d.str()?;
        let mut c = ChannelDef::new(&name, Field::take(d)?);
        take_fields!(d, c: descr, conname, xmitq, batchsz, hbint, max_msg_len, sslciph,
            sslpeer, mcauser, intercept);
        if !d.is_empty() {
            let v = d.u8()?;
            if !(2..=4).contains(&v) {
                return Err(DecodeError(format!(
                    "channel {name}: extension version {v} is not one this build reads (2-4)"
                )));
            }
            take_fields!(d, c: batchint, npm_fast, shortrty, shorttmr, longrty, longtmr, mrrty,
                mrtmr, splprot, sslrkeyc);
            if v >= 3 {
                take_fields!(d, c: putaut_ctx, sslcauth_required, maxinst, maxinstc);
            }
            if v >= 4 {
                take_fields!(d, c: discint, seqwrap, kaint, usedlq, certlabl, noted);
            }
        }
        Ok(c)
    }
}

/// One object's attributes as MQSC shows them: (keyword, value) pairs.
pub type Attrs = Vec<(String, String)>;

/// What MQSC's channel commands ask of the channel initiator (which lives in the server).
pub trait ChannelControl: Send + Sync {
    /// START CHANNEL: a message that says what happened.
    fn start(&self, name: &str) -> MqResult<String>;
    /// STOP CHANNEL.
    fn stop(&self, name: &str) -> MqResult<String>;
    /// PING CHANNEL: whether the partner of a sending channel answers.
    fn ping(&self, name: &str) -> MqResult<String>;
    /// The subject DN of the queue manager's keystore identity (DISPLAY QMGR), if it has one.
    fn keystore_dn(&self) -> Option<String> {
        None
    }
    /// DISPLAY CHSTATUS for channels matching a generic name.
    fn status(&self, pattern: &str) -> Vec<Attrs>;
    /// DISPLAY CHSTATUS(pattern) CHLTYPE(AMQP) CLIENTID(client): one block per connection of
    /// the matching AMQP channels whose client id matches `client` (generic).
    fn amqp_clients(&self, pattern: &str, client: &str) -> Vec<Attrs> {
        let _ = (pattern, client);
        Vec::new()
    }
    /// DISPLAY CHSTATUS ... SAVED: what each matching channel end last committed, from its
    /// synchronisation record (so it survives restarts and shows stopped channels in doubt).
    fn saved_status(&self, pattern: &str) -> MqResult<Vec<Attrs>>;
    /// RESOLVE CHANNEL ACTION(COMMIT|BACKOUT).
    fn resolve(&self, name: &str, commit: bool) -> MqResult<String>;
    /// RESET CHANNEL SEQNUM(n).
    fn reset(&self, name: &str, seq: u64) -> MqResult<String>;
    /// DISPLAY CHINIT: the dispatcher and adapter tasks and their statistics.
    fn tasks(&self) -> Vec<Attrs>;
    /// REFRESH SECURITY TYPE(SSL): read the queue manager's keystore again (TLS listener,
    /// SPLPROT, QM-side interception); on failure the keystore in use stays.
    fn refresh_ssl(&self) -> MqResult<String>;
    /// REFRESH SECURITY TYPE(CONNAUTH): read the queue manager's password file again.
    fn refresh_connauth(&self) -> MqResult<String>;
}

/// The default SVRCONN channel every queue manager has.
pub const DEFAULT_SVRCONN: &str = "SYSTEM.DEF.SVRCONN";

/// Whether a DN matches an SSLPEER filter: `*` matches any characters; attribute types are
/// compared without regard to case.
pub fn sslpeer_matches(filter: &str, dn: &str) -> bool {
    if filter.is_empty() {
        return true;
    }
    crate::authority::profile_matches(&filter.to_ascii_uppercase(), &dn.to_ascii_uppercase())
}

/// Whether a negotiated cipher suite (rustls's name, e.g. `TLS13_AES_256_GCM_SHA384`) is
/// one an SSLCIPH value allows: blank or `ANY` every suite; MQ's aliases `ANY_TLS12` (TLS 1.2
/// suites), `ANY_TLS12_OR_HIGHER` (TLS 1.2 and 1.3), `ANY_TLS13` and `ANY_TLS13_OR_HIGHER`
/// (TLS 1.3); else the suite it names.
pub fn sslciph_allows(sslciph: &str, suite: &str) -> bool {
    let c = sslciph.trim().to_ascii_uppercase();
    let tls13 = suite.to_ascii_uppercase().starts_with("TLS13_");
    match c.as_str() {
        "" | "ANY" | "ANY_TLS12_OR_HIGHER" => true,
        "ANY_TLS12" => !tls13,
        "ANY_TLS13" | "ANY_TLS13_OR_HIGHER" => tls13,
        _ => suite_name(&c) == suite_name(suite),
    }
}

/// A suite's name as MQ's CipherSpec and rustls's names both reduce to: MQ names TLS 1.2
/// suites without `TLS_` and `_WITH` (`ECDHE_ECDSA_AES_256_GCM_SHA384` is rustls's
/// `TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384`) and TLS 1.3 ones with `TLS_` (rustls: `TLS13_`).
fn suite_name(s: &str) -> String {
    let u = s.to_ascii_uppercase();
    u.trim_start_matches("TLS13_")
        .trim_start_matches("TLS_")
        .replacen("_WITH_", "_", 1)
}

/// What a channel definition asks of a connection's TLS (SVRCONN, and both ends of message
/// channels): SSLCIPH requires TLS and, unless ANY, that suite; SSLPEER filters the partner's
/// certificate DN. `tls`: the partner's DN and the negotiated suite; `who` names the other end
/// in the message.
pub fn tls_requirements(
    def: &ChannelDef,
    tls: Option<(&str, &str)>,
    who: &str,
) -> std::result::Result<(), String> {
    let name = &def.name;
    if !def.sslciph.is_empty() {
        let Some((_, suite)) = tls else {
            return Err(format!(
                "channel '{name}' requires TLS (SSLCIPH({}))",
                def.sslciph
            ));
        };
        if !sslciph_allows(&def.sslciph, suite) {
            return Err(format!(
                "channel '{name}' requires cipher suite {}, {who} uses {suite}",
                def.sslciph
            ));
        }
    }
    if !def.sslpeer.is_empty() {
        let dn = tls.map(|t| t.0).unwrap_or("");
        if !sslpeer_matches(&def.sslpeer, dn) {
            return Err(format!(
                "the certificate '{dn}' of {who} does not match SSLPEER('{}') of channel '{name}'",
                def.sslpeer
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod decode_tests {
    #[test]
    fn sslciph_names_and_mq_aliases_choose_suites() {
        use super::sslciph_allows as ok;
        assert!(ok("ANY", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"));
        assert!(ok("ANY_TLS12_OR_HIGHER", "TLS13_AES_256_GCM_SHA384"));
        assert!(ok("ANY_TLS12", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"));
        assert!(!ok("ANY_TLS12", "TLS13_AES_256_GCM_SHA384"));
        assert!(ok("any_tls13", "TLS13_AES_256_GCM_SHA384"));
        assert!(!ok(
            "ANY_TLS13_OR_HIGHER",
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
        ));
        assert!(ok("TLS_AES_128_GCM_SHA256", "TLS13_AES_128_GCM_SHA256"));
        // MQ's CipherSpec names of TLS 1.2 suites.
        assert!(ok(
            "ECDHE_ECDSA_AES_256_GCM_SHA384",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
        ));
        assert!(ok(
            "ECDHE_RSA_CHACHA20_POLY1305_SHA256",
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
        ));
        assert!(!ok(
            "ECDHE_ECDSA_AES_128_GCM_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
        ));
        assert!(!ok("TLS_AES_128_GCM_SHA256", "TLS13_AES_256_GCM_SHA384"));
    }

    use super::*;
    use sealmq_storage::codec::{Dec, Enc};

    #[test]
    fn an_unknown_channel_type_is_refused() {
        let mut c = ChannelDef::new("X", ChlType::Svrconn);
        c.mcauser = "app".into();
        let mut e = Enc::new();
        c.encode(&mut e);
        let mut bytes = e.buf;
        let back = ChannelDef::decode(&mut Dec::new(&bytes, "channel")).unwrap();
        assert_eq!(back.mcauser, "app");
        // The type byte follows the name (a u32 length and one byte).
        bytes[4 + 1] = 9;
        assert!(ChannelDef::decode(&mut Dec::new(&bytes, "channel")).is_err());
    }

    #[test]
    fn a_version_1_definition_reads_with_the_new_defaults() {
        let mut c = ChannelDef::new("TO.B", ChlType::Sdr);
        c.splprot = SplProt::Remove;
        c.batchint = 7;
        let mut e = Enc::new();
        c.encode(&mut e);
        let full = e.buf;
        assert_eq!(ChannelDef::decode(&mut Dec::new(&full, "c")).unwrap(), c);
        // A version 1 record ends after INTERCEPT: cut the extension block off.
        let v4 = 4 * 3 + 1 + 4 + 4;
        let ext = 1 + 4 + 1 + 4 * 6 + 1 + 8 + 2 + 8 + v4;
        let v1 = &full[..full.len() - ext];
        let old = ChannelDef::decode(&mut Dec::new(v1, "c")).unwrap();
        assert_eq!(old.splprot, SplProt::Passthru);
        assert_eq!(old.batchint, 0);
        assert_eq!(old.xmitq, c.xmitq);
        // A version 2 record: the block without the version 3 fields, its version byte 2.
        let mut v2 = full[..full.len() - 10 - v4].to_vec();
        v2[full.len() - ext] = 2;
        let old = ChannelDef::decode(&mut Dec::new(&v2, "c")).unwrap();
        assert_eq!(old.batchint, 7);
        assert!(old.sslcauth_required && !old.putaut_ctx);
        assert_eq!(old.maxinst, 999_999_999);
        // A version 3 record: DISCINT and the rest take their defaults.
        let mut v3 = full[..full.len() - v4].to_vec();
        v3[full.len() - ext] = 3;
        let old = ChannelDef::decode(&mut Dec::new(&v3, "c")).unwrap();
        assert_eq!((old.discint, old.usedlq, old.kaint), (6000, true, -1));
    }

    #[test]
    fn interception_needs_tls_with_client_authentication() {
        let mut c = ChannelDef::new("APP.ICPT", ChlType::Svrconn);
        c.intercept = true;
        let e = c.validate().unwrap_err();
        assert!(e.detail.contains("SSLCIPH"), "{}", e.detail);
        c.sslciph = "ANY".into();
        c.sslcauth_required = false;
        assert!(c.validate().is_err());
        c.sslcauth_required = true;
        c.validate().unwrap();
    }

    #[test]
    fn splprot_combinations() {
        let mut c = ChannelDef::new("X", ChlType::Rcvr);
        c.splprot = SplProt::Remove;
        assert!(c.validate().is_err());
        c.splprot = SplProt::AsPolicy;
        assert!(c.validate().is_ok());
        let mut s = ChannelDef::new("Y", ChlType::Sdr);
        s.conname = "127.0.0.1(1414)".into();
        s.xmitq = "XQ".into();
        s.splprot = SplProt::AsPolicy;
        let e = s.validate().unwrap_err();
        assert!(
            e.detail
                .contains("SPLPROT(ASPOLICY) applies only to RCVR and RQSTR"),
            "{}",
            e.detail
        );
        s.splprot = SplProt::Remove;
        assert!(s.validate().is_ok());
    }
}
