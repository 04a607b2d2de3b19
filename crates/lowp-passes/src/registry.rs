//! Rust passes in MLIR's global pass registry.
//!
//! Each pass is a [`PassDef`]: argument, description, typed options and a `run` function.
//! [`register_passes`] hands every definition to the dialect's C++ bridge
//! (`lowpRegisterRustPass`), after which MlirOptMain's command line, `--help` and textual
//! pipelines (`func.func(lowp-expand-quantize{decode=table})`) know it. Option values are
//! validated here when a pipeline is parsed; a run that fails emits a diagnostic at the
//! offending op and fails the pass. Panics are caught at the boundary and reported as
//! errors: they never unwind into C++.

use std::ffi::{c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use lowp_dialect::ffi;
use melior::dialect::DialectHandle;
use melior::ir::operation::OperationLike;
use melior::ir::OperationRef;
use mlir_sys::{MlirOperation, MlirStringRef};

use crate::PassError;

/// The type of an option, which decides what values it accepts.
#[derive(Clone, Copy, Debug)]
pub enum OptionKind {
    /// `true` / `false` (also `1` / `0`).
    Bool,
    /// One of the listed words.
    Choice(&'static [&'static str]),
    /// An unsigned integer in `min..=max`.
    UInt {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
}

/// One pass option.
#[derive(Clone, Copy, Debug)]
pub struct OptionDef {
    /// Name in `{name=value}`.
    pub name: &'static str,
    /// Default value.
    pub default: &'static str,
    /// Help text.
    pub description: &'static str,
    /// Accepted values.
    pub kind: OptionKind,
}

/// The parsed option values of one pass run.
#[derive(Clone, Debug)]
pub struct PassOptions {
    values: Vec<(&'static str, String)>,
}

impl PassOptions {
    fn value(&self, name: &str) -> &str {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("pass option '{name}' is not declared"))
    }

    /// A `Bool` option.
    pub fn flag(&self, name: &str) -> bool {
        // Named alone (`{emulate}`), a flag is set, as upstream's bool options are.
        matches!(self.value(name), "true" | "1" | "")
    }

    /// A `Choice` option.
    pub fn choice(&self, name: &str) -> &str {
        self.value(name)
    }

    /// A `UInt` option.
    pub fn uint(&self, name: &str) -> u64 {
        self.value(name).parse().expect("validated when parsed")
    }
}

/// A Rust pass: what the registry and the command line know of it.
pub struct PassDef {
    /// Pipeline argument, `lowp-<verb>[-<noun>]`.
    pub argument: &'static str,
    /// Pass name (CamelCase), shown in timing and crash reports.
    pub name: &'static str,
    /// One-line description for `--help`.
    pub description: &'static str,
    /// The op it runs on (`func.func`), or any op.
    pub op_name: Option<&'static str>,
    /// Options.
    pub options: &'static [OptionDef],
    /// Dialects the pass creates ops of (loaded before it runs).
    pub dependent_dialects: fn() -> Vec<DialectHandle>,
    /// The rewrite.
    pub run: for<'c, 'a> fn(OperationRef<'c, 'a>, &PassOptions) -> Result<(), PassError>,
}

impl OptionDef {
    /// Whether `value` is one this option accepts; `Err` says what it accepts.
    pub fn check(&self, value: &str) -> Result<(), String> {
        let ok = match self.kind {
            OptionKind::Bool => matches!(value, "true" | "false" | "1" | "0" | ""),
            OptionKind::Choice(words) => words.contains(&value),
            OptionKind::UInt { min, max } => {
                value.parse::<u64>().is_ok_and(|v| (min..=max).contains(&v))
            }
        };
        if ok {
            return Ok(());
        }
        let accepted = match self.kind {
            OptionKind::Bool => "true or false".to_string(),
            OptionKind::Choice(words) => words.join(", "),
            OptionKind::UInt { min, max } => format!("an integer in {min}..={max}"),
        };
        Err(format!("'{value}' is not accepted; expected {accepted}"))
    }
}

impl PassDef {
    /// Check and parse option values (in declaration order).
    pub fn parse_options(&self, values: &[String]) -> Result<PassOptions, PassError> {
        let mut parsed = Vec::with_capacity(self.options.len());
        for (def, value) in self.options.iter().zip(values) {
            def.check(value).map_err(|reason| PassError::BadOption {
                pass: self.argument,
                option: def.name,
                reason,
            })?;
            parsed.push((def.name, value.clone()));
        }
        Ok(PassOptions { values: parsed })
    }

    /// The option called `name`.
    pub fn option(&self, name: &str) -> Option<&'static OptionDef> {
        self.options.iter().find(|o| o.name == name)
    }
}

/// The lowp pass whose argument is `argument`.
pub fn pass(argument: &str) -> Option<&'static PassDef> {
    all_passes().iter().find(|p| p.argument == argument)
}

/// Check `value` for option `name` of pass `argument` as a pipeline would (for tools whose
/// flags set pass options, so that a bad value is a command-line error); its declared name.
pub fn check_option(argument: &str, name: &str, value: &str) -> Result<&'static str, String> {
    let option = pass(argument)
        .and_then(|p| p.option(name))
        .ok_or_else(|| format!("{argument} has no option '{name}'"))?;
    option.check(value)?;
    Ok(option.name)
}

/// Every lowp pass.
pub fn all_passes() -> &'static [PassDef] {
    &[
        crate::assert_shapes::PASS,
        crate::expand_quantize::PASS,
        crate::to_loops::PASS,
        crate::to_parallel_loops::PASS,
        crate::to_nvvm::PASS,
        crate::to_rocdl::PASS,
        crate::lower_storage::PASS,
        crate::extern_dynamic_shared::PASS,
        crate::kernel_cluster_size::PASS,
        crate::fold_grid::PASS,
        crate::legalize_ptx_names::PASS,
        crate::check_allocations::PASS,
        crate::report_asserts::PASS,
        crate::check_bounds::PASS,
    ]
}

fn strings(values: *const MlirStringRef, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            // SAFETY: the bridge passes `n` valid string refs alive for the call.
            let s = unsafe { *values.add(i) };
            let bytes = unsafe { std::slice::from_raw_parts(s.data as *const u8, s.length) };
            String::from_utf8_lossy(bytes).into_owned()
        })
        .collect()
}

unsafe extern "C" fn run_trampoline(
    user_data: *mut c_void,
    op: MlirOperation,
    n: usize,
    values: *const MlirStringRef,
) -> c_int {
    // SAFETY: user_data is the &'static PassDef given at registration.
    let def = unsafe { &*(user_data as *const PassDef) };
    let values = strings(values, n);
    // SAFETY: the bridge passes the live operation the pass runs on.
    let op = unsafe { OperationRef::from_raw(op) };
    let loc = op.location().to_raw();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let options = def.parse_options(&values)?;
        (def.run)(op, &options)
    }));
    match result {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            crate::ir::emit_error(e.location().unwrap_or(loc), &e.to_string());
            1
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            crate::ir::emit_error(loc, &format!("internal error in {}: {what}", def.argument));
            1
        }
    }
}

unsafe extern "C" fn validate_trampoline(
    user_data: *mut c_void,
    n: usize,
    values: *const MlirStringRef,
    report: ffi::LowpReportFn,
    report_ctx: *mut c_void,
) -> c_int {
    // SAFETY: user_data is the &'static PassDef given at registration.
    let def = unsafe { &*(user_data as *const PassDef) };
    let values = strings(values, n);
    match catch_unwind(AssertUnwindSafe(|| def.parse_options(&values))) {
        Ok(Ok(_)) => 0,
        Ok(Err(e)) => {
            let msg = e.to_string();
            // SAFETY: `report` writes the message into the bridge's buffer during the call.
            unsafe {
                report(
                    report_ctx,
                    MlirStringRef {
                        data: msg.as_ptr() as *const _,
                        length: msg.len(),
                    },
                )
            };
            1
        }
        Err(_) => 1,
    }
}

unsafe extern "C" fn append_message(ctx: *mut c_void, message: MlirStringRef) {
    // SAFETY: ctx is the &mut String passed with this callback; message is valid for the call.
    unsafe {
        let bytes = std::slice::from_raw_parts(message.data as *const u8, message.length);
        (*(ctx as *mut String)).push_str(&String::from_utf8_lossy(bytes));
    }
}

fn leak(s: &str) -> *const std::ffi::c_char {
    CString::new(s).expect("no NUL in pass strings").into_raw()
}

/// Register every lowp pass (and every upstream pass) in MLIR's global registry. Idempotent.
pub fn register_passes() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        lowp_dialect::register_all_upstream_passes();
        for def in all_passes() {
            // The registry lives for the process: its strings and tables are leaked once.
            let options: Vec<ffi::LowpPassOption> = def
                .options
                .iter()
                .map(|o| ffi::LowpPassOption {
                    name: leak(o.name),
                    default_value: leak(o.default),
                    description: leak(o.description),
                    is_flag: matches!(o.kind, OptionKind::Bool) as i32,
                })
                .collect();
            let dialects: Vec<mlir_sys::MlirDialectHandle> = (def.dependent_dialects)()
                .iter()
                .map(|h| h.to_raw())
                .collect();
            let spec = ffi::LowpPassSpec {
                argument: leak(def.argument),
                name: leak(def.name),
                description: leak(def.description),
                op_name: def.op_name.map_or(std::ptr::null(), leak),
                num_options: options.len(),
                options: options.leak().as_ptr(),
                num_dependent_dialects: dialects.len(),
                dependent_dialects: dialects.leak().as_ptr(),
                user_data: def as *const PassDef as *mut c_void,
                run: run_trampoline,
                validate: Some(validate_trampoline),
            };
            // SAFETY: every pointer in the spec is leaked and lives for the process.
            let fresh = unsafe { ffi::lowpRegisterRustPass(&spec) };
            assert!(fresh, "pass {} registered twice", def.argument);
        }
        for p in crate::pipelines::ALL {
            let (argument, description, passes) = (
                std::ffi::CString::new(p.argument).expect("no NUL"),
                std::ffi::CString::new(p.description).expect("no NUL"),
                std::ffi::CString::new(p.passes).expect("no NUL"),
            );
            let mut message = String::new();
            // SAFETY: NUL-terminated strings (copied by the bridge) and a report callback
            // writing into `message` during the call.
            let ok = unsafe {
                ffi::lowpRegisterPassPipeline(
                    argument.as_ptr(),
                    description.as_ptr(),
                    passes.as_ptr(),
                    append_message,
                    &mut message as *mut String as *mut c_void,
                )
            };
            assert!(ok, "pipeline {} does not register: {message}", p.argument);
        }
    });
}
