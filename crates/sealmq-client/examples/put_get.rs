//! Blocking use: put a persistent message under syncpoint, commit, get it back.
//!
//! `cargo run -p sealmq-client --example put_get -- $SEALMQ_HOME/qmgrs/QM1 APP.Q`

use sealmq_client::Client;
use sealmq_mqi::{GetOptions, OpenOptions};
use sealmq_mqi::{Md, Persistence};
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(qm_dir), Some(queue)) = (args.next(), args.next()) else {
        eprintln!("usage: put_get QM_DIR QUEUE");
        std::process::exit(2);
    };
    let mut c = Client::connect_local(std::path::Path::new(&qm_dir), "example-put-get")?;
    println!("connected to {} as {}", c.qmgr, c.user);
    let (out, _) = c.open(&queue, OpenOptions::output())?;
    let mut md = Md {
        persistence: Persistence::Persistent,
        ..Md::default()
    };
    c.put(out, &mut md, b"hello from the example", true)?;
    c.commit()?;
    let (inp, _) = c.open(&queue, OpenOptions::input())?;
    let got = c.get(
        inp,
        &GetOptions {
            wait: Some(Duration::from_secs(5)),
            ..Default::default()
        },
    )?;
    println!(
        "got {:?} (message id {:02x?})",
        String::from_utf8_lossy(&got.payload),
        &got.md.msg_id[..8]
    );
    Ok(())
}
