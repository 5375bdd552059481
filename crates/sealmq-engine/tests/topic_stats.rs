//! Per-topic-string figures (IBM's `ibmmq_topic_*` families): counted on the publish path,
//! and bounded — a publisher inventing topic strings cannot grow the queue manager's memory.

use sealmq_engine::qm::TOPICS_KEPT;
use sealmq_engine::*;

#[test]
fn topic_figures_count_publications_and_copies_and_stay_bounded() {
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(QmConfig::new("QT", d.path().join("QT"))).unwrap();
    let c = Connection::connect(&qm, "pub", "t").unwrap();
    let publish = |topic: &str| {
        c.publish(
            topic,
            &mut Md::default(),
            b"x",
            PutOptions::default(),
            false,
        )
        .unwrap()
    };
    assert_eq!(publish("prices/fruit"), 0);
    assert_eq!(publish("prices/fruit"), 0);
    let t = qm.topic_stats();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].0, "prices/fruit");
    assert_eq!((t[0].1.published, t[0].1.received), (2, 0));
    assert!(t[0].1.last_published_ms > 0 && t[0].1.last_received_ms == 0);
    for i in 0..TOPICS_KEPT + 10 {
        publish(&format!("invented/{i}"));
    }
    let t = qm.topic_stats();
    assert_eq!(t.len(), TOPICS_KEPT, "bounded");
    // A topic string already kept goes on being counted.
    publish("prices/fruit");
    let fruit = qm
        .topic_stats()
        .into_iter()
        .find(|(n, _)| n == "prices/fruit");
    assert_eq!(fruit.map(|(_, s)| s.published), Some(3));
    qm.shutdown().unwrap();
}
