//! What the HA crate's test binaries share.
/// Snapshots are the engine's (tested with real instances in the CLI's HA tests).
pub fn no_state() -> std::sync::Arc<dyn sealmq_ha::StateFiles> {
    struct NoState;
    impl sealmq_ha::StateFiles for NoState {
        fn write_state(&self, _: &std::path::Path) -> Result<u64, String> {
            Err("no snapshots here".into())
        }
        fn install_state(&self, _: &std::path::Path) -> Result<u64, String> {
            Err("no snapshots here".into())
        }
    }
    std::sync::Arc::new(NoState)
}
