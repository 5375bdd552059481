//! AMQP channels (CHLTYPE(AMQP), issue 15) in the channel initiator: START CHANNEL listens on
//! the channel's PORT (sealmq-amqp), STOP CHANNEL and the queue manager's end stop it,
//! DISPLAY CHSTATUS shows it with its connections.

use super::{Initiator, fail};
use sealmq_engine::MqResult;
use sealmq_engine::channels::{Attrs, ChannelDef};
use sealmq_types::ReasonCode;
use sealmq_types::attrs;
use sealmq_types::sync::lock;

impl Initiator {
    fn amqp(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, sealmq_amqp::AmqpChannel>>
    {
        lock(&self.amqp)
    }

    pub(crate) fn start_amqp(&self, d: &ChannelDef) -> MqResult<String> {
        if self.amqp().contains_key(&d.name) {
            return Ok(format!("AMQ8018I: Channel {} is already running.", d.name));
        }
        // TLS from the keystore as it is at START CHANNEL (a new certificate: STOP and START
        // the channel); INTERCEPT(YES) is refused at DEFINE without SSLCIPH and SSLCAUTH.
        let tls = if d.sslciph.trim().is_empty() {
            None
        } else {
            let cfg = self
                .security
                .channel_tls(d.sslcauth_required, &d.sslciph)
                .map_err(|e| {
                    fail(
                        ReasonCode::SslInitializationError,
                        format!("channel {}: cannot serve TLS: {e}", d.name),
                    )
                })?;
            Some(cfg)
        };
        // Interception decrypts for the client: never for one TLS did not authenticate (a
        // definition that slipped past DEFINE's rule is refused here too).
        if d.intercept && (tls.is_none() || !d.sslcauth_required) {
            return Err(fail(
                ReasonCode::SslInitializationError,
                format!(
                    "channel {} intercepts (INTERCEPT(YES)) and so needs SSLCIPH and \
                     SSLCAUTH(REQUIRED)",
                    d.name
                ),
            ));
        }
        let (sec, keys) = (self.security.clone(), self.security.clone());
        let services = sealmq_amqp::Services {
            verify: std::sync::Arc::new(move |addr: &str, u: &str, p: &str| {
                sec.check_password(addr, u, p)
            }),
            tls,
            keys: std::sync::Arc::new(move || keys.protector()),
            handshake: sealmq_amqp::listener::HANDSHAKE,
            accounts: Some(self.amqp_accounts.clone()),
            admit: self.amqp_admit(&d.name),
            establish: self.amqp_establish(),
        };
        let ch = sealmq_amqp::AmqpChannel::start(self.qm.clone(), d, services)
            .map_err(|e| fail(ReasonCode::ResourceProblem, e))?;
        let addr = ch.addr;
        self.amqp().insert(d.name.clone(), ch);
        Ok(format!(
            "AMQ8018I: Channel {} started: AMQP on {addr}.",
            d.name
        ))
    }

    /// An AMQP connection is a network connection like any other: BLOCKADDR refuses its
    /// address before TLS or SASL; until its AMQP open is done it holds a place in the budget
    /// of sockets not yet authenticated (shared with the listeners': past it the oldest is
    /// closed), and then a MAXCHL place until it ends (issue 42: sockets that sent only the
    /// protocol header once held MAXCHL places and locked native clients out).
    fn amqp_admit(&self, channel: &str) -> sealmq_amqp::listener::Admit {
        let (qm, sec, ci) = (self.qm.clone(), self.security.clone(), self.pending.clone());
        let channel = channel.to_string();
        std::sync::Arc::new(move |ip: std::net::IpAddr, close| {
            let ip = ip.to_string();
            if let Some(why) = qm.address_blocked(&ip) {
                sec.events.log(&format!(
                    "AMQP connection from {ip} on channel {channel} refused: {why}"
                ));
                return Err(why);
            }
            match ci.get() {
                Some(pending) => {
                    let (slot, line) = pending.admit(&ip, close);
                    if let Some(line) = line {
                        tracing::warn!("{line}");
                    }
                    Ok(Box::new(slot) as Box<dyn Send + Sync>)
                }
                None => Ok(Box::new(()) as Box<dyn Send + Sync>),
            }
        })
    }

    /// MAXCHL for an AMQP connection whose open is done.
    fn amqp_establish(&self) -> sealmq_amqp::listener::Establish {
        use crate::admit::limits::TakeSlot;
        let (qm, limit) = (self.qm.clone(), self.limit.clone());
        std::sync::Arc::new(move || {
            let maxchl = qm.qmgr().maxchl;
            match limit.take(maxchl) {
                Some(slot) => Ok(Box::new(slot) as Box<dyn Send + Sync>),
                None => Err(format!("MAXCHL({maxchl}) connections are served")),
            }
        })
    }

    /// Stops AMQP channel `name`; `None` when it was not running.
    pub(crate) fn stop_amqp(&self, name: &str) -> Option<String> {
        let ch = self.amqp().remove(name)?;
        drop(ch);
        Some(format!("AMQ8019I: Channel {name} stopped."))
    }

    pub(crate) fn stop_all_amqp(&self) {
        let all: Vec<_> = self.amqp().drain().collect();
        drop(all);
    }

    pub(crate) fn amqp_status(&self, pattern: &str) -> Vec<Attrs> {
        let mut v: Vec<Attrs> = self
            .amqp()
            .values()
            .filter(|c| crate::generic_match(pattern, &c.name))
            .map(|c| {
                attrs![
                    "CHANNEL" => c.name, "CHLTYPE" => "AMQP", "STATUS" => "RUNNING",
                    "CONNAME" => c.addr, "CONNS" => c.connections(), "CURCONNS" => c.connections(),
                ]
            })
            .collect();
        v.sort_by(|a, b| a[0].1.cmp(&b[0].1));
        v
    }

    pub(crate) fn amqp_clients(&self, pattern: &str, client: &str) -> Vec<Attrs> {
        let date_time = |ms: u64| {
            if ms == 0 {
                (String::new(), String::new())
            } else {
                sealmq_types::time::mq_date_time(ms / 1000)
            }
        };
        let mut v = Vec::new();
        for c in self
            .amqp()
            .values()
            .filter(|c| crate::generic_match(pattern, &c.name))
        {
            for s in c.clients() {
                if !crate::generic_match(client, &s.client_id) {
                    continue;
                }
                let (msgda, msgti) = date_time(s.last_msg_ms);
                let (stada, stati) = date_time(s.started_ms);
                v.push(attrs![
                    "CHANNEL" => c.name, "CHLTYPE" => "AMQP", "CLIENTID" => s.client_id,
                    "STATUS" => "RUNNING", "CONNAME" => crate::chinit::host_port(&s.conname),
                    "MCAUSER" => s.mcauser, "CLNTUSER" => s.clntuser, "PROTOCOL" => "AMQP",
                    "MSGSNT" => s.msgs_sent, "MSGRCVD" => s.msgs_rcvd, "LSTMSGDA" => msgda,
                    "LSTMSGTI" => msgti, "CHSTADA" => stada, "CHSTATI" => stati,
                    "LINKS" => s.links.join(" "),
                    "SECPROT" => if s.secprot.is_empty() { "NONE".to_string() } else { s.secprot },
                    "SSLGROUP" => s.sslgroup,
                ]);
            }
        }
        v
    }
}
