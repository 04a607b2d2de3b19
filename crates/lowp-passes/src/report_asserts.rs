//! `lowp-report-asserts`: make a failed `cf.assert` of host code print its message to
//! standard error and end the program with status 1. `convert-cf-to-llvm` lowers it to
//! `puts` (standard output, which a pipe or file buffers: the message is lost) and
//! `abort` (SIGABRT, status 134): a shape mismatch found at run time by
//! `lowp-assert-shapes` then looked like a crash, and said nothing when piped.
//!
//! Before:
//! ```mlir
//! cf.assert %ok, "lowp.scaled_matmul at f.mlir:3:3: the result has other rows than lhs (M)"
//! ```
//! After:
//! ```mlir
//! %failed = arith.xori %ok, %true : i1
//! scf.if %failed {
//!   (llvm.call @dprintf(2, "%s", "f.mlir:3:3: error: lowp.scaled_matmul: the result has
//!    other rows than lhs (M)\0A"), llvm.call @_exit(1))
//! }
//! ```
//! The line is `LOC: error: MESSAGE`, LOC the assert's location; a message that names it
//! (`OP at LOC: what`, as lowp-assert-shapes' do) reads `LOC: error: OP: what`. The line is
//! passed to `%s` (a `%` in it is printed as it is). Asserts in kernel modules (`gpu.module`: device
//! code, which the GPU lowerings take) and in a nested `builtin.module` are left alone.
//! `@dprintf` and `@_exit` are declared where the module does not declare them; a function
//! of the module of either name that is not C's declaration is refused at it. Runs on
//! `builtin.module`, before `convert-scf-to-cf` (the CPU pipelines run it after
//! `finalize-memref-to-llvm`). No options.

use melior::dialect::DialectHandle;
use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
use melior::ir::OperationRef;
use melior::Context;

use crate::host_exit::{address_of, print_and_exit, HostSymbols};
use crate::ir::{location_text, string_value, Emitter};
use crate::registry::{PassDef, PassOptions};
use crate::PassError;

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-report-asserts",
    name: "LowpReportAsserts",
    description: "Make host code's failed cf.assert print LOC: error: MESSAGE to standard \
                  error and exit with status 1, instead of puts to standard output and abort",
    op_name: Some("builtin.module"),
    options: &[],
    dependent_dialects: || vec![DialectHandle::llvm(), DialectHandle::scf()],
    run,
};

fn run<'c, 'a>(module: OperationRef<'c, 'a>, _: &PassOptions) -> Result<(), PassError> {
    let mut asserts: Vec<OperationRef<'c, 'a>> = Vec::new();
    module.walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        match name.as_string_ref().as_str() {
            Ok("gpu.module") => WalkResult::Skip,
            Ok("builtin.module") if op.to_raw().ptr != module.to_raw().ptr => WalkResult::Skip,
            Ok("cf.assert") => {
                // SAFETY: a live op of the module; nothing is erased during the walk.
                asserts.push(unsafe { OperationRef::from_raw(op.to_raw()) });
                WalkResult::Advance
            }
            _ => WalkResult::Advance,
        }
    });
    if asserts.is_empty() {
        return Ok(());
    }
    // `to_ref` borrows the ContextRef itself: keep it alive for the whole run.
    let ctx_ref = module.context();
    // SAFETY: the context outlives the pass run, and `ctx_ref` outlives `ctx`.
    let ctx: &'c Context = unsafe { ctx_ref.to_ref() };
    let mut symbols = HostSymbols::new(ctx, module, PASS.argument)?;
    symbols.declare_libc();
    let format = symbols.string("lowp_assert_format", "%s");
    for op in asserts {
        let message = op
            .attribute("msg")
            .ok()
            .and_then(string_value)
            .unwrap_or_default();
        let at = location_text(op.location());
        // ("OP at LOC: what" names the place itself: "LOC: error: OP: what".)
        let placed = format!(" at {at}:");
        let line = match message.find(&placed) {
            Some(i) => format!(
                "{at}: error: {}:{}\n",
                &message[..i],
                &message[i + placed.len()..]
            ),
            None => format!("{at}: error: {message}\n"),
        };
        let text = symbols.string("lowp_assert_message", &line);
        let e = Emitter::before(ctx, op).expect("an assert in a block");
        let holds = op.operand(0).expect("the assert's condition");
        let failed = e.xori(holds, e.bool(true));
        e.if_then(failed, |e| {
            let line = e.val(address_of(ctx, &text, e.loc()));
            print_and_exit(e, &format, &[line]);
        });
        // SAFETY: the assert has no results; it is replaced by the check inserted before it.
        unsafe { mlir_sys::mlirOperationDestroy(op.to_raw()) };
    }
    Ok(())
}
