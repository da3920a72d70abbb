//! The programs' exit statuses (SPEC 11), one type for every place a
//! program ends: 0 done, 1 failed, 2 called wrongly, 4 a session busy, and
//! a shell's 128 + N for a signal that stopped it. A leaf module, so the
//! chat (which decides a signal's status) and the programs' edge (`cli`,
//! which ends the process) share it; the numbers live only here.

/// How a program ends. Ordered from best to worst: where several things
/// went wrong the program ends with the worst (`max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitCode {
    /// 0: it did what was asked.
    Success,
    /// 1, as grep(1) says it: the search ran and nothing matched.
    NothingMatched,
    /// 1: it failed.
    Failure,
    /// 2: it was called wrongly (a bad argument, an id that is no id).
    Usage,
    /// 4: a session it needs is busy (open in a chat, being compacted).
    Busy,
    /// 128 + N: signal N stopped it (130 for Ctrl-C, 143 for SIGTERM).
    Signal(i32),
}

impl ExitCode {
    /// The status as the process reports it.
    pub fn code(self) -> u8 {
        match self {
            ExitCode::Success => 0,
            ExitCode::NothingMatched | ExitCode::Failure => 1,
            ExitCode::Usage => 2,
            ExitCode::Busy => 4,
            ExitCode::Signal(number) => u8::try_from(number).map_or(255, |n| n.saturating_add(128)),
        }
    }

    /// Whether it is [`ExitCode::Success`].
    pub fn is_success(self) -> bool {
        self == ExitCode::Success
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> std::process::ExitCode {
        std::process::ExitCode::from(code.code())
    }
}

impl From<ExitCode> for i32 {
    fn from(code: ExitCode) -> i32 {
        i32::from(code.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_numbers_are_spec_elevens() {
        let codes = [ExitCode::Success, ExitCode::NothingMatched, ExitCode::Failure, ExitCode::Usage, ExitCode::Busy];
        assert_eq!(codes.map(ExitCode::code), [0, 1, 1, 2, 4]);
        assert_eq!(ExitCode::Signal(libc::SIGINT).code(), 130);
        assert_eq!(ExitCode::Signal(libc::SIGTERM).code(), 143);
        assert_eq!(ExitCode::Signal(libc::SIGHUP).code(), 129);
        assert_eq!(ExitCode::Signal(200).code(), 255, "never wraps to a success");
    }

    #[test]
    fn the_worst_wins() {
        assert_eq!(ExitCode::Failure.max(ExitCode::Busy), ExitCode::Busy);
        assert_eq!(ExitCode::Usage.max(ExitCode::Failure), ExitCode::Usage);
        assert_eq!(ExitCode::Signal(libc::SIGTERM).max(ExitCode::Failure), ExitCode::Signal(libc::SIGTERM));
        assert_eq!(ExitCode::Success.max(ExitCode::NothingMatched), ExitCode::NothingMatched);
    }
}
