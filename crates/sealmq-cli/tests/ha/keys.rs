//! Encryption at rest on a replicated queue manager with each instance's master key in an
//! environment variable (`--dse env:VAR`): the queue manager scrubs the variable from its
//! environment when it starts, yet an instance that hands the active role over restarts
//! itself as a replica and must open its files again.

use super::{Group, QM};

#[test]
fn an_instance_with_its_master_key_in_the_environment_comes_back_after_handing_over() {
    let g = Group::with_env_master_key();
    let a = g.wait_active();
    g.instances[a]
        .home
        .ok_in(&["mqsc", QM], Some("DEFINE QLOCAL(HA.Q) DEFPSIST(YES)\n"));
    g.wait_in_sync();
    let to = (a + 1) % 3;
    g.switch(a, to);
    // The old active instance restarted itself as a replica: it is in sync again.
    g.wait_in_sync();
    let st = g.status(a);
    assert!(st.contains("ROLE(replica)"), "{st}");
    // And it can be active again, its files opened with its key.
    g.switch(to, a);
    let home = &g.instances[a].home;
    home.ok(&["put", QM, "HA.Q", "--message", "sealed", "--persistent"]);
    assert!(home.ok(&["get", QM, "HA.Q"]).contains("sealed"));
}
