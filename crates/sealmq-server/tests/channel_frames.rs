//! A receiving channel meets bad input: an unknown channel, a message out of sequence, a frame
//! that is not the protocol. Each gets a Refused frame that says what is wrong, the connection
//! closes, and the batch being received is backed out (the sender still has its messages).

use sealmq_engine::Md;
use sealmq_engine::xqh::TransmissionHeader;
mod common;
use sealmq_server::Server;
use sealmq_wire::chl::{ChlFrame, read_chl, write_chl};
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

fn start(name: &str) -> (sealmq_testkit::TempQm, Server) {
    // The receiver runs as 'partner', which may put to Q (the default CHLAUTH rules refuse a
    // channel running as the queue manager's own user).
    common::serving(
        name,
        "DEFINE QLOCAL(Q)\n\
         DEFINE CHANNEL(IN) CHLTYPE(RCVR) MCAUSER('partner')\n\
         SET AUTHREC PROFILE('Q') OBJTYPE(QUEUE) PRINCIPAL('partner') AUTHADD(PUT)\n",
    )
}

fn begin(server: &Server, channel: &str) -> (TcpStream, ChlFrame) {
    let mut s = TcpStream::connect(server.tcp_addr().unwrap()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write_chl(
        &mut s,
        &ChlFrame::Start {
            versions: vec![1],
            channel: channel.into(),
            qmgr: "PARTNER".into(),
            batchsz: 50,
            max_msg: 1 << 20,
            hbint: 300,
            committed_seq: 0,
            indoubt: None,
            reset_seq: None,
        },
    )
    .unwrap();
    s.flush().unwrap();
    let answer = read_chl(&mut s, 1 << 20).unwrap().unwrap();
    (s, answer)
}

fn message(qm: &str, n: u64) -> ChlFrame {
    ChlFrame::Msg {
        seq: n,
        persistent: true,
        data: TransmissionHeader {
            remote_q: "Q".into(),
            remote_qm: qm.into(),
            md: Md::default(),
        }
        .wrap(b"hello"),
    }
}

fn refused(s: &mut TcpStream) -> (u32, String) {
    match read_chl(s, 1 << 20).unwrap() {
        Some(ChlFrame::Refused { reason, detail }) => {
            // Then the connection ends.
            assert!(read_chl(s, 1 << 20).map(|f| f.is_none()).unwrap_or(true));
            (reason, detail)
        }
        other => panic!("expected Refused, got {other:?}"),
    }
}

fn settled(server: &Server) {
    sealmq_testkit::wait_for(
        Duration::from_secs(20),
        "the batch to be backed out",
        || {
            let st = server.queue_manager().queue_status("Q").unwrap();
            st.depth == 0 && st.uncommitted == 0
        },
    );
}

#[test]
fn an_unknown_channel_is_refused_with_what_to_define() {
    let (_d, server) = start("QMF1");
    let (_s, answer) = begin(&server, "NOPE");
    match answer {
        ChlFrame::Refused { reason, detail } => {
            assert_eq!(reason, 2540);
            assert!(
                detail.contains("DEFINE CHANNEL(NOPE) CHLTYPE(RCVR)"),
                "{detail}"
            );
        }
        other => panic!("expected Refused, got {other:?}"),
    }
}

#[test]
fn a_message_out_of_sequence_is_refused_and_the_batch_backed_out() {
    let (_d, server) = start("QMF2");
    let (mut s, ok) = begin(&server, "IN");
    assert!(
        matches!(ok, ChlFrame::StartOk { last_seq: 0, .. }),
        "{ok:?}"
    );
    write_chl(&mut s, &message("QMF2", 1)).unwrap();
    write_chl(&mut s, &message("QMF2", 3)).unwrap();
    s.flush().unwrap();
    let (_, detail) = refused(&mut s);
    assert!(
        detail.contains("sequence number 3 arrived, 2 expected"),
        "{detail}"
    );
    settled(&server);
}

#[test]
fn a_frame_that_is_not_the_protocol_is_refused_and_the_batch_backed_out() {
    let (_d, server) = start("QMF3");
    let (mut s, _) = begin(&server, "IN");
    write_chl(&mut s, &message("QMF3", 1)).unwrap();
    // A Msg frame (kind 67) whose body is three stray bytes.
    s.write_all(&[8, 0, 0, 0, 67, 0, 0, 0, 0, 1, 2, 3]).unwrap();
    s.flush().unwrap();
    let (reason, detail) = refused(&mut s);
    assert_eq!(reason, 2195);
    assert!(detail.contains("protocol error"), "{detail}");
    settled(&server);
}
