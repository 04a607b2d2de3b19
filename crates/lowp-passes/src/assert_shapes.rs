//! `lowp-assert-shapes`: check at run time the sizes the verifiers could not. Where an op's
//! operands have dynamic dimensions, the sizes its verifier relates (K of both operands, C
//! as M x N, the bias as N, the scale arrays as the layout's blocks of their tensor) are
//! read with `memref.dim` / `tensor.dim` before the op and compared, each relation in a
//! `cf.assert` whose message names the op's location and the operands that disagree. A
//! lowering reads the sizes it loops over from some operands and addresses the others with
//! them: without the check, a call whose shapes disagree reads and writes past buffers.
//!
//! Before:
//! ```mlir
//! lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
//!     : memref<?x64xf8E4M3FN>[memref<?x2xf8E8M0FNU>], memref<16x64xf8E4M3FN>[memref<16x2xf8E8M0FNU>]
//!     -> memref<?x16xf32>
//! ```
//! After:
//! ```mlir
//! %m = memref.dim %c, %c0 : memref<?x16xf32>
//! %m_a = memref.dim %a, %c0 : memref<?x64xf8E4M3FN>
//! %0 = arith.cmpi eq, %m, %m_a : index
//! cf.assert %0, "lowp.scaled_matmul at f.mlir:3:3: the result has other rows than lhs (M)"
//! %r = memref.dim %sa, %c0 : memref<?x2xf8E8M0FNU>
//! %1 = arith.cmpi eq, %r, %m_a : index
//! cf.assert %1, "lowp.scaled_matmul at f.mlir:3:3: lhs scales (#lowp.mx<32>) need rows = M"
//! lowp.scaled_matmul ...
//! ```
//! A relation whose sizes are all static is the verifier's and emits nothing: a module of
//! static shapes is left as it is. Checks `lowp.scaled_matmul`, `lowp.quantize`,
//! `lowp.dequantize` and `lowp.compute_scales`, on memrefs or tensors, in host code; an op
//! inside `gpu.launch` or a `gpu.func` is left unchecked (device code has no `cf.assert`
//! lowering on every target: ROCDL has none). Runs on any op, before the lowering; the lowp
//! pipelines run it first. No options.
//!
//! On the CPU `convert-cf-to-llvm` makes a failed check print its message (`puts`) and
//! abort; `lowp-run` compares the shapes before it calls, so its calls never fail one.

use lowp_formats::ScaleLayout;
use melior::dialect::arith::CmpiPredicate;
use melior::dialect::DialectHandle;
use melior::ir::operation::{OperationBuilder, OperationLike, WalkOrder, WalkResult};
use melior::ir::{OperationRef, Type, TypeLike, Value, ValueLike};

use crate::expand_quantize::{ceil_div, layout_attr_of, unsupported};
use crate::ir::{enclosing, location_text, static_dim, Emitter};
use crate::registry::{PassDef, PassOptions};
use crate::PassError;

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-assert-shapes",
    name: "LowpAssertShapes",
    description: "Check at run time (cf.assert) the sizes of lowp ops' dynamic dimensions \
                  that their verifiers relate: K, M, N, bias and scale arrays",
    op_name: None,
    options: &[],
    dependent_dialects: || {
        vec![
            DialectHandle::arith(),
            DialectHandle::cf(),
            DialectHandle::memref(),
            DialectHandle::tensor(),
        ]
    },
    run,
};

/// A size an op's operands imply.
#[derive(Clone, Copy)]
enum Size<'c, 'a> {
    /// A constant.
    Const(i64),
    /// `ceil(dimension index of of * times / block)`: `times` 2 for K of packed codes (two
    /// per byte), `block` above 1 for a count of scale blocks.
    Dim {
        of: Value<'c, 'a>,
        index: usize,
        times: i64,
        block: i64,
    },
}

impl<'c, 'a> Size<'c, 'a> {
    /// The size in `block`s.
    fn blocks(self, block: i64) -> Self {
        match self {
            Size::Dim {
                of, index, times, ..
            } => Size::Dim {
                of,
                index,
                times,
                block,
            },
            c => c,
        }
    }

    /// The value when the types alone decide it.
    fn known(&self) -> Option<i64> {
        match *self {
            Size::Const(c) => Some(c),
            Size::Dim {
                of,
                index,
                times,
                block,
            } => {
                let d = static_dim(of.r#type(), index as i64)?;
                Some((d * times + block - 1) / block)
            }
        }
    }

    /// The size at run time (a constant where the types decide it).
    fn emit(&self, e: &Emitter<'c, 'a>) -> Value<'c, 'a> {
        if let Some(known) = self.known() {
            return e.index(known);
        }
        match *self {
            Size::Const(c) => e.index(c),
            Size::Dim {
                of,
                index,
                times,
                block,
            } => {
                let mut d = dim(e, of, index as i64);
                if times != 1 {
                    d = e.muli(d, e.index(times));
                }
                if block != 1 {
                    d = ceil_div(e, d, e.index(block));
                }
                d
            }
        }
    }
}

/// `memref.dim` or `tensor.dim`.
fn dim<'c, 'a>(e: &Emitter<'c, 'a>, of: Value<'c, 'a>, index: i64) -> Value<'c, 'a> {
    if of.r#type().is_tensor() {
        let i = e.index(index);
        e.val(
            OperationBuilder::new("tensor.dim", e.loc())
                .add_operands(&[of, i])
                .add_results(&[e.index_type()])
                .build()
                .expect("valid tensor.dim"),
        )
    } else {
        e.dim(of, index)
    }
}

fn dim_of<'c, 'a>(of: Value<'c, 'a>, index: usize) -> Size<'c, 'a> {
    Size::Dim {
        of,
        index,
        times: 1,
        block: 1,
    }
}

/// Logical K of a codes operand: its columns, twice them for packed storage.
fn k_of<'c, 'a>(codes: Value<'c, 'a>) -> Size<'c, 'a> {
    // SAFETY: reading a live type.
    let element = unsafe {
        let t = codes.r#type().to_raw();
        mlir_sys::mlirTypeIsAShaped(t)
            .then(|| Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(t)))
    };
    let packed = element
        .and_then(lowp_dialect::code_type_info)
        .is_some_and(|i| i.packed);
    Size::Dim {
        of: codes,
        index: 1,
        times: if packed { 2 } else { 1 },
        block: 1,
    }
}

/// One relation: two sizes that must agree, and what the message says when they do not.
struct Check<'c, 'a> {
    got: Size<'c, 'a>,
    want: Size<'c, 'a>,
    what: String,
}

/// The scale array's rows and columns `layout` (printed as `attr`) asks of `what`, a `rows x
/// k` tensor.
fn scale_checks<'c, 'a>(
    what: &str,
    (layout, attr): (ScaleLayout, String),
    scales: Value<'c, 'a>,
    rows: Size<'c, 'a>,
    k: Size<'c, 'a>,
) -> [Check<'c, 'a>; 2] {
    let (want_rows, rows_text) = match layout {
        ScaleLayout::PerTensor => (Size::Const(1), "1 row".to_string()),
        _ => match layout.row_block(1) {
            1 => (rows, format!("a row per row of {what}")),
            rb => (
                rows.blocks(rb as i64),
                format!("ceil(rows of {what} / {rb}) rows"),
            ),
        },
    };
    let (want_cols, cols_text) = match layout {
        ScaleLayout::PerTensor | ScaleLayout::PerChannel => {
            (Size::Const(1), "1 column".to_string())
        }
        _ => {
            let kb = layout.k_block(1) as i64;
            (k.blocks(kb), format!("ceil(K / {kb}) columns"))
        }
    };
    [
        Check {
            got: dim_of(scales, 0),
            want: want_rows,
            what: format!("{what} scales ({attr}) need {rows_text}"),
        },
        Check {
            got: dim_of(scales, 1),
            want: want_cols,
            what: format!("{what} scales ({attr}) need {cols_text}"),
        },
    ]
}

/// The scale layout attribute `name` of `op`, and its text.
fn layout<'c>(op: OperationRef<'c, '_>, name: &str) -> Result<(ScaleLayout, String), PassError> {
    let text = op
        .attribute(name)
        .map(|a| a.to_string())
        .unwrap_or_default();
    Ok((layout_attr_of(op, name)?, text))
}

fn operand<'c, 'a>(op: OperationRef<'c, 'a>, i: usize) -> Result<Value<'c, 'a>, PassError> {
    op.operand(i)
        .map_err(|_| unsupported(op, format!("missing operand #{i}")))
}

/// The relations of `op`'s operand sizes.
fn checks<'c, 'a>(op: OperationRef<'c, 'a>, name: &str) -> Result<Vec<Check<'c, 'a>>, PassError> {
    let mut out = Vec::new();
    let check = |got, want, what: &str| Check {
        got,
        want,
        what: what.to_string(),
    };
    match name {
        "lowp.scaled_matmul" => {
            let o = crate::to_loops::matmul_operands(op)?;
            let (m, n) = (dim_of(o.lhs, 0), dim_of(o.rhs, 0));
            let k = k_of(o.lhs);
            out.push(check(k_of(o.rhs), k, "rhs has another K than lhs"));
            out.push(check(
                dim_of(o.out, 0),
                m,
                "the result has other rows than lhs (M)",
            ));
            out.push(check(
                dim_of(o.out, 1),
                n,
                "the result has other columns than rhs has rows (N)",
            ));
            if let Some(bias) = o.bias {
                out.push(check(dim_of(bias, 0), n, "the bias's length is not N"));
            }
            out.extend(scale_checks(
                "lhs",
                layout(op, "lhs_layout")?,
                o.lhs_scales,
                m,
                k,
            ));
            out.extend(scale_checks(
                "rhs",
                layout(op, "rhs_layout")?,
                o.rhs_scales,
                n,
                k,
            ));
        }
        "lowp.quantize" | "lowp.dequantize" | "lowp.compute_scales" => {
            let count = op.operand_count();
            let tensor = operand(op, 0)?;
            let layout = layout(op, "layout")?;
            // The logical rows x K: of the f32 input, or of the codes (dequantize).
            let (rows, k) = (dim_of(tensor, 0), k_of(tensor));
            if name != "lowp.compute_scales" {
                let output = operand(op, count - 1)?;
                let (what_rows, what_k) = if name == "lowp.quantize" {
                    (
                        "the output codes have other rows than the input",
                        "the output codes have another K than the input",
                    )
                } else {
                    (
                        "the output has other rows than the codes",
                        "the output has another K than the codes",
                    )
                };
                out.push(check(dim_of(output, 0), rows, what_rows));
                out.push(check(k_of(output), k, what_k));
            }
            let what = if name == "lowp.dequantize" {
                "codes"
            } else {
                "input"
            };
            out.extend(scale_checks(what, layout, operand(op, 1)?, rows, k));
        }
        _ => {}
    }
    Ok(out)
}

const CHECKED: [&str; 4] = [
    "lowp.scaled_matmul",
    "lowp.quantize",
    "lowp.dequantize",
    "lowp.compute_scales",
];

fn run<'c, 'a>(root: OperationRef<'c, 'a>, _: &PassOptions) -> Result<(), PassError> {
    // `to_ref` borrows the ContextRef itself: keep it alive for the whole run.
    let ctx_ref = root.context();
    // SAFETY: the context outlives the pass run, and `ctx_ref` outlives `ctx`.
    let ctx = unsafe { ctx_ref.to_ref() };
    let mut targets = Vec::new();
    root.walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        if CHECKED.contains(&name.as_string_ref().as_str().unwrap_or(""))
            && enclosing(op, "gpu.launch").is_none()
            && enclosing(op, "gpu.func").is_none()
        {
            targets.push(op.to_raw());
        }
        WalkResult::Advance
    });
    for raw in targets {
        // SAFETY: collected from the live root above; the pass only inserts ops.
        let op: OperationRef<'c, 'a> = unsafe { OperationRef::from_raw(raw) };
        let name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
        let e = Emitter::before(ctx, op).ok_or_else(|| unsupported(op, "op is not in a block"))?;
        let place = location_text(op.location());
        for c in checks(op, &name)? {
            if c.got.known().is_some() && c.want.known().is_some() {
                continue;
            }
            let ok = e.cmpi(CmpiPredicate::Eq, c.got.emit(&e), c.want.emit(&e));
            e.insert(melior::dialect::cf::assert(
                ctx,
                ok,
                &format!("{name} at {place}: {}", c.what),
                e.loc(),
            ));
        }
    }
    Ok(())
}
