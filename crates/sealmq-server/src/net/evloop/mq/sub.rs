//! MQSUB as IBM's Java client sends it (SPI SUBSCRIBE): served by the session's
//! `SubscribeWith`, as a native client's MQSUB. The answer carries the subscription's queue
//! handle (the client gets from it, or asks REQUEST_MSGS of it) and a subscription handle of
//! the front end's own, whose MQCLOSE with MQCO_REMOVE_SUB ends a durable subscription.

use super::super::Stream;
use super::conv::Conv;
use super::handles::Obj;
use super::{Flow, rc_of};
use sealmq_fap::sub::{self, Subscribe, so};
use sealmq_types::ReasonCode;
use sealmq_wire::{Request, Response};

/// MQCO_REMOVE_SUB.
const CO_REMOVE_SUB: u32 = 8;

impl<S: Stream> Conv<S> {
    pub(super) async fn subscribe(&mut self, f: &Flow, body: &[u8]) -> bool {
        let order = f.tsh.order;
        let s = match sub::parse_subscribe(body, order) {
            Ok(s) => s,
            Err(e) => return self.protocol(&e.0),
        };
        let (rc, hobj) = match self.topic_of(&s) {
            Ok(topic) => self.make_subscription(&s, topic).await,
            Err(rc) => (rc, 0),
        };
        if rc != 0 {
            return self.reply(f, rc, 0, body).await;
        }
        let durable = s.options & so::DURABLE != 0;
        let hsub = self.handles.own(Obj::Sub {
            name: s.name.clone(),
            durable,
            queue: hobj,
        });
        let answer = sub::subscribe_reply(body, &s, hsub, order);
        self.reply(f, 0, hobj, &answer).await
    }

    /// The full topic string: the topic object's and the one given.
    fn topic_of(&self, s: &Subscribe) -> Result<String, u32> {
        if s.object.is_empty() {
            return Ok(s.topic.clone());
        }
        match self.qm.object::<sealmq_engine::topics::TopicDef>(&s.object) {
            Some(t) => Ok(sealmq_engine::subs::full_topic(&t.topicstr, &s.topic)),
            None => Err(ReasonCode::UnknownObjectName.code()),
        }
    }

    /// Makes or resumes the subscription as its MQSO options say: (reason, queue handle).
    /// CREATE with ALTER or RESUME (what JMS asks of a durable subscriber) resumes one that
    /// exists with the same topic, and makes it again when the topic changed (JMS's rule); a
    /// shared non-durable one (named) is made, or resumed when another consumer made it.
    async fn make_subscription(&mut self, s: &Subscribe, topic: String) -> (u32, u32) {
        let create = s.options & so::CREATE != 0;
        let resume = s.options & (so::RESUME | so::ALTER) != 0;
        let durable = s.options & so::DURABLE != 0;
        let managed = s.options & so::MANAGED != 0;
        let req = |resume: bool| Request::SubscribeWith {
            name: s.name.clone(),
            topic: topic.clone(),
            durable,
            selector: s.selector.clone(),
            resume,
            new_only: s.options & so::NEW_PUBLICATIONS_ONLY != 0,
            dest: if managed {
                String::new()
            } else {
                s.dest_queue.clone()
            },
        };
        // The subscription named, if it exists: resumed, or made again when JMS changed its
        // topic or selector (CREATE with ALTER).
        let existing = (!s.name.is_empty()).then(|| self.qm.sub(&s.name)).flatten();
        let served = match existing {
            Some(e) if resume => {
                let changed =
                    !topic.is_empty() && (e.topicstr != topic || e.selector != s.selector);
                if changed && create {
                    let gone = self
                        .serve(Request::Unsubscribe {
                            name: s.name.clone(),
                        })
                        .await;
                    if rc_of(&gone) != 0 {
                        return (rc_of(&gone), 0);
                    }
                    self.serve(req(false)).await
                } else {
                    self.serve(req(true)).await
                }
            }
            Some(_) => self.serve(req(false)).await,
            None if create => self.serve(req(false)).await,
            None => self.serve(req(true)).await,
        };
        match served {
            Response::Opened(o) => self.subscribed(o),
            r => (rc_of(&r), 0),
        }
    }

    fn subscribed(&mut self, o: sealmq_wire::Opened) -> (u32, u32) {
        self.handles.map.insert(
            o.hobj,
            Obj::Session {
                resolved: o.resolved.clone(),
                propctl: self
                    .qm
                    .queue_def(&o.resolved)
                    .map(|q| q.prop_ctl())
                    .unwrap_or_default(),
            },
        );
        (0, o.hobj)
    }

    /// MQCLOSE of a subscription handle: MQCO_REMOVE_SUB ends a durable subscription (a
    /// non-durable one ends with its queue's handle).
    pub(super) async fn close_sub(
        &mut self,
        name: String,
        durable: bool,
        queue: u32,
        options: u32,
    ) -> u32 {
        if durable && options & CO_REMOVE_SUB != 0 {
            // The session closes the subscription's queue with it.
            let rc = rc_of(&self.serve(Request::Unsubscribe { name }).await);
            if rc == 0 && self.handles.map.contains_key(&queue) {
                self.consumers.forget(queue);
                self.handles.map.insert(queue, Obj::Gone);
            }
            return rc;
        }
        0
    }
}
