//! Where queue managers live: `$SEALMQ_HOME/qmgrs/<name>`, whether one exists and whether
//! its server is running. Every command that names a queue manager starts here.

use crate::CliResult;
use std::path::PathBuf;

/// `$SEALMQ_HOME` (default `~/.sealmq`).
pub fn home() -> PathBuf {
    std::env::var_os("SEALMQ_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| ".".into())).join(".sealmq")
        })
}

pub fn qm_dir(name: &str) -> PathBuf {
    home().join("qmgrs").join(name)
}

pub(crate) fn exists(name: &str) -> CliResult<PathBuf> {
    let d = qm_dir(name);
    // An instance of a replicated queue manager is one by its group file, even with its data
    // gone (a wiped disk is rebuilt from the group's log at its next start).
    if !d.join("log").exists() && !d.join(sealmq_ha::GROUP_FILE).exists() {
        return Err(crate::refused(
            sealmq_types::ReasonCode::QMgrNameError,
            format!(
                "no queue manager '{name}' under {} (create it with 'sealmq create {name}')",
                home().display()
            ),
        ));
    }
    Ok(d)
}

/// Whether a server holds the queue manager's lock.
pub fn running(dir: &std::path::Path) -> bool {
    match std::fs::File::options()
        .write(true)
        .open(dir.join("qm.lock"))
    {
        Ok(f) => f.try_lock().is_err(),
        Err(_) => false,
    }
}
