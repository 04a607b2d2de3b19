//! [`PassError`]: why a lowp pass rejected its input. The pass bridge turns it into an MLIR
//! diagnostic at the offending operation and fails the pass; nothing panics or aborts.

use mlir_sys::MlirLocation;

/// A pass failure, reported as `file:line:col: error: ...` at `location`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PassError {
    /// The input is valid IR the pass cannot lower (names the op and the reason).
    #[error("{op}: {reason}")]
    Unsupported {
        /// The operation name.
        op: String,
        /// Why.
        reason: String,
        /// Where.
        location: Option<Location>,
    },
    /// A pass option value is not accepted.
    #[error("option '{option}' of {pass}: {reason}")]
    BadOption {
        /// The pass argument.
        pass: &'static str,
        /// The option name.
        option: &'static str,
        /// Why, with the accepted values.
        reason: String,
    },
}

/// A raw MLIR location carried by an error (only used on the thread that made it).
#[derive(Debug, Clone, Copy)]
pub struct Location(pub MlirLocation);

// SAFETY: locations are immutable uniqued storage owned by the context; the error is only
// read on the pass's own thread before the context can go away.
unsafe impl Send for Location {}
unsafe impl Sync for Location {}

impl PassError {
    /// Where to report the error, if the error knows.
    pub fn location(&self) -> Option<MlirLocation> {
        match self {
            Self::Unsupported { location, .. } => location.map(|l| l.0),
            Self::BadOption { .. } => None,
        }
    }
}
