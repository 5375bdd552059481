//! Async use: a requester and a responder on one tokio runtime.
//!
//! `cargo run -p sealmq-client --example async_request_reply -- $SEALMQ_HOME/qmgrs/QM1 REQ.Q REP.Q`

use sealmq_client::nonblocking::AsyncClient;
use sealmq_mqi::{GetOptions, OpenOptions};
use sealmq_mqi::{Match, Md, MsgType};
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(req), Some(rep)) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: async_request_reply QM_DIR REQUEST_QUEUE REPLY_QUEUE");
        std::process::exit(2);
    };
    let responder = AsyncClient::connect_local(dir.clone().into(), "responder".into()).await?;
    let requester = AsyncClient::connect_local(dir.into(), "requester".into()).await?;
    let (rin, _) = responder.open(&req, OpenOptions::input()).await?;
    let server = tokio::spawn(async move {
        let m = responder
            .get(
                rin,
                GetOptions {
                    wait: Some(Duration::from_secs(5)),
                    ..Default::default()
                },
            )
            .await?;
        let reply = Md {
            correl_id: m.md.msg_id,
            msg_type: MsgType::Reply,
            ..Md::default()
        };
        responder
            .put1(&rep_name(), reply, m.payload.to_ascii_uppercase(), false)
            .await?;
        Ok::<_, sealmq_client::ClientError>(())
    });
    let sent = requester
        .put1(
            &req,
            Md {
                msg_type: MsgType::Request,
                ..Md::default()
            },
            b"ping".to_vec(),
            false,
        )
        .await?;
    let (rin2, _) = requester.open(&rep, OpenOptions::input()).await?;
    let gmo = GetOptions {
        wait: Some(Duration::from_secs(5)),
        matching: Match {
            correl_id: Some(sent.msg_id),
            ..Match::default()
        },
        ..Default::default()
    };
    let reply = requester.get(rin2, gmo).await?;
    server.await??;
    println!("reply: {}", String::from_utf8_lossy(&reply.payload));
    Ok(())
}

fn rep_name() -> String {
    std::env::args().nth(3).unwrap_or_default()
}
