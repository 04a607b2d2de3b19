//! Output of the command-line tools that never panics, shared by lowp-run, lowp-gpu-run,
//! lowp-translate and lowp-fmt (each includes this file as its module `output`): `say!`
//! writes a line to stdout, and a closed pipe (`... | head -1`) drops the rest quietly
//! while any other failure (a full disk) is kept for [`finish`]; `warn!` writes a line to
//! stderr, and a closed or full stderr drops it; [`help`] answers `--help`.

use std::process::ExitCode;
use std::sync::OnceLock;

/// Why stdout lost output, reported by [`finish`].
pub static STDOUT_LOST: OnceLock<String> = OnceLock::new();

/// `println!` that never panics (see the module).
#[allow(unused_macros)]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout(), $($arg)*) {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                let _ = crate::output::STDOUT_LOST.set(e.to_string());
            }
        }
    }};
}

/// `eprintln!` that never panics (see the module).
macro_rules! warn {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// The tool's exit status: `status`, or 1 with a line on stderr where stdout lost output.
pub fn finish(tool: &str, status: ExitCode) -> ExitCode {
    match STDOUT_LOST.get() {
        Some(why) => {
            warn!("{tool}: cannot write to stdout: {why}");
            ExitCode::from(1)
        }
        None => status,
    }
}

/// Where `args` ask for help (`-h` or `--help`): the usage on stdout and the exit status
/// (0; a usage error prints it to stderr with 2), else `None`.
#[allow(dead_code)]
pub fn help(tool: &str, usage: &str, args: &[String]) -> Option<ExitCode> {
    args.iter().any(|a| a == "-h" || a == "--help").then(|| {
        say!("{}", usage.trim_end());
        finish(tool, ExitCode::SUCCESS)
    })
}
