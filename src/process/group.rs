//! A process group killed when its owner is done with it, and guarded by
//! the watchdog ([`super::reaper`]) while it lives.

/// Kills a process group when dropped: the call ended, timed out, or was
/// dropped because the user pressed Esc. While it lives the group is
/// guarded by [`super::reaper`], which kills it if the chat is SIGKILLed.
pub struct GroupKill(i32);

impl GroupKill {
    /// Take charge of group `pgid` (no group when it is not positive).
    pub fn new(pgid: i32) -> Self {
        if pgid > 0 {
            super::reaper::guard(pgid);
        }
        GroupKill(pgid)
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        if self.0 > 0 {
            // Before the kill, while what the group started is still in
            // our tree: those that left it are guarded on their own.
            super::escaped::sweep();
            // SAFETY: killpg takes plain integers and touches no memory; a
            // group that is already gone gives ESRCH, which is fine.
            unsafe {
                libc::killpg(self.0, libc::SIGKILL);
            }
            // After the kill: the number may be reused once it is gone.
            super::reaper::release(self.0);
        }
    }
}
